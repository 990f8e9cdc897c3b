"""Attention pattern classes of [K] §4.1 (METHODS 8.1 a): the rule-based labeller, from map features.

Every (example, head) map (token level, rows = attending tokens, no padding: a dump stores each
example at its own length) is described by four features, computed for all heads of an example
at once:

- ``vertical``: mean over all rows of the attention on special-token columns (the tokenizer's
  ``special_tokens_mask`` as stored in the token table: ``[CLS]``, ``[SEP]``, ``<s>``, ...); an input without any
  special token (GPT-2's text) has its first token there instead, a decoder's attention sink;
- ``diagonal``: mean over all rows of the attention on the two neighbours ``i-1`` and ``i+1``;
- ``structured``: mean over all rows of the attention on the union of both (special columns or a
  neighbour), so that a token next to a special token is not counted twice;
- ``block`` (sentence-pair inputs only, NaN otherwise): for every non-special row, the share of its
  attention to non-special tokens that stays within its own segment; averaged over the rows of
  each segment, then over the two segments (so a long first text does not make a uniform map look
  like a block: a uniform map scores about 0.5, a pure block 1.0);
- ``entropy``: mean entropy (nats) of the rows; recorded for inspection and the labelling tool, not
  used by the rules.

Rules (the :class:`Thresholds`), in this order:

1. ``structured >= structured``: the map is special tokens and/or neighbours. It is
   ``Vertical+Diagonal`` when ``vertical >= vertical`` and ``diagonal >= diagonal`` both hold, else
   ``Vertical`` when ``vertical >= diagonal`` (the features, not the thresholds), else ``Diagonal``;
2. a pair input with ``block >= block``: ``Block``;
3. anything else: ``Heterogeneous`` (the exhaustive rest, as in [K]).

Everything above the rules imports them from here: the feature tables (:mod:`.patterns`), the
CNN (:mod:`.pattern_cnn`, which learns the same classes and reads the same token roles through
:func:`token_roles`) and the per-task class shares (:mod:`.pattern_shares`), which count either's labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.stats import entropy

CLASSES = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
VERTICAL, DIAGONAL, VERTICAL_DIAGONAL, BLOCK, HETEROGENEOUS = range(len(CLASSES))
FEATURES = ("vertical", "diagonal", "structured", "block", "entropy")
TINY = np.float32(1e-12)  # a share's denominator is at least this


@dataclass(frozen=True)
class Thresholds:
    """Thresholds of the rule-based labeller, each a share of a map's attention in [0, 1].

    No defaults: the values are a study setting, defined once, in the config schema.
    """

    structured: float  # mass on special columns or the +-1 neighbours for V, D, V+D
    vertical: float  # both components at least this for Vertical+Diagonal
    diagonal: float
    block: float  # within-segment share (pairs) for Block

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Thresholds:
        """Thresholds by name, read as floats: the thresholds stored with a feature table then read the same
        whether they were written 1 or 1.0."""
        return cls(**{name: float(value) for name, value in values.items()})


def class_index(name: str) -> int:
    """Index of a class name; accepts any case and the short 'Vert+Diag' of [K]'s figure."""
    key = str(name).strip().lower().replace(" ", "").replace("_", "+")
    aliases = {c.lower(): i for i, c in enumerate(CLASSES)}
    aliases.update({"vert+diag": VERTICAL_DIAGONAL, "vertical+diag": VERTICAL_DIAGONAL, "hetero": HETEROGENEOUS})
    if key not in aliases:
        raise KeyError(name)
    return aliases[key]


# --- features and rules -------------------------------------------------------------------


def map_features(attention: np.ndarray, special: np.ndarray, segment: np.ndarray) -> dict[str, np.ndarray]:
    """Features of every map of one example: arrays of shape ``attention.shape[:-2]``.

    ``attention``: (..., T, T), rows attending; ``special``: (T,) bool; ``segment``: (T,) int
    (0 first text, 1 second, -1 special). Vectorised over all leading axes (layers, heads).
    """
    a = np.asarray(attention, dtype=np.float32)
    special = np.asarray(special, dtype=bool)
    segment = np.asarray(segment)
    n = a.shape[-1]
    if special.shape != (n,) or segment.shape != (n,):
        raise AtlasError(f"map of {n} tokens but {special.shape[0]} special flags and {segment.shape[0]} segments")
    index = np.arange(n)
    neighbour = np.abs(index[:, None] - index[None, :]) == 1
    # The vertical columns: the special tokens, or the first token (a decoder's sink) where the input has none.
    sink = special if special.any() else index == 0
    structured_mask = neighbour | sink[None, :]
    features = {
        "vertical": a[..., sink].sum(-1).mean(-1) if sink.any() else np.zeros(a.shape[:-2], np.float32),
        "diagonal": (a * neighbour).sum(-1).mean(-1),
        "structured": (a * structured_mask).sum(-1).mean(-1),
        "entropy": entropy(a).mean(-1),
    }
    features["block"] = block_feature(a, special, segment)
    return features


def block_feature(a: np.ndarray, special: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Within-segment share of the attention to non-special tokens (pairs only; NaN for one text)."""
    content = ~special
    segments = [s for s in (0, 1) if (content & (segment == s)).any()]
    if len(segments) < 2:
        return np.full(a.shape[:-2], np.nan, dtype=np.float32)
    same = (segment[:, None] == segment[None, :]) & content[:, None] & content[None, :]
    within = (a * same).sum(-1)
    to_content = (a * content[None, :]).sum(-1)
    share = within / np.maximum(to_content, TINY)  # (..., T)
    means = [share[..., content & (segment == s)].mean(-1) for s in segments]
    return np.mean(means, axis=0).astype(np.float32)


def rule_labels(features: Mapping[str, np.ndarray], thresholds: Thresholds) -> np.ndarray:
    """Class index of every map from its features (see the module docstring for the rules)."""
    vertical = np.asarray(features["vertical"])
    diagonal = np.asarray(features["diagonal"])
    structured = np.asarray(features["structured"]) >= thresholds.structured
    block = np.nan_to_num(np.asarray(features["block"], dtype=np.float64), nan=-1.0) >= thresholds.block
    both = (vertical >= thresholds.vertical) & (diagonal >= thresholds.diagonal)
    labels = np.full(vertical.shape, HETEROGENEOUS, dtype=np.int8)
    labels[block] = BLOCK
    labels[structured & (diagonal > vertical)] = DIAGONAL
    labels[structured & (vertical >= diagonal)] = VERTICAL
    labels[structured & both] = VERTICAL_DIAGONAL
    return labels


# --- the token roles the features read ------------------------------------------------------


def token_roles(token_table: str | Path) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """(special flags, segments) of every example's tokens, from the token table."""
    try:
        table = pq.read_table(token_table, columns=["example_id", "token_index", "special", "segment"])
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise AtlasError(f"{token_table}: unreadable token table ({exc}); rerun snakemake to rebuild it") from exc
    example = table["example_id"].to_numpy()
    special = table["special"].to_numpy(zero_copy_only=False).astype(bool)
    segment = table["segment"].to_numpy().astype(np.int64)
    if len(example) == 0:
        return {}
    bounds = np.flatnonzero(np.diff(example)) + 1
    return {int(ids[0]): (s, g) for ids, s, g in
            zip(np.split(example, bounds), np.split(special, bounds), np.split(segment, bounds))}
