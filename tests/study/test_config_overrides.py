"""Config checking, --config text: nested values Snakemake hands over as text are read as the
schema's types, and a dry run of a tiny study takes them (or names the key of a bad one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.cli import parse_config

from support.config_checks import schema_error, tiny_mirror
from support.paths import REPO
from workflow_scripts.study.checks import check_schema, coerce_config, coerce_to_schema

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
