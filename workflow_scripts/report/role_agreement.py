"""Role agreement (docs/roles.md, "tables/role_agreement.csv"): how far a head keeps its role between two related
subjects of the study, for every role of the atlas (tables/atlas.csv) that both subjects have, each read against its
own noise floor (role_floors.py).

The pairs come from the report's plan (workflow_scripts/study/plans/report.py), which knows the study's checkpoints
and revisions: a model's pretrained checkpoint and each fine-tuned checkpoint of roles.finetuned and each fine-tuned
run's final checkpoint (``pretrained_vs_finetuned``), the same checkpoint of two seeds of one task
(``finetune_seeds``), each revision of a series and the next (``revision_next``) and the last (``revision_last``), a
model's attention and each of its signals (``attention_vs_signal``). Per pair and role (role + detail), over the heads
both subjects score:

- ``rho``: Spearman's rank correlation of the per-head scores, with a percentile bootstrap interval over heads
  (``rho_low``, ``rho_high``: heads resampled with replacement, pairs kept; the study's resamples and seed);
- the floor it is read against: ``split_half_rho`` and the Spearman-Brown corrected ``floor_rho``/``floor_low``/
  ``floor_high`` of the first subject (tables/atlas_halves.csv), and where the study has two or more seeds of the
  task, ``seed_rho`` (``seed_low``, ``seed_high``): the rho of the second subject's role and the same checkpoint of
  another seed (``seed_checkpoint``); then the ``verdict`` (``moved``, ``kept``, ``noisy``, ``same weights``);
- the best head: ``first_best``, ``second_best``, ``best_kept`` and ``best_change`` with its interval;
- ``jaccard_top``: |A & B| / |A | B| of the two subjects' top heads, the ``top_heads`` highest scores (5% of the
  heads, at least 3; ties broken by layer, then head);
- ``kept_share``: the share of the first subject's role heads that are role heads of the second too
  (``role_heads``: their number; ``lost_heads``: those that are not, as ``layer:head`` counted from 0 as the atlas
  counts). A head has the role when its score is above the role's threshold where the role has one
  (the sink's: alpha_1 above surface.diagnostics.sink_threshold, Gu et al.'s 0.3 by default; the previous-token
  head's: a share above 0.5, [C]'s "heads >50% on previous token" as the paper comparison counts them), otherwise
  when it is one of the top heads.

A role of which the atlas holds one head per subject (a relation's best dependency head, the best coreference head)
has no ranking to correlate; where both subjects have every head's accuracy of it (``dependency_accuracy``,
``coreference_accuracy``), that role's row says it all (rho, and the best head's columns) and the best-head role is not
compared again; otherwise its row says whether the best head stays the best and ``rho`` is empty. Nothing is left
out silently: a pair of different shapes (layers x heads), a subject the atlas has no rows of (the atlas leaves signal
subjects out) and the roles measured on one subject only are rows with a ``note`` and no numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.io import read_csv, write_csv
from .head_ranks import role_heads, spearman_interval, top_count, top_heads
from .role_floors import best_head_change, split_half_floor, verdict

__all__ = ["COLUMNS", "compare_pair", "compare_role", "role_agreement", "role_agreement_table", "spearman_interval",
           "top_count", "top_heads"]

# Roles whose heads a published threshold defines ([C] section 3); the sink's comes from the config (``thresholds``).
FIXED_THRESHOLDS = {"previous_token": 0.5}
PATTERN = "pattern:"
# A best-head role and the role of every head's score of the same quantity, which says more.
BEST_HEAD_ROLES = {"dependency": "dependency_accuracy", "coreference": "coreference_accuracy"}
COLUMNS = ["relation", "role", "detail", "first_model", "first_checkpoint", "second_model", "second_checkpoint",
           "heads", "rho", "rho_low", "rho_high", "split_half_rho", "floor_rho", "floor_low", "floor_high",
           "seed_checkpoint", "seed_rho", "seed_low", "seed_high", "verdict", "first_best", "second_best", "best_kept",
           "best_change", "best_change_low", "best_change_high", "top_heads", "jaccard_top", "role_heads",
           "kept_share", "note", "role_rule", "lost_heads", "num_layers", "num_heads", "floor_correction",
           "noisy_below", "bootstrap_resamples", "bootstrap_seed"]
INTEGERS = ("heads", "top_heads", "role_heads", "num_layers", "num_heads")


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
            "jaccard_top": len(top_a & top_b) / len(top_a | top_b) if top_a | top_b else np.nan, "role_heads": len(had),
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
                 resamples: int, seed: int, halves: pd.DataFrame | None = None,
                 noisy_below: float = 0.5) -> list[dict[str, Any]]:
    """The rows of one pair: one per role both subjects have, or one note row where the pair cannot be compared,
    and one note row naming the roles only one subject has. ``halves``: tables/atlas_halves.csv (the floors);
    ``pair``'s ``seed_checkpoint`` (the seed floor) and ``same_weights`` (a note, and the verdict) where it has them."""
    first, second = (str(pair["first_model"]), str(pair["first_checkpoint"])), (str(pair["second_model"]),
                                                                                  str(pair["second_checkpoint"]))
    base = {"relation": pair["relation"], "first_model": first[0], "first_checkpoint": first[1],
            "second_model": second[0], "second_checkpoint": second[1], "role": "", "detail": "",
            "noisy_below": noisy_below, "bootstrap_resamples": resamples, "bootstrap_seed": seed}
    rows_a, rows_b = subject_rows(atlas, *first), subject_rows(atlas, *second)
    missing = [" ".join(subject) for subject, rows in ((first, rows_a), (second, rows_b)) if rows.empty]
    if missing:
        why = f": {pair['why_absent']}" if pair.get("why_absent") else ""
        return [{**base, "note": f"the atlas has no role rows of {' and '.join(missing)}{why}"}]
    shape_a, shape_b = subject_shape(rows_a), subject_shape(rows_b)
    base.update(num_layers=shape_a[0], num_heads=shape_a[1])
    if shape_a != shape_b:
        return [{**base, "num_layers": np.nan, "num_heads": np.nan,
                 "note": f"different shapes (layers x heads): {shape_a[0]} x {shape_a[1]} and {shape_b[0]} x "
                         f"{shape_b[1]}; heads of different models do not pair"}]
    task = pair.get("task")
    roles_a, roles_b = roles_of(rows_a, task), roles_of(rows_b, task)
    seed_checkpoint = pair.get("seed_checkpoint")
    roles_seed = roles_of(subject_rows(atlas, second[0], str(seed_checkpoint)), task) if seed_checkpoint else {}
    halves_a = subject_rows(halves, *first) if halves is not None else None
    same_weights = bool(pair.get("same_weights"))
    out = []
    for role, detail in compared_roles(roles_a, roles_b):
        threshold = thresholds.get(role)
        row = {**base, "role": role, "detail": detail,
               **compare_role(_scores(roles_a, role, detail), _scores(roles_b, role, detail),
                              threshold=None if threshold is None else float(threshold), resamples=resamples,
                              seed=seed)}
        row.update(_against_floors(roles_a, roles_b, roles_seed, halves_a, role, detail, resamples=resamples,
                                   seed=seed))
        if (role, detail) in roles_seed:
            row["seed_checkpoint"] = seed_checkpoint
        row["verdict"] = verdict(row, noisy_below=noisy_below, same_weights=same_weights)
        if same_weights:
            row["note"] = "; ".join(filter(None, [pair.get("weights_note", "the two hold the same weights"),
                                                  row["note"]]))
        out.append(row)
    only = [(side, [_label(*key) for key in roles if key not in other and _shown_alone(key, roles, other)])
            for side, roles, other in (("first", roles_a, roles_b), ("second", roles_b, roles_a))]
    only = [f"only on the {side}: {', '.join(labels)}" for side, labels in only if labels]
    if only:
        out.append({**base, "note": "roles measured on one subject only, not compared; " + "; ".join(only)})
    return out


