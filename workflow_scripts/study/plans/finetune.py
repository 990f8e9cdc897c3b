"""The fine-tuning stage's plan: which tasks are fine-tuned (``finetune.tasks``) and the runs, one per
(model, task, seed); ``chosen_tasks`` is shared with the fine-tuning effects' plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.errors import ConfigError
from ...finetune.tasks import task_seeds
from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "finetune"
ANALYSES = (Analysis("finetune_metrics", "(model, task, seed)", tables=("finetune_metrics",),
                     captions=("finetune_metrics.rst",)),)


def chosen_tasks(study: Study, section: str, needs, what: str) -> list[str]:
    """The study tasks a stage runs: ``{section}.tasks: null`` takes those whose splits exist (a note
    for the others), a list must name study tasks whose splits exist (an error otherwise)."""
    requested = study.config[section]["tasks"]
    study_tasks = list(study.config["study"]["tasks"])
    chosen = []
    for task in study_tasks if requested is None else requested:
        if task not in study_tasks:
            raise ConfigError(f"config key '{section}.tasks': {task!r} is not one of 'study.tasks' "
                              f"({', '.join(study_tasks)}); add it there or remove it here")
        missing = [s for s in needs(task) if s not in study.splits.get(task, [])]
        if not missing:
            chosen.append(task)
            continue
        why = f"the study builds no {missing[0]} split for it"
        candidates = study.corpora.mirror_candidates(task, missing[0])
        if study.config["offline"] and candidates:
            files = " or ".join(f"{study.config['mirror']}/{rel}" for files in candidates for rel in files)
            why += f": offline, the mirror holds no {files}"
        if requested is not None:
            raise ConfigError(f"config key '{section}.tasks': task {task!r} cannot be {what}: {why}; remove it "
                              f"from '{section}.tasks', point 'mirror' at a copy that holds that file, or set "
                              "'offline: false' to download it")
        study.notes.append(f"{section}: task {task!r} is left out: {why} (list it in '{section}.tasks' to make "
                           "this an error)")
    return chosen


def plan(study: Study) -> Plan:
    tasks = chosen_tasks(study, STAGE, lambda t: ("train", study.dev_split(t)), "fine-tuned")
    runs = [(model, task, seed) for model in study.models for task in tasks
            for seed in task_seeds(study.config[STAGE], task)]
    return Plan(study=study, tasks=tasks, runs=runs,
                outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)] if runs else [])


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The fine-tuning stage's plan (``STUDY.finetune``), with the params functions of rules/finetune.smk."""

    tasks: list[str]                      # the fine-tuned tasks
    runs: list[tuple[str, str, int]]      # (model, task, seed)

    def settings(self, task: str):
        """A params function: the task's run settings for the job's model (its max_length when null)."""
        return lambda wc: self.study.finetune_settings(task, wc.model).params()
