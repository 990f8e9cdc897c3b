"""The atlas's roles on two halves of their examples (docs/roles.md, "tables/atlas_halves.csv"): the split-half floor
of tables/role_agreement.csv, how far two measurements of one checkpoint's role agree on the study's own data.

One row per (model, checkpoint, role, detail, layer, head) of the atlas that its tables measure on halves, with
``score_half_a`` and ``score_half_b``: the role's score computed as the atlas computes it (atlas.py: the same input,
direction and class choices), on each half of the examples. The halves are fixed, every other example:

- ``sink``, ``previous_token``, ``induction`` (head_diagnostics_halves.csv): the input's sequences 1, 3, 5 ... and
  2, 4, 6 ...;
- ``dependency_accuracy`` (dependency_halves.csv): the score split's sentences in order of example_id, alternately;
- ``coreference_accuracy`` (coref_heads.csv's ``accuracy_half_a``/``_b``): the documents in order of first
  appearance, alternately (as coref_best.csv's held-out selection);
- ``pattern:CLASS`` (the pattern features): the task's dev examples in order of example_id, alternately.

The best-head roles (``dependency``, ``coreference``) and causal importance have none: the first has one head per
subject, its every head's accuracy is ``*_accuracy``; head disabling keeps one metric per head, not per example.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.io import read_csv, write_csv
from ..core.table_names import COREF_HEADS, DEPENDENCY_HALVES, HEAD_DIAGNOSTICS_HALVES
from .atlas import (
    NO_PATTERN,
    RANDOM,
    assemble,
    coreference_accuracy_roles,
    dependency_accuracy_roles,
    diagnostic_roles,
    model_info,
    pattern_roles,
    read_pattern_features,
    role_frames,
)

HALVES = ("a", "b")
KEY = ["model", "checkpoint", "role", "detail", "layer", "head"]
COLUMNS = [*KEY, "score_half_a", "score_half_b"]
DIAGNOSTIC_SCORES = ("first_token", "previous_token", "induction", "duplicate")


def _diagnostics_half(halves: pd.DataFrame, half: str) -> pd.DataFrame:
    """head_diagnostics_halves.csv as head_diagnostics.csv's columns hold one half's scores (no interval)."""
    frame = halves.copy()
    for name in DIAGNOSTIC_SCORES:
        if f"{name}_half_{half}" in frame:
            frame[name] = frame[f"{name}_half_{half}"]
            frame[f"{name}_low"] = frame[f"{name}_high"] = np.nan
    return frame


def pattern_half_frames(features: Mapping[tuple[str, str, str], pd.DataFrame], half: str) -> list[pd.DataFrame]:
    """The pattern roles of one half of each task's dev examples (example_ids in order, alternately), scored on the
    classes the atlas scores them on (those any checkpoint of the model has on the task, on every example)."""
    classes: dict[tuple[str, str], set[str]] = {}
    for (model, checkpoint, task), frame in features.items():
        if checkpoint != RANDOM:
            classes.setdefault((model, task), set()).update(frame["rule_class"].astype(str))
    frames = []
    for (model, checkpoint, task), frame in features.items():
        if checkpoint == RANDOM:
            continue
        examples = np.unique(frame["example_id"].to_numpy())
        kept = frame[frame["example_id"].isin(examples[HALVES.index(half)::2])]
        if len(kept):
            frames.append(pattern_roles(model, task, kept, checkpoint=checkpoint,
                                        classes=sorted(classes[model, task] - {NO_PATTERN})))
    return frames


def half_roles(read: Mapping[str, pd.DataFrame], features: Mapping[tuple[str, str, str], pd.DataFrame], half: str, *,
               treebank: str, score_split: str, relations: Sequence[str] | None = None) -> pd.DataFrame:
    """Every role with halves, its score on ``half``."""
    frames = []
    if HEAD_DIAGNOSTICS_HALVES in read:
        frames.append(diagnostic_roles(_diagnostics_half(read[HEAD_DIAGNOSTICS_HALVES], half)))
    if DEPENDENCY_HALVES in read and len(read[DEPENDENCY_HALVES]):
        frames.append(dependency_accuracy_roles(read[DEPENDENCY_HALVES], treebank=treebank, score_split=score_split,
                                                score=f"accuracy_half_{half}", low=None, high=None,
                                                relations=relations))
    if COREF_HEADS in read and f"accuracy_half_{half}" in read[COREF_HEADS]:
        frames.append(coreference_accuracy_roles(read[COREF_HEADS], score=f"accuracy_half_{half}", low=None,
                                                 high=None))
    frames += pattern_half_frames(features, half)
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        return pd.DataFrame(columns=[*KEY, f"score_half_{half}"])
    frame = pd.concat(frames, ignore_index=True)
    return frame[[*KEY, "score"]].rename(columns={"score": f"score_half_{half}"})


def atlas_halves(read: Mapping[str, pd.DataFrame], features: Mapping[tuple[str, str, str], pd.DataFrame],
                 atlas: pd.DataFrame, *, treebank: str, score_split: str,
                 relations: Sequence[str] | None = None) -> pd.DataFrame:
    """tables/atlas_halves.csv: the atlas rows (``atlas``) whose role has halves, in the atlas's order."""
    a, b = (half_roles(read, features, half, treebank=treebank, score_split=score_split, relations=relations)
            for half in HALVES)
    halves = a.merge(b, on=KEY, how="outer")
    halves = halves.assign(detail=halves["detail"].fillna("").astype(str))
    rows = atlas[KEY].assign(detail=atlas["detail"].fillna("").astype(str))
    return rows.merge(halves, on=KEY, how="inner")[COLUMNS].reset_index(drop=True)


def atlas_tables(models: str | Path, output: str | Path, halves_output: str | Path, *,
                 family_of: Callable[[str | None], str], tables: Mapping[str, str | Path | None],
                 patterns: Sequence[tuple[str, str, str, str | Path]] = (),
                 parameters: Mapping[str, int | None] | None = None, revisions: Mapping[str, Sequence] | None = None,
                 treebank: str, select_split: str, score_split: str,
                 relations: Sequence[str] | None = None) -> pd.DataFrame:
    """Write tables/atlas.csv and tables/atlas_halves.csv, reading the study tables and pattern features once (rule
    atlas; the arguments: atlas.atlas_table's)."""
    read = {name: read_csv(path) for name, path in tables.items() if path is not None}
    features = read_pattern_features(patterns)
    roles = role_frames(read, features, treebank=treebank, select_split=select_split, score_split=score_split,
                        relations=relations)
    frame = assemble(roles, model_info(read_csv(models), family_of, parameters or {}, revisions or {}))
    write_csv(frame, output)
    write_csv(atlas_halves(read, features, frame, treebank=treebank, score_split=score_split, relations=relations),
              halves_output)
    return frame
