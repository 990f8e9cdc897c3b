"""Attention pattern classes of [K] §4.1 (METHODS 8.1 a, c): a rule-based labeller from map features.

Every (example, head) map (token level, rows = attending tokens, no padding: a dump stores each
example at its own length) is described by four features, computed for all heads of an example
at once:

- ``vertical``: mean over all rows of the attention on special-token columns (the tokenizer's
  ``special_tokens_mask`` as stored in the token table: ``[CLS]``, ``[SEP]``, ``<s>``, ...);
- ``diagonal``: mean over all rows of the attention on the two neighbours ``i-1`` and ``i+1``;
- ``structured``: mean over all rows of the attention on the union of both (special columns or a
  neighbour), so that a token next to a special token is not counted twice;
- ``block`` (sentence-pair inputs only, NaN otherwise): for every non-special row, the share of its
  attention to non-special tokens that stays within its own segment; averaged over the rows of
  each segment, then over the two segments (so a long first text does not make a uniform map look
  like a block: a uniform map scores about 0.5, a pure block 1.0);
- ``entropy``: mean entropy (nats) of the rows; recorded for inspection and the labelling tool, not
  used by the rules.

Rules (thresholds from config ``finetune_effects.thresholds``), in this order:

1. ``structured >= structured``: the map is special tokens and/or neighbours. It is
   ``Vertical+Diagonal`` when ``vertical >= vertical`` and ``diagonal >= diagonal`` both hold, else
   ``Vertical`` when ``vertical >= diagonal`` (the features, not the thresholds), else ``Diagonal``;
2. a pair input with ``block >= block``: ``Block``;
3. anything else: ``Heterogeneous`` (the exhaustive rest, as in [K]).

The per-task share of each class (METHODS 8.1 c) counts (example, head) maps; its 95% interval
resamples examples (METHODS 10).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError, ConfigError
from ..core.io import read_csv, write_csv, write_table
from ..core.stats import DEFAULT_RESAMPLES, ratio_bootstrap_ci

log = logging.getLogger(__name__)

CLASSES = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
VERTICAL, DIAGONAL, VERTICAL_DIAGONAL, BLOCK, HETEROGENEOUS = range(len(CLASSES))
FEATURES = ("vertical", "diagonal", "structured", "block", "entropy")
TINY = np.float32(1e-12)


@dataclass(frozen=True)
class Thresholds:
    """Thresholds of the rule-based labeller (config ``finetune_effects.thresholds``)."""

    structured: float = 0.6  # mass on special columns or the +-1 neighbours for V, D, V+D
    vertical: float = 0.3  # both components at least this for Vertical+Diagonal
    diagonal: float = 0.3
    block: float = 0.8  # within-segment share (pairs) for Block

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None) -> Thresholds:
        values = dict(values or {})
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"config key 'finetune_effects.thresholds': unknown keys {unknown}; known: "
                              f"{sorted(cls.__dataclass_fields__)}")
        return cls(**{k: float(v) for k, v in values.items()})


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
    structured_mask = neighbour | special[None, :]
    features = {
        "vertical": a[..., special].sum(-1).mean(-1) if special.any() else np.zeros(a.shape[:-2], np.float32),
        "diagonal": (a * neighbour).sum(-1).mean(-1),
        "structured": (a * structured_mask).sum(-1).mean(-1),
        "entropy": -(a * np.log(np.maximum(a, TINY))).sum(-1).mean(-1),
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


# --- token roles and the examples an analysis reads ----------------------------------------


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


def first_examples(token_table: str | Path, cap: int | None) -> list[int]:
    """The first ``cap`` example ids of a token table (its order is the data table's), or all."""
    ids = pq.read_table(token_table, columns=["example_id"])["example_id"].to_numpy()
    if len(ids) == 0:
        return []
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1])
    ordered = [int(i) for i in ids[starts]]
    if cap is not None and len(ordered) > cap:
        log.info("%s: %d examples, the first %d are analysed (finetune_effects.max_dev_examples)",
                 token_table, len(ordered), cap)
        ordered = ordered[:cap]
    return ordered


