"""The report's plan (stage ``report``): which tables the report reads and why the others
are absent, the summary pages (one per subject), with more than one signal the signals side by side, and the
cross-model atlas of head roles.

It runs after every analysis stage's plan and reads what they planned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.stages import STAGES
from ...report.atlas import ATLAS_INPUTS
from ...report.registry import report_tables
from ..revisions import revision_series
from .declarations import Analysis

if TYPE_CHECKING:
    from ..model import Study

STAGE = "report"
ANALYSES = (
    Analysis("paper_comparison", "the study", tables=("paper_comparison",), captions=("report_paper_comparison.rst",)),
    # Figures under figures/summary/ and figures/signals/ (their own folders, named by what they show).
    Analysis("summary", "subject", figures=("summary/{subject}",), captions=("report_summary_figure.rst",)),
    Analysis("signal_comparison", "the study, with more than one signal", tables=("signal_comparison",),
             figures=("signals/{model}",),
             captions=("report_signal_comparison.rst", "report_signal_comparison_figure.rst")),
    Analysis("head_development", "a model studied at two or more hub revisions (models.NAME.revisions)",
             tables=("head_development",), figures=("development/{series}",),
             captions=("report_head_development.rst", "report_head_development_figure.rst")),
    Analysis("atlas", "the study, with any table of a head role", tables=("atlas",), figures=("report/atlas",),
             captions=("report_atlas.rst", "report_atlas_figure.rst")),
)
# The head-development measures' tables (docs/models.md, Pretraining checkpoints), those the study has.
DEVELOPMENT_TABLES = ("sink_rates", "head_diagnostics", "dependency_heads")


def plan(study: Study) -> None:
    """Which tables the report reads exist in this study, and why the others do not."""
    syntax, surface = study.config["syntax"], study.config["surface"]
    no_syntax = (f"the study dumps no {' and '.join(study.syntax_splits)} attention of a treebank of "
                 "syntax.treebanks (study.treebanks, attention.corpora)")
    no_effects = "the study analyses no task's dev inputs (study.tasks, finetune_effects.tasks)"
    # A table exists when a stage planned it as an output; these say why it does not.
    reasons = {
        "surface_heads": f"the study dumps no {surface['corpus']}/{surface['split']} attention "
                         "(study.wiki, attention.corpora, surface.corpus)",
        **{name: f"the study dumps no {surface['corpus']}/{surface['split']} attention weights, whose (model, "
                 "checkpoint) pairs the head diagnostics run on (study.wiki, attention.corpora, attention.signals)"
           for name in ("head_diagnostics", "sink_rates")},
        "dependency_best": no_syntax,
        "probes": no_syntax,
        "coref_best": f"the study scores no {syntax['coref_treebank']} {syntax['coref_split']} coreference "
                      "(study.treebanks, data.coreference_treebanks, syntax.coref_treebank, attention.corpora)",
        "finetune_metrics": "the study fine-tunes no model (study.tasks, finetune.tasks;"
                            " offline: only tasks whose train split the mirror holds)",
        **{name: no_effects
           for name in ("pattern_classes", "pattern_classifier", "lexical_top_layers", "lexical_last_layer")},
    }
    planned = set(study.outputs())
    for name in report_tables(STAGES):
        path = study.paths.table(name)
        if path in planned:
            study.report_tables[name] = path
        else:
            study.report_absent[name] = reasons.get(name, f"the study does not produce {name}.csv")
    comparison, summary, *_ = ANALYSES
    study.stage_outputs[STAGE] = [study.paths.table(name) for name in comparison.tables] + [
        figure_path(study, figure.format(subject=subject), ext)
        for figure in summary.figures for subject in study.subjects for ext in ("png", "pdf")]
    plan_signal_comparison(study)
    plan_head_development(study)
    plan_atlas(study)


def figure_path(study: Study, declared: str, ext: str) -> str:
    """The file of a declared figure 'FOLDER/NAME' (under figures/)."""
    folder, name = declared.split("/")
    return study.paths.figure(folder, name, ext)


def plan_signal_comparison(study: Study) -> None:
    """With more than one signal, the signals side by side: a table from the surface and dependency tables the
    study has, and one figure per model (workflow_scripts/report/signals.py)."""
    if len(study.config["attention"]["signals"]) < 2:
        return
    inputs = {name: study.report_tables[name] for name in ("surface_heads", "dependency_best")
              if name in study.report_tables}
    if not inputs:
        return
    study.signal_comparison_inputs = inputs
    signals = ANALYSES[2]
    study.stage_outputs[STAGE] += [study.paths.table(name) for name in signals.tables] + [
        figure_path(study, figure.format(model=model), ext)
        for figure in signals.figures for model in study.models for ext in ("png", "pdf")]


def plan_head_development(study: Study) -> None:
    """For each model studied at two or more revisions, the head development against the training step
    (workflow_scripts/report/development.py), from the diagnostics and dependency tables the study has."""
    series = {name: points for name, points in revision_series(study.config).items() if len(points) >= 2}
    planned = set(study.outputs())
    inputs = {name: study.paths.table(name) for name in DEVELOPMENT_TABLES if study.paths.table(name) in planned}
    if not series or not inputs:
        return
    study.development_inputs = inputs
    study.development_series = {name: [[p.model, p.revision, p.step] for p in points]
                                for name, points in series.items()}
    development = ANALYSES[3]
    study.stage_outputs[STAGE] += [study.paths.table(name) for name in development.tables] + [
        figure_path(study, figure.format(series=name), ext)
        for figure in development.figures for name in series for ext in ("png", "pdf")]


def plan_atlas(study: Study) -> None:
    """The cross-model atlas (workflow_scripts/report/atlas.py) from the role tables the study has, the pretrained
    pattern features of each analysed task (and the random-init checkpoint's, its control) and, for the parameter
    count, the random-init checkpoint of each model the study dumps at it (its safetensors: same architecture)."""
    planned = set(study.outputs())
    tables = {name: study.paths.table(name) for name in ATLAS_INPUTS if study.paths.table(name) in planned}
    parts = [(model, checkpoint, task) for model in study.models for task in study.effects_tasks
             for checkpoint in ("pretrained", "random") if (model, checkpoint, task) in study.effects_targets]
    if not tables and not any(checkpoint == "pretrained" for _, checkpoint, _ in parts):
        return
    random_models = [model for model in study.models
                     if any(m == model and checkpoint == "random" for m, checkpoint, _, _ in study.dumps)]
    study.atlas_inputs = {
        "models": study.paths.table("models"), **tables,
        "patterns": [study.paths.analysis("finetune_effects", model, checkpoint, task, "pattern_features.parquet")
                     for model, checkpoint, task in parts],
        "random_checkpoints": [study.paths.checkpoint_manifest(model, "random") for model in random_models]}
    study.atlas_params = {
        "patterns": [list(part) for part in parts], "random_models": random_models,
        "revisions": {point.model: [name, point.revision, point.step]
                      for name, points in revision_series(study.config).items() for point in points}}
    atlas = ANALYSES[4]
    study.stage_outputs[STAGE] += [study.paths.table(name) for name in atlas.tables] + [
        figure_path(study, figure, ext) for figure in atlas.figures for ext in ("png", "pdf")]
