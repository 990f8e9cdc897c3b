"""The declared head measures (surface/head_measures.py): one entry each, the only registration a new one needs.

Every measure listed here is run on the surface dump of every (subject, checkpoint) of the study by the rules
head_measure_{shard,part,table}, written to ``tables/<name>.csv`` with its caption in the report, and shown in
the head explorer's grid (docs/contributing.md, "Recipe: add an analysis").
"""

from __future__ import annotations

from .head_measures import HeadMeasure

HEAD_MEASURES: tuple[HeadMeasure, ...] = ()


def measure_named(name: str) -> HeadMeasure:
    """The declared measure called ``name`` (a rule's ``measure`` wildcard)."""
    for measure in HEAD_MEASURES:
        if measure.name == name:
            return measure
    known = ", ".join(m.name for m in HEAD_MEASURES) or "none"
    raise KeyError(f"no head measure is declared as {name!r} in workflow_scripts/surface/measures.py ({known})")