def checkpoint_info(manifest_path: str | Path) -> dict[str, Any]:
    """kind, seed, step and global_step of a checkpoint (global_step 0 for pretrained/random)."""
    from ..models.checkpoints import read_manifest

    manifest = read_manifest(manifest_path)
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


def class_shares(example_ids: np.ndarray, labels: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> pd.DataFrame:
    """Share of maps per class with a 95% interval over examples: class, share, ci_low, ci_high, n, n_examples."""
    example_ids = np.asarray(example_ids)
    labels = np.asarray(labels)
    units, unit_of = np.unique(example_ids, return_inverse=True)
    counts = np.zeros((len(units), len(CLASSES)))
    np.add.at(counts, (unit_of, labels), 1.0)
    totals = counts.sum(axis=1)
    share, low, high = ratio_bootstrap_ci(counts, totals, resamples=resamples, seed=seed)
    return pd.DataFrame({"class": CLASSES, "share": share, "ci_low": low, "ci_high": high,
                         "n_maps": counts.sum(axis=0).astype(int), "n": int(totals.sum()),
                         "n_examples": len(units)})


def pattern_classes_part(features_path: str | Path, output: str | Path, *, model: str, checkpoint: str,
                         task: str, checkpoint_manifest: str | Path, classifier: str = "rule",
                         cnn_model: str | Path | None = None, dump_dir: str | Path | None = None,
                         token_table: str | Path | None = None, resamples: int = DEFAULT_RESAMPLES,
                         seed: int = 0, threads: int = 1) -> pd.DataFrame:
    """Class shares of one (checkpoint, task) by the configured classifier (rule or cnn)."""
    features = pd.read_parquet(features_path, columns=["example_id", "layer", "head", "rule_class"])
    if classifier == "rule":
        labels = np.array([CLASSES.index(c) for c in features["rule_class"]], dtype=np.int64)
        example_ids = features["example_id"].to_numpy()
    elif classifier == "cnn":
        from .pattern_cnn import classify_dump

        if cnn_model is None or dump_dir is None or token_table is None:
            raise ConfigError("config key 'finetune_effects.classifier': cnn needs the trained model, the dump "
                              "and the token table")
        example_ids, labels = classify_dump(cnn_model, dump_dir, token_table,
                                            set(features["example_id"].unique().tolist()), threads=threads)
    else:
        raise ConfigError(f"config key 'finetune_effects.classifier': {classifier!r} is not rule or cnn")
    shares = class_shares(example_ids, labels, resamples=resamples, seed=seed)
    info = checkpoint_info(checkpoint_manifest)
    frame = pd.DataFrame({"model": model, "checkpoint": checkpoint, "task": task, **info,
                          "classifier": classifier, "bootstrap_seed": seed, **shares.to_dict("list")})
    write_csv(frame, output)
    return frame


def combine_parts(parts: list[str | Path], output: str | Path, sort: list[str],
                  pretrained_only: list[str] | tuple[str, ...] = (), empty_columns: list[str] | None = None
                  ) -> pd.DataFrame:
    """Concatenate per-(checkpoint, task) CSV parts into one study table; notes the pretrained-only tasks.

    With no parts: an empty table with ``empty_columns`` when given (e.g. no fine-tuned checkpoint), else an error.
    """
    frames = [read_csv(path) for path in parts]
    if not frames and empty_columns is None:
        raise AtlasError(f"{output}: no part tables to combine")
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=empty_columns)
    if "task" in frame.columns:
        frame["note"] = np.where(frame["task"].isin(list(pretrained_only)),
                                 "pretrained only: the study fine-tunes no model on this task", "")
    frame = integer_columns(frame.sort_values([c for c in sort if c in frame.columns], kind="stable"))
    write_csv(frame.reset_index(drop=True), output)
    return frame.reset_index(drop=True)


def integer_columns(frame: pd.DataFrame, columns: tuple[str, ...] = ("seed", "global_step")) -> pd.DataFrame:
    """Seeds and steps as integers with blanks (pretrained rows have no seed), not floats."""
    for column in columns:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").round().astype("Int64")
    return frame
