"""A small CNN that classifies attention maps into [K]'s five pattern classes (METHODS 8.1 b).

[K] hand-labelled about 400 maps and trained a CNN on them (F1 0.86) but released neither. Here:

Labels file (CSV, one row per map; the format of the seeded file, of a human file and of the
file ``tools/label_maps.py`` writes)::

    checkpoint,task,example_id,layer,head,class,source
    pretrained,rte,17,3,5,Vertical,human

``layer``/``head`` are 0-based; ``class`` is one of Vertical, Diagonal, Vertical+Diagonal, Block,
Heterogeneous (any case; 'Vert+Diag' accepted); ``source`` is ``rule`` or ``human`` (a human file
may leave it out: its rows are human labels). An optional ``model`` column restricts a row to
one model. The workflow seeds the file with the rule labels of a sample of maps
(:func:`seed_labels`); rows of the human file (config ``finetune_effects.human_labels``)
override seeded rows of the same map and add the maps it has beyond them (:func:`merge_labels`).
Where ``attention.max_examples`` limits a task's dumps, rows of examples beyond them are left out
(:func:`.patterns.held_labels`).

Inputs: every map is pooled to ``size x size`` (adaptive average pooling; short maps are
repeated, long ones averaged) in three channels: the attention (divided by its maximum, so
scale does not depend on length), the special-token columns, and the same-segment mask
(token pairs of the same non-special text), so the network sees what [K]'s figures mark.
Network: four 3x3 convolutions with ReLU in two blocks with max-pooling, a fifth convolution,
global average pooling and a linear layer. Training: Adam, cross-entropy, a seeded, stratified
held-out split of whole examples (:func:`holdout_split`); the macro-F1 on the held-out maps is
reported (also on human-labelled ones, and the rule labeller against human labels, if any).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError, InputFormatError
from ..core.io import write_csv
from ..core.stats import grouped_holdout
from .classifier_scores import f1_scores, score_intervals
from .pattern_cnn_network import CHANNELS, build_cnn, load_cnn, save_cnn
from .pattern_rules import (
    CLASSES,
    Thresholds,
    class_index,
    map_features,
    rule_labels,
    token_roles,
)
from .patterns import held_labels

log = logging.getLogger(__name__)

LABEL_COLUMNS = ("checkpoint", "task", "example_id", "layer", "head", "class", "source")
KEY = ["checkpoint", "task", "example_id", "layer", "head"]
SOURCES = ("rule", "human")


# --- labels files ------------------------------------------------------------------------


def read_labels(path: str | Path, *, default_source: str | None = None, model: str | None = None) -> pd.DataFrame:
    """Read and check a labels file; errors name the file, the row and the fix."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"checkpoint": str, "task": str, "class": str, "source": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputFormatError(path, None, f"unreadable labels file ({exc})",
                               f"it must be a CSV with columns {', '.join(LABEL_COLUMNS)}") from exc
    if "source" not in frame.columns and default_source is not None:
        frame["source"] = default_source
    missing = [c for c in LABEL_COLUMNS if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"the labels file lacks the columns {missing}",
                               f"it needs {', '.join(LABEL_COLUMNS)}; see docs/finetune_effects.md")
    if model is not None and "model" in frame.columns:
        frame = frame[frame["model"].isna() | (frame["model"].astype(str) == model)]
    frame = frame.dropna(subset=["class"]).copy()
    frame = frame[frame["class"].astype(str).str.strip() != ""]
    for column in ("example_id", "layer", "head"):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | (values < 0) | (values != values.round())
        if bad.any():
            row = int(frame.index[bad.to_numpy()][0]) + 2
            raise InputFormatError(path, row, f"column {column!r} must be a non-negative integer, got "
                                   f"{frame.loc[frame.index[bad.to_numpy()][0], column]!r}")
        frame[column] = values.astype(np.int64)
    names = []
    for index, value in frame["class"].items():
        try:
            names.append(CLASSES[class_index(value)])
        except KeyError:
            raise InputFormatError(path, int(index) + 2, f"unknown class {value!r}",
                                   f"use one of {', '.join(CLASSES)}") from None
    frame["class"] = names
    frame["source"] = frame["source"].fillna(default_source or "human").astype(str).str.strip().str.lower()
    bad_source = ~frame["source"].isin(SOURCES)
    if bad_source.any():
        index = frame.index[bad_source.to_numpy()][0]
        raise InputFormatError(path, int(index) + 2, f"source must be rule or human, got "
                               f"{frame.loc[index, 'source']!r}")
    duplicated = frame.duplicated(KEY, keep="last")
    if duplicated.any():
        log.warning("%s: %d maps labelled more than once; the last label of each is kept", path, int(duplicated.sum()))
        frame = frame[~duplicated]
    return frame[list(LABEL_COLUMNS)].reset_index(drop=True)


