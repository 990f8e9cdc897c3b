"""The declared head measures (surface/head_measures.py): one entry each, the only registration a new one needs.

Every measure listed here is run on the surface dump of every (subject, checkpoint) of the study by the rules
head_measure_{shard,part} and surface_table, written to ``tables/<name>.csv`` with its caption in the report, and
shown in the head explorer's grid (docs/contributing.md, "Recipe: add an analysis").
"""

from __future__ import annotations

from ..core.table_names import SINK_RATES, SURFACE_HEADS
from .head_measures import HeadMeasure
from .position_measures import first_token_sums, previous_token_sums
from .same_word import same_word_sums

HEAD_MEASURES: tuple[HeadMeasure, ...] = (
    HeadMeasure(
        "same_word", "attention to the same word's other pieces", "share", same_word_sums,
        caption="How much of a word piece's attention stays inside its word, on the surface corpus (config "
                "surface.corpus, default wiki): one row per (model, checkpoint, layer, head), layers and heads "
                "0-based. ``same_word``: for every token of a word split into two or more tokens, the attention it "
                "gives to its word's other tokens, averaged over those tokens of every example (``n_units`` of "
                "them), with its 95% bootstrap interval over examples (``same_word_low``/``same_word_high``). "
                "[C]'s token-to-word conversion sums this attention away; docs/surface.md."),
    HeadMeasure(
        "first_token", "attention to the first token (alpha_1)", "share", first_token_sums,
        caption="Gu et al. (2025)'s alpha_1 on the surface corpus (config surface.corpus, default wiki): one row per "
                "(model, checkpoint, layer, head), layers and heads 0-based. ``first_token``: the attention of every "
                "query but the first to position 0 (a decoder's attention sink, an encoder's [CLS]), averaged over "
                "those queries of every example (``n_units``), with its 95% bootstrap interval over examples. A head "
                f"with alpha_1 above 0.3 is a sink head; tables/{SINK_RATES}.csv counts them as their code does; "
                "docs/surface.md."),
    HeadMeasure(
        "previous_token", "attention to the previous token", "share", previous_token_sums,
        caption="The previous-token score on the surface corpus (config surface.corpus, default wiki): one row per "
                "(model, checkpoint, layer, head), layers and heads 0-based. ``previous_token``: the attention of "
                "every query but the first to the position before it, averaged over those queries of every example "
                "(``n_units``), with its 95% bootstrap interval over examples. Unlike ``prev`` of "
                f"{SURFACE_HEADS}.csv, the first query (which has no previous token) is not counted; docs/surface.md."),
)


def measure_named(name: str) -> HeadMeasure:
    """The declared measure called ``name`` (a rule's ``measure`` wildcard)."""
    for measure in HEAD_MEASURES:
        if measure.name == name:
            return measure
    known = ", ".join(m.name for m in HEAD_MEASURES) or "none"
    raise KeyError(f"no head measure is declared as {name!r} in workflow_scripts/surface/measures.py ({known})")
