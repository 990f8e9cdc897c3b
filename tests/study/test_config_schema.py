"""Config checking, the JSON schema: the repository's config is valid, the schema fills in its
defaults, and every schema error is readable and names its key."""

from __future__ import annotations

import pytest
from snakemake.cli import parse_config

from support.config_checks import NOT_PER_TASK, schema_error, semantic_error, with_defaults
from support.paths import SCHEMA_PATH
from workflow_scripts.study.checks import check_schema, check_semantics, coerce_to_schema, load_schema

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



# --- finetune.per_task: any run setting of finetune, checked as there --------------------------------------------

def _per_task_keys(schema: dict) -> list[str]:
    return [key for key in schema["properties"]["finetune"]["properties"] if key not in NOT_PER_TASK]


def _invalid_values(entry: dict) -> list:
    """Values a setting's schema entry refuses: text where text is not one of its values, and each bound broken."""
    values: list = ["text"]
    if "minimum" in entry:
        values.append(entry["minimum"] - 1)
    if "exclusiveMinimum" in entry:
        values.append(entry["exclusiveMinimum"])
    if "maximum" in entry:
        values.append(entry["maximum"] + 1)
    if "items" in entry:
        low = entry["items"].get("minimum", 0)
        values += [[low - 1], [low, low]] + [[]] * ("minItems" in entry)
    return values


def test_per_task_takes_the_run_settings_of_finetune(schema):
    entry = schema["properties"]["finetune"]["properties"]["per_task"]["additionalProperties"]
    assert sorted(entry["properties"]) == sorted(_per_task_keys(schema))
    assert entry["additionalProperties"] is False
    assert not any("default" in setting for setting in entry["properties"].values())  # nothing filled in


@pytest.mark.parametrize("key", _per_task_keys(load_schema(SCHEMA_PATH)))
def test_per_task_refuses_what_finetune_refuses_with_the_same_message(config, schema, key):
    """Each setting under finetune.per_task.TASK is checked as under finetune: the same problem, named at its key,
    with a pointer to finetune's description."""
    entry = schema["properties"]["finetune"]["properties"][key]
    for bad in _invalid_values(entry):
        config["finetune"] = {key: bad}
        told = schema_error(config, schema)
        assert f"config key 'finetune.{key}" in told, bad
        config["finetune"] = {"per_task": {"cola": {key: bad}}}
        assert schema_error(config, schema) == told.replace(
            "config key 'finetune.", "config key 'finetune.per_task.cola.").replace(
            f"({entry['description']})", f"(see finetune.{key})"), bad


@pytest.mark.parametrize("key", NOT_PER_TASK)
def test_per_task_refuses_the_keys_that_are_not_run_settings(config, schema, key):
    config["finetune"] = {"per_task": {"cola": {key: schema["properties"]["finetune"]["properties"][key]["default"]}}}
    message = schema_error(config, schema)
    assert (f"config key 'finetune.per_task.cola': unknown key(s) '{key}'; allowed here: "
            f"{', '.join(sorted(_per_task_keys(schema)))} (") in message


def test_a_misspelt_or_bad_per_task_setting_names_its_key(config, schema):
    config["finetune"] = {"per_task": {"cola": {"learnin_rate": 1e-5}, "rte": {"learning_rate": -1}}}
    message = schema_error(config, schema)
    assert "config key 'finetune.per_task.cola': unknown key(s) 'learnin_rate'; allowed here: batch_size, " in message
    assert ("config key 'finetune.per_task.rte.learning_rate': -1 is less than or equal to the minimum of 0 "
            "(see finetune.learning_rate)") in message


def test_per_task_text_from_the_command_line_is_read_as_finetune_reads_it(config, schema):
    """--config text under finetune.per_task.TASK is read as the setting's type (2e-5 too, which YAML reads as
    text), and text that spells none is reported with its key; Snakemake's validate() fills nothing in."""
    overrides = parse_config(["finetune={per_task: {cola: {learning_rate: 2e-5, epochs: 5, save_steps: [20, 10]}}}"])
    config.update(coerce_to_schema({**config, **overrides}, schema))
    assert config["finetune"]["per_task"] == {"cola": {"learning_rate": 2e-5, "epochs": 5, "save_steps": [20, 10]}}
    assert isinstance(config["finetune"]["per_task"]["cola"]["learning_rate"], float)
    check_schema(config, schema)
    assert with_defaults(config)["finetune"]["per_task"] == {
        "cola": {"learning_rate": 2e-5, "epochs": 5, "save_steps": [20, 10]}}

    bad = parse_config(["finetune={per_task: {cola: {learning_rate: fast, epochs: five}}}"])
    config.update(coerce_to_schema({**config, **bad}, schema))
    message = schema_error(config, schema)
    assert "config key 'finetune.per_task.cola.learning_rate': 'fast' is not of type 'number'" in message
    assert "config key 'finetune.per_task.cola.epochs': 'five' is not of type 'integer'" in message
