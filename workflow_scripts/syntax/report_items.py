"""How [C]'s published items name the syntax tables' rows (shared by the comparisons and the panels).

[C] Table 1 items name UD relations or [C]'s Stanford labels (:func:`relation_of`), Table 2 items a
method and a mention type (:func:`coref_key`), Table 3 items a probe and, for the random-init probe,
a checkpoint (:func:`probe_key`). Headline heads are held out: selected on ``syntax.select_split`` and
scored on ``syntax.score_split`` (coreference: on one half of the coreference treebank's documents, GUM by
default, scored on the other); [C]'s own protocol, select and score on the same data, stands beside them.

The dependency and probe tables hold every treebank of ``syntax.treebanks`` (their ``treebank`` column);
the comparison and the panels read the rows of one, ``StudyContext.syntax_treebank`` (:func:`syntax_rows`).
"""

from __future__ import annotations

import pandas as pd

from ..report.formatting import CONTROL, NO_CHECKPOINT, finite
from ..report.items import StudyContext, StudyTables
from .dependency import PAPER_LABELS

EITHER, DEP_TO_HEAD = "either", "dependent_to_head"
MENTION_TYPES = ("all", "pronoun", "proper", "nominal")
COREF_METHODS = {"head word match": "head_word_match", "nearest mention": "nearest_mention", "head": "head"}
PROBE_NAMES = {"right-branching": "right_branching", "distances+glove": "distance_glove", "attn": "attn",
               "attn+glove": "attn_glove"}
GLOVE_PROBES = ("attn_glove", "distance_glove")
BASELINE_PROBES = ("right_branching", "distance_glove")
COREF_HELD_OUT = "held out (GUM halves a→b, b→a)"
COREF_SAME_SPLIT = "same split (all→all, as [C])"


def held_out_label(select_split: str, score_split: str) -> str:
    """The label of a head selected on one split and scored on another, e.g. 'held out (train→dev)'."""
    return f"held out ({select_split}→{score_split})"


def same_split_label(split: str) -> str:
    """The label of [C]'s protocol, heads selected and scored on the same split: 'same split (dev→dev, as [C])'."""
    return f"same split ({split}→{split}, as [C])"


def syntax_rows(tables: StudyTables, name: str, model: str, ctx: StudyContext) -> tuple[pd.DataFrame | None, str]:
    """The rows of ``model`` in the syntax table ``name`` on ``ctx.syntax_treebank`` (every row of a table
    without a ``treebank`` column), or None and the reason there are none."""
    return tables.model_rows(name, model, treebank=ctx.syntax_treebank)


def treebank_note(ctx: StudyContext) -> str:
    """The summary footnote on panels B and C: the treebank (its language where not English) and how the heads
    were selected."""
    select, score = ctx.select_split, ctx.score_split
    if select != score:
        heads = (f"headline heads selected on {select}, scored on {score}: {held_out_label(select, score)}; "
                 f"light bars: selected and scored on {score}, {same_split_label(score)}")
    else:
        heads = f"heads selected and scored on {score}, {same_split_label(score)}"
    language = ctx.languages.get(ctx.syntax_treebank, "")
    language = f"language: {language}; " if language and language != "en" else ""
    return f"{ctx.treebank_name()} treebank ({language}gold trees; {heads})"


COREFERENCE_NOTE = ("GUM windows (gold coreference; held out: selected on one half of the documents, scored on "
                    "the other)")


def relation_of(item: str) -> tuple[str | None, bool]:
    """The UD relation that stands for a [C] Table 1 item, and whether it is [C]'s label with the
    direction reversed. Items name UD relations (``obj``, ``aux:pass``) or [C]'s Stanford labels
    (``dobj``, ``pobj (...)``), mapped by ``dependency.PAPER_LABELS``."""
    text = item.strip()
    if text in PAPER_LABELS:
        return text, "reversed" in PAPER_LABELS[text]
    first = text.split(" ", 1)[0].lower()
    if first in PAPER_LABELS:
        return first, "reversed" in PAPER_LABELS[first]
    stanford = {label.split(" ", 1)[0].lower(): ud for ud, label in PAPER_LABELS.items()}
    if first in stanford:
        ud = stanford[first]
        return ud, "reversed" in PAPER_LABELS[ud]
    return None, False


def dependency_rows(rows: pd.DataFrame, relation: str, select_split: str, score_split: str,
                    direction: str | None = None) -> pd.DataFrame:
    """The best-head rows of ``relation`` selected on ``select_split`` and scored on ``score_split``, in
    ``direction``, by default the one [C] reported (``either``; ``all``: dependent -> head)."""
    direction = direction or (DEP_TO_HEAD if relation == "all" else EITHER)
    return rows[(rows["relation"].astype(str) == relation) & (rows["direction"].astype(str) == direction)
                & (rows["select_split"].astype(str) == select_split) & (rows["score_split"].astype(str) == score_split)]


def coref_key(item: str) -> tuple[str | None, str | None]:
    """(method, mention type) of a [C] Table 2 item: 'head 5-4 all', 'nearest mention all', ..."""
    words = item.strip().lower().split()
    if not words or words[-1] not in MENTION_TYPES:
        return None, None
    text = " ".join(words[:-1])
    for prefix, method in COREF_METHODS.items():
        if text == prefix or text.startswith(prefix + " "):
            return method, words[-1]
    return None, None


def pooled(halves: pd.DataFrame, column: str) -> float | None:
    """The accuracy (``column``) of two held-out halves pooled over their mentions, None if a half has none."""
    if halves.empty or not all(finite(v) for v in halves[column]) or not all(finite(v) for v in halves["n"]):
        return None
    n = halves["n"].astype(float)
    return float((halves[column].astype(float) * n).sum() / n.sum()) if n.sum() > 0 else None


def probe_key(item: str) -> tuple[str | None, str | None]:
    """(checkpoint, probe) of a [C] Table 3 item; checkpoint None: every compared checkpoint."""
    text = item.strip().lower()
    checkpoint = None
    if text.startswith("random-init "):
        checkpoint, text = CONTROL, text[len("random-init "):].strip()
    probe = PROBE_NAMES.get(text)
    if probe in BASELINE_PROBES:
        checkpoint = NO_CHECKPOINT
    return checkpoint, probe
