"""The study model's section of the head explorer (stage ``explorer``): what each model's page reads.

Kept beside model.py rather than in it (model.py calls :func:`plan_explorer` last): the explorer reads the
results of every analysis stage, so its plan is the longest and the only one that looks at all of them.

A page reads the per-head tables the study produces (``EXPLORER_TABLES``), the pattern features of each
analysed task at the pretrained and the final fine-tuned checkpoint (first seed), and the dumps of a few
example inputs: a fine-tuned and analysed task's dev inputs before and after fine-tuning (``explorer.task``,
by default the first such task), else the syntax treebank's score split, pretrained only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError

if TYPE_CHECKING:
    from .model import Study

STAGE = "explorer"
PRETRAINED = "pretrained"
# Every study table with one row per head (and the models' shapes) that the page shows, where the study has it.
EXPLORER_TABLES = ("models", "surface_heads", "attention_distance", "head_clusters", "dependency_heads",
                   "coref_heads", "finetune_change", "lexical_heads")


@dataclass
class ExplorerPlan:
    tables: dict[str, str] = field(default_factory=dict)  # table name -> path, the ones the study produces
    corpus: str | None = None       # the example inputs' corpus and split (None: the page draws no maps)
    split: str | None = None
    task: str | None = None         # the task fine-tuned on, whose final checkpoint is drawn beside pretrained


def plan_explorer(study: Study) -> None:
    """Set ``study.explorer`` and the stage's outputs (one page per model)."""
    planned = set(study.outputs())
    plan = ExplorerPlan(tables={name: study.paths.table(name) for name in EXPLORER_TABLES
                                if study.paths.table(name) in planned})
    plan.corpus, plan.split, plan.task = _example_source(study)
    study.explorer = plan
    study.stage_outputs[STAGE] = [study.paths.page(STAGE, model) for model in study.models]


def _example_source(study: Study) -> tuple[str | None, str | None, str | None]:
    chosen = study.config[STAGE]["task"]
    candidates = [t for t in study.effects_tasks if t in study.finetune_tasks]
    if chosen is not None:
        if chosen not in candidates:
            raise ConfigError(f"config key 'explorer.task': {chosen!r} is not a task the study fine-tunes and "
                              f"analyses ({', '.join(candidates) or 'none'}); name one of those or set it to null")
        return chosen, study.dev_split(chosen), chosen
    if candidates:
        return candidates[0], study.dev_split(candidates[0]), candidates[0]
    pretrained = [(corpus, split) for _, checkpoint, corpus, split in study.dumps if checkpoint == PRETRAINED]
    preferred = (study.syntax_treebank, study.config["syntax"]["score_split"])
    for corpus, split in [preferred, *pretrained]:
        if (corpus, split) in pretrained:
            return corpus, split, None
    return None, None, None


def final_checkpoint(study: Study, model: str, task: str) -> str | None:
    """The task's final fine-tuned checkpoint of ``model`` (first seed), None where the study fine-tunes none."""
    names = study.finetuned_checkpoints(model, [task], final_only=True)
    return names[0] if names else None


def pattern_parts(study: Study, model: str) -> list[tuple[str, str, str]]:
    """(checkpoint, task, pattern_features.parquet) at the pretrained and final checkpoints of each analysed task."""
    parts = []
    for task in study.effects_tasks:
        for checkpoint in (PRETRAINED, final_checkpoint(study, model, task)):
            if checkpoint is not None and (model, checkpoint, task) in study.effects_targets:
                parts.append((checkpoint, task, study.paths.analysis("finetune_effects", model, checkpoint, task,
                                                                     "pattern_features.parquet")))
    return parts


def example_checkpoints(study: Study, model: str) -> list[tuple[str, str]]:
    """(checkpoint, label) whose maps are drawn side by side: pretrained, and the task's final checkpoint."""
    plan = study.explorer
    if plan.corpus is None:
        return []
    pairs = [(PRETRAINED, PRETRAINED)]
    final = final_checkpoint(study, model, plan.task) if plan.task else None
    if final is not None:
        pairs.append((final, f"fine-tuned on {plan.task}"))
    return pairs


def explorer_inputs(study: Study, model: str) -> dict[str, Any]:
    """Named inputs of a model's page: the tables, the pattern features, the example dumps and token table."""
    plan = study.explorer
    inputs: dict[str, Any] = dict(plan.tables)
    inputs["patterns"] = [path for _, _, path in pattern_parts(study, model)]
    checkpoints = example_checkpoints(study, model)
    inputs["example_dumps"] = [study.paths.dump_manifest(model, c, plan.corpus, plan.split) for c, _ in checkpoints]
    if checkpoints:
        inputs["example_tokens"] = study.paths.token_table(model, plan.corpus, plan.split)
    return inputs


def explorer_layout(study: Study, model: str) -> dict[str, Any]:
    """How a model's page's input files line up: the (checkpoint, task) of each pattern features file, the
    (checkpoint, label) of each example dump, and the examples' corpus and split."""
    plan = study.explorer
    return {"pattern_parts": [[c, t] for c, t, _ in pattern_parts(study, model)],
            "example_checkpoints": [list(pair) for pair in example_checkpoints(study, model)],
            "corpus": plan.corpus, "split": plan.split}
