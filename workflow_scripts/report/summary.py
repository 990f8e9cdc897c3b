"""The one-page summary of a model (rule ``summary_figure``): the stages' panels beside the papers' values.

The page knows no analysis: each stage declares its panels in its own ``workflow_scripts/<stage>/report.py``
(:class:`.items.SummaryPanel`), found through :mod:`.registry`. A panel's letter is its place on the A4
page, row by row three to a row (A-F: a 2 x 3 grid); a panel whose table the study does not produce says
"not in this study" and why instead of disappearing. The footnote is built from the panels too:

- "Data: ..." lists each panel's ``data_note`` by letter, consecutive letters with the same note sharing
  it ("B-C EWT treebank (...)"), then who tagged text without gold annotation (``annotation.annotator``);
- the input protocol of the panels with a ``protocol_table`` (the treebank panels: "B-C-D input: gold words
  joined by spaces ([C])") follows the note of the last of them.

See docs/report.md.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..core.figures import save_figure
from ..core.stages import STAGES
from .formatting import input_protocol, input_text, layers_and_heads
from .items import StudyContext, StudyTables, SummaryPanel
from .paper_values import read_paper_items
from .registry import panels as declared_panels

log = logging.getLogger(__name__)

FIGSIZE = (11.69, 8.27)  # A4 landscape, inches
COLUMNS = 3  # panels per row; A-F fill two rows
PAPERS_NOTE = ("Black diamonds: the papers' values for BERT-base ([C] Clark et al. 2019, selected and scored on "
               "the same data), not this model. Layers and heads are 1-based.")


def grid_position(letter: str) -> tuple[int, int]:
    """(row, column) of a panel letter: A-C the first row, D-F the second, and so on."""
    return divmod(ord(letter) - ord("A"), COLUMNS)


def _protocols(panels: Iterable[SummaryPanel], tables: StudyTables, model: str, treebank: str | None = None) -> str:
    """'B-C-D input: gold words joined by spaces ([C])': the input protocol of the panels' protocol tables,
    letters with the same protocol together ('' where no table has one). A table with a ``treebank`` column
    is read for ``treebank`` only (the treebank the panels show, ``StudyContext.syntax_treebank``)."""
    found: dict[str, list[str]] = {}
    for panel in panels:
        rows, _ = tables.model_rows(panel.protocol_table, model, treebank=treebank)
        found.setdefault(input_protocol(rows), []).append(panel.letter)
    return "; ".join(f"{'-'.join(letters)} {input_text(protocol)}" for protocol, letters in found.items() if protocol)


def data_note(panels: Mapping[str, SummaryPanel], tables: StudyTables, model: str, context: StudyContext) -> str:
    """The footnote's data sentence: the panels' data notes (consecutive letters with one note merged), the
    input protocol after the last panel with a protocol table, and who tagged unannotated text."""
    runs: list[list[str]] = []  # [first letter, last letter, note]
    for letter, panel in panels.items():
        note = panel.note(context)
        if runs and runs[-1][2] == note and ord(letter) == ord(runs[-1][1]) + 1:
            runs[-1][1] = letter
        else:
            runs.append([letter, letter, note])
    with_protocol = [p for p in panels.values() if p.protocol_table]
    protocols = _protocols(with_protocol, tables, model, context.syntax_treebank)
    last = with_protocol[-1].letter if with_protocol else None
    parts = []
    for first, final, note in runs:
        parts.append(f"{first if first == final else f'{first}-{final}'} {note}")
        if protocols and last is not None and first <= last <= final:
            parts.append(protocols)
    annotator = f"; text without gold annotation tagged by {context.annotator}" if context.annotator else ""
    return f"Data: {'; '.join(parts)}{annotator}."


def summary_figure(model: str, tables: Mapping[str, str | Path | None],
                   paper_values: str | Path | Iterable[str | Path], png: str | Path, pdf: str | Path | None = None,
                   *, context: StudyContext, absent: Mapping[str, str] | None = None,
                   stages: Sequence[str] = STAGES) -> dict[str, str | None]:
    """One A4 page for ``model``: the panels ``stages`` declare, from the study tables, with the papers' values.

    ``paper_values``: the stages' files of published numbers, or one file. Returns every panel's letter ->
    None where it is drawn, or the reason it says "not in this study".
    """
    import matplotlib.pyplot as plt

    items = read_paper_items(paper_values)
    study = StudyTables(tables, absent)
    panels = declared_panels(stages)
    layers, heads = layers_and_heads(study, model)
    rows = max(2, 1 + max((grid_position(k)[0] for k in panels), default=0))
    figure, axes = plt.subplots(rows, COLUMNS, figsize=FIGSIZE, squeeze=False)
    states = {}
    for letter, panel in panels.items():
        row, column = grid_position(letter)
        states[letter] = panel.draw(axes[row][column], model, study, items, context)
    for ax in axes.flat:
        ax.tick_params(labelsize=7)
        ax.grid(axis="both", alpha=0.25)
    taken = {grid_position(k) for k in panels}
    for (row, column), ax in zip(((r, c) for r in range(rows) for c in range(COLUMNS)), axes.flat):
        if (row, column) not in taken:
            ax.set_axis_off()
    shape = f" ({layers} layers x {heads} heads)" if layers and heads else ""
    figure.suptitle(f"{model}{shape}: what its attention heads do", fontsize=13, x=0.01, ha="left")
    note = data_note(panels, study, model, context)
    log.info("summary page of %s, footnote: %s", model, note)
    figure.text(0.01, 0.005, textwrap.fill(f"{note} {PAPERS_NOTE}", 200), fontsize=7, color="0.3", va="bottom")
    figure.tight_layout(rect=(0, 0.035, 1, 0.96))
    save_figure(figure, png, pdf)
    missing = {k: v for k, v in states.items() if v}
    log.info("summary page of %s: %s (%s)", model, png,
             "; ".join(f"{k} not in this study: {v}" for k, v in missing.items()) or "every panel drawn")
    return states
