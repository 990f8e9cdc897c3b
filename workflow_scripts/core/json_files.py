"""JSON files that may be absent or damaged, read alike (a model's config.json, a card, a record): apart from
core/io.py, which every job imports, so that a reader used by the plan and the checks changes no job's code digest."""

from __future__ import annotations

import json
import os
from typing import Any


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``; None where the file is missing or unreadable, or holds no JSON object (callers
    that may meet a damaged or absent file treat all three alike)."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
