"""Per-sentence probe scores and the study table probes.csv (METHODS 7.5, 10).

Every probe and the MST write one part per (model, checkpoint, treebank, probe): the words it
scored right and in all, per test sentence (:func:`write_scores`); :func:`summarise_probes` turns
the parts into probes.csv (one row per part, with a ``treebank`` column), with bootstrap intervals
and paired tests against the random-init control of the same treebank.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ...core.errors import AtlasError
from ...core.io import read_metadata, write_csv, write_table
from ...core.stats import paired_bootstrap_test, ratio_bootstrap_ci

log = logging.getLogger(__name__)


def write_scores(example_ids: Sequence[int], correct: np.ndarray, total: np.ndarray, output: str | Path,
                 meta: dict[str, Any]) -> None:
    """One part: (example_id, correct, total) per sentence, with ``meta`` and the UAS over all words."""
    table = pa.table({"example_id": pa.array(np.asarray(example_ids, dtype=np.int64)),
                      "correct": pa.array(correct.astype(np.int32)), "total": pa.array(total.astype(np.int32))})
    uas = float(correct.sum() / max(total.sum(), 1))
    meta = {**meta, "uas": uas, "n": int(total.sum())}
    log.info("probe %s: UAS %.4f over %d words", meta.get("probe"), uas, int(total.sum()))
    write_table(table, output, meta)


def summarise_probes(parts: Sequence[tuple[str, str, str, str, str | Path]], output: str | Path, *, resamples: int,
                     seed: int, control_checkpoint: str = "random") -> pd.DataFrame:
    """probes.csv from the per-sentence parts (model, checkpoint, treebank, probe, path); paired tests vs the
    control of the same model, treebank and probe."""
    loaded = {}
    treebank_order: dict[str, int] = {}
    for part in parts:
        if len(part) != 5:
            raise AtlasError(f"probe part {part!r}: expected (model, checkpoint, treebank, probe, path)")
        model, checkpoint, treebank, probe, path = part
        treebank_order.setdefault(treebank, len(treebank_order))
        table = pq.read_table(path).to_pandas().sort_values("example_id")
        loaded[(model, checkpoint, treebank, probe)] = (table, read_metadata(path))
    rows = []
    for (model, checkpoint, treebank, probe), (table, meta) in loaded.items():
        correct, total = table["correct"].to_numpy(np.float64), table["total"].to_numpy(np.float64)
        estimate, low, high = ratio_bootstrap_ci(correct, total, resamples=resamples, seed=seed)
        row = {"model": model, "checkpoint": checkpoint, "treebank": treebank, "probe": probe,
               "input_protocol": meta.get("input_protocol"), "metric": meta.get("metric", "uas"),
               "uas": float(estimate), "n": int(total.sum()), "ci_low": float(low), "ci_high": float(high),
               "sentences": len(table), "train_sentences": meta.get("train_sentences"),
               "train_uas": meta.get("train_uas"), "epochs": meta.get("epochs"), "lr": meta.get("lr"),
               "seed": meta.get("seed"), "head_label": meta.get("head_label", ""),
               "exclude_punct": meta.get("exclude_punct"), "train_seconds": meta.get("train_seconds")}
        control = (loaded.get((model, control_checkpoint, treebank, probe))
                   if checkpoint not in (control_checkpoint, "none") else None)
        if control is not None:
            other = control[0]
            if not np.array_equal(other["example_id"].to_numpy(), table["example_id"].to_numpy()) or \
                    not np.array_equal(other["total"].to_numpy(), table["total"].to_numpy()):
                raise AtlasError(f"probe {probe} on {treebank}: {checkpoint} and {control_checkpoint} were scored on "
                                 "different words; rerun snakemake")
            diff, _, _, p = paired_bootstrap_test(other["correct"].to_numpy(np.float64), correct, total,
                                                  resamples=resamples, seed=seed)
            row.update({"control_checkpoint": control_checkpoint,
                        "control_uas": float(other["correct"].sum() / max(other["total"].sum(), 1)),
                        "diff_vs_control": diff, "p_vs_control": p})
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame):
        order = {"probe": {p: i for i, p in enumerate(("right_branching", "distance_glove", "attn", "attn_glove",
                                                       "mst_best_head"))},
                 "treebank": treebank_order}
        frame = frame.sort_values(["model", "treebank", "probe", "checkpoint"],
                                  key=lambda s: s.map(order[s.name]) if s.name in order else s, kind="stable")
    write_csv(frame, output)
    return frame
