"""The published numbers: one CSV per stage under ``report/paper_values/``, read, checked and ordered.

Each row is one number of [C] Clark et al. 2019, [K] Kovaleva et al. 2019, [L] Jang et al. 2024,
[G] Gu et al. 2025 or [W] Wang et al. 2023 (columns ``paper,analysis,item,value,unit,note,source``, and
``model`` where a number belongs to one model: the hub ids of the model the paper measured, space-separated;
the comparison then answers it for the study's models from those ids only). The comparison reads the files of
the stages (``registry.paper_value_files``) and orders their rows by one rule, whatever the file order:
by paper (C, K, L, G, W, as in :data:`PAPERS`), then by the natural order of ``source`` (numbers compared as
numbers, text by code point, so "Clark et al. 2019, Table 1" < "Table 2" < "Table 3" < "section 3"),
and rows with the same paper and source in file order (a stable sort).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..core.errors import InputFormatError
from .items import PaperItem

PAPERS = {"C": "Clark et al. 2019", "K": "Kovaleva et al. 2019", "L": "Jang et al. 2024", "G": "Gu et al. 2025",
          "W": "Wang et al. 2023"}
PAPER_COLUMNS = ("paper", "analysis", "item", "value", "unit", "note", "source")
OPTIONAL_COLUMNS = ("model",)


def read_paper_values(path: str | Path) -> list[PaperItem]:
    """One file of published numbers, checked: every column present, a known paper, an analysis, item and value."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputFormatError(path, None, f"unreadable paper values ({exc})",
                               f"it must be a CSV with columns {', '.join(PAPER_COLUMNS)}") from exc
    missing = [c for c in PAPER_COLUMNS if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"columns {missing} are missing",
                               f"it needs {', '.join(PAPER_COLUMNS)}; see docs/report.md")
    columns = [*PAPER_COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in frame.columns)]
    items = []
    for row, values in enumerate(frame[columns].itertuples(index=False), start=2):
        item = PaperItem(*(str(v).strip() for v in values))
        if item.paper not in PAPERS:
            raise InputFormatError(path, row, f"paper {item.paper!r} is not one of {', '.join(PAPERS)}",
                                   ", ".join(f"{key} = {name}" for key, name in PAPERS.items()))
        for name in ("analysis", "item", "value"):
            if not getattr(item, name):
                raise InputFormatError(path, row, f"the {name} is empty", "every row needs analysis, item and value")
        items.append(item)
    return items


def natural_key(text: str) -> tuple[str | int, ...]:
    """``text`` split into text and numbers, the numbers as ints: 'Table 10' sorts after 'Table 2'."""
    return tuple(int(part) if k % 2 else part for k, part in enumerate(re.split(r"(\d+)", text)))


def item_order(item: PaperItem) -> tuple:
    """The place of a published number in the comparison: paper (C, K, L, G, W), then its source's natural order."""
    return list(PAPERS).index(item.paper), natural_key(item.source)


def read_paper_items(paths: str | Path | Iterable[str | Path]) -> list[PaperItem]:
    """The published numbers of every file in ``paths`` (one path or several), in :func:`item_order`."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    items = [item for path in files for item in read_paper_values(path)]
    return sorted(items, key=item_order)
