"""Fine-tuning's run settings (finetune/tasks.py RunSettings): one typed object, made from the schema's 'finetune'
section, so that a key the schema declares reaches the run and a key it does not is refused."""

from __future__ import annotations

import pytest

import workflow_scripts.finetune.tasks as tasks
from workflow_scripts.core.schema import section_properties
from workflow_scripts.finetune.tasks import NOT_RUN_SETTINGS, RunSettings, run_setting_schemas, task_settings


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


def test_per_task_overrides_every_run_setting():
    """finetune.per_task takes any run setting: its schema lists each one (a new option is added there too)."""
    per_task = section_properties("finetune")["per_task"]["additionalProperties"]["properties"]
    assert set(run_setting_schemas()) <= set(per_task)
    for key, entry in run_setting_schemas().items():
        assert {k: v for k, v in per_task[key].items() if k not in ("description", "default")} == \
            {k: v for k, v in entry.items() if k not in ("description", "default")}, key


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
