"""Figure output shared by every analysis: matplotlib without a display, PNG and PDF, atomic."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from .io import atomic_path


def save_figure(figure: plt.Figure, png: str | Path, pdf: str | Path | None = None, dpi: int = 150) -> None:
    """Save a figure as PNG (and PDF), each written atomically, then close it."""
    for path, kwargs in ((png, {"dpi": dpi}), (pdf, {})):
        if path is None:
            continue
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format=Path(path).suffix.lstrip("."), bbox_inches="tight", **kwargs)
    plt.close(figure)


def literal_text(text: str) -> str:
    """Corpus text as matplotlib draws it literally: '$' would otherwise start math text, and a
    malformed formula in a user's corpus (a word such as '$\\frac$') would fail the figure job."""
    return text.replace("$", r"\$")
