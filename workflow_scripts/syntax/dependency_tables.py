"""The dependency tables (METHODS 7.3, 10): dependency_heads.csv, dependency_best.csv and dependency_halves.csv from the
per-sentence score parts of every (model, checkpoint, treebank, split), through the selection of
:mod:`.dependency_selection`. See docs/syntax.md for the tables' columns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from .dependency import ALL
from .dependency_selection import SplitCounts, best_rows, head_rows, pooled_accuracy

log = logging.getLogger(__name__)


def half_rows(model: str, checkpoint: str, score: SplitCounts, score_split: str) -> pd.DataFrame:
    """Every head's accuracy per relation and direction on each half of the score split's sentences (in order of
    example_id, alternately in half a and half b): the split-half floor of tables/role_agreement.csv."""
    layers, n_heads = int(score.meta["num_layers"]), int(score.meta["num_heads"])
    sentences = np.unique(score.frame["example_id"].to_numpy())
    frames = []
    for relation in score.relations():
        for direction in score.directions(relation):
            ids, total, counts, _ = score.candidates(relation, direction)
            in_a = np.isin(ids, sentences[0::2])
            row = {"model": model, "checkpoint": checkpoint, "relation": relation, "direction": direction,
                   "layer": np.repeat(np.arange(layers), n_heads), "head": np.tile(np.arange(n_heads), layers),
                   "score_split": score_split, "input_protocol": score.input_protocol}
            for half, rows in (("a", in_a), ("b", ~in_a)):
                row[f"accuracy_half_{half}"] = pooled_accuracy(counts[rows], total[rows])
                row[f"n_half_{half}"] = int(total[rows].sum())
            frames.append(pd.DataFrame(row))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _part_key(key: Any) -> tuple[str, str, str, str]:
    if len(tuple(key)) != 4:
        raise AtlasError(f"dependency score part key {key!r}: expected (model, checkpoint, treebank, split)")
    model, checkpoint, treebank, split = (str(k) for k in key)
    return model, checkpoint, treebank, split


def summarise_dependency(parts: Mapping[tuple[str, str, str, str], str | Path], heads_output: str | Path,
                         best_output: str | Path, *, relations: Sequence[str], select_split: str, score_split: str,
                         resamples: int, seed: int, labelled: Mapping[str, bool] | None = None,
                         control_checkpoint: str = "random", halves_output: str | Path | None = None) -> None:
    """Write dependency_heads.csv and dependency_best.csv from the score parts of every
    (model, checkpoint, treebank, split), and dependency_halves.csv (``halves_output``: every head's accuracy on
    each half of the score split's sentences).

    Protocols: select on ``select_split`` and score on ``score_split`` (held out), and
    select-and-score on ``score_split`` (what [C]'s table did); a (model, checkpoint, treebank) with the score split
    alone (a fine-tuned checkpoint's roles, docs/roles.md) has the second only. Every (model, checkpoint, treebank)
    is summarised on its own, its random-init control (``control_checkpoint``) taken from the same
    treebank; both tables carry a ``treebank`` column after ``checkpoint``. ``labelled``: treebank ->
    whether its DEPREL holds relation labels (missing: True); an unlabelled treebank keeps only the
    relation ``all`` in both tables.
    """
    labelled = dict(labelled or {})
    protocols = list(dict.fromkeys([(select_split, score_split), (score_split, score_split)]))
    by_checkpoint: dict[tuple[str, str, str], dict[str, SplitCounts]] = {}
    treebank_order: dict[str, int] = {}
    for key, path in parts.items():
        model, checkpoint, treebank, split = _part_key(key)
        treebank_order.setdefault(treebank, len(treebank_order))
        by_checkpoint.setdefault((model, checkpoint, treebank), {})[split] = SplitCounts.read(path)
    for treebank in treebank_order:
        if not labelled.get(treebank, True):
            log.info("treebank %s is unlabelled (no relation labels): only 'all' is computed", treebank)
            if ALL not in relations:
                log.warning("syntax.relations has no 'all': dependency_best has no row of the unlabelled "
                            "treebank %s", treebank)
            by_checkpoint.update({key: {split: counts.keep([ALL]) for split, counts in splits.items()}
                                  for key, splits in by_checkpoint.items() if key[2] == treebank})
    head_frames, best_frames, half_frames = [], [], []
    missing: dict[str, set[tuple[str, str]]] = {}  # treebank -> (relation, split): said once, not per checkpoint
    for (model, checkpoint, treebank), splits in sorted(by_checkpoint.items()):
        # Both protocols where both splits were dumped; the score split's own where it alone was (a role checkpoint).
        own = [p for p in protocols if set(p) <= set(splits)]
        if score_split not in splits:
            raise AtlasError(f"dependency scores of {model}/{checkpoint} on {treebank} lack the score split "
                             f"{score_split!r} (they have {sorted(splits)})")
        log.info("summarising %s/%s on %s (selected on %s)", model, checkpoint, treebank,
                 " and ".join(select for select, _ in own))
        wanted = list(relations) if labelled.get(treebank, True) else [r for r in relations if r == ALL]
        heads = head_rows(model, checkpoint, splits, own, resamples=resamples, seed=seed)
        if len(heads):
            heads.insert(heads.columns.get_loc("checkpoint") + 1, "treebank", treebank)
            head_frames.append(heads)
        halves = half_rows(model, checkpoint, splits[score_split], score_split)
        if len(halves):
            halves.insert(halves.columns.get_loc("checkpoint") + 1, "treebank", treebank)
            half_frames.append(halves)
        control = (by_checkpoint.get((model, control_checkpoint, treebank)) if checkpoint != control_checkpoint
                   else None)
        best = pd.DataFrame(best_rows(model, checkpoint, splits, wanted, own, resamples=resamples, seed=seed,
                                      control=control, control_name=control_checkpoint if control else None,
                                      missing=missing.setdefault(treebank, set())))
        if len(best):
            best.insert(best.columns.get_loc("checkpoint") + 1, "treebank", treebank)
            best_frames.append(best)
    for treebank, pairs in missing.items():
        for relation, split in sorted(pairs, key=lambda p: (list(relations).index(p[0]), p[1])):
            log.warning("relation %r has no arc in the %s split of %s; it is left out of dependency_best",
                        relation, split, treebank)
    heads_frame = pd.concat(head_frames, ignore_index=True) if head_frames else pd.DataFrame()
    best_frame = pd.concat(best_frames, ignore_index=True) if best_frames else pd.DataFrame()
    if len(best_frame):
        order = {"relation": {r: i for i, r in enumerate(relations)}, "treebank": treebank_order}
        best_frame = best_frame.sort_values(
            ["model", "treebank", "relation", "direction", "select_split", "checkpoint"],
            key=lambda s: s.map(order[s.name]) if s.name in order else s, kind="stable")
    write_csv(heads_frame, heads_output)
    write_csv(best_frame, best_output)
    if halves_output is not None:
        write_csv(pd.concat(half_frames, ignore_index=True) if half_frames else pd.DataFrame(), halves_output)
