"""Role agreement (docs/report.md, "tables/role_agreement.csv"): how far a head keeps its role between two related
subjects of the study, for every role of the atlas (tables/atlas.csv) that both subjects have.

The pairs come from the report's plan (workflow_scripts/study/plans/report.py), which knows the study's checkpoints
and revisions: a model's pretrained checkpoint and each fine-tuned run's final checkpoint (``pretrained_vs_finetuned``),
the final checkpoints of two seeds of one task (``finetune_seeds``), each revision of a series and the next
(``revision_next``) and the last (``revision_last``), a model's attention and each of its signals
(``attention_vs_signal``). Per pair and role (role + detail), over the heads both subjects score:

- ``rho``: Spearman's rank correlation of the per-head scores, with a percentile bootstrap interval over heads
  (``rho_low``, ``rho_high``: heads resampled with replacement, pairs kept; the study's resamples and seed);
- ``jaccard_top``: |A & B| / |A | B| of the two subjects' top heads, the ``top_heads`` highest scores (5% of the
  heads, at least 3; ties broken by layer, then head);
- ``kept_share``: the share of the first subject's role heads that are role heads of the second too
  (``role_heads``: their number; ``lost_heads``: those that are not, as ``layer:head`` counted from 0 as the atlas
  counts). A head has the role when its score is above the role's threshold where the role has one
  (the sink's: alpha_1 above surface.diagnostics.sink_threshold, Gu et al.'s 0.3 by default; the previous-token
  head's: a share above 0.5, [C]'s "heads >50% on previous token" as the paper comparison counts them), otherwise
  when it is one of the top heads.

A role of which the atlas holds one head per subject (a relation's best dependency head, the best coreference head)
has no ranking to correlate: the row says whether the best head stays the best (``jaccard_top`` and ``kept_share``
1 or 0) and ``rho`` is empty. Nothing is left out silently: a pair of different shapes (layers x heads), a subject
the atlas has no rows of (the atlas leaves signal subjects out) and the roles measured on one subject only are rows
with a ``note`` and no numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.io import read_csv, write_csv

TOP_SHARE, TOP_MIN = 0.05, 3
# Roles whose heads a published threshold defines ([C] section 3); the sink's comes from the config (``thresholds``).
FIXED_THRESHOLDS = {"previous_token": 0.5}
LEVEL = 0.95
PATTERN = "pattern:"
COLUMNS = ["relation", "role", "detail", "first_model", "first_checkpoint", "second_model", "second_checkpoint",
           "heads", "rho", "rho_low", "rho_high", "top_heads", "jaccard_top", "role_heads", "kept_share", "note",
           "role_rule", "lost_heads", "num_layers", "num_heads", "bootstrap_resamples", "bootstrap_seed"]


def top_count(heads: int) -> int:
    """How many top heads a subject has: 5% of its heads, at least 3 (all of them where it has fewer)."""
    return min(heads, max(TOP_MIN, math.ceil(TOP_SHARE * heads)))


def top_heads(scores: pd.Series, count: int) -> set[tuple[int, int]]:
    """The ``count`` (layer, head) of highest score; ties go to the lower layer, then the lower head."""
    ordered = scores.reset_index().sort_values(["score", "layer", "head"], ascending=[False, True, True],
                                               kind="stable")
    return set(zip(ordered["layer"].head(count).astype(int), ordered["head"].head(count).astype(int), strict=True))


def role_heads(scores: pd.Series, threshold: float | None) -> set[tuple[int, int]]:
    """The heads with the role: score above ``threshold``, or the top heads where the role has no threshold."""
    if threshold is None:
        return top_heads(scores, top_count(len(scores)))
    above = scores[scores > threshold]
    return set(zip(above.index.get_level_values("layer").astype(int), above.index.get_level_values("head").astype(int),
                   strict=True))


def _spearman_rows(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``first`` with the same row of ``second`` (average ranks for ties; NaN where a
    row is constant)."""
    from scipy.stats import rankdata

    x, y = rankdata(first, axis=-1), rankdata(second, axis=-1)
    x, y = x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
    spread = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (x * y).sum(axis=-1) / np.where(spread > 0, spread, 1.0), np.nan)


