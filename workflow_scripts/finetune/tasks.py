"""What the study knows about a fine-tuning task, apart from training on it (METHODS 3).

The study model, the rules and the other stages (attention, surface, fine-tuning effects,
report) need a task's dev split, its labels, its display name, the names of its checkpoints
and its run settings; they import them from here, never from the training loop, so that
reading them costs no torch import and no stage depends on how a run trains.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from ..core.schema import NOT_PER_TASK, section_properties
from ..data.registry import TASK_DISPLAY_NAMES

# Keys of the 'finetune' section that say which runs exist and what a job may use, not what a run computes: those a
# 'per_task' entry does not take (core/schema.py), and 'seeds', which it does (task_seeds). Every other key of the
# section is a run setting (RunSettings): a new option is its schema entry and the code that uses it.
NOT_RUN_SETTINGS = ("seeds", *NOT_PER_TASK)
# Run settings only some tasks have: how WiC's target word is shown (task_settings drops it for the other tasks).
TASK_SPECIFIC = ("wic_marking",)
WIC_MARKINGS = ("none", "brackets", "prefix")
# Task names as the papers print them, in GLUE's order (figures and the report list tasks so; a
# researcher's own tasks follow under their entry names).
TASK_NAMES = TASK_DISPLAY_NAMES


def run_setting_schemas() -> dict[str, dict[str, Any]]:
    """The schema entries of the run settings: every key of 'finetune' but NOT_RUN_SETTINGS."""
    return {key: entry for key, entry in section_properties("finetune").items() if key not in NOT_RUN_SETTINGS}


@functools.cache
def _validator(key: str) -> Any:
    """A run setting's validator, made once (checking a schema against its meta-schema, as jsonschema.validate does
    at every call, cost 4 ms a settings object: hundreds while a study's DAG is built)."""
    import jsonschema

    entry = run_setting_schemas()[key]
    return jsonschema.validators.validator_for(entry)(entry)


class RunSettings(Mapping[str, Any]):
    """One fine-tuning run's settings, typed: each run setting of the schema's 'finetune' section once, its value
    checked against the key's schema entry, read as ``settings.precision`` or ``settings["precision"]``.

    The study makes it (task_settings), the rule passes it as a plain mapping in ``params`` (:meth:`params`), and
    the job makes it again from there, so that a key the schema declares cannot be dropped on the way, and a key it
    does not declare (a misspelling, a removed option) is refused where it appears, naming it.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        schemas = run_setting_schemas()
        unknown = sorted(set(values) - set(schemas))
        missing = sorted(set(schemas) - set(values) - set(TASK_SPECIFIC))
        if unknown or missing:
            raise ValueError("fine-tuning settings: " + "; ".join(
                [f"{', '.join(unknown)}: not a run setting of the config schema's 'finetune' section (its run "
                 f"settings: {', '.join(schemas)})"] * bool(unknown)
                + [f"{', '.join(missing)}: missing (a run is given every run setting of 'finetune')"] * bool(missing)))
        for key, value in values.items():
            if error := next(_validator(key).iter_errors(value), None):
                raise ValueError(f"fine-tuning setting {key}: {error.message}")
        object.__setattr__(self, "_values", {key: values[key] for key in sorted(values)})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # unset slots and dunder lookups (copy, pickle): not settings
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no fine-tuning setting {name!r} (the schema's 'finetune' run settings: "
                                 f"{', '.join(run_setting_schemas())})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("fine-tuning settings are read-only; make new ones with replace()")

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
        return RunSettings, (self._values,)

    @property
    def peak_learning_rate(self) -> float:
        """The optimizer's peak rate: ``lora_learning_rate`` for LoRA's updates, ``learning_rate`` for full
        fine-tuning (LoRA trains few weights from zero and needs about ten times the rate)."""
        return self._values["lora_learning_rate" if self._values["method"] == "lora" else "learning_rate"]

    def replace(self, **changes: Any) -> RunSettings:
        return RunSettings({**self._values, **changes})

    def params(self) -> dict[str, Any]:
        """The settings as a plain dict (keys sorted): what a rule's params and a checkpoint's record hold."""
        return dict(self._values)

    def __repr__(self) -> str:
        return f"RunSettings({self._values!r})"


def task_settings(finetune: dict[str, Any], task: str, model_max_length: int | None = None, *,
                  marks_target_word: bool = False) -> RunSettings:
    """The settings of ``task``'s runs: the global keys with ``per_task[task]`` on top.

    ``max_length: null`` means ``model_max_length`` (the model entry's ``max_length``). Only the
    keys that change a run's result are returned (not ``seeds``, resources or ``per_task`` itself);
    ``wic_marking`` only for a task that marks a target word (WiC).
    """
    override = (finetune.get("per_task") or {}).get(task) or {}
    settings = {key: override.get(key, finetune.get(key)) for key in run_setting_schemas()}
    if settings["max_length"] is None:
        settings["max_length"] = model_max_length
    settings["save_steps"] = sorted({int(s) for s in settings["save_steps"] or []})
    if not marks_target_word:
        for key in TASK_SPECIFIC:
            settings.pop(key)
    return RunSettings(settings)


def task_seeds(finetune: dict[str, Any], task: str) -> list[int]:
    """The seeds of ``task``'s runs: ``per_task[task].seeds``, else the global ``seeds``."""
    override = (finetune.get("per_task") or {}).get(task) or {}
    return list(override.get("seeds", finetune["seeds"]))


def checkpoint_name(task: str, seed: int, step: int | str) -> str:
    """``{task}.seed{seed}.step{step}``, or ``{task}.seed{seed}.final`` for ``step='final'``."""
    return f"{task}.seed{seed}.final" if step == "final" else f"{task}.seed{seed}.step{int(step)}"
