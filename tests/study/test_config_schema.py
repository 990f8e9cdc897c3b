"""Config checking, the JSON schema: the repository's config is valid, the schema fills in its
defaults, and every schema error is readable and names its key."""

from __future__ import annotations

import pytest

from support.config_checks import schema_error, semantic_error, with_defaults
from workflow_scripts.study.checks import check_schema, check_semantics

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


def test_a_task_name_that_cannot_name_an_entry(config, schema):
    config["study"]["tasks"] = ["cola", "sts-b"]
    message = schema_error(config, schema)
    assert "config key 'study.tasks[1]': 'sts-b' does not match" in message


def test_unknown_task_and_treebank_names_are_refused_before_any_job(config):
    config["study"]["tasks"] = ["cola", "stsbb"]
    config["study"]["treebanks"] = ["ptb"]
    message = semantic_error(with_defaults(config))
    assert "config key 'study.tasks': 'stsbb' is not defined under 'tasks' (defined: cola, mnli" in message
    assert "add an entry 'tasks.stsbb' (docs/corpora.md)" in message
    assert "config key 'study.treebanks': 'ptb' is not defined under 'treebanks' (defined: ewt, gum)" in message


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
    config["study"]["tasks"] = ["Cola"]
    message = schema_error(config, schema)
    assert "config key 'offline'" in message
    assert "config key 'study.tasks[0]'" in message

