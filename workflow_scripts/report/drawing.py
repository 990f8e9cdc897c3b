"""What every summary panel draws alike: the papers' values as black diamonds, "not in this study"."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from .items import PaperItem

# The papers' values (BERT-base, not the model on the page).
PAPER_STYLE = {"marker": "D", "color": "black", "markersize": 5, "linestyle": "none", "zorder": 5}


def not_in_study(ax: Any, title: str, reason: str) -> str:
    """Write "not in this study" and the reason into the panel; return the reason."""
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("0.8")
    ax.text(0.5, 0.5, "not in this study:\n" + textwrap.fill(reason, 42), ha="center", va="center", fontsize=8,
            color="0.35", transform=ax.transAxes)
    return reason


def reference_items(items: Sequence[PaperItem], analysis: str) -> list[PaperItem]:
    """The published numbers of ``analysis`` that are numbers (not ranges, lists or words)."""
    return [i for i in items if i.analysis == analysis and i.number is not None]
