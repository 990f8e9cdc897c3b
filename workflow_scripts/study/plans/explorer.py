"""The head explorer's plan (stage ``explorer``): what each model's page reads.

The explorer reads the results of every analysis stage, so it plans last. A page reads the per-head tables that
the earlier stages' plans declare for it (``Analysis.explorer_tables``) and the study produces, with the per-head
columns they declare for its grid (``Analysis.explorer_measures``: the head measures, the head diagnostics); the
pattern features of each analysed task at the pretrained and the final fine-tuned checkpoint (first seed); and the
dumps of a few example inputs: a fine-tuned and analysed task's dev inputs before and after fine-tuning
(``explorer.task``, by default the first such task), else the syntax treebank's score split, pretrained only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.errors import ConfigError
from ...core.table_names import ATLAS, MODELS, ROLE_AGREEMENT
from . import stage_plans
from .declarations import Analysis, StagePlan, analysis_named

if TYPE_CHECKING:
    from ..model import Study

STAGE = "explorer"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Head explorer"
PRETRAINED = "pretrained"
INDEX = "_index"
# The report's tables the index (the atlas page) draws, those the study plans.
ATLAS_TABLES = (ATLAS, ROLE_AGREEMENT)
PAGES, INDEX_PAGE = "head_explorer", "explorer_index"
ANALYSES = (
    Analysis(PAGES, "model", pages=("{model}",), captions=("explorer_head_explorer.rst",)),
    # The index lists every model's page ("_index": no model name starts with an underscore).
    Analysis(INDEX_PAGE, "the study", pages=(INDEX,), captions=("explorer_index.rst",)),
)


def explorer_tables() -> list[str]:
    """Every table the earlier stages declare for the explorer, in stage order."""
    return [table for plan in stage_plans(before=STAGE) for analysis in plan.ANALYSES
            for table in analysis.explorer_tables]


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """What every model's explorer page reads (``STUDY.explorer``), with the input and params functions of
    rules/explorer.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    tables: dict[str, str] = field(default_factory=dict)  # table name -> path, the ones the study produces
    measures: list[dict[str, object]] = field(default_factory=list)  # ExplorerMeasure.as_params() of its tables
    corpus: str | None = None       # the example inputs' corpus and split (None: the page draws no maps)
    split: str | None = None
    task: str | None = None         # the task fine-tuned on, whose final checkpoint is drawn beside pretrained

    def page(self, wc: Any) -> dict[str, Any]:
        """The tables, pattern features, example dumps and token table of the model's page."""
        return explorer_inputs(self.study, wc.model)

    def index(self, wc: Any) -> dict[str, str]:
        """The models table and the atlas's tables the study plans (the index reads those it is given)."""
        return index_inputs(self.study)

    def layout(self, wc: Any) -> dict[str, Any]:
        """A params function: how the page's input files line up (checkpoints, tasks, the examples' corpus)."""
        return explorer_layout(self.study, wc.model)


def plan(study: Study) -> Plan:
    """What the pages read, and the stage's outputs (one page per model, and the index)."""
    planned = set(study.outputs())
    tables = {name: study.paths.table(name) for name in explorer_tables() if study.paths.table(name) in planned}
    measures = [measure.as_params() for plan in stage_plans(before=STAGE) for analysis in plan.ANALYSES
                for measure in analysis.explorer_measures if measure.table in tables]
    corpus, split, task = _example_source(study)
    pages = [study.paths.page(STAGE, page.format(model=model))
             for model in study.models for page in analysis_named(ANALYSES, PAGES).pages]
    index = [study.paths.page(STAGE, page) for page in analysis_named(ANALYSES, INDEX_PAGE).pages]
    return Plan(study=study, tables=tables, measures=measures, corpus=corpus, split=split, task=task,
                outputs=[*pages, *index] if pages else [])


def _example_source(study: Study) -> tuple[str | None, str | None, str | None]:
    chosen = study.config[STAGE]["task"]
    candidates = [t for t in study.finetune_effects.tasks if t in study.finetune.tasks]
    if chosen is not None:
        if chosen not in candidates:
            raise ConfigError(f"config key 'explorer.task': {chosen!r} is not a task the study fine-tunes and "
                              f"analyses ({', '.join(candidates) or 'none'}); name one of those or set it to null")
        return chosen, study.dev_split(chosen), chosen
    if candidates:
        return candidates[0], study.dev_split(candidates[0]), candidates[0]
    pretrained = [(corpus, split) for _, checkpoint, corpus, split in study.attention.dumps
                  if checkpoint == PRETRAINED]
    preferred = (study.syntax_treebank, study.config["syntax"]["score_split"])
    for corpus, split in [preferred, *pretrained]:
        if (corpus, split) in pretrained:
            return corpus, split, None
    return None, None, None


def final_checkpoint(study: Study, model: str, task: str) -> str | None:
    """The task's final fine-tuned checkpoint of ``model`` (first seed), None where the study fine-tunes none."""
    names = study.stage("finetune").finetuned_checkpoints(model, [task], final_only=True)
    return names[0] if names else None


def pattern_parts(study: Study, model: str) -> list[tuple[str, str, str]]:
    """(checkpoint, task, pattern_features.parquet) at the pretrained and final checkpoints of each analysed task."""
    parts = []
    effects = study.finetune_effects
    for task in effects.tasks:
        for checkpoint in (PRETRAINED, final_checkpoint(study, model, task)):
            if checkpoint is not None and (model, checkpoint, task) in effects.targets:
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
    (checkpoint, label) of each example dump, the examples' corpus and split, and the declared head measures the
    grid shows (their table, label and unit; the key is absent when there are none)."""
    plan = study.explorer
    layout = {"pattern_parts": [[c, t] for c, t, _ in pattern_parts(study, model)],
              "example_checkpoints": [list(pair) for pair in example_checkpoints(study, model)],
              "corpus": plan.corpus, "split": plan.split}
    if plan.measures:
        layout["measures"] = plan.measures
    return layout


def index_inputs(study: Study) -> dict[str, str]:
    """Named inputs of the index, the study's atlas page: the models table, and tables/atlas.csv and
    tables/role_agreement.csv where the report plans them (the report plans before the explorer)."""
    planned = set(study.outputs())
    inputs = {MODELS: study.paths.table(MODELS)}
    for name in ATLAS_TABLES:
        if study.paths.table(name) in planned:
            inputs[name] = study.paths.table(name)
    return inputs

