"""The study model: what the DAG builds, computed once from the validated config.

``build_study(config)`` (build.py: every stage's plan run on one Study) answers every question a rule
file asks: which corpora and splits exist,
which models and checkpoints, which fine-tuning runs, which attention dumps, what each analysis
stage runs and on what, which tables the report reads and why the others are absent, and the
final outputs (``rule all``). It is plain Python with no Snakemake inside, so the study's shape is
unit-tested (tests/study/test_model.py): "adding rte to study.tasks adds exactly these outputs".

Each stage's plan is a module of workflow_scripts/study/plans/ (``plan(study)`` and the stage's declared
``ANALYSES``), run in the order of :data:`STAGES`; ``plan(study)`` returns the stage's frozen ``Plan``, made from the
config and from the plans before it (``study.stage(NAME)`` refuses a stage not planned yet). This module holds the
Study, which keeps what every stage shares and the plans, and the views the plans share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..attention.shards import shard_groups
from ..core.errors import ConfigError
from ..core.stages import STAGES
from ..core.subjects import base_model, subject_name
from ..data.corpora import WINDOW_SUFFIX, Corpora
from ..data.entries import TaskSpec
from ..finetune.tasks import RunSettings, task_settings
from .checks import selected_corpora, selected_splits
from .checks.path_names import path_name_problems
from .paths import ResultPaths
from .plans.declarations import StagePlan


@dataclass
class Study:
    """Everything the DAG needs to know about one study (see the module docstring).

    It holds what every stage shares; each stage's frozen plan is ``study.stage(NAME)``, or ``study.NAME`` (the
    rules read ``STUDY.surface.dump``, ``STUDY.finetune.runs``), except the models stage's plan, which only
    ``stage("models")`` reads: ``study.models`` is the study's list of models.
    """

    config: Mapping[str, Any]
    paths: ResultPaths
    corpora: Corpora                          # every treebank and task entry, by name
    splits: dict[str, list[str]]              # corpus -> the splits the study builds
    notes: list[str] = field(default_factory=list)  # what was left out and why (logged by the Snakefile)
    # Each stage's plan, in the order of STAGES, as build.build_study makes them (add_plan).
    plans: dict[str, StagePlan] = field(default_factory=dict)

    def stage(self, name: str) -> StagePlan:
        """The plan of stage ``name``; refused while that stage is not planned yet, so that a plan reads only the
        plans of the stages before it."""
        if name not in STAGES:
            raise KeyError(f"{name!r} is not a stage of the study (core/stages.py: {', '.join(STAGES)})")
        if name not in self.plans:
            planned = ", ".join(self.plans) or "none"
            raise LookupError(f"the {name} stage is not planned yet (planned: {planned}); a plan reads only the "
                              "plans of the stages before it in STAGES (core/stages.py)")
        return self.plans[name]

    def add_plan(self, name: str, plan: StagePlan) -> None:
        """Record the plan of the next stage (build.build_study, in the order of STAGES)."""
        expected = STAGES[len(self.plans)]
        if name != expected:
            raise LookupError(f"the {name} stage is planned out of order: the next stage is {expected}")
        self.plans[name] = plan

    def __getattr__(self, name: str) -> Any:
        # Only reached when no attribute is found: a stage's name reads its plan (``STUDY.surface``).
        if name in STAGES and "plans" in self.__dict__:
            return self.stage(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- simple views --------------------------------------------------------------------------------------

    @property
    def results(self) -> str:
        return self.paths.root

    @property
    def offline(self) -> bool:
        return bool(self.config["offline"])

    @property
    def mirror(self) -> str | None:
        return self.config["mirror"]

    @property
    def models(self) -> list[str]:
        return list(self.config["study"]["models"])

    @property
    def subjects(self) -> list[str]:
        """What the analyses run on: each model through each of attention.signals (docs/signals.md), the
        model's name for the attention weights, MODEL@SIGNAL for another signal."""
        return [subject_name(model, signal) for model in self.models for signal in self.config["attention"]["signals"]]

    @property
    def shard_groups(self) -> list[str]:
        """The ``shard_group`` wildcard's values: the shards each job of the analyses that sum over a dump's
        examples reads, attention.analysis_shards_per_job consecutive shards per job (shards.shard_groups)."""
        attention = self.config["attention"]
        return shard_groups(attention["num_shards"], attention["analysis_shards_per_job"])

    def task_spec(self, task: str) -> TaskSpec:
        return self.corpora.tasks[task]

    def dev_split(self, task: str) -> str:
        """The split a task's fine-tuned models are scored on and its effects analysed (MNLI: dev_matched)."""
        return self.corpora.tasks[task].dev_split

    @property
    def treebank_corpora(self) -> list[str]:
        """Corpora with gold words, fed under attention.input_protocol: the treebanks and their windows."""
        return [*self.corpora.treebanks, *(name + WINDOW_SUFFIX for name in self.corpora.treebanks)]

    def model_dtype(self, subject: str) -> str:
        """The weights' type of a subject's model in its forward-only passes (the entry's ``dtype``)."""
        return self.config["models"][base_model(subject)]["dtype"]

    def finetune_settings(self, task: str, model: str | None = None) -> RunSettings:
        """A task's run settings ('finetune' with 'finetune.per_task.{task}' on top); max_length null means
        the model entry's max_length."""
        model_max = self.config["models"][model].get("max_length") if model else None
        return task_settings(self.config["finetune"], task, model_max,
                             marks_target_word=self.corpora.tasks[task].reader == "wic")

    @property
    def syntax_treebank(self) -> str:
        """The labelled treebank the paper comparison and the summary read (the first of syntax.treebanks)."""
        targets = {treebank for _, _, treebank in self.stage("syntax").targets}
        analysed = [treebank for treebank in self.config["syntax"]["treebanks"] if treebank in targets]
        labelled = [t for t in analysed if self.corpora.treebanks[t].labelled]
        return (labelled or analysed or ["ewt"])[0]

    def outputs(self) -> list[str]:
        """The final outputs of the study (rule all), stage by stage: of the stages planned so far while planning."""
        return [path for plan in self.plans.values() for path in plan.outputs]


def new_study(config: Mapping[str, Any]) -> Study:
    """The study of a validated config before any stage has planned its part (build.build_study plans them);
    raises ConfigError naming the key and the fix."""
    # check_schema refused these already; here too, so that no caller can plan a path outside its folder.
    unsafe = path_name_problems(dict(config))
    if unsafe:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p.message}" for p in unsafe))
    corpora = Corpora(dict(config))
    splits = {corpus: selected_splits(dict(config), corpus, corpora) for corpus in selected_corpora(dict(config))}
    for corpus, found in splits.items():
        if not found:
            raise ConfigError(f"corpus {corpus!r}: no split is available offline in the mirror {config['mirror']}")
    return Study(config=config, paths=ResultPaths(config["results"]), corpora=corpora, splits=splits)