def seed_labels(feature_parts: Mapping[tuple[str, str], str | Path], n: int, seed: int, *,
                balanced: bool) -> pd.DataFrame:
    """A seeded sample of ``n`` maps of the given (checkpoint, task) feature tables, labelled by the rules.

    ``balanced``: equal quotas per rule class where the classes have enough maps (the rest of the
    sample is drawn from the other maps at random), so that rare classes reach the CNN.
    """
    frames = []
    for (checkpoint, task), path in sorted(feature_parts.items()):
        part = pd.read_parquet(path, columns=["example_id", "layer", "head", "rule_class"])
        part.insert(0, "task", task)
        part.insert(0, "checkpoint", checkpoint)
        frames.append(part)
    if not frames:
        raise AtlasError("no feature tables to sample maps from: the study analyses no (checkpoint, task)")
    pool = pd.concat(frames, ignore_index=True).rename(columns={"rule_class": "class"})
    rng = np.random.default_rng(seed)
    n = min(n, len(pool))
    if balanced:
        quota = n // len(CLASSES)
        chosen = []
        for name in CLASSES:
            members = np.flatnonzero(pool["class"].to_numpy() == name)
            chosen.append(rng.permutation(members)[:quota])
        chosen = np.concatenate(chosen)
        rest = np.setdiff1d(np.arange(len(pool)), chosen)
        chosen = np.concatenate([chosen, rng.permutation(rest)[:n - len(chosen)]])
    else:
        chosen = rng.permutation(len(pool))[:n]
    sample = pool.iloc[np.sort(chosen)].copy()
    sample["source"] = "rule"
    return sample[list(LABEL_COLUMNS)].reset_index(drop=True)


def merge_labels(seeded: pd.DataFrame, human: pd.DataFrame | None) -> pd.DataFrame:
    """The seeded labels with every map of ``human`` replacing (or joining) them."""
    if human is None or human.empty:
        return seeded.reset_index(drop=True)
    keys = pd.MultiIndex.from_frame(human[KEY])
    keep = ~pd.MultiIndex.from_frame(seeded[KEY]).isin(keys)
    merged = pd.concat([seeded[keep], human], ignore_index=True)
    log.info("labels: %d seeded by the rules, %d human (%d of them replace seeded maps)", int(keep.sum()),
             len(human), int((~keep).sum()))
    return merged.sort_values(KEY, kind="stable").reset_index(drop=True)


# --- map images ---------------------------------------------------------------------------


def map_images(attention: np.ndarray, special: np.ndarray, segment: np.ndarray, size: int) -> np.ndarray:
    """(maps, 3, size, size) float32 images of every map of an example (..., T, T), all heads at once."""
    import torch
    import torch.nn.functional as F

    a = np.asarray(attention, dtype=np.float32)
    n = a.shape[-1]
    flat = torch.from_numpy(np.ascontiguousarray(a.reshape(-1, 1, n, n)))
    pooled = F.adaptive_avg_pool2d(flat, size)
    peak = pooled.amax(dim=(2, 3), keepdim=True).clamp_min(1e-12)
    special = np.asarray(special, dtype=bool)
    segment = np.asarray(segment)
    content = ~special
    roles = np.stack([np.broadcast_to(special[None, :], (n, n)),
                      (segment[:, None] == segment[None, :]) & content[:, None] & content[None, :]]).astype(np.float32)
    role_images = F.adaptive_avg_pool2d(torch.from_numpy(roles)[None], size)[0]
    images = torch.cat([pooled / peak, role_images[None].expand(flat.shape[0], -1, -1, -1)], dim=1)
    return images.numpy()


