"""The fine-tuning stage's plan: which tasks are fine-tuned (``finetune.tasks``) and the runs, one per
(model, task, seed); ``chosen_tasks`` is shared with the fine-tuning effects' plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ...core.errors import ConfigError
from ...core.schema import section_properties
from ...core.subjects import base_model
from ...core.table_names import FINETUNE_METRICS
from ...finetune.tasks import checkpoint_name, task_seeds
from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "finetune"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Fine-tuning"


def no_finetuning(study: Study) -> str:
    """Why the study has no fine-tuning metrics (the report says it)."""
    return ("the study fine-tunes no model (study.tasks, finetune.tasks; offline: only tasks whose train split the "
            "mirror holds)")


ANALYSES = (Analysis(FINETUNE_METRICS, "(model, task, seed)", tables=(FINETUNE_METRICS,),
                     captions=("finetune_metrics.rst",), absent_because=no_finetuning),)
ROLES_KEY = "roles.finetuned"


def role_analyses() -> tuple[str, ...]:
    """The per-head analyses a fine-tuned checkpoint can be a subject of (roles.finetuned, docs/roles.md), in the
    order of the schema's list of them."""
    entry = section_properties("roles")["finetuned"]["items"]["properties"]["analyses"]
    return tuple(entry["items"]["enum"])


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
    return Plan(study=study, tasks=tasks, runs=runs, role_checkpoints=role_checkpoints(study, runs),
                outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)] if runs else [])


def role_checkpoints(study: Study, runs: list[tuple[str, str, int]]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(model, fine-tuned checkpoint) -> the per-head analyses roles.finetuned gives it (the schema's order), in
    the order of the runs and of each run's checkpoints (its steps, then final). A selector that names no checkpoint
    the study saves is an error naming the key; one run's checkpoint of a task the study left out is a note."""
    saved = {}
    for model, task, seed in runs:
        steps = study.finetune_settings(task, model)["save_steps"]
        for step in [*steps, "final"]:
            saved[model, checkpoint_name(task, seed, step)] = "final" if step == "final" else f"step{step}"
    chosen: dict[tuple[str, str], set[str]] = {}
    for index, entry in enumerate(study.config["roles"]["finetuned"]):
        for selector in entry["checkpoints"]:
            found = [key for key, kind in saved.items() if selector in (kind, key[1])]
            if not found and runs:
                _unmatched(study, f"{ROLES_KEY}[{index}].checkpoints", selector, saved, runs)
            for key in found:
                chosen.setdefault(key, set()).update(entry["analyses"])
    order = role_analyses()
    return {key: tuple(a for a in order if a in chosen[key]) for key in saved if chosen.get(key)}


def _unmatched(study: Study, key: str, selector: str, saved: dict, runs: list) -> None:
    task = selector.split(".", 1)[0]
    if "." in selector and task in study.config["study"]["tasks"] and task not in {t for _, t, _ in runs}:
        study.notes.append(f"{key}: {selector!r} is left out: the study does not fine-tune {task!r}")
        return
    names = ", ".join(sorted({checkpoint for _, checkpoint in saved}))
    raise ConfigError(f"config key '{key}': {selector!r} names no checkpoint the study saves (its fine-tuning runs "
                      f"save {names}); name one of them, 'final', or a step of 'finetune.save_steps'")


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The fine-tuning stage's plan (``STUDY.finetune``), with the params functions of rules/finetune.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    tasks: list[str]                      # the fine-tuned tasks
    runs: list[tuple[str, str, int]]      # (model, task, seed)
    # (model, fine-tuned checkpoint) -> its per-head analyses (roles.finetuned): the subjects of the role atlas
    role_checkpoints: dict[tuple[str, str], tuple[str, ...]]

    def role_analysed(self, analysis: str) -> list[tuple[str, str]]:
        """(model, fine-tuned checkpoint) of every checkpoint roles.finetuned gives ``analysis``."""
        return [key for key, analyses in self.role_checkpoints.items() if analysis in analyses]

    def settings(self, task: str):
        """A params function: the task's run settings for the job's model (its max_length when null)."""
        return lambda wc: self.study.finetune_settings(task, wc.model).params()

    def finetuned_checkpoints(self, model: str, tasks: list[str] | None = None, final_only: bool = False) -> list[str]:
        """Names of the fine-tuned checkpoints of ``model``, in training order per run: each step, then final."""
        names = []
        for m, task, seed in self.runs:
            if m != base_model(model) or (tasks is not None and task not in tasks):
                continue
            steps = [] if final_only else self.study.finetune_settings(task)["save_steps"]
            names += [checkpoint_name(task, seed, step) for step in [*steps, "final"]]
        return names
