"""Labels of heads as the papers print them, importable by jobs that draw nothing (no matplotlib)."""

from __future__ import annotations


def head_label(layer: int, head: int) -> str:
    """1-based "layer-head" label as the papers print it (outputs stay 0-based)."""
    return f"{int(layer) + 1}-{int(head) + 1}"