def collect_maps(labels: pd.DataFrame, dumps: Mapping[tuple[str, str], tuple[str | Path, str | Path]], *,
                 size: int, thresholds: Thresholds,
                 raw: bool = False) -> tuple[np.ndarray, np.ndarray, list[np.ndarray] | None]:
    """Images of the labelled maps (in ``labels`` order), their rule labels, and optionally the raw maps.

    ``dumps`` maps (checkpoint, task) to (dump directory, token table). Each dump is streamed once
    and only the labelled examples are kept (bounded memory: the labelled maps only).
    """
    from ..attention.reader import AttentionDump

    images = np.zeros((len(labels), CHANNELS, size, size), dtype=np.float32)
    rules = np.full(len(labels), -1, dtype=np.int64)
    raws: list[np.ndarray | None] | None = [None] * len(labels) if raw else None
    for (checkpoint, task), rows in labels.groupby(["checkpoint", "task"], sort=True):
        if (checkpoint, task) not in dumps:
            raise AtlasError(f"labelled maps of checkpoint {checkpoint!r} on task {task!r} (e.g. example "
                             f"{int(rows['example_id'].iloc[0])}) have no attention dump in this study; the "
                             "study's (checkpoint, task) pairs are: "
                             f"{', '.join(f'{c}/{t}' for c, t in sorted(dumps))}; fix or drop those rows")
        dump_dir, token_table = dumps[(checkpoint, task)]
        dump = AttentionDump(dump_dir)
        roles = token_roles(token_table)
        wanted = rows.groupby("example_id").groups
        found = set()
        for example in dump.iter_examples():
            if example.example_id not in wanted:
                continue
            found.add(example.example_id)
            special, segment = roles[example.example_id]
            positions = np.asarray(wanted[example.example_id])
            layer = labels.loc[positions, "layer"].to_numpy()
            head = labels.loc[positions, "head"].to_numpy()
            if (layer >= dump.num_layers).any() or (head >= dump.num_heads).any():
                raise AtlasError(f"labels of {checkpoint}/{task} example {example.example_id}: layer/head out of "
                                 f"range (the dump has {dump.num_layers} layers x {dump.num_heads} heads, 0-based)")
            maps = example.attention[layer, head]  # (k, T, T)
            images[positions] = map_images(maps, special, segment, size)
            rules[positions] = rule_labels(map_features(maps, special, segment), thresholds)
            if raws is not None:
                for position, one in zip(positions, maps):
                    raws[position] = one.astype(np.float32)
        missing = sorted(set(wanted) - found)
        if missing:
            raise AtlasError(f"labelled examples {missing[:5]} of {checkpoint}/{task} are not in the dump "
                             f"{dump_dir} (it holds only the first dev examples, up to the analysis' cap); fix or "
                             "drop those rows")
    return images, rules, raws


# --- training (the network and its files: pattern_cnn_network.py) ---------------------------


def train_cnn(images: np.ndarray, targets: np.ndarray, *, epochs: int, learning_rate: float, batch_size: int,
              seed: int, threads: int):
    """Train the CNN on (maps, 3, size, size) images and class indices; returns the model in eval mode."""
    import torch

    torch.set_num_threads(max(1, threads))
    torch.manual_seed(seed)
    model = build_cnn(channels=images.shape[1])
    if len(images) == 0:
        raise AtlasError("no labelled maps to train the pattern CNN on")
    x = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    y = torch.from_numpy(np.asarray(targets, dtype=np.int64))
    # Classes weighted by inverse frequency, so a majority class (Vertical in [K]) does not swamp the rest.
    counts = np.bincount(np.asarray(targets), minlength=len(CLASSES)).astype(np.float64)
    weights = np.where(counts > 0, counts.sum() / np.maximum(counts, 1) / max((counts > 0).sum(), 1), 0.0)
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float32))
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        total = 0.0
        for start in range(0, len(x), batch_size):
            batch = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        if epoch == epochs - 1 or (epoch + 1) % 10 == 0:
            log.info("pattern CNN epoch %d/%d: loss %.4f", epoch + 1, epochs, total / len(x))
    model.eval()
    return model


def predict(model, images: np.ndarray, batch_size: int = 512) -> np.ndarray:
    import torch

    outputs = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            chunk = torch.from_numpy(np.ascontiguousarray(images[start:start + batch_size], dtype=np.float32))
            outputs.append(model(chunk).argmax(-1).numpy())
    return np.concatenate(outputs) if outputs else np.zeros(0, dtype=np.int64)


def holdout_split(classes: Sequence[int], fraction: float, seed: int,
                  groups: Sequence[object] | None = None) -> np.ndarray:
    """Held-out maps: ``fraction`` of every class, whole ``groups`` (examples, :func:`example_groups`) at a
    time, so no input's maps leak across (``stats.grouped_holdout``); None: each map is its own group."""
    groups = np.arange(len(classes)) if groups is None else groups
    return grouped_holdout(np.asarray(classes), groups, fraction, seed)


def example_groups(labels: pd.DataFrame) -> np.ndarray:
    """The example of every labelled map, ``task/example_id`` (the checkpoints of a task share its inputs)."""
    return (labels["task"].astype(str) + "/" + labels["example_id"].astype(str)).to_numpy()


