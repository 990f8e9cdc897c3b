"""YAML 1.1 reads unquoted yes/no/on/off/true/false as booleans: a schema error about a bool where a
string was wanted says so, and how to quote it, instead of only "True is not of type 'string'"."""

from __future__ import annotations

import yaml

from support.config_checks import schema_error
from workflow_scripts.study.checks import YAML_BOOLEAN_FIX, check_schema

TASK = """
path: /data/answers
splits: {train: train.csv, dev: dev.csv}
text: [question]
label: answer
kind: classification
"""


def with_task(config: dict, yaml_text: str) -> dict:
    config["tasks"]["answers"] = yaml.safe_load(TASK + yaml_text)
    return config


def test_unquoted_yes_no_labels_say_to_quote_them(config, schema):
    config = with_task(config, "labels: [yes, no]\n")
    assert config["tasks"]["answers"]["labels"] == [True, False]  # what YAML made of them
    message = schema_error(config, schema)
    assert "config key 'tasks.answers.labels[0]': True is not of type 'string', 'integer'" in message
    assert "config key 'tasks.answers.labels[1]': False is not of type" in message
    assert message.count(YAML_BOOLEAN_FIX) == 2
    assert "quote it ('yes')" in message


def test_quoted_yes_no_labels_are_valid(config, schema):
    check_schema(with_task(config, "labels: ['yes', 'no']\n"), schema)


def test_bool_where_an_enum_of_names_is_wanted(config, schema):
    config = with_task(config, "labels: [a, b]\nkind: on\n")  # YAML: kind: true
    message = schema_error(config, schema)
    assert "config key 'tasks.answers.kind'" in message and YAML_BOOLEAN_FIX in message


def test_no_hint_for_other_wrong_types(config, schema):
    config = with_task(config, "labels: [1.5, 2.5]\n")
    message = schema_error(config, schema)
    assert "1.5 is not of type" in message and YAML_BOOLEAN_FIX not in message


def test_no_hint_where_a_bool_is_not_a_string_slot(config, schema):
    config = with_task(config, "labels: [a, b]\n")
    config["tasks"]["answers"]["text"] = 3  # an int, not a bool: no YAML hint
    assert YAML_BOOLEAN_FIX not in schema_error(config, schema)
