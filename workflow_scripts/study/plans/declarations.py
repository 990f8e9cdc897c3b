"""What a stage plan declares: its analyses, and the frozen plan every stage's ``plan(study)`` returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..paths import ResultPaths

# The workflow's report/ folder: the captions of the stacked tables are read from it.
REPORT_FOLDER = Path(__file__).resolve().parents[3] / "report"


def stacked_table_caption(stage: str) -> str:
    """The caption file of a stage's generic table rule (``<stage>_table``): it shows the stacked table's own caption
    (``StagePlan.table_caption``) through the rule's params.caption."""
    return f"{stage}_table.rst"


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
    ``pages``: its self-contained HTML pages' names (``<stage>/<name>.html`` under the results; a name may hold
    ``{model}``-style fields);
    ``captions``: the report captions of its outputs (files under ``report/``), one per table, then per figure, then
    per page;
    ``explorer_tables``: those of its tables the head explorer reads (its own sections, or ``explorer_measures``:
    the per-head columns that colour its grid);
    ``stack_key``: for an analysis whose one table only stacks its jobs' parts, the columns its rows are sorted by:
    the stage's generic table rule writes it (``<stage>_table``, e.g. ``surface_table``), its caption the analysis's
    first, and its plan's ``stacked_parts`` says which parts;
    ``report_subcategory``: where the report files its outputs, under the stage's category (its plan module's
    ``REPORT_CATEGORY``);
    ``absent_because``: why a study may not have its tables, from the study (the report says it where one of them is
    absent; without it, that the study does not produce the table).
    """

    name: str
    unit: str
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    pages: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()
    sharded: bool = False
    explorer_tables: tuple[str, ...] = ()
    explorer_measures: tuple[ExplorerMeasure, ...] = ()
    stack_key: tuple[str, ...] = ()
    report_subcategory: str | None = None
    absent_because: Callable[[Any], str] | None = None

    def table_caption_file(self, table: str) -> str:
        """The caption file of one of its tables (``captions`` follows ``tables``, then ``figures``)."""
        return self.captions[self.tables.index(table)]

    def figure_caption_file(self, figure: str) -> str:
        """The caption file of one of its figures (a figure may share its table's name: sep_gradient)."""
        return self.captions[len(self.tables) + self.figures.index(figure)]

    def page_caption_file(self, page: str) -> str:
        """The caption file of one of its pages."""
        return self.captions[len(self.tables) + len(self.figures) + self.pages.index(page)]


def declared_tables(analyses: tuple[Analysis, ...]) -> list[str]:
    """Every table the analyses write, in declaration order."""
    return [table for analysis in analyses for table in analysis.tables]


def stacked_tables(analyses: tuple[Analysis, ...]) -> dict[str, Analysis]:
    """The tables a stage's generic table rule stacks (its ``table`` wildcard), by name: the one table of each
    analysis declared with a ``stack_key``."""
    return {analysis.tables[0]: analysis for analysis in analyses if analysis.stack_key}


def stacked_pattern(analyses: tuple[Analysis, ...]) -> str:
    """The ``table`` wildcard of a stage's generic table rule: a stacked table's name only (longest first), so that
    its output never matches another rule's; a pattern that matches nothing where the stage stacks none."""
    return "|".join(sorted(stacked_tables(analyses), key=len, reverse=True)) or "(?!x)x"


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

    # The stage's declared analyses (its module's ANALYSES): its generic table rule's params functions read them.
    analyses: ClassVar[tuple[Analysis, ...]] = ()
    # The stage's name (its figures' and pages' folder) and the report's category of its tables, figures and pages
    # (its module's STAGE and REPORT_CATEGORY): report_table, report_figure, report_page and report_stacked read them.
    stage: ClassVar[str] = ""
    report_category: ClassVar[str | None] = None

    @property
    def paths(self) -> ResultPaths:
        return self.study.paths

    # --- params functions that rules of several stages call --------------------------------------------------------

    def dtype(self, wc: Any) -> str:
        """A params function: the weights' type of the job's model (``model`` wildcard; its entry's dtype)."""
        return self.study.model_dtype(wc.model)

    def task_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's task (``task`` wildcard), as the job rebuilds it."""
        return self.study.task_spec(wc.task).params()

    # --- the params functions of the stage's generic table rule (``<stage>_table``, ``table`` wildcard) ----------

    def stacked(self, wc: Any) -> Analysis:
        return stacked_tables(self.analyses)[wc.table]

    def stack_key(self, wc: Any) -> list[str]:
        """The columns the stacked table's rows are sorted by (its ``Analysis.stack_key``)."""
        return list(self.stacked(wc).stack_key)

    def table_caption(self, wc: Any) -> str:
        """The caption of a stacked table (report/<stage>_table.rst shows it): the text of its analysis's first
        caption file."""
        return (REPORT_FOLDER / self.stacked(wc).captions[0]).read_text(encoding="utf-8")

    def table_subcategory(self, wc: Any) -> str | None:
        """Where the report files the stacked table (its ``Analysis.report_subcategory``)."""
        return self.stacked(wc).report_subcategory

    # --- the report() outputs of the stage's rules, as the analyses declare them ---------------------------------

    def report_table(self, name: str) -> Any:
        """Table ``name`` as its rule's report() output: its caption file, the stage's category and its analysis's
        subcategory, as declared."""
        analysis = self._declaring(name, "tables")
        return self._report(self.paths.table(name), analysis.table_caption_file(name), analysis)

    def report_figure(self, name: str) -> Any:
        """The PNG of figure ``name`` (:meth:`figure_file`) as its rule's report() output, declared as a table is; its
        PDF is a plain output of the rule."""
        analysis = self._declaring(name, "figures")
        return self._report(self.figure_file(name, "png"), analysis.figure_caption_file(name), analysis)

    def report_page(self, name: str) -> Any:
        """The HTML page ``name`` (``<stage>/<name>.html`` under the results) as its rule's report() output, declared
        as a table is."""
        analysis = self._declaring(name, "pages")
        return self._report(self.paths.page(self.stage, name), analysis.page_caption_file(name), analysis)

    def report_stacked(self) -> Any:
        """The output of the stage's generic table rule (``<stage>_table``, ``table`` wildcard) as a report() output:
        its caption file shows each stacked table's own caption (``table_caption``), filed under the table's
        subcategory (``table_subcategory``), or under none where no stacked table of the stage declares one."""
        from snakemake.io import report

        filed = any(analysis.report_subcategory for analysis in stacked_tables(self.analyses).values())
        return report(self.paths.table("{table}"), caption=f"../report/{stacked_table_caption(self.stage)}",
                      category=self.report_category, subcategory=self.table_subcategory if filed else None)

    def figure_file(self, name: str, ext: str) -> str:
        """The file of declared figure ``name``: under ``figures/<stage>/`` (the report's plan files its figures in
        folders of their own)."""
        self._declaring(name, "figures")
        return self.paths.figure(self.stage, name, ext)

    def _declaring(self, name: str, kind: str) -> Analysis:
        """The analysis whose ``kind`` ("tables", "figures" or "pages") holds ``name``."""
        for analysis in self.analyses:
            if name in getattr(analysis, kind):
                return analysis
        raise KeyError(f"no analysis of the {self.stage} stage declares {kind[:-1]} {name!r} (the ANALYSES of "
                       f"workflow_scripts/study/plans/{self.stage}.py)")

    def _report(self, path: str, caption: str, analysis: Analysis) -> Any:
        # Snakemake's own report(): the rules call these while Snakemake reads them, and it resolves the caption from
        # the rule file's folder (rules/).
        from snakemake.io import report

        return report(path, caption=f"../report/{caption}", category=self.report_category,
                      subcategory=analysis.report_subcategory)