def spearman_interval(first: np.ndarray, second: np.ndarray, *, resamples: int, seed: int,
                      level: float = LEVEL) -> tuple[float, float, float]:
    """(rho, low, high): Spearman's rho of the paired scores and its percentile bootstrap interval over the pairs."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    rho = float(_spearman_rows(first, second))
    if len(first) < 3 or not np.isfinite(rho) or resamples <= 0:
        return rho, np.nan, np.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(first), size=(resamples, len(first)))
    samples = _spearman_rows(first[picks], second[picks])
    alpha = (1 - level) / 2
    low, high = np.nanquantile(samples, [alpha, 1 - alpha]) if np.isfinite(samples).any() else (np.nan, np.nan)
    return rho, float(low), float(high)


def compare_role(first: pd.Series, second: pd.Series, *, threshold: float | None, resamples: int,
                 seed: int) -> dict[str, Any]:
    """The numbers of one role between two subjects of the same shape, each a score per (layer, head) index."""
    if len(first) <= 1 or len(second) <= 1:
        return _best_head(first, second)
    common = first.index.intersection(second.index)
    a, b = first.loc[common], second.loc[common]
    rho, low, high = spearman_interval(a.to_numpy(), b.to_numpy(), resamples=resamples, seed=seed)
    count = top_count(len(common))
    top_a, top_b = top_heads(a, count), top_heads(b, count)
    had, has = role_heads(a, threshold), role_heads(b, threshold)
    lost = sorted(had - has)
    rule = f"score > {threshold:g}" if threshold is not None else f"top {count} heads"
    return {"heads": len(common), "rho": rho, "rho_low": low, "rho_high": high, "top_heads": count,
            "jaccard_top": len(top_a & top_b) / len(top_a | top_b), "role_heads": len(had),
            "kept_share": (len(had) - len(lost)) / len(had) if had else np.nan, "role_rule": rule,
            "lost_heads": " ".join(f"{layer}:{head}" for layer, head in lost),
            "note": "" if had else f"no head of the first subject has the role ({rule})"}


def _best_head(first: pd.Series, second: pd.Series) -> dict[str, Any]:
    """A role of which the atlas holds one head per subject (its best): does the best head stay the best?"""
    best_a, best_b = top_heads(first, 1), top_heads(second, 1)
    same = float(best_a == best_b)
    return {"heads": 1, "rho": np.nan, "rho_low": np.nan, "rho_high": np.nan, "top_heads": 1, "jaccard_top": same,
            "role_heads": 1, "kept_share": same, "role_rule": "best head",
            "lost_heads": "" if same else " ".join(f"{layer}:{head}" for layer, head in sorted(best_a)),
            "note": "the atlas holds only this role's best head per subject: whether the best head stays the best"}


def _label(role: str, detail: str) -> str:
    return f"{role} ({detail})" if detail else role


def compare_pair(atlas: pd.DataFrame, pair: Mapping[str, Any], *, thresholds: Mapping[str, float],
                 resamples: int, seed: int) -> list[dict[str, Any]]:
    """The rows of one pair: one per role both subjects have, or one note row where the pair cannot be compared,
    and one note row naming the roles only one subject has."""
    first, second = (str(pair["first_model"]), str(pair["first_checkpoint"])), (str(pair["second_model"]),
                                                                                  str(pair["second_checkpoint"]))
    base = {"relation": pair["relation"], "first_model": first[0], "first_checkpoint": first[1],
            "second_model": second[0], "second_checkpoint": second[1], "role": "", "detail": "",
            "bootstrap_resamples": resamples, "bootstrap_seed": seed}
    rows_a, rows_b = _subject(atlas, *first), _subject(atlas, *second)
    missing = [" ".join(subject) for subject, rows in ((first, rows_a), (second, rows_b)) if rows.empty]
    if missing:
        why = f": {pair['why_absent']}" if pair.get("why_absent") else ""
        return [{**base, "note": f"the atlas has no role rows of {' and '.join(missing)}{why}"}]
    shape_a, shape_b = _shape(rows_a), _shape(rows_b)
    base.update(num_layers=shape_a[0], num_heads=shape_a[1])
    if shape_a != shape_b:
        return [{**base, "num_layers": np.nan, "num_heads": np.nan,
                 "note": f"different shapes (layers x heads): {shape_a[0]} x {shape_a[1]} and {shape_b[0]} x "
                         f"{shape_b[1]}; heads of different models do not pair"}]
    task = pair.get("task")
    roles_a, roles_b = _roles(rows_a, task), _roles(rows_b, task)
    out = []
    for role, detail in [key for key in roles_a if key in roles_b]:
        scores = [_scores(roles, role, detail) for roles in (roles_a, roles_b)]
        threshold = thresholds.get(role)
        out.append({**base, "role": role, "detail": detail,
                    **compare_role(*scores, threshold=None if threshold is None else float(threshold),
                                   resamples=resamples, seed=seed)})
    only = [(side, [_label(*key) for key in roles if key not in other])
            for side, roles, other in (("first", roles_a, roles_b), ("second", roles_b, roles_a))]
    only = [f"only on the {side}: {', '.join(labels)}" for side, labels in only if labels]
    if only:
        out.append({**base, "note": "roles measured on one subject only, not compared; " + "; ".join(only)})
    return out


def _subject(atlas: pd.DataFrame, model: str, checkpoint: str) -> pd.DataFrame:
    return atlas[(atlas["model"].astype(str) == model) & (atlas["checkpoint"].astype(str) == checkpoint)]


def _shape(rows: pd.DataFrame) -> tuple[int, int]:
    layers = int(rows["num_layers"].iloc[0])
    heads = int(rows["num_heads"].iloc[0]) if "num_heads" in rows.columns else int(rows["head"].max()) + 1
    return layers, heads


def _roles(rows: pd.DataFrame, task: str | None) -> dict[tuple[str, str], pd.DataFrame]:
    """(role, detail) -> its rows, in the atlas's order. With a fine-tuned task, a pattern class measured on
    another task's inputs belongs to no pair with that task's checkpoint and is left out."""
    detail = rows["detail"].fillna("").astype(str)
    roles = {}
    for (role, name), part in rows.groupby([rows["role"].astype(str), detail], sort=False):
        if task and role.startswith(PATTERN) and name != task:
            continue
        roles[role, name] = part
    return roles


def _scores(roles: Mapping[tuple[str, str], pd.DataFrame], role: str, detail: str) -> pd.Series:
    part = roles[role, detail]
    index = pd.MultiIndex.from_arrays([part["layer"].astype(int), part["head"].astype(int)], names=["layer", "head"])
    return pd.Series(part["score"].astype(float).to_numpy(), index=index, name="score").dropna()


def role_agreement(atlas: pd.DataFrame, pairs: Sequence[Mapping[str, Any]], *, thresholds: Mapping[str, float],
                   resamples: int, seed: int) -> pd.DataFrame:
    """Every pair's rows, in the order of ``pairs``."""
    thresholds = {**FIXED_THRESHOLDS, **thresholds}
    rows = [row for pair in pairs
            for row in compare_pair(atlas, pair, thresholds=thresholds, resamples=resamples, seed=seed)]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.astype({"heads": "Int64", "top_heads": "Int64", "role_heads": "Int64", "num_layers": "Int64",
                         "num_heads": "Int64"})


def role_agreement_table(atlas: str | Path, output: str | Path, *, pairs: Sequence[Mapping[str, Any]],
                         thresholds: Mapping[str, float], resamples: int, seed: int) -> pd.DataFrame:
    """Write tables/role_agreement.csv from tables/atlas.csv (rule role_agreement)."""
    frame = role_agreement(read_csv(atlas), pairs, thresholds=thresholds, resamples=resamples, seed=seed)
    write_csv(frame, output)
    return frame