def compared_roles(roles_a: Mapping, roles_b: Mapping) -> list[tuple[str, str]]:
    """The (role, detail) both subjects have, but a best-head role whose every-head role both have."""
    return [key for key in roles_a if key in roles_b and not _covered(key[0], roles_a, roles_b)]


def _covered(role: str, *sides: Mapping) -> bool:
    every = BEST_HEAD_ROLES.get(role)
    return every is not None and all(any(name == every for name, _ in side) for side in sides)


def _shown_alone(key: tuple[str, str], roles: Mapping, other: Mapping) -> bool:
    """Whether a role one subject has alone is worth its note: not a best-head role whose every-head role both
    subjects have (a fine-tuned checkpoint of roles.finetuned has no dependency best head: docs/roles.md)."""
    return not _covered(key[0], roles, other)


def _against_floors(roles_a: Mapping, roles_b: Mapping, roles_seed: Mapping, halves_a: pd.DataFrame | None,
                    role: str, detail: str, *, resamples: int, seed: int) -> dict[str, Any]:
    """The floor, seed floor and best-head columns of one compared role."""
    first, second = role_rows(roles_a, role, detail), role_rows(roles_b, role, detail)
    common = first.index.intersection(second.index)
    found: dict[str, Any] = {}
    if len(common) > 1:
        role_halves = None
        if halves_a is not None and not halves_a.empty:
            part = halves_a[(halves_a["role"].astype(str) == role)
                            & (halves_a["detail"].fillna("").astype(str) == detail)]
            role_halves = part.set_index(["layer", "head"])[["score_half_a", "score_half_b"]].astype(float)
        found.update(split_half_floor(role_halves, common, resamples=resamples, seed=seed))
    if (role, detail) in roles_seed and len(common) > 1:
        other = role_rows(roles_seed, role, detail)["score"]
        shared = second.index.intersection(other.index)
        rho, low, high = spearman_interval(second["score"].loc[shared].to_numpy(), other.loc[shared].to_numpy(),
                                           resamples=resamples, seed=seed)
        found.update(seed_rho=rho, seed_low=low, seed_high=high)
    if len(first) and len(second):
        found.update(best_head_change(first.loc[common] if len(common) > 1 else first, second))
    return found


