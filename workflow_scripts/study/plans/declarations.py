"""What a stage plan declares: its analyses, and the head explorer's plan (read by the rules' input functions)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    the per-head columns that colour its grid).
    """

    name: str
    unit: str
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()
    sharded: bool = False
    explorer_tables: tuple[str, ...] = ()
    explorer_measures: tuple[ExplorerMeasure, ...] = ()


def declared_tables(analyses: tuple[Analysis, ...]) -> list[str]:
    """Every table the analyses write, in declaration order."""
    return [table for analysis in analyses for table in analysis.tables]


def declared_figures(analyses: tuple[Analysis, ...]) -> list[str]:
    return [figure for analysis in analyses for figure in analysis.figures]


@dataclass
class ExplorerPlan:
    """What every model's explorer page reads (plans/explorer.py)."""

    tables: dict[str, str] = field(default_factory=dict)  # table name -> path, the ones the study produces
    measures: list[dict[str, object]] = field(default_factory=list)  # ExplorerMeasure.as_params() of its tables
    corpus: str | None = None       # the example inputs' corpus and split (None: the page draws no maps)
    split: str | None = None
    task: str | None = None         # the task fine-tuned on, whose final checkpoint is drawn beside pretrained
