"""Selecting the best dependency head (METHODS 7.3, 10); :mod:`.dependency_tables` writes the tables.

Reads the per-sentence score parts that :func:`.dependency.score_dependency_heads`
writes, one per (model, checkpoint, treebank, split); selects heads (and offsets) on one
split and scores them on another, with bootstrap intervals over sentences and paired tests
against the offset baseline and the random-init control of the same treebank. An unlabelled
treebank (no relation labels, e.g. the WSJ sample in Malt-TAB) has only the relation ``all``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.labels import (
    CAUSAL_DIRECTIONS,
    DEP_TO_HEAD,
    DEP_TO_PRECEDING_HEAD,
    DIRECTIONS,
    EITHER,
    HEAD_TO_DEP,
    HEAD_TO_PRECEDING_DEP,
)
from ..core.score_tables import list_rows, read_score_table
from ..core.stats import paired_bootstrap_test, ratio_bootstrap_ci
from .dependency import ALL, paper_label
from .dependency_counts import CausalCounts

log = logging.getLogger(__name__)


@dataclass
class SplitCounts:
    """Per-sentence counts of one (model, checkpoint, treebank, split), by relation."""
    meta: dict[str, Any]
    frame: pd.DataFrame  # example_id, relation, total
    dep: np.ndarray  # (rows, L*H)
    head: np.ndarray
    off: np.ndarray  # (rows, K): the offset baseline, the same in both directions
    causal: dict[str, np.ndarray] | None = None  # a causal model's restricted counts (dependency_counts.CausalCounts)

    @classmethod
    def read(cls, path: str | Path) -> SplitCounts:
        table, meta = read_score_table(path, "a dependency score table")

        def matrix(name: str) -> np.ndarray:
            return list_rows(table[name]).astype(np.int32)

        frame = table.select(["example_id", "relation", "total"]).to_pandas()
        if "offset_correct" not in table.column_names:
            raise AtlasError(f"{path}: a dependency score table of an older version; rerun snakemake")
        causal = None
        if meta.get("causal"):
            causal = {name: (matrix(name) if name not in ("before_total", "after_total")
                             else table[name].to_numpy().astype(np.float64)) for name in CausalCounts.COLUMNS}
        return cls(meta, frame, matrix("dep_correct"), matrix("head_correct"), matrix("offset_correct"), causal)

    @property
    def input_protocol(self) -> str:
        return str(self.meta.get("input_protocol", "text"))

    @property
    def offsets(self) -> np.ndarray:
        return np.asarray(self.meta["offsets"], dtype=np.int64)

    def relations(self) -> list[str]:
        return list(dict.fromkeys(self.frame["relation"]))

    def keep(self, relations: Sequence[str]) -> SplitCounts:
        """The counts of ``relations`` only (an unlabelled treebank: ``all``)."""
        rows = np.flatnonzero(self.frame["relation"].isin(list(relations)).to_numpy())
        causal = None if self.causal is None else {name: values[rows] for name, values in self.causal.items()}
        return SplitCounts(self.meta, self.frame.iloc[rows].reset_index(drop=True), self.dep[rows], self.head[rows],
                           self.off[rows], causal)

    def rows(self, relation: str) -> np.ndarray:
        return np.flatnonzero(self.frame["relation"].to_numpy() == relation)

    def directions(self, relation: str) -> tuple[str, ...]:
        """The directions a relation's heads are scored in: [C]'s (``all``: dependent -> head only), or a causal
        model's three (docs/syntax.md)."""
        if self.causal is not None:
            return CAUSAL_DIRECTIONS
        return (DEP_TO_HEAD,) if relation == ALL else DIRECTIONS

    def candidates(self, relation: str, direction: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(example ids, totals, head counts (n, C), offset counts (n, K')) of a relation and direction."""
        rows = self.rows(relation)
        ids = self.frame["example_id"].to_numpy()[rows]
        if direction in CAUSAL_DIRECTIONS:
            if self.causal is None:
                raise ValueError(f"direction {direction!r} needs the counts of a causal model's dump")
            c = {name: values[rows] for name, values in self.causal.items()}
            if direction == DEP_TO_PRECEDING_HEAD:
                return ids, c["before_total"], c["dep_before"], c["offset_before"]
            if direction == HEAD_TO_PRECEDING_DEP:
                return ids, c["after_total"], c["head_after"], c["offset_after"]
            return (ids, c["before_total"] + c["after_total"], c["dep_before"] + c["head_after"],
                    c["offset_before"] + c["offset_after"])
        total = self.frame["total"].to_numpy()[rows].astype(np.float64)
        if direction == DEP_TO_HEAD:
            return ids, total, self.dep[rows], self.off[rows]
        if direction == HEAD_TO_DEP:
            return ids, total, self.head[rows], self.off[rows]
        if direction == EITHER:
            return ids, total, np.concatenate([self.dep[rows], self.head[rows]], axis=1), self.off[rows]
        raise ValueError(direction)


def pooled_accuracy(counts: np.ndarray, total: np.ndarray) -> np.ndarray:
    denominator = total.sum()
    if denominator == 0:
        return np.full(counts.shape[1], np.nan)
    return counts.sum(axis=0) / denominator


def batched_intervals(split: SplitCounts, columns: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], *,
                      resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap intervals of many ratios on one split in a single resampling of its sentences.

    ``columns``: (example ids, per-sentence totals (n,), per-sentence counts (n, c)) per ratio,
    each with c >= 1 candidates sharing the totals. Every ratio is resampled over all sentences
    of the split (a sentence without the relation adds 0 / 0), with the same resamples, which is
    also much faster than one bootstrap per ratio. Returns (estimate, low, high), each a list
    aligned with ``columns`` of arrays (c,).
    """
    sentences = np.unique(split.frame["example_id"].to_numpy())
    widths = [counts.shape[1] for _, _, counts in columns]
    bounds = np.concatenate([[0], np.cumsum(widths)])
    numerators = np.zeros((len(sentences), bounds[-1]))
    denominators = np.zeros((len(sentences), bounds[-1]))
    for (ids, total, counts), lo, hi in zip(columns, bounds[:-1], bounds[1:]):
        position = np.searchsorted(sentences, ids)
        numerators[position, lo:hi] = counts
        denominators[position, lo:hi] = total[:, None]
    if bounds[-1] == 0:
        return [], [], []
    estimate, low, high = ratio_bootstrap_ci(numerators, denominators, resamples=resamples, seed=seed)
    split_at = bounds[1:-1]
    return np.split(estimate, split_at), np.split(low, split_at), np.split(high, split_at)


def head_rows(model: str, checkpoint: str, splits: Mapping[str, SplitCounts], protocols: Sequence[tuple[str, str]],
              *, resamples: int, seed: int) -> pd.DataFrame:
    """Every head's accuracy per relation and direction, on the score split of every protocol."""
    frames = []
    intervals: dict[str, dict[tuple[str, str], tuple]] = {}
    for score_split in dict.fromkeys(score for _, score in protocols):
        score = splits[score_split]
        keys = [(r, d) for r in score.relations() for d in score.directions(r)]
        columns = [score.candidates(r, d)[:3] for r, d in keys]
        estimate, low, high = batched_intervals(score, columns, resamples=resamples, seed=seed)
        intervals[score_split] = {key: (e, lo, hi, c[1].sum())
                                  for key, e, lo, hi, c in zip(keys, estimate, low, high, columns)}
    for select_split, score_split in protocols:
        select, score = splits[select_split], splits[score_split]
        layers, n_heads = int(score.meta["num_layers"]), int(score.meta["num_heads"])
        for (relation, direction), (estimate, low, high, n) in intervals[score_split].items():
            _, select_total, select_counts, _ = select.candidates(relation, direction)
            select_accuracy = pooled_accuracy(select_counts, select_total)
            selected = np.zeros(layers * n_heads, dtype=bool)
            if np.isfinite(select_accuracy).any():
                selected[int(np.nanargmax(select_accuracy))] = True
            frames.append(pd.DataFrame({
                "model": model, "checkpoint": checkpoint, "relation": relation,
                "paper_label": paper_label(relation), "direction": direction,
                "layer": np.repeat(np.arange(layers), n_heads), "head": np.tile(np.arange(n_heads), layers),
                "select_split": select_split, "score_split": score_split,
                "input_protocol": score.input_protocol, "accuracy": estimate, "n": int(n), "ci_low": low,
                "ci_high": high,
                "select_accuracy": select_accuracy, "selected": selected,
            }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataclass
class Choice:
    index: int  # candidate column (heads: layer*H + head, +L*H for head->dep under "either")
    counts: np.ndarray  # per-sentence correct counts of the chosen candidate on the score split
    total: np.ndarray
    ids: np.ndarray

    @property
    def accuracy(self) -> float:
        return float(self.counts.sum() / self.total.sum())


def select_and_score(select: SplitCounts, score: SplitCounts, relation: str, direction: str, *,
                     offsets: bool) -> Choice | None:
    """Choose the best head (or offset) on ``select``; return its per-sentence counts on ``score``."""
    _, select_total, select_heads, select_offsets = select.candidates(relation, direction)
    ids, total, heads, offset_counts = score.candidates(relation, direction)
    if select_total.sum() == 0 or total.sum() == 0:
        return None
    select_candidates = select_offsets if offsets else select_heads
    candidates = offset_counts if offsets else heads
    index = int(np.nanargmax(pooled_accuracy(select_candidates, select_total)))
    return Choice(index, candidates[:, index].astype(np.float64), total, ids)


def _decode_head(index: int, direction: str, num_layers: int, num_heads: int) -> tuple[int, int, str]:
    per_direction = num_layers * num_heads
    chosen_direction = direction
    if direction == EITHER:
        chosen_direction = DIRECTIONS[index // per_direction]
        index %= per_direction
    return index // num_heads, index % num_heads, chosen_direction


def _aligned(a: Choice, b: Choice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of two choices on the same sentences (joined by example id)."""
    common, ia, ib = np.intersect1d(a.ids, b.ids, return_indices=True)
    if len(common) != len(a.ids) or len(common) != len(b.ids) or not np.array_equal(a.total[ia], b.total[ib]):
        raise AtlasError("paired comparison over different sentences or arcs: the two checkpoints' scores "
                         "were made from different token tables; rerun snakemake")
    return a.counts[ia], b.counts[ib], a.total[ia]


def best_rows(model: str, checkpoint: str, splits: Mapping[str, SplitCounts], relations: Sequence[str],
              protocols: Sequence[tuple[str, str]], *, resamples: int, seed: int,
              control: Mapping[str, SplitCounts] | None = None, control_name: str | None = None,
              missing: set[tuple[str, str]] | None = None) -> list[dict]:
    """The best head per relation, direction and protocol, with the best offset and the control beside it.
    A relation with no arc in the scoring split is left out, and added to ``missing`` as (relation, split) for
    the caller to say once (else it is logged here)."""
    rows: list[dict] = []
    kwargs = {"resamples": resamples, "seed": seed}
    for select_split, score_split in protocols:
        select, score = splits[select_split], splits[score_split]
        layers, n_heads = int(score.meta["num_layers"]), int(score.meta["num_heads"])
        offsets = score.offsets
        pending: list[tuple[dict, Choice, Choice]] = []
        for relation in relations:
            if relation not in score.relations():
                if missing is None:
                    log.warning("relation %r has no arc in the %s split; it is left out of dependency_best",
                                relation, score_split)
                else:
                    missing.add((relation, score_split))
                continue
            # Over both of [C]'s directions, the better head (`either`); a causal model's union counts each arc once.
            either = () if relation == ALL or score.causal is not None else (EITHER,)
            for direction in (*score.directions(relation), *either):
                head = select_and_score(select, score, relation, direction, offsets=False)
                base = select_and_score(select, score, relation, direction, offsets=True)
                if head is None or base is None:
                    continue
                layer, head_index, head_direction = _decode_head(head.index, direction, layers, n_heads)
                offset = int(offsets[base.index])
                before, after, total = _aligned(base, head)
                diff, _, _, p = paired_bootstrap_test(before, after, total, **kwargs)
                row = {
                    "model": model, "checkpoint": checkpoint, "relation": relation,
                    "paper_label": paper_label(relation), "direction": direction,
                    "select_split": select_split, "score_split": score_split,
                    "layer": layer, "head": head_index, "head_label": f"{layer + 1}-{head_index + 1}",
                    "head_direction": head_direction, "accuracy": head.accuracy, "n": int(head.total.sum()),
                    "input_protocol": score.input_protocol, "baseline_offset": offset,
                    "baseline_accuracy": base.accuracy, "diff_vs_baseline": diff, "p_vs_baseline": p,
                }
                if control is not None and select_split in control and score_split in control:
                    other = select_and_score(control[select_split], control[score_split], relation, direction,
                                             offsets=False)
                    if other is not None:
                        c_layer, c_head, _ = _decode_head(other.index, direction, layers, n_heads)
                        before, after, total = _aligned(other, head)
                        diff, _, _, p = paired_bootstrap_test(before, after, total, **kwargs)
                        row.update({"control_checkpoint": control_name,
                                    "control_head_label": f"{c_layer + 1}-{c_head + 1}",
                                    "control_accuracy": other.accuracy, "diff_vs_control": diff, "p_vs_control": p})
                pending.append((row, head, base))
        # One resampling of the score split's sentences for every interval of this protocol.
        columns = [(c.ids, c.total, c.counts[:, None]) for _, head, base in pending for c in (head, base)]
        _, low, high = batched_intervals(score, columns, **kwargs)
        for i, (row, _, _) in enumerate(pending):
            row.update({"ci_low": float(low[2 * i][0]), "ci_high": float(high[2 * i][0]),
                        "baseline_ci_low": float(low[2 * i + 1][0]), "baseline_ci_high": float(high[2 * i + 1][0])})
            rows.append(row)
    return rows
