"""Fine-tuning's run settings (finetune/tasks.py RunSettings): one typed object, made from the schema's 'finetune'
section, so that a key the schema declares reaches the run and a key it does not is refused."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

import workflow_scripts.finetune.tasks as tasks
from support.config_checks import NOT_PER_TASK
from support.resolved_config import typed
from workflow_scripts.core.schema import section_properties
from workflow_scripts.finetune.tasks import (
    NOT_RUN_SETTINGS,
    RunSettings,
    run_setting_schemas,
    task_seeds,
    task_settings,
)


def defaults() -> dict:
    return {key: entry.get("default") for key, entry in section_properties("finetune").items()}


def test_every_run_setting_of_the_schema_is_in_the_settings():
    settings = task_settings(defaults(), "wic", 128, marks_target_word=True)
    assert set(settings) == set(section_properties("finetune")) - set(NOT_RUN_SETTINGS)
    assert settings.precision == "fp32" and settings["max_length"] == 128 and settings.wic_marking == "brackets"
    assert "wic_marking" not in task_settings(defaults(), "sst2", 128)
    assert RunSettings(settings.params()) == settings  # what a rule's params carry makes the same settings


def test_a_new_schema_key_reaches_the_run_without_other_code(monkeypatch):
    """Adding an option is its schema entry and the code that reads it: nothing lists the run settings."""
    section = {**section_properties("finetune"), "label_smoothing": {"type": "number", "minimum": 0, "default": 0.0}}
    monkeypatch.setattr(tasks, "section_properties", lambda name: section)
    settings = task_settings({**defaults(), "label_smoothing": 0.1}, "sst2", 128)
    assert settings.label_smoothing == 0.1 and RunSettings(settings.params()).label_smoothing == 0.1
    with pytest.raises(ValueError, match=r"label_smoothing: missing"):
        RunSettings({k: v for k, v in settings.items() if k != "label_smoothing"})
    with pytest.raises(ValueError, match=r"fine-tuning setting label_smoothing: -1 is less than the minimum of 0"):
        settings.replace(label_smoothing=-1)


def test_settings_are_read_only_and_misspelt_names_are_errors():
    settings = task_settings(defaults(), "sst2", 128)
    with pytest.raises(AttributeError, match="no fine-tuning setting 'precison'"):
        _ = settings.precison
    with pytest.raises(AttributeError, match="read-only"):
        settings.precision = "bf16"
    assert settings.replace(precision="bf16").precision == "bf16" and settings.precision == "fp32"


def another_value(entry: dict) -> Any:
    """A valid value of a setting other than its default, made from its schema entry (so that a new option is
    tested with no new line here)."""
    default = entry.get("default")
    if "enum" in entry:
        return next(value for value in entry["enum"] if value != default)
    types = {entry["type"]} if isinstance(entry["type"], str) else set(entry["type"])
    if "boolean" in types:
        return not default
    if "array" in types:
        return sorted({*(default or []), entry["items"].get("minimum", 0) + 7})
    base = default if default is not None else entry.get("minimum", entry.get("exclusiveMinimum", 0))
    if "integer" in types:
        return base + 1
    return (base + entry["maximum"]) / 2 if "maximum" in entry else base * 2 if base else 1.0


def test_per_task_takes_every_run_setting_and_overrides_the_global_value():
    """finetune.per_task.TASK takes each run setting (and seeds), read from --config text as under finetune; that
    task's runs get the value, the other tasks the global one, and the check fills nothing into the entry (a filled
    in default would override the global value)."""
    from workflow_scripts.study.checks import resolve_config

    schemas = {key: entry for key, entry in section_properties("finetune").items()
               if key not in NOT_PER_TASK}
    assert set(schemas) == set(run_setting_schemas()) | {"seeds"}
    values = {key: another_value(entry) for key, entry in schemas.items()}
    for key, value in values.items():
        assert jsonschema.validators.validator_for(schemas[key])(schemas[key]).is_valid(value), (key, value)
        assert value != schemas[key]["default"], key
    text = ", ".join(f"{key}: {json.dumps(value)}" for key, value in values.items())
    finetune = resolve_config([], [f"finetune={{per_task: {{cola: {{{text}}}}}}}"], semantics=False)["finetune"]
    assert finetune["per_task"] == {"cola": values}
    assert typed(finetune["per_task"]["cola"]) == typed(values)  # 4e-05 is a number, as under finetune

    cola = task_settings(finetune, "cola", 128, marks_target_word=True)
    global_settings = task_settings({**finetune, "per_task": {}}, "cola", 128, marks_target_word=True)
    assert task_settings(finetune, "sst2", 128, marks_target_word=True) == global_settings
    for key in run_setting_schemas():
        assert cola[key] == values[key] != global_settings[key], key
    assert task_seeds(finetune, "cola") == values["seeds"] and task_seeds(finetune, "sst2") == finetune["seeds"]


def test_the_rules_params_carry_every_run_setting():
    from support.study_configs import study_of

    study = study_of({"finetune": {"precision": "bf16", "per_task": {"cola": {"precision": "tf32"}}}})
    task = study.finetune.tasks[0]
    params = study.finetune.settings(task)(type("Wildcards", (), {"model": study.models[0]})())
    assert isinstance(params, dict) and RunSettings(params) == study.finetune_settings(task, study.models[0])
    assert params["precision"] == ("tf32" if task == "cola" else "bf16")
    assert study.finetune_settings("cola").precision == "tf32" and study.finetune_settings("sst2").precision == "bf16"


def test_settings_survive_pickle_and_copy():
    import copy
    import pickle

    settings = task_settings(defaults(), "sst2", 128)
    assert pickle.loads(pickle.dumps(settings)) == settings == copy.deepcopy(settings) == copy.copy(settings)
    assert pickle.loads(pickle.dumps(settings)).precision == "fp32"


def test_lora_trains_at_its_own_learning_rate_full_fine_tuning_at_learning_rate():
    settings = task_settings(dict(defaults(), learning_rate=2.0e-5, lora_learning_rate=3.0e-4, per_task={}), "sst2")
    assert settings.peak_learning_rate == 2.0e-5
    assert settings.replace(method="lora").peak_learning_rate == 3.0e-4
