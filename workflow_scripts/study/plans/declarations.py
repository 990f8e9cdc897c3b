"""What a stage plan declares: its analyses, and the frozen plan every stage's ``plan(study)`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..paths import ResultPaths


@dataclass(frozen=True)
class ExplorerMeasure:
    """A per-head column that colours the head explorer's grid: ``column`` of ``table``'s pretrained rows (those whose
    columns equal ``where``), with ``column``_low/_high as its interval where the table has them."""

    table: str
    column: str
    label: str
    unit: str
    where: tuple[tuple[str, str], ...] = ()

    def as_params(self) -> dict[str, object]:
        return {"table": self.table, "column": self.column, "label": self.label, "unit": self.unit,
                "where": dict(self.where)}


@dataclass(frozen=True)
class Analysis:
    """One analysis of a stage, as the report, the explorer and ``rule all`` see it.

    ``unit``: what one job of it runs on (e.g. "(model, checkpoint) x shard group of the surface dump");
    ``sharded``: its jobs run per shard group of a dump and a gather job combines them;
    ``tables``: the study tables it writes (``tables/<name>.csv``); ``figures``: its figures' names (PNG and PDF
    under ``figures/<stage>/``; a name may hold ``{model}``-style fields its plan fills in);
    ``captions``: the report captions of its outputs (files under ``report/``);
    ``explorer_tables``: those of its tables the head explorer reads (its own sections, or ``explorer_measures``:
    the per-head columns that colour its grid);
    ``stack_key``: for an analysis whose one table only stacks its jobs' parts, the columns its rows are sorted by:
    the stage's generic table rule writes it (``surface_table``), its caption the analysis's first;
    ``report_subcategory``: where the report files its table, under the stage's category.
    """

    name: str
    unit: str
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()
    sharded: bool = False
    explorer_tables: tuple[str, ...] = ()
    explorer_measures: tuple[ExplorerMeasure, ...] = ()
    stack_key: tuple[str, ...] = ()
    report_subcategory: str | None = None


def declared_tables(analyses: tuple[Analysis, ...]) -> list[str]:
    """Every table the analyses write, in declaration order."""
    return [table for analysis in analyses for table in analysis.tables]


def declared_figures(analyses: tuple[Analysis, ...]) -> list[str]:
    return [figure for analysis in analyses for figure in analysis.figures]


def analysis_named(analyses: tuple[Analysis, ...], name: str) -> Analysis:
    """The declared analysis called ``name`` (a plan picks its analyses by name, never by position)."""
    for analysis in analyses:
        if analysis.name == name:
            return analysis
    raise KeyError(f"no analysis {name!r} is declared (declared: {', '.join(a.name for a in analyses)})")


@dataclass(frozen=True, eq=False, kw_only=True)
class StagePlan:
    """What one stage's ``plan(study)`` returns, frozen: every stage's ``Plan`` extends this with the work it planned.

    ``outputs``: the stage's final outputs (``rule all``). ``study``: the study it was planned for, which its methods
    (the input and params functions its rules call, e.g. ``STUDY.surface.dump``) read. Equality is identity
    (``eq=False``): Snakemake may hash the rules' input functions, which are this plan's bound methods.
    """

    # The model.Study it was planned for (typed Any: model.py imports this module, which must not import it back).
    study: Any = field(repr=False)
    outputs: list[str] = field(default_factory=list)

    @property
    def paths(self) -> ResultPaths:
        return self.study.paths