def train_pattern_cnn(seeded_path: str | Path, human_path: str | Path | None,
                      dumps: Mapping[tuple[str, str], tuple[str | Path, str | Path]], model_out: str | Path,
                      labels_out: str | Path, metrics_out: str | Path, *, model: str, size: int, epochs: int,
                      learning_rate: float, batch_size: int, holdout: float, thresholds: Thresholds, seed: int,
                      threads: int, resamples: int = 0, bootstrap_seed: int = 0) -> pd.DataFrame:
    """Train the CNN on the seeded (and human) labels; write the model (``model_out``: safetensors weights, with
    their JSON description beside them), the labels used and the F1 table, its scores with 95% intervals over the
    held-out examples (``resamples`` bootstrap resamples, :func:`score_intervals`)."""
    seeded = read_labels(seeded_path, model=model)
    human = read_labels(human_path, default_source="human", model=model) if human_path else None
    labels = held_labels(merge_labels(seeded, human), dumps)
    images, rules, _ = collect_maps(labels, dumps, size=size, thresholds=thresholds)
    targets = np.array([CLASSES.index(c) for c in labels["class"]], dtype=np.int64)
    test = holdout_split(targets, holdout, seed, groups=(groups := example_groups(labels)))
    examples = {"n_train_examples": len(set(groups[~test])), "n_heldout_examples": len(set(groups[test]))}
    network = train_cnn(images[~test], targets[~test], epochs=epochs, seed=seed, learning_rate=learning_rate,
                        batch_size=batch_size, threads=threads)
    predicted = predict(network, images)
    save_cnn(network, model_out, size=size, channels=images.shape[1], epochs=epochs, seed=seed,
             learning_rate=learning_rate, batch_size=batch_size, holdout=holdout, n_train=int((~test).sum()),
             model=model)
    out = labels.copy()
    out["split"] = np.where(test, "heldout", "train")
    out["rule_class"] = [CLASSES[i] for i in rules]
    out["cnn_class"] = [CLASSES[i] for i in predicted]
    write_csv(out, labels_out)
    is_human = (labels["source"] == "human").to_numpy()
    source = "human" if is_human.all() else ("rule" if not is_human.any() else "mixed")
    evaluations = [("cnn", "heldout", test, predicted, source)]
    if is_human.any():
        evaluations.append(("cnn", "heldout_human", test & is_human, predicted, "human"))
        evaluations.append(("rule", "human", is_human, rules, "human"))
    rows = []
    for classifier, subset, mask, prediction, label_source in evaluations:
        macro, accuracy, per = f1_scores(targets[mask], prediction[mask])
        spread = score_intervals(targets[mask], prediction[mask], groups[mask], resamples=resamples,
                                 seed=bootstrap_seed)
        rows.append({"model": model, "classifier": classifier, "evaluated_on": subset, "label_source": label_source,
                     "n": int(mask.sum()), "n_train": int((~test).sum()), **examples, "n_human": int(is_human.sum()),
                     "n_rule": int((~is_human).sum()), "macro_f1": macro, "macro_f1_low": spread["macro_f1_low"],
                     "macro_f1_high": spread["macro_f1_high"], "accuracy": accuracy,
                     "accuracy_low": spread["accuracy_low"], "accuracy_high": spread["accuracy_high"],
                     **{f"f1_{c}": per[c] for c in CLASSES}, "size": size, "epochs": epochs, "seed": seed,
                     "bootstrap_resamples": resamples, "bootstrap_seed": bootstrap_seed})
    metrics = pd.DataFrame(rows)
    write_csv(metrics, metrics_out)
    log.info("pattern CNN: %d labelled maps (%s), held-out macro-F1 %.3f on %d maps of %d examples", len(labels),
             source, rows[0]["macro_f1"], rows[0]["n"], examples["n_heldout_examples"])
    return metrics


def classify_dump(model_path: str | Path, dump_dir: str | Path, token_table: str | Path, example_ids: set[int], *,
                  threads: int) -> tuple[np.ndarray, np.ndarray]:
    """CNN class of every (example, layer, head) map of the given examples: (example id per map, class)."""
    import torch

    from ..attention.reader import AttentionDump

    torch.set_num_threads(max(1, threads))
    network, info = load_cnn(model_path)
    dump = AttentionDump(dump_dir)
    roles = token_roles(token_table)
    ids, labels = [], []
    for example in dump.iter_examples():
        if example.example_id not in example_ids:
            continue
        special, segment = roles[example.example_id]
        images = map_images(example.attention, special, segment, info["size"])
        labels.append(predict(network, images))
        ids.append(np.full(len(images), example.example_id, dtype=np.int64))
    if not ids:
        raise AtlasError(f"none of the examples to classify is in the dump {dump_dir}")
    return np.concatenate(ids), np.concatenate(labels)
