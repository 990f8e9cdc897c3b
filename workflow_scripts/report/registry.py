"""Where the report finds what each stage publishes: ``workflow_scripts/<stage>/report.py``.

Every stage of ``core.stages.STAGES`` may have a ``report`` module declaring ``REPORT``, a
:class:`.items.StageReport`: the study tables the report reads from it, its paper comparisons, its
summary panels and the file of its published numbers. The report imports those modules by the stage
names it is given, never by a name written here, so that adding an analysis means adding its stage's
``report.py`` and never editing the report (docs/report.md).

A stage name is the package ``workflow_scripts.<stage>``; a name that is no package of
``workflow_scripts`` is imported as a top-level package ``<stage>`` (a stage kept outside this
package, as the tests' made-up stages are). A stage without a ``report`` module publishes nothing
and is skipped; any other import error is raised as it is.

For the study model and the rules:

- :func:`report_tables` ``(stages=STAGES) -> list[str]``: every table name the report reads, in stage
  order (each is ``{results}/tables/<name>.csv``; the report rules take each as a named input).
- :func:`paper_value_files` ``(stages=STAGES, root=REPO) -> list[Path]``: the published numbers, one
  CSV per stage that has some, ``<root>/report/paper_values/<file>``, in stage order.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import AtlasError
from ..core.stages import STAGES
from .items import PaperComparison, StageReport, SummaryPanel

PACKAGE = "workflow_scripts"
REPO = Path(__file__).resolve().parents[2]
PAPER_VALUES_DIR = Path("report") / "paper_values"


def _stage_package(stage: str) -> str:
    """The package of ``stage``: ``workflow_scripts.<stage>``, else the top-level package ``<stage>``."""
    inside = f"{PACKAGE}.{stage}"
    if importlib.util.find_spec(inside) is not None:
        return inside
    try:
        found = importlib.util.find_spec(stage)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise AtlasError(f"stage {stage!r} is neither a package {inside} nor a top-level package {stage} "
                         "(core.stages.STAGES names the stages)")
    return stage


def stage_report(stage: str) -> StageReport | None:
    """``REPORT`` of ``<stage>.report``, or None where the stage has no ``report`` module."""
    name = f"{_stage_package(stage)}.report"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:  # no report module: the stage publishes nothing; a missing dependency is raised
            return None
        raise
    declared = getattr(module, "REPORT", None)
    if not isinstance(declared, StageReport):
        raise AtlasError(f"{name} declares no REPORT = StageReport(...) (workflow_scripts.report.items); "
                         f"found {type(declared).__name__}")
    return declared


def stage_reports(stages: Sequence[str] = STAGES) -> dict[str, StageReport]:
    """Stage -> its declaration, in the order of ``stages``, for the stages that have one.

    Raises AtlasError where two stages declare the same table, paper analysis or panel letter.
    """
    reports = {stage: found for stage in stages if (found := stage_report(stage)) is not None}
    for kind, names in (("table", lambda r: r.tables),
                        ("paper analysis", lambda r: [c.analysis for c in r.comparisons]),
                        ("summary panel", lambda r: [p.letter for p in r.panels])):
        owner: dict[str, str] = {}
        for stage, declared in reports.items():
            for name in names(declared):
                if name in owner:
                    raise AtlasError(f"{kind} {name!r} is declared by both stage {owner[name]} and stage {stage}; "
                                     "give each one owner")
                owner[name] = stage
    return reports


def report_tables(stages: Sequence[str] = STAGES) -> list[str]:
    """Every study table the report reads (``{results}/tables/<name>.csv``), in stage order.

    The report rules take each as a named input where the study produces it; the study passes the
    reason for each one it does not (``params.absent``).
    """
    return [name for declared in stage_reports(stages).values() for name in declared.tables]


def paper_value_files(stages: Sequence[str] = STAGES, root: str | Path = REPO) -> list[Path]:
    """The published numbers, ``<root>/report/paper_values/<file>`` of every stage that declares a file.

    In stage order; the comparison orders their rows itself (see ``paper_values.read_paper_items``).
    """
    return [Path(root) / PAPER_VALUES_DIR / declared.paper_values for declared in stage_reports(stages).values()
            if declared.paper_values]


def comparisons(stages: Sequence[str] = STAGES) -> dict[str, PaperComparison]:
    """Paper analysis (the ``analysis`` column) -> the stage's comparison, in stage order."""
    return {c.analysis: c for declared in stage_reports(stages).values() for c in declared.comparisons}


def panels(stages: Sequence[str] = STAGES) -> dict[str, SummaryPanel]:
    """Letter -> summary panel, in letter order."""
    found = {p.letter: p for declared in stage_reports(stages).values() for p in declared.panels}
    for letter in found:
        if len(letter) != 1 or not ("A" <= letter <= "Z"):
            raise AtlasError(f"summary panel letter {letter!r} is not one capital letter A-Z")
    return dict(sorted(found.items()))
