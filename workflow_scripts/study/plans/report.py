"""The report's plan (stage ``report``): which tables the report reads and why the others
are absent, the summary pages (one per subject), with more than one signal the signals side by side, and the
cross-model atlas of head roles.

It runs after every analysis stage's plan and reads what they planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.stages import STAGES
from ...core.subjects import subject_name
from ...core.table_names import (
    ATLAS,
    ATLAS_HALVES,
    DEPENDENCY_BEST,
    DEPENDENCY_HEADS,
    HEAD_DEVELOPMENT,
    HEAD_DIAGNOSTICS,
    ICL_SCORE,
    MODELS,
    PAPER_COMPARISON,
    ROLE_AGREEMENT,
    ROLE_CHANGE_BY_LAYER,
    SIGNAL_COMPARISON,
    SINK_RATES,
    SURFACE_HEADS,
)
from ...finetune.tasks import checkpoint_name
from ...report.atlas import ATLAS_INPUTS
from ...report.registry import report_tables
from ..annotation import caption_text, describe_annotators
from ..revisions import revision_series
from . import stage_plans
from .declarations import Analysis, StagePlan, analysis_named

if TYPE_CHECKING:
    from ..model import Study

STAGE = "report"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Summary"
# The stage's figures, by these names in their rules (rules/report.smk) too: FOLDER/NAME (figure_path).
SUMMARY_FIGURE = "summary/{model}"
SIGNALS_FIGURE = "signals/{model}"
DEVELOPMENT_FIGURE = "development/{series}"
ATLAS_FIGURE = "report/atlas"
AGREEMENT_FIGURE = "report/role_agreement"
CHANGE_BY_LAYER_FIGURE = "report/role_change_by_layer"
ANALYSES = (
    Analysis(PAPER_COMPARISON, "the study", tables=(PAPER_COMPARISON,), captions=("report_paper_comparison.rst",)),
    # Figures under figures/summary/ and figures/signals/ (their own folders, named by what they show: figure_path);
    # a summary page's field is its rule's wildcard, ``model``, which holds a subject.
    Analysis("summary", "subject", figures=(SUMMARY_FIGURE,), captions=("report_summary_figure.rst",)),
    Analysis(SIGNAL_COMPARISON, "the study, with more than one signal", tables=(SIGNAL_COMPARISON,),
             figures=(SIGNALS_FIGURE,),
             captions=("report_signal_comparison.rst", "report_signal_comparison_figure.rst")),
    Analysis(HEAD_DEVELOPMENT, "a model studied at two or more hub revisions (models.NAME.revisions)",
             tables=(HEAD_DEVELOPMENT,), figures=(DEVELOPMENT_FIGURE,),
             captions=("report_head_development.rst", "report_head_development_figure.rst")),
    Analysis(ATLAS, "the study, with any table of a head role", tables=(ATLAS, ATLAS_HALVES),
             figures=(ATLAS_FIGURE,),
             captions=("report_atlas.rst", "report_atlas_halves.rst", "report_atlas_figure.rst")),
    Analysis(ROLE_AGREEMENT, "the study, with the atlas: every pair of related subjects x role",
             tables=(ROLE_AGREEMENT, ROLE_CHANGE_BY_LAYER),
             figures=(AGREEMENT_FIGURE, CHANGE_BY_LAYER_FIGURE),
             captions=("report_role_agreement.rst", "report_role_change_by_layer.rst",
                       "report_role_agreement_figure.rst", "report_role_change_by_layer_figure.rst")),
)
# The head-development measures' tables (docs/models.md, Pretraining checkpoints), those the study has.
DEVELOPMENT_TABLES = (SINK_RATES, HEAD_DIAGNOSTICS, DEPENDENCY_HEADS)
DEVELOPMENT_FIGURE_TABLES = (ICL_SCORE,)


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The report's plan (``STUDY.report``): the tables it reads, and the inputs of its cross-study parts (each empty
    where the study has none)."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    tables: dict[str, str]                    # table name -> path, the tables the report reads that the study has
    absent: dict[str, str]                    # table name -> why the study has none
    signal_comparison_inputs: dict[str, str] = field(default_factory=dict)
    development_inputs: dict[str, str] = field(default_factory=dict)         # table name -> path
    development_series: dict[str, list[list]] = field(default_factory=dict)  # name -> [[model, revision, step]]
    development_figure_inputs: dict[str, str] = field(default_factory=dict)  # table name -> path, besides its own
    atlas_inputs: dict[str, Any] = field(default_factory=dict)               # input name -> path(s)
    atlas_params: dict[str, Any] = field(default_factory=dict)
    role_agreement_pairs: list[dict[str, Any]] = field(default_factory=list)
    weight_subjects: list[tuple[str, str]] = field(default_factory=list)     # whose weights' digests are compared

    def figure_file(self, name: str, ext: str) -> str:
        """The file of a declared figure 'FOLDER/NAME' (:func:`figure_path`)."""
        self._declaring(name, "figures")
        return figure_path(self.study, name, ext)

    def weight_checkpoints(self) -> list[str]:
        """The checkpoint records of ``weight_subjects``, in order (rule role_agreement's input)."""
        return [self.paths.checkpoint_manifest(model, checkpoint) for model, checkpoint in self.weight_subjects]

    def annotator_description(self) -> str:
        """Who annotates the study's text without gold annotation, with which models (the report says it)."""
        return describe_annotators(self.study.config, self.study.corpora)

    def report_context(self) -> dict[str, Any]:
        """What the config selects, for the report's reasons and protocol labels (report.items.StudyContext)."""
        study = self.study
        config, syntax = study.config, study.config["syntax"]
        return {
            # Every subject (model, or MODEL@SIGNAL) the tables have rows of, side by side in the report.
            "models": study.subjects,
            "relations": list(syntax["relations"]),
            "select_split": syntax["select_split"],
            "score_split": syntax["score_split"],
            "tasks": list(config["study"]["tasks"]),
            "finetuned_tasks": list(study.stage("finetune").tasks),
            "analysed_tasks": list(study.stage("finetune_effects").tasks),
            "predictions": config["finetune_effects"]["predictions"],
            "glove": config["study"]["glove"],
            "annotator": self.annotator_description(),
            # The same, as the captions' RST shows it literally (it holds free config text: annotation.py).
            "annotator_caption": caption_text(self.annotator_description()),
            # How treebank sentences were fed (the captions say it; the tables carry it per row).
            "input_protocol": config["attention"]["input_protocol"],
            "syntax_treebank": study.syntax_treebank,
            "treebank_names": {name: entry.display for name, entry in study.corpora.treebanks.items()},
            "languages": {name: study.corpora.language(name) for name in study.splits},
            # The bootstrap resamples B of the syntax tables: a p-value at the floor 1/B prints as "p < 1/B".
            "resamples": syntax["bootstrap_resamples"],
            # Measured for their head roles alone: role agreement's, not the paper comparison's (docs/roles.md).
            "role_checkpoints": sorted({checkpoint for _, checkpoint in study.stage("finetune").role_checkpoints}
                                       - set(config["attention"]["checkpoints"])),
        }


# What one of the report's cross-study parts plans: its fields of the Plan, and its outputs.
PartPlan = tuple[dict[str, Any], list[str]]


def plan(study: Study) -> Plan:
    """Which tables the report reads exist in this study and why the others do not; the summary pages; and the
    cross-study parts the study has the tables for."""
    tables, absent = report_tables_of(study)
    comparison, summary = analysis_named(ANALYSES, PAPER_COMPARISON), analysis_named(ANALYSES, "summary")
    outputs = [study.paths.table(name) for name in comparison.tables] + [
        figure_path(study, figure.format(model=subject), ext)
        for figure in summary.figures for subject in study.subjects for ext in ("png", "pdf")]
    fields: dict[str, Any] = {}
    for part in (plan_signal_comparison, plan_head_development, plan_atlas, plan_role_agreement):
        part_fields, part_outputs = part(study, tables, fields)
        fields.update(part_fields)
        outputs += part_outputs
    return Plan(study=study, tables=tables, absent=absent, outputs=outputs, **fields)


def report_tables_of(study: Study) -> tuple[dict[str, str], dict[str, str]]:
    """The tables the report reads that the study plans (name -> path), and why each other one is absent: the
    reason its analysis declares (``Analysis.absent_because``), else that the study does not produce it."""
    declaring = {table: analysis for module in stage_plans(before=STAGE) for analysis in module.ANALYSES
                 for table in analysis.tables}
    planned = set(study.outputs())
    tables, absent = {}, {}
    for name in report_tables(STAGES):
        path = study.paths.table(name)
        analysis = declaring.get(name)
        if path in planned:
            tables[name] = path
        elif analysis is not None and analysis.absent_because is not None:
            absent[name] = analysis.absent_because(study)
        else:
            absent[name] = f"the study does not produce {name}.csv"
    return tables, absent


def figure_path(study: Study, declared: str, ext: str) -> str:
    """The file of a declared figure 'FOLDER/NAME' (under figures/)."""
    folder, name = declared.split("/")
    return study.paths.figure(folder, name, ext)


def plan_signal_comparison(study: Study, tables: dict[str, str], planned: dict[str, Any]) -> PartPlan:
    """With more than one signal, the signals side by side: a table from the surface and dependency tables the
    study has, and one figure per model (workflow_scripts/report/signals.py)."""
    if len(study.config["attention"]["signals"]) < 2:
        return {}, []
    inputs = {name: tables[name] for name in (SURFACE_HEADS, DEPENDENCY_BEST) if name in tables}
    if not inputs:
        return {}, []
    signals = analysis_named(ANALYSES, SIGNAL_COMPARISON)
    return {"signal_comparison_inputs": inputs}, [study.paths.table(name) for name in signals.tables] + [
        figure_path(study, figure.format(model=model), ext)
        for figure in signals.figures for model in study.models for ext in ("png", "pdf")]


def plan_head_development(study: Study, tables: dict[str, str], planned: dict[str, Any]) -> PartPlan:
    """For each model studied at two or more revisions, the head development against the training step
    (workflow_scripts/report/development.py), from the diagnostics and dependency tables the study has."""
    series = {name: points for name, points in revision_series(study.config).items() if len(points) >= 2}
    earlier = set(study.outputs())
    inputs = {name: study.paths.table(name) for name in DEVELOPMENT_TABLES if study.paths.table(name) in earlier}
    if not series or not inputs:
        return {}, []
    fields = {
        "development_inputs": inputs,
        "development_series": {name: [[p.model, p.revision, p.step] for p in points]
                               for name, points in series.items()},
        # The ICL score of each revision (surface stage), drawn beside the induction score.
        "development_figure_inputs": {name: study.paths.table(name) for name in DEVELOPMENT_FIGURE_TABLES
                                      if study.paths.table(name) in earlier}}
    development = analysis_named(ANALYSES, HEAD_DEVELOPMENT)
    return fields, [study.paths.table(name) for name in development.tables] + [
        figure_path(study, figure.format(series=name), ext)
        for figure in development.figures for name in series for ext in ("png", "pdf")]


def plan_atlas(study: Study, tables: dict[str, str], planned: dict[str, Any]) -> PartPlan:
    """The cross-model atlas (workflow_scripts/report/atlas.py) from the role tables the study has, the pattern
    features of each analysed task on the pretrained checkpoint and each fine-tuned run's final checkpoint (and the
    random-init checkpoint's, their control) and, for the parameter count, the random-init checkpoint of each model
    the study dumps at it (its safetensors: same architecture)."""
    earlier = set(study.outputs())
    role_tables = {name: study.paths.table(name) for name in ATLAS_INPUTS if study.paths.table(name) in earlier}
    # The pretrained and random-init checkpoints, and each fine-tuned run's final checkpoint (its steps are the
    # trajectory of finetune_change, not a role's checkpoint).
    parts = [(model, checkpoint, task) for model, checkpoint, task in study.finetune_effects.targets
             if model in study.models and (checkpoint in ("pretrained", "random") or checkpoint.endswith(".final"))]
    if not role_tables and not any(checkpoint == "pretrained" for _, checkpoint, _ in parts):
        return {}, []
    random_models = [model for model in study.models
                     if any(m == model and checkpoint == "random" for m, checkpoint, _, _ in study.attention.dumps)]
    inputs = {
        MODELS: study.paths.table(MODELS), **role_tables,
        "patterns": [study.paths.analysis("finetune_effects", model, checkpoint, task, "pattern_features.parquet")
                     for model, checkpoint, task in parts],
        "random_checkpoints": [study.paths.checkpoint_manifest(model, "random") for model in random_models]}
    params = {
        "patterns": [list(part) for part in parts], "random_models": random_models,
        "revisions": {point.model: [name, point.revision, point.step]
                      for name, points in revision_series(study.config).items() for point in points}}
    atlas = analysis_named(ANALYSES, ATLAS)
    return {"atlas_inputs": inputs, "atlas_params": params}, [study.paths.table(name) for name in atlas.tables] + [
        figure_path(study, figure, ext) for figure in atlas.figures for ext in ("png", "pdf")]


FINETUNED_ABSENT = ("the study measures no role on this fine-tuned checkpoint: its pattern classes need its task among "
                    "finetune_effects.tasks, its causal importance among ablation.tasks, its diagnostics, dependency "
                    "and coreference heads the checkpoint in roles.finetuned (docs/roles.md)")
SIGNAL_ABSENT = ("the atlas leaves signal subjects out (it sets models' attention weights side by side; "
                 f"tables/{SIGNAL_COMPARISON}.csv compares the signals)")
# The pairs whose two subjects may hold the same weights (a seed's twin, a hub revision serving another's files).
WEIGHT_RELATIONS = ("finetune_seeds", "revision_next", "revision_last")


def run_checkpoints(study: Study, model: str, task: str, seed: int) -> list[str]:
    """The fine-tuned checkpoints of one run that role agreement pairs: those of roles.finetuned (its steps, then
    final), and its final checkpoint (its pattern classes and causal importance) where that is not among them."""
    prefix = f"{task}.seed{seed}."
    chosen = [c for m, c in study.finetune.role_checkpoints if m == model and c.startswith(prefix)]
    final = checkpoint_name(task, seed, "final")
    return chosen if final in chosen else [*chosen, final]


def role_agreement_pairs(study: Study) -> list[dict[str, object]]:
    """Every pair of related subjects the study holds, in this order: each model's pretrained checkpoint and each
    fine-tuned checkpoint of run_checkpoints (with the same checkpoint of the task's next seed, the seed floor, where
    the study has two or more seeds); the same checkpoint of two seeds of one task; each revision of a series and the
    next, and the last; each model's attention and each other signal of attention.signals."""
    pairs: list[dict[str, object]] = []

    def add(relation: str, first: tuple[str, str], second: tuple[str, str], **extra: object) -> None:
        pairs.append({"relation": relation, "first_model": first[0], "first_checkpoint": first[1],
                      "second_model": second[0], "second_checkpoint": second[1], **extra})

    for model in study.models:
        runs = [(task, seed) for m, task, seed in study.finetune.runs if m == model]
        named = {(task, seed): run_checkpoints(study, model, task, seed) for task, seed in runs}
        for task, seed in runs:
            others = [s for t, s in runs if t == task and s != seed]
            for checkpoint in named[task, seed]:
                twin = next((checkpoint.replace(f".seed{seed}.", f".seed{other}.", 1) for other in others
                             if checkpoint.replace(f".seed{seed}.", f".seed{other}.", 1) in named[task, other]), None)
                add("pretrained_vs_finetuned", (model, "pretrained"), (model, checkpoint), task=task,
                    why_absent=FINETUNED_ABSENT, **({"seed_checkpoint": twin} if twin else {}))
        for index, (task, seed) in enumerate(runs):
            for other_task, other_seed in runs[index + 1:]:
                if other_task != task:
                    continue
                for checkpoint in named[task, seed]:
                    twin = checkpoint.replace(f".seed{seed}.", f".seed{other_seed}.", 1)
                    if twin in named[task, other_seed]:
                        add("finetune_seeds", (model, checkpoint), (model, twin), task=task,
                            why_absent=FINETUNED_ABSENT)
    for points in revision_series(study.config).values():
        for index, point in enumerate(points[:-1]):
            add("revision_next", (point.model, "pretrained"), (points[index + 1].model, "pretrained"))
            add("revision_last", (point.model, "pretrained"), (points[-1].model, "pretrained"))
    for model in study.models:
        for signal in study.config["attention"]["signals"]:
            if signal != "attention":
                add("attention_vs_signal", (model, "pretrained"), (subject_name(model, signal), "pretrained"),
                    why_absent=SIGNAL_ABSENT)
    return pairs


def weight_subjects(pairs: list[dict[str, object]]) -> list[tuple[str, str]]:
    """(model, checkpoint) of both subjects of every pair that may hold the same weights (WEIGHT_RELATIONS)."""
    subjects = [(str(p[f"{side}_model"]), str(p[f"{side}_checkpoint"])) for p in pairs
                if p["relation"] in WEIGHT_RELATIONS for side in ("first", "second")]
    return list(dict.fromkeys(subjects))


def plan_role_agreement(study: Study, tables: dict[str, str], planned: dict[str, Any]) -> PartPlan:
    """With the atlas, how far each role holds between related subjects (workflow_scripts/report/role_agreement.py):
    the pairs, and the table and figure."""
    if not planned.get("atlas_inputs"):
        return {}, []
    agreement = analysis_named(ANALYSES, ROLE_AGREEMENT)
    outputs = [study.paths.table(name) for name in agreement.tables] + [
        figure_path(study, figure, ext) for figure in agreement.figures for ext in ("png", "pdf")]
    pairs = role_agreement_pairs(study)
    return {"role_agreement_pairs": pairs, "weight_subjects": weight_subjects(pairs)}, outputs
