"""Entry points of the report stage (rules/report.smk): the comparison with the papers, the summary pages.

Both rules pass ``input.paper_values``, the stages' files of published numbers (a list, in stage order),
one named input per study table the report reads (``registry.report_tables()``) that the study produces,
and params ``absent`` (table name -> why the study does not produce it) and ``context`` (a mapping for
``StudyContext.from_mapping``).
"""

from __future__ import annotations

from typing import Any

from ..core.io import listed
from ..core.table_names import (
    DEPENDENCY_BEST,
    DEPENDENCY_HEADS,
    HEAD_DIAGNOSTICS,
    ICL_SCORE,
    MODELS,
    SINK_RATES,
    SURFACE_HEADS,
)
from . import entry_point


def _tables(smk: Any) -> dict[str, str | None]:
    """Every study table the report reads: its input path, or None where the study does not produce it."""
    from ..report.registry import report_tables

    return {name: smk.input.get(name) for name in report_tables()}


def _paper_values(smk: Any) -> list[str]:
    values = smk.input.paper_values
    return [str(values)] if isinstance(values, str) else [str(path) for path in values]


@entry_point("paper_comparison")
def paper_comparison(smk: Any) -> None:
    from ..report.comparison import paper_comparison as run
    from ..report.items import StudyContext

    p = smk.params
    run(_paper_values(smk), _tables(smk), smk.output[0], context=StudyContext.from_mapping(p.context),
        absent=p.absent)


@entry_point("summary_figure")
def summary_figure(smk: Any) -> None:
    from ..report.items import StudyContext
    from ..report.summary import summary_figure as run

    p = smk.params
    run(smk.wildcards.model, _tables(smk), _paper_values(smk), smk.output.png, smk.output.pdf,
        context=StudyContext.from_mapping(p.context), absent=p.absent)


@entry_point("signal_comparison")
def signal_comparison(smk: Any) -> None:
    from ..report.signals import signal_comparison as run

    run(smk.input.get(SURFACE_HEADS), smk.input.get(DEPENDENCY_BEST), smk.output[0], models=smk.params.models,
        signals=smk.params.signals, treebank=smk.params.treebank, select_split=smk.params.select_split,
        score_split=smk.params.score_split)


@entry_point("signal_comparison_figure")
def signal_comparison_figure(smk: Any) -> None:
    from ..report.signals import draw_signal_comparison

    draw_signal_comparison(smk.input.table, smk.output.png, smk.output.pdf, model=smk.wildcards.model)


@entry_point("head_development")
def head_development(smk: Any) -> None:
    from ..report.development import head_development as run

    run(smk.input.get(SINK_RATES), smk.input.get(HEAD_DIAGNOSTICS), smk.input.get(DEPENDENCY_HEADS),
        smk.output[0], series=smk.params.series, treebank=smk.params.treebank,
        select_split=smk.params.select_split, score_split=smk.params.score_split)


@entry_point("head_development_figure")
def head_development_figure(smk: Any) -> None:
    from ..report.development import draw_head_development

    draw_head_development(smk.input.table, smk.output.png, smk.output.pdf, series=smk.wildcards.series,
                          icl_score=smk.input.get(ICL_SCORE))



@entry_point("atlas")
def atlas(smk: Any) -> None:
    from ..models.checkpoints import read_manifest
    from ..models.families import family_of
    from ..models.shape import parameter_count
    from ..report.atlas import ATLAS_INPUTS
    from ..report.atlas_halves import atlas_tables

    p = smk.params
    patterns = [(*part, path) for part, path in zip(p.patterns, listed(smk.input.get("patterns")), strict=True)]
    # A random-init checkpoint has the model's architecture: its weights' shapes count the model's parameters.
    parameters = {model: parameter_count(read_manifest(manifest, verify=False)["load_from"])
                  for model, manifest in zip(p.random_models, listed(smk.input.get("random_checkpoints")),
                                             strict=True)}
    atlas_tables(smk.input[MODELS], smk.output.atlas, smk.output.halves,
                 family_of=lambda model_type: family_of(model_type).name,
                 tables={name: smk.input.get(name) for name in ATLAS_INPUTS}, patterns=patterns,
                 parameters=parameters, revisions=p.revisions, treebank=p.treebank, select_split=p.select_split,
                 score_split=p.score_split, relations=p.relations)


@entry_point("atlas_figure")
def atlas_figure(smk: Any) -> None:
    from ..report.atlas_figure import draw_atlas

    draw_atlas(smk.input.table, smk.output.png, smk.output.pdf)


@entry_point("role_agreement")
def role_agreement(smk: Any) -> None:
    from ..models.weights_digest import weights_digest
    from ..report.role_agreement import role_agreement_table
    from ..report.role_change import role_change_table

    p = smk.params
    digests = {tuple(subject): weights_digest(record)
               for subject, record in zip(p.weight_subjects, listed(smk.input.get("checkpoints")), strict=True)}
    pairs = [same_weights(dict(pair), digests) for pair in p.pairs]
    role_agreement_table(smk.input.atlas, smk.output.agreement, pairs=pairs, thresholds=dict(p.thresholds),
                         resamples=p.resamples, seed=p.bootstrap_seed, halves=smk.input.halves,
                         noisy_below=p.noisy_below)
    role_change_table(smk.input.atlas, smk.output.by_layer, pairs=pairs, resamples=p.resamples, seed=p.bootstrap_seed)


def same_weights(pair: dict[str, Any], digests: dict[tuple, str | None]) -> dict[str, Any]:
    """``pair`` with ``same_weights`` (and the note saying so) where both subjects' weights have one digest."""
    first = digests.get((pair["first_model"], pair["first_checkpoint"]))
    second = digests.get((pair["second_model"], pair["second_checkpoint"]))
    if first is not None and first == second:
        pair.update(same_weights=True, weights_note=f"the two checkpoints hold the same weights (digest {first[:12]}): "
                                                    "not a role kept, nothing to compare")
    return pair


@entry_point("role_change_figure")
def role_change_figure(smk: Any) -> None:
    from ..report.role_change import draw_role_change

    draw_role_change(smk.input.table, smk.output.png, smk.output.pdf)


@entry_point("role_agreement_figure")
def role_agreement_figure(smk: Any) -> None:
    from ..report.role_agreement_figure import draw_role_agreement

    draw_role_agreement(smk.input.table, smk.input.reference, smk.output.png, smk.output.pdf)
