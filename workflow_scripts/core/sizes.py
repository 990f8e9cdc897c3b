"""Sizes in the unit a reader plans with: bytes as '4.7 GB', parameter counts as '110M'. One formatter for the
study's plan (dumps, GPU memory), the disk-space messages and the atlas figure's model labels; each caller picks the
units it shows and the precision."""

from __future__ import annotations

# (scale, suffix), largest first. Decimal units, as disks and the plan's rates count them (1 GB = 1e9 bytes).
BYTES = ((1e9, " GB"), (1e6, " MB"), (1e3, " kB"), (1, " bytes"))
GIGABYTES = BYTES[:1]  # always in GB: rows of one table compare at a glance
PARAMETERS = ((1e9, "B"), (1e6, "M"), (1e3, "k"), (1, ""))


def size_text(n: float, units: tuple[tuple[float, str], ...] = BYTES, *, digits: str = ",.1f",
              at_least: float = 1.0) -> str:
    """``n`` in the first of ``units`` of which it is at least ``at_least`` (0.1: '0.5 GB' rather than '500 MB'),
    else in the last one, formatted with ``digits``: ``size_text(4.7e9)`` is '4.7 GB',
    ``size_text(1.1e8, PARAMETERS, digits=".3g")`` '110M'."""
    scale, suffix = next(((scale, suffix) for scale, suffix in units if n >= at_least * scale), units[-1])
    if scale == 1 and float(n).is_integer():  # whole bytes or parameters have no decimals: '512 bytes'
        return f"{int(n)}{suffix}"
    return f"{n / scale:{digits}}{suffix}"
