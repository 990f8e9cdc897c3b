"""The fine-tuning effects' plan ([K] pattern classes and change, [L] lexical categories): which tasks' dev inputs
are analysed (``finetune_effects.tasks``) and at which checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.table_names import (
    FINETUNE_CHANGE,
    LEXICAL_CHANGE,
    LEXICAL_HEADS,
    LEXICAL_LAST_LAYER,
    LEXICAL_LAYERS,
    LEXICAL_TOP_LAYERS,
    PATTERN_CLASSES,
    PATTERN_CLASSIFIER,
)
from .declarations import Analysis, StagePlan, declared_figures, declared_tables
from .finetune import chosen_tasks

if TYPE_CHECKING:
    from ..model import Study

STAGE = "finetune_effects"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Fine-tuning effects"
PER_TARGET = "(subject, checkpoint, task) of the task's dev dump"


def no_effects(study: Study) -> str:
    """Why the study has no fine-tuning effects (the report says it)."""
    return "the study analyses no task's dev inputs (study.tasks, finetune_effects.tasks)"


# The fine-tuning change's trajectory figure, by this name in its rule (rules/finetune_effects.smk) too.
TRAJECTORY_FIGURE = "trajectory"
ANALYSES = (
    Analysis(PATTERN_CLASSES, PER_TARGET, tables=(PATTERN_CLASSES,), figures=(PATTERN_CLASSES,),
             captions=("finetune_effects_pattern_classes_table.rst", "finetune_effects_pattern_classes.rst"),
             stack_key=("model", "task", "checkpoint", "class"), absent_because=no_effects),
    Analysis(PATTERN_CLASSIFIER, "subject: its pattern CNN, scored on the subject's parts",
             tables=(PATTERN_CLASSIFIER,),
             captions=("finetune_effects_pattern_classifier.rst",), stack_key=("model", "classifier", "evaluated_on"),
             absent_because=no_effects),
    Analysis(FINETUNE_CHANGE, PER_TARGET, tables=(FINETUNE_CHANGE,), figures=(FINETUNE_CHANGE, TRAJECTORY_FIGURE),
             captions=("finetune_effects_change_table.rst", "finetune_effects_change.rst",
                       "finetune_effects_trajectory.rst"), explorer_tables=(FINETUNE_CHANGE,),
             stack_key=("model", "task", "checkpoint", "layer", "head")),
    Analysis("lexical", PER_TARGET,
             tables=(LEXICAL_LAYERS, LEXICAL_HEADS, LEXICAL_CHANGE, LEXICAL_LAST_LAYER, LEXICAL_TOP_LAYERS),
             figures=(LEXICAL_LAYERS,),
             captions=("finetune_effects_lexical_layers.rst", "finetune_effects_lexical_heads.rst",
                       "finetune_effects_lexical_change.rst", "finetune_effects_lexical_last_layer.rst",
                       "finetune_effects_lexical_top_layers.rst", "finetune_effects_lexical.rst"),
             explorer_tables=(LEXICAL_HEADS,), absent_because=no_effects),
)


def plan(study: Study) -> Plan:
    tasks = chosen_tasks(study, STAGE, lambda t: (study.dev_split(t),), "analysed")
    outputs = ([study.paths.table(name) for name in declared_tables(ANALYSES)]
               + study.paths.figures(STAGE, declared_figures(ANALYSES)) if tasks else [])
    return Plan(study=study, tasks=tasks, outputs=outputs)


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The fine-tuning effects' plan (``STUDY.finetune_effects``), with the input and params
    functions of rules/finetune_effects.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    tasks: list[str]                          # the tasks whose dev inputs are analysed

    @cached_property
    def targets(self) -> list[tuple[str, str, str]]:
        """(subject, checkpoint, task) of every part: each subject on each task at :meth:`effects_checkpoints`."""
        return [(m, c, t) for m in self.study.subjects for t in self.tasks for c in self.effects_checkpoints(m, t)]

    def effects_checkpoints(self, model: str, task: str) -> list[str]:
        """pretrained, then the task's fine-tuned checkpoints in order (final only without trajectory)."""
        names = ["pretrained"]
        finetune = self.study.finetune
        if task in finetune.tasks:
            trajectory = self.study.config[STAGE]["trajectory"]
            names += finetune.finetuned_checkpoints(model, [task], final_only=not trajectory)
        return names

    @property
    def pretrained_only(self) -> list[str]:
        """Tasks analysed with the pretrained checkpoint only: the study fine-tunes nothing on them."""
        return [t for t in self.tasks if t not in self.study.finetune.tasks]

    def pairs(self, model: str) -> list[tuple[str, str]]:
        """(checkpoint, task) of every fine-tuning-effects part of ``model``."""
        return [(c, t) for m, c, t in self.targets if m == model]

    def stacked_parts(self, wc: Any) -> list[str]:
        """The parts a stacked table (``table`` wildcard) stacks: the classifier's one per subject, the others' one per
        (subject, checkpoint, task), the fine-tuned checkpoints' alone for the change after fine-tuning."""
        if wc.table == PATTERN_CLASSIFIER:
            return [self.model_file(subject, f"{PATTERN_CLASSIFIER}.csv") for subject in self.study.subjects]
        return [self.part(m, c, t, f"{wc.table}.csv") for m, c, t in self.targets
                if not (wc.table == FINETUNE_CHANGE and c == "pretrained")]

    def part(self, model: str, checkpoint: str, task: str, name: str) -> str:
        """A file of the effects stage that belongs to a (model, checkpoint, task): the parts its tables stack."""
        return self.paths.analysis(STAGE, model, checkpoint, task, name)

    def model_file(self, model: str, name: str) -> str:
        """A file of the effects stage that belongs to a model (the pattern CNN and its labels)."""
        return self.paths.analysis(STAGE, model, name)

    def dump(self, wc: Any) -> dict[str, str]:
        """Checkpoint, dump and token table of a task's dev inputs (``corpus`` is the task)."""
        split = self.study.dev_split(wc.corpus)
        return {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "dump": self.paths.dump_manifest(wc.model, wc.checkpoint, wc.corpus, split),
            "tokens": self.paths.token_table(wc.model, wc.corpus, split),
        }

    def pattern_classes(self, wc: Any) -> dict[str, str]:
        """The rule labeller reads the features; the CNN classifier also the dump and the trained CNN."""
        inputs = {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "features": self.part(wc.model, wc.checkpoint, wc.corpus, "pattern_features.parquet"),
        }
        if self.study.config[STAGE]["classifier"] == "cnn":
            inputs.update(self.dump(wc))
            # Weights in safetensors and their JSON description: neither can run code when read (docs/security.md).
            inputs["cnn"] = self.model_file(wc.model, "pattern_cnn.safetensors")
            inputs["cnn_info"] = self.model_file(wc.model, "pattern_cnn.json")
        return inputs

    def pattern_cnn(self, wc: Any) -> dict[str, Any]:
        """The seeded labels, every dump and token table of the model's parts, and the human labels if any."""
        pairs = self.pairs(wc.model)
        inputs: dict[str, Any] = {
            "seeded": self.model_file(wc.model, "pattern_labels_seed.csv"),
            "dumps": [self.paths.dump_manifest(wc.model, c, t, self.study.dev_split(t)) for c, t in pairs],
            "tokens": [self.paths.token_table(wc.model, t, self.study.dev_split(t)) for c, t in pairs],
        }
        human = self.study.config[STAGE]["human_labels"]
        if human:
            inputs["human"] = human
        return inputs

    def pattern_label_features(self, wc: Any) -> list[str]:
        return [self.part(wc.model, c, t, "pattern_features.parquet") for c, t in self.pairs(wc.model)]

    def model_pairs(self, wc: Any) -> list[list[str]]:
        """A params function: [checkpoint, task] of every part of the job's model (:meth:`pairs`)."""
        return [list(p) for p in self.pairs(wc.model)]

    def pretrained_dump(self, wc: Any) -> str:
        """The dump of the pretrained checkpoint of the job's model on its task's dev inputs (``corpus``: the task)."""
        return self.paths.dump_manifest(wc.model, "pretrained", wc.corpus, self.study.dev_split(wc.corpus))

    def dev_annotation(self, wc: Any) -> str:
        """The annotation of the job's task's dev inputs (``corpus``: the task)."""
        return self.paths.annotation(wc.corpus, self.study.dev_split(wc.corpus))