def subject_rows(atlas: pd.DataFrame, model: str, checkpoint: str) -> pd.DataFrame:
    return atlas[(atlas["model"].astype(str) == model) & (atlas["checkpoint"].astype(str) == checkpoint)]


def subject_shape(rows: pd.DataFrame) -> tuple[int, int]:
    layers = int(rows["num_layers"].iloc[0])
    heads = int(rows["num_heads"].iloc[0]) if "num_heads" in rows.columns else int(rows["head"].max()) + 1
    return layers, heads


def roles_of(rows: pd.DataFrame, task: str | None) -> dict[tuple[str, str], pd.DataFrame]:
    """(role, detail) -> its rows, in the atlas's order. With a fine-tuned task, a pattern class measured on
    another task's inputs belongs to no pair with that task's checkpoint and is left out."""
    detail = rows["detail"].fillna("").astype(str)
    roles = {}
    for (role, name), part in rows.groupby([rows["role"].astype(str), detail], sort=False):
        if task and role.startswith(PATTERN) and name != task:
            continue
        roles[role, name] = part
    return roles


def role_rows(roles: Mapping[tuple[str, str], pd.DataFrame], role: str, detail: str) -> pd.DataFrame:
    """A role's rows indexed by (layer, head): score and its interval (NaN where the atlas has none)."""
    part = roles[role, detail]
    index = pd.MultiIndex.from_arrays([part["layer"].astype(int), part["head"].astype(int)], names=["layer", "head"])
    columns = {name: (part[name].astype(float).to_numpy() if name in part else np.nan)
               for name in ("score", "ci_low", "ci_high")}
    return pd.DataFrame(columns, index=index).dropna(subset=["score"])


def _scores(roles: Mapping[tuple[str, str], pd.DataFrame], role: str, detail: str) -> pd.Series:
    return role_rows(roles, role, detail)["score"]


def role_agreement(atlas: pd.DataFrame, pairs: Sequence[Mapping[str, Any]], *, thresholds: Mapping[str, float],
                   resamples: int, seed: int, halves: pd.DataFrame | None = None,
                   noisy_below: float = 0.5) -> pd.DataFrame:
    """Every pair's rows, in the order of ``pairs``."""
    thresholds = {**FIXED_THRESHOLDS, **thresholds}
    rows = [row for pair in pairs
            for row in compare_pair(atlas, pair, thresholds=thresholds, resamples=resamples, seed=seed,
                                    halves=halves, noisy_below=noisy_below)]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["best_kept"] = frame["best_kept"].astype("boolean")
    return frame.astype({column: "Int64" for column in INTEGERS})


def role_agreement_table(atlas: str | Path, output: str | Path, *, pairs: Sequence[Mapping[str, Any]],
                         thresholds: Mapping[str, float], resamples: int, seed: int,
                         halves: str | Path | None = None, noisy_below: float = 0.5) -> pd.DataFrame:
    """Write tables/role_agreement.csv from tables/atlas.csv and tables/atlas_halves.csv (rule role_agreement)."""
    frame = role_agreement(read_csv(atlas), pairs, thresholds=thresholds, resamples=resamples, seed=seed,
                           halves=read_csv(halves) if halves is not None else None, noisy_below=noisy_below)
    write_csv(frame, output)
    return frame
