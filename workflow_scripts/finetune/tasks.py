"""What the study knows about a fine-tuning task, apart from training on it (METHODS 3).

The study model, the rules and the other stages (attention, surface, fine-tuning effects,
report) need a task's dev split, its labels, its display name, the names of its checkpoints
and its run settings; they import them from here, never from the training loop, so that
reading them costs no torch import and no stage depends on how a run trains.
"""

from __future__ import annotations

from typing import Any

from ..data.registry import TASK_DISPLAY_NAMES

# Keys of the 'finetune' config that change what one run computes: they are merged per task
# and passed to the rule through params:, so changing one reruns only the runs it touches.
RUN_SETTINGS = ("epochs", "batch_size", "learning_rate", "warmup_ratio", "weight_decay",
                "max_grad_norm", "max_length", "max_train_examples", "max_dev_examples",
                "save_steps", "eval_at_checkpoints", "device", "group_by_length", "wic_marking")
WIC_MARKINGS = ("none", "brackets", "prefix")
# Task names as the papers print them, in GLUE's order (figures and the report list tasks so; a
# researcher's own tasks follow under their entry names).
TASK_NAMES = TASK_DISPLAY_NAMES


def task_settings(finetune: dict[str, Any], task: str, model_max_length: int | None = None, *,
                  marks_target_word: bool = False) -> dict[str, Any]:
    """The settings of ``task``'s runs: the global keys with ``per_task[task]`` on top.

    ``max_length: null`` means ``model_max_length`` (the model entry's ``max_length``). Only the
    keys that change a run's result are returned (not ``seeds``, resources or ``per_task`` itself);
    ``wic_marking`` only for a task that marks a target word (WiC).
    """
    override = (finetune.get("per_task") or {}).get(task) or {}
    settings = {key: override.get(key, finetune.get(key)) for key in RUN_SETTINGS}
    if settings["max_length"] is None:
        settings["max_length"] = model_max_length
    settings["save_steps"] = sorted({int(s) for s in settings["save_steps"] or []})
    if not marks_target_word:
        settings.pop("wic_marking")
    return settings


def task_seeds(finetune: dict[str, Any], task: str) -> list[int]:
    """The seeds of ``task``'s runs: ``per_task[task].seeds``, else the global ``seeds``."""
    override = (finetune.get("per_task") or {}).get(task) or {}
    return list(override.get("seeds", finetune["seeds"]))


def checkpoint_name(task: str, seed: int, step: int | str) -> str:
    """``{task}.seed{seed}.step{step}``, or ``{task}.seed{seed}.final`` for ``step='final'``."""
    return f"{task}.seed{seed}.final" if step == "final" else f"{task}.seed{seed}.step{int(step)}"
