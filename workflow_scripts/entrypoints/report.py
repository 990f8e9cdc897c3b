"""Entry points of the report stage (rules/report.smk): the comparison with the papers, the summary pages."""

from __future__ import annotations

from typing import Any

from . import entry_point


def _tables(smk: Any) -> dict[str, str | None]:
    """Every study table the report reads: its input path, or None where the study does not produce it."""
    from ..report.comparison import TABLES

    return {name: smk.input.get(name) for name in TABLES}


@entry_point("paper_comparison")
def paper_comparison(smk: Any) -> None:
    from ..report.comparison import StudyContext
    from ..report.comparison import paper_comparison as run

    p = smk.params
    run(smk.input.paper_values, _tables(smk), smk.output[0], context=StudyContext.from_mapping(p.context),
        absent=p.absent)


@entry_point("summary_figure")
def summary_figure(smk: Any) -> None:
    from ..report.comparison import StudyContext
    from ..report.summary import summary_figure as run

    p = smk.params
    run(smk.wildcards.model, _tables(smk), smk.input.paper_values, smk.output.png, smk.output.pdf,
        context=StudyContext.from_mapping(p.context), absent=p.absent)
