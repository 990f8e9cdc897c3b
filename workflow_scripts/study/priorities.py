"""The long pole first: Snakemake's job priorities from what the plan knows of the fine-tuning runs' cost.

The offline study took 48.3 min on 2 cores with 1.51 of them busy: ``finetune_rte`` alone ran 17.1 min and started
after shorter jobs, although its cost was known before any job ran. Snakemake's schedulers (greedy and ILP alike) run
the ready jobs of highest priority first, so each job gets the priority of the fine-tuning run it leads to or follows:

- a fine-tuning run's cost is the tokens it trains on: its training examples (after ``max_train_examples``) x epochs
  x the tokens of an example (the measured mean of the task's inputs where the plan has one, capped at the run's
  max_length; the max_length otherwise). Runs are ranked by cost: the costliest gets the highest priority, runs of
  equal cost the same;
- what a run waits for gets that run's priority (its task's data tables; the model's card and pretrained
  checkpoint: the most of its model's runs), and so does what waits for it (every job on one of its checkpoints:
  dumps, the analyses of the fine-tuning effects, head disabling);
- every other job has priority 0.

Priorities order jobs only: no job's inputs, params or outputs change, so no result does (the tables of a run
are equal whatever the order; tests/study/test_priorities.py, and docs/configuration.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.errors import AtlasError
from ..core.subjects import base_model
from ..models.checkpoints import parse_checkpoint_name
from .estimates.sizes import MEAN_T2, split_size

if TYPE_CHECKING:
    from .model import Study

# The wildcards that name what a job is about, in the order they are read.
CHECKPOINT_WILDCARD, MODEL_WILDCARD = "checkpoint", "model"
TASK_WILDCARDS = ("task", "corpus")


def tokens_per_example(study: Study, task: str, max_length: int | None) -> float | None:
    """The mean tokens of a task's input where the plan has measured it (the root of its mean T^2, measured on its dev
    split: sizes.MEAN_T2), capped at ``max_length``; ``max_length`` otherwise."""
    spec = study.corpora.tasks[task]
    name = spec.source["task"] if spec.reader == "glue" else spec.reader
    mean_t2 = MEAN_T2.get((spec.reader, name, study.dev_split(task)))
    if mean_t2 is None:
        return float(max_length) if max_length else None
    return min(math.sqrt(mean_t2), max_length or math.inf)


def finetune_cost(study: Study, model: str, task: str) -> float:
    """Tokens a fine-tuning run of ``model`` on ``task`` trains on (infinite where its size is unknown: a run the
    plan cannot size may be the longest)."""
    settings = study.finetune_settings(task, model)
    examples = split_size(study, task, "train")[0]
    tokens = tokens_per_example(study, task, settings["max_length"])
    if examples is None or tokens is None:
        return math.inf
    return min(examples, settings["max_train_examples"] or examples) * settings["epochs"] * tokens


class JobPriorities:
    """Each job's priority (the rules' ``priority``, set for every rule by the Snakefile)."""

    def __init__(self, study: Study) -> None:
        costs = {(model, task): finetune_cost(study, model, task)
                 for model, task, _seed in study.finetune.runs}
        ranks = {cost: rank for rank, cost in enumerate(sorted(set(costs.values())), start=1)}
        self.runs = {pair: ranks[cost] for pair, cost in costs.items()}
        self.tasks = {task: max(p for (_, t), p in self.runs.items() if t == task) for _, task in self.runs}
        self.models = {model: max(p for (m, _), p in self.runs.items() if m == model) for model, _ in self.runs}

    def of_run(self, model: str, task: str) -> int:
        """A fine-tuning run's priority (0 for a run the study does not make)."""
        return self.runs.get((base_model(model), task), 0)

    def of_job(self, wildcards: Any) -> int:
        """A job's priority from its wildcards: its checkpoint's run where it names a fine-tuned checkpoint, its
        fine-tuned task's (with the model: its run's) where it names a task or corpus, its model's where it names
        only a model."""
        names = dict(wildcards.items()) if hasattr(wildcards, "items") else dict(vars(wildcards))
        model = names.get(MODEL_WILDCARD)
        if CHECKPOINT_WILDCARD in names:
            try:
                info = parse_checkpoint_name(names[CHECKPOINT_WILDCARD])
            except AtlasError:  # not a checkpoint of this study's naming: no run's
                return 0
            if info["kind"] != "finetuned":
                return 0
            return self.of_run(model, info["task"]) if model else self.tasks.get(info["task"], 0)
        for key in TASK_WILDCARDS:
            if key in names:
                return self.of_run(model, names[key]) if model else self.tasks.get(names[key], 0)
        if model is not None and set(names) == {MODEL_WILDCARD}:
            return self.models.get(base_model(model), 0)
        return 0

    def for_rule(self, name: str) -> int | Callable[[Any], int]:
        """What a rule's ``priority`` is set to: a fine-tuning rule's (``finetune_{task}``) its run's, any other's
        :meth:`of_job` of its job's wildcards."""
        task = name.removeprefix("finetune_")
        if name.startswith("finetune_") and task in self.tasks:
            return lambda wildcards: self.of_run(wildcards.model, task)
        return self.of_job
