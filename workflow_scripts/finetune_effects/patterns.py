"""Features and rule labels of every attention map of a dump (METHODS 8.1 a), and the helpers the
fine-tuning effects analyses share: which examples they read, what a checkpoint is, and how
their per-(checkpoint, task) parts become one study table.

The features and rules are :mod:`.pattern_rules`'; the per-task class shares (METHODS 8.1 c)
are :mod:`.pattern_shares`'.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import read_metadata, stack_csv_parts, write_csv, write_table
from .pattern_rules import CLASSES, FEATURES, Thresholds, map_features, rule_labels, token_roles

log = logging.getLogger(__name__)


# --- the examples an analysis reads ----------------------------------------------------------


def first_examples(token_table: str | Path, cap: int | None) -> list[int]:
    """The first ``cap`` example ids of a token table (its order is the data table's), or all."""
    ids = pq.read_table(token_table, columns=["example_id"])["example_id"].to_numpy()
    if len(ids) == 0:
        return []
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1])
    ordered = [int(i) for i in ids[starts]]
    if cap is not None and len(ordered) > cap:
        log.info("%s: %d examples, the first %d are analysed", token_table, len(ordered), cap)
        ordered = ordered[:cap]
    return ordered


def held_labels(labels: pd.DataFrame, dumps: Mapping[tuple[str, str], tuple[str | Path, str | Path]]) -> pd.DataFrame:
    """The labelled maps of the examples that their dumps hold.

    A dump limited by ``attention.max_examples`` holds only the first examples of its task's dev split, so a
    labels file written on a larger study (human labels) may name maps beyond them: those rows are left out,
    with a warning. Under no limit a missing example stays an error (:func:`.pattern_cnn.collect_maps`).
    """
    import pyarrow.compute as pc

    keep = np.ones(len(labels), dtype=bool)
    for (checkpoint, task), rows in labels.groupby(["checkpoint", "task"], sort=True):
        if (checkpoint, task) not in dumps:
            continue  # collect_maps names the pair
        token_table = dumps[(checkpoint, task)][1]
        limit = read_metadata(token_table).get("max_examples")
        if limit is None:
            continue
        held = pc.unique(pq.read_table(token_table, columns=["example_id"])["example_id"]).to_pylist()
        beyond = ~rows["example_id"].isin(held).to_numpy()
        if beyond.any():
            keep[labels.index.get_indexer(rows.index[beyond])] = False
            log.warning("%d labelled maps of %s/%s (examples %s) are beyond the first %s dev examples that "
                        "attention.max_examples keeps: left out", int(beyond.sum()), checkpoint, task,
                        sorted(set(rows["example_id"][beyond].tolist()))[:5], limit)
    return labels[keep].reset_index(drop=True)


def checkpoint_info(manifest_path: str | Path) -> dict[str, Any]:
    """kind, seed, step and global_step of a checkpoint (global_step 0 for pretrained/random)."""
    from ..models.checkpoints import read_manifest

    manifest = read_manifest(manifest_path, verify=False)  # its name and steps only: no weights are read
    kind = manifest.get("kind", "pretrained")
    step = manifest.get("step")
    global_step = manifest.get("global_step")
    if kind != "finetuned":
        global_step = 0
    elif global_step is None and isinstance(step, int):
        global_step = step
    return {"kind": kind, "seed": manifest.get("seed"), "step": "" if step is None else step,
            "global_step": global_step}


# --- per (checkpoint, task) ----------------------------------------------------------------


def pattern_features(dump_dir: str | Path, token_table: str | Path, output: str | Path, *,
                     thresholds: Thresholds, max_examples: int | None = None) -> pd.DataFrame:
    """Features and rule label of every (example, layer, head) map of a dump, as one Parquet table."""
    from ..attention.reader import AttentionDump

    dump = AttentionDump(dump_dir)
    roles = token_roles(token_table)
    wanted = set(first_examples(token_table, max_examples))
    layers, heads = dump.num_layers, dump.num_heads
    layer_index = np.repeat(np.arange(layers), heads)
    head_index = np.tile(np.arange(heads), layers)
    columns: dict[str, list[np.ndarray]] = {name: [] for name in
                                             ("example_id", "layer", "head", "n_tokens", "pair", *FEATURES,
                                              "rule_class")}
    for example in dump.iter_examples():
        if example.example_id not in wanted:
            continue
        try:
            special, segment = roles[example.example_id]
        except KeyError:
            raise AtlasError(f"example {example.example_id} of the dump {dump_dir} is not in the token table "
                             f"{token_table}; the two are out of step, rerun snakemake") from None
        if len(special) != example.n_tokens:
            raise AtlasError(f"example {example.example_id}: the token table {token_table} has {len(special)} "
                             f"tokens, the dump {dump_dir} {example.n_tokens}; rerun snakemake")
        features = map_features(example.attention, special, segment)
        labels = rule_labels(features, thresholds)
        count = layers * heads
        columns["example_id"].append(np.full(count, example.example_id, dtype=np.int64))
        columns["layer"].append(layer_index)
        columns["head"].append(head_index)
        columns["n_tokens"].append(np.full(count, example.n_tokens, dtype=np.int32))
        columns["pair"].append(np.full(count, bool((segment == 1).any())))
        for name in FEATURES:
            columns[name].append(features[name].reshape(-1).astype(np.float32))
        columns["rule_class"].append(np.asarray(CLASSES, dtype=object)[labels.reshape(-1)])
    frame = pd.DataFrame({k: np.concatenate(v) if v else np.array([]) for k, v in columns.items()})
    seen = frame["example_id"].nunique() if len(frame) else 0
    if seen < len(wanted):
        raise AtlasError(f"the dump {dump_dir} holds {seen} of the {len(wanted)} examples to analyse from "
                         f"{token_table}; rerun snakemake to rebuild the dump")
    frame = frame.sort_values(["example_id", "layer", "head"], kind="stable").reset_index(drop=True)
    write_table(frame, output, {"thresholds": asdict(thresholds), "num_layers": layers, "num_heads": heads,
                                "examples": int(seen)})
    counts = frame["rule_class"].value_counts(normalize=True).round(3).to_dict() if len(frame) else {}
    log.info("%d maps of %d examples labelled by the rules: %s", len(frame), seen, counts)
    return frame


def combine_parts(parts: list[str | Path], output: str | Path, sort: list[str],
                  pretrained_only: list[str] | tuple[str, ...] = (), empty_columns: list[str] | None = None
                  ) -> pd.DataFrame:
    """Concatenate per-(checkpoint, task) CSV parts into one study table; notes the pretrained-only tasks.

    With no parts: an empty table with ``empty_columns`` when given (e.g. no fine-tuned checkpoint), else an error.
    """
    frame = stack_csv_parts(parts, output, sort_by=sort, empty_columns=empty_columns)
    if "task" in frame.columns:
        frame["note"] = np.where(frame["task"].isin(list(pretrained_only)),
                                 "pretrained only: the study fine-tunes no model on this task", "")
    frame = integer_columns(frame)
    write_csv(frame, output)
    return frame


def integer_columns(frame: pd.DataFrame, columns: tuple[str, ...] = ("seed", "global_step")) -> pd.DataFrame:
    """Seeds and steps as integers with blanks (pretrained rows have no seed), not floats."""
    for column in columns:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").round().astype("Int64")
    return frame
