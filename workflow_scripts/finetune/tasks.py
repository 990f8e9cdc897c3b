"""What the study knows about a fine-tuning task, apart from training on it (METHODS 3).

The study model, the rules and the other stages (attention, surface, fine-tuning effects,
report) need a task's dev split, its labels, its display name, the names of its checkpoints
and its run settings; they import them from here, never from the training loop, so that
reading them costs no torch import and no stage depends on how a run trains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from ..data.registry import GLUE_TASKS, WIC_LABELS, mirror_candidates

# Keys of the 'finetune' config that change what one run computes: they are merged per task
# and passed to the rule through params:, so changing one reruns only the runs it touches.
RUN_SETTINGS = ("epochs", "batch_size", "learning_rate", "warmup_ratio", "weight_decay",
                "max_grad_norm", "max_length", "max_train_examples", "max_dev_examples",
                "save_steps", "eval_at_checkpoints", "device", "group_by_length", "wic_marking")
WIC_MARKINGS = ("none", "brackets", "prefix")
SINGLE_SENTENCE_TASKS = ("cola", "sst2")
# Task names as the papers print them, in GLUE's order (figures and the report list tasks so).
TASK_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "qqp": "QQP", "stsb": "STS-B", "mnli": "MNLI",
              "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "wic": "WiC"}


def task_settings(finetune: dict[str, Any], task: str, model_max_length: int | None = None) -> dict[str, Any]:
    """The settings of ``task``'s runs: the global keys with ``per_task[task]`` on top.

    ``max_length: null`` means ``model_max_length`` (the model entry's ``max_length``). Only the
    keys that change a run's result are returned (not ``seeds``, resources or ``per_task`` itself).
    """
    override = (finetune.get("per_task") or {}).get(task) or {}
    settings = {key: override.get(key, finetune.get(key)) for key in RUN_SETTINGS}
    if settings["max_length"] is None:
        settings["max_length"] = model_max_length
    settings["save_steps"] = sorted({int(s) for s in settings["save_steps"] or []})
    if task != "wic":
        settings.pop("wic_marking")
    return settings


def task_seeds(finetune: dict[str, Any], task: str) -> list[int]:
    """The seeds of ``task``'s runs: ``per_task[task].seeds``, else the global ``seeds``."""
    override = (finetune.get("per_task") or {}).get(task) or {}
    return list(override.get("seeds", finetune["seeds"]))


def dev_split(task: str) -> str:
    """The split GLUE reports dev scores on (MNLI: the matched one)."""
    return "dev_matched" if task == "mnli" else "dev"


def checkpoint_name(task: str, seed: int, step: int | str) -> str:
    """``{task}.seed{seed}.step{step}``, or ``{task}.seed{seed}.final`` for ``step='final'``."""
    return f"{task}.seed{seed}.final" if step == "final" else f"{task}.seed{seed}.step{int(step)}"


def label_names(task: str) -> tuple[str, ...] | None:
    """Class names by label id, or None for a regression task (STS-B)."""
    if task == "wic":
        return WIC_LABELS
    try:
        return GLUE_TASKS[task].labels
    except KeyError:
        raise AtlasError(f"unknown task {task!r}; known: {', '.join([*GLUE_TASKS, 'wic'])}") from None


def mirror_files(task: str, split: str, mirror: str | Path | None) -> str:
    """The mirror files that could provide ``task``/``split``, for messages."""
    return " or ".join(str(Path(mirror or ".") / rel) for files in mirror_candidates(task, split) for rel in files)
