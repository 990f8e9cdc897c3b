"""What the study found about every head of one model, read from the study tables, as plain JSON-ready data.

Two views of the same tables:

* measures: one value per head (layer-major, ``layer * heads + head``), the grid's colour: a number (share to
  [SEP], entropy, best relation accuracy, change after fine-tuning...) or a category (pattern class, cluster
  behaviour), each with a note saying what it was computed on;
* sections: everything about a head for its panel (surface statistics with intervals, dependency accuracy per
  relation and direction with intervals, coreference, cluster, pattern classes and change per task, lexical
  shares), stored column-wise (one list per quantity, indexed like the measures) so that the page stays small.

Missing values (a head or a table the study lacks) are None. Every number is rounded to ``DIGITS`` decimals:
the page shows three significant figures at most.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import read_csv
from ..core.labels import CAUSAL_UNION, DEP_TO_HEAD
from ..models.families import declared_causal
from ..models.shape import ModelShape, models_row_shape

DIGITS = 4
PRETRAINED = "pretrained"
RANDOM = "random"
# Surface statistics of surface_heads.csv in the panel's order: (column, label, unit).
SURFACE_STATS = (("cls", "to [CLS]", "share"), ("sep", "to [SEP]", "share"), ("period", "to '.'", "share"),
                 ("comma", "to ','", "share"), ("prev", "to previous token", "share"),
                 ("self", "to itself", "share"), ("next", "to next token", "share"),
                 ("entropy", "entropy", "nats"), ("cls_entropy", "entropy of [CLS]'s attention", "nats"))
# The surface statistics that colour the grid (the others are in the panel only).
GRID_SURFACE = ("cls", "sep", "period", "prev", "next", "entropy")
ALL_RELATIONS = "all"


def models_table_shape(models_table: str | Path, model: str) -> ModelShape:
    """``model``'s shape (models/shape.py's record) from tables/models.csv, which the model cards fill; an error
    naming the table where it has no layers and heads for the model."""
    shape = models_row_shape(read_csv(models_table), model, source=str(models_table))
    if shape.layers_heads is None:
        raise AtlasError(f"{models_table}: no num_layers and num_heads for model {model!r} (its model card's row "
                         "fills them: run the workflow again, and it rebuilds the card and the table)")
    return shape


def is_decoder(models_table: str | Path, model: str) -> bool:
    """Whether ``model``'s family is causal, by the ``model_type`` of its row of tables/models.csv (False without)."""
    return bool(declared_causal(read_csv(models_table), model))


def per_head(rows: pd.DataFrame, column: str, shape: ModelShape) -> list[float | None]:
    """``column`` of ``rows`` (one per layer and head) as a layer-major list; None where a head has no row."""
    values = np.full(shape.head_count, np.nan)
    layer, head = rows["layer"].to_numpy(int), rows["head"].to_numpy(int)
    outside = (layer < 0) | (layer >= shape.layers) | (head < 0) | (head >= shape.heads)
    if outside.any():
        raise AtlasError(f"a row names layer {layer[outside][0]}, head {head[outside][0]}, outside the model's "
                         f"{shape.layers} layers x {shape.heads} heads")
    values[layer * shape.heads + head] = pd.to_numeric(rows[column], errors="coerce").to_numpy(float)
    return [None if not np.isfinite(v) else round(float(v), DIGITS) for v in values]


def _rows(table: str | Path | None, model: str, **equal: str) -> pd.DataFrame | None:
    """The rows of ``table`` for ``model`` whose columns equal ``equal``; None without a table or rows."""
    if table is None:
        return None
    rows = read_csv(table)
    rows = rows[rows["model"].astype(str) == model]
    for column, value in equal.items():
        rows = rows[rows[column].astype(str) == value]
    return None if rows.empty else rows


def _measure(measure_id: str, label: str, group: str, values: list, note: str, unit: str, *,
             categories: Sequence[str] | None = None, detail: list | None = None) -> dict[str, Any]:
    measure = {"id": measure_id, "label": label, "group": group, "unit": unit, "note": note, "values": values,
               "kind": "category" if categories is not None else "number"}
    if categories is not None:
        measure["categories"] = list(categories)
    if detail is not None:
        measure["detail"] = detail
    return measure


# --- surface, distance, clusters ----------------------------------------------------------------------------


def checkpoint_id(measure_id: str, checkpoint: str) -> str:
    """A grid measure's id on ``checkpoint``: the pretrained checkpoint's plain, another's ``ID@CHECKPOINT``."""
    return measure_id if checkpoint == PRETRAINED else f"{measure_id}@{checkpoint}"


def surface_section(surface: str | Path | None, distance: str | Path | None, model: str,
                    shape: ModelShape, checkpoint: str = PRETRAINED) -> tuple[list[dict], dict | None]:
    rows = _rows(surface, model, checkpoint=checkpoint)
    if rows is None:
        return [], None
    control = _rows(surface, model, checkpoint=RANDOM)
    where = f"{rows['corpus'].iloc[0]}/{rows['split'].iloc[0]}, {int(rows['n_examples'].iloc[0])} examples"
    stats = []
    for column, label, unit in SURFACE_STATS:
        stat = {"id": column, "label": label, "unit": unit, "value": per_head(rows, column, shape)}
        if f"{column}_low" in rows:
            stat["low"], stat["high"] = per_head(rows, f"{column}_low", shape), per_head(rows, f"{column}_high", shape)
        if control is not None:
            stat["control"] = per_head(control, column, shape)
        stats.append(stat)
    distances = _rows(distance, model, checkpoint=checkpoint)
    if distances is not None:
        stat = {"id": "mean_distance", "label": "mean distance attended (tokens)", "unit": "tokens",
                "value": per_head(distances, "mean_distance", shape),
                "low": per_head(distances, "mean_distance_low", shape),
                "high": per_head(distances, "mean_distance_high", shape)}
        control_distances = _rows(distance, model, checkpoint=RANDOM)
        if control_distances is not None:
            stat["control"] = per_head(control_distances, "mean_distance", shape)
        stats.append(stat)
    measures = [_measure(checkpoint_id(f"surface.{s['id']}", checkpoint),
                         f"attention {s['label']}" if s["unit"] == "share" else s["label"],
                         "surface", s["value"], f"mean over tokens, {where}, {checkpoint}", s["unit"])
                for s in stats if s["id"] in GRID_SURFACE]
    section = {"note": f"{where}; intervals: 95% bootstrap", "stats": stats,
               "control": "random-init control" if control is not None else None}
    return measures, section


def cluster_section(clusters: str | Path | None, model: str, shape: ModelShape) -> tuple[list[dict], dict | None]:
    rows = _rows(clusters, model, checkpoint=PRETRAINED)
    if rows is None:
        return [], None
    behaviours = sorted(set(rows["behaviour"].astype(str)))
    index = {name: i for i, name in enumerate(behaviours)}
    codes = rows.assign(code=rows["behaviour"].astype(str).map(index))
    values = [None if v is None else int(v) for v in per_head(codes, "code", shape)]
    note = f"dominant behaviour of the head ({int(rows['n_examples'].iloc[0])} examples), pretrained"
    measure = _measure("cluster.behaviour", "cluster behaviour", "clusters", values, note, "category",
                       categories=behaviours)
    section = {"categories": behaviours, "behaviour": values, "x": per_head(rows, "x", shape),
               "y": per_head(rows, "y", shape), "mean_js": per_head(rows, "mean_js_to_others", shape),
               "distance": str(rows["distance"].iloc[0])}
    return [measure], section


def declared_measures(measures: Sequence[Mapping[str, Any]], tables: Mapping[str, str | Path | None], model: str,
                      shape: ModelShape, checkpoint: str = PRETRAINED) -> list[dict]:
    """A grid measure per declared per-head column (``measures``: its table, column, label, unit and the values other
    columns must have, ``where``; study/plans/declarations.py) that the study has pretrained rows of for ``model``;
    its 95% interval and random-init control, where the table has them, in the detail."""
    found = []
    for declared in measures:
        name, column, where = declared["table"], declared["column"], dict(declared.get("where") or {})
        rows = _rows(tables.get(name), model, checkpoint=checkpoint, **where)
        if rows is None:
            continue
        values = per_head(rows, column, shape)
        unknown = [None] * shape.head_count
        low, high = ((per_head(rows, f"{column}_{end}", shape) if f"{column}_{end}" in rows else unknown)
                     for end in ("low", "high"))
        control = _rows(tables.get(name), model, checkpoint=RANDOM, **where)
        control_values = per_head(control, column, shape) if control is not None else unknown
        detail = [None if v is None else "; ".join(part for part in (
            f"95% interval {lo}-{hi}" if lo is not None else "", f"random init {c}" if c is not None else "") if part)
            or None for v, lo, hi, c in zip(values, low, high, control_values)]
        selected = ", ".join(f"{key} {value}" for key, value in where.items())
        measure_id = f"measure.{name}.{column}" + "".join(f".{v}" for v in where.values())
        found.append(_measure(checkpoint_id(measure_id, checkpoint), declared["label"],
                              "head measures", values, f"{_source(rows)}, {checkpoint} ({name}.csv"
                              + (f", {selected})" if selected else ")"), declared["unit"], detail=detail))
    return found


def _source(rows: pd.DataFrame) -> str:
    """Where a table's rows were measured, as far as its columns say."""
    if {"corpus", "split", "n_examples"} <= set(rows.columns):
        return f"{rows['corpus'].iloc[0]}/{rows['split'].iloc[0]}, {int(rows['n_examples'].iloc[0])} examples"
    if {"n_sequences", "tokens_per_sequence", "input"} <= set(rows.columns):
        sequences, tokens = int(rows["n_sequences"].iloc[0]), int(rows["tokens_per_sequence"].iloc[0])
        return f"{sequences} {rows['input'].iloc[0]} sequences of {tokens} tokens"
    return "the study's inputs"


# --- syntax ---------------------------------------------------------------------------------------------------


def dependency_section(table: str | Path | None, model: str, shape: ModelShape, *, relations: Sequence[str],
                       select_split: str, checkpoint: str = PRETRAINED) -> tuple[list[dict], dict | None]:
    """Accuracy of every head per treebank, relation and direction (scored on the score split), and two grid
    measures per treebank: 'all' and the best of ``relations`` (max over relations and directions)."""
    rows = _rows(table, model, checkpoint=checkpoint)
    if rows is None:
        return [], None
    # Every select_split row carries the same score-split accuracy; one selection's rows hold each head once (a
    # checkpoint dumped on the score split alone, roles.finetuned, has the score split's own selection only).
    chosen = rows["select_split"].astype(str) == select_split
    rows = rows[chosen] if chosen.any() else rows[rows["select_split"].astype(str) == rows["score_split"].astype(str)]
    measures, treebanks = [], []
    for treebank, of_treebank in rows.groupby(rows["treebank"].astype(str), sort=False):
        score_split = str(of_treebank["score_split"].iloc[0])
        entries = []
        for (relation, direction), group in of_treebank.groupby(["relation", "direction"], sort=False):
            entries.append({"relation": str(relation), "direction": str(direction), "n": int(group["n"].max()),
                            "accuracy": per_head(group, "accuracy", shape),
                            "low": per_head(group, "ci_low", shape), "high": per_head(group, "ci_high", shape)})
        entries.sort(key=lambda e: (e["relation"] != ALL_RELATIONS, -e["n"], e["relation"], e["direction"]))
        treebanks.append({"treebank": treebank, "score_split": score_split, "relations": entries})
        where = f"{treebank} {score_split}, {checkpoint}"
        for entry in entries:  # [C]'s dependent -> head; a causal model's union of what its maps allow
            if entry["relation"] == ALL_RELATIONS and entry["direction"] in (DEP_TO_HEAD, CAUSAL_UNION):
                how = ("every word's head" if entry["direction"] == DEP_TO_HEAD
                       else "every arc as a causal map allows it")
                measures.append(_measure(checkpoint_id(f"dependency.{treebank}.all", checkpoint),
                                         f"dependency 'all' accuracy ({treebank})",
                                         "syntax", entry["accuracy"], f"{how}, {where}", "accuracy"))
        best, detail = best_relation(entries, relations, shape)
        if any(v is not None for v in best):
            measures.append(_measure(checkpoint_id(f"dependency.{treebank}.best", checkpoint),
                                     f"best relation accuracy ({treebank})",
                                     "syntax", best, f"max over {', '.join(r for r in relations if r != ALL_RELATIONS)}"
                                     f" and both directions, {where}", "accuracy", detail=detail))
    return measures, {"select_split": select_split, "treebanks": treebanks}


def best_relation(entries: list[dict], relations: Sequence[str], shape: ModelShape) -> tuple[list, list]:
    """Per head, the highest accuracy over the named ``relations`` (not 'all') and both directions, and
    which relation and direction it was ("nsubj dependent_to_head")."""
    best: list[float | None] = [None] * shape.head_count
    detail: list[str | None] = [None] * shape.head_count
    for entry in entries:
        if entry["relation"] == ALL_RELATIONS or entry["relation"] not in relations:
            continue
        for index, value in enumerate(entry["accuracy"]):
            if value is not None and (best[index] is None or value > best[index]):
                best[index], detail[index] = value, f"{entry['relation']} {entry['direction']}"
    return best, detail


def coreference_section(table: str | Path | None, model: str, shape: ModelShape,
                        checkpoint: str = PRETRAINED) -> tuple[list[dict], dict | None]:
    rows = _rows(table, model, checkpoint=checkpoint)
    if rows is None:
        return [], None
    types = []
    for mention_type, group in rows.groupby(rows["mention_type"].astype(str), sort=False):
        types.append({"mention_type": mention_type, "n": int(group["n"].max()),
                      "accuracy": per_head(group, "accuracy", shape),
                      "low": per_head(group, "ci_low", shape), "high": per_head(group, "ci_high", shape)})
    measures = [_measure(checkpoint_id("coreference.all", checkpoint), "coreference accuracy", "syntax", t["accuracy"],
                         f"antecedent head word of every mention ({t['n']} mentions), {checkpoint}", "accuracy")
                for t in types if t["mention_type"] == "all"]
    return measures, {"mention_types": types}


# --- fine-tuning effects ------------------------------------------------------------------------------------------


def change_section(table: str | Path | None, model: str, shape: ModelShape) -> tuple[list[dict], dict | None]:
    """Cosine between each head's pretrained and final fine-tuned maps per task (mean over seeds for the grid,
    as 1 - cosine; every seed in the panel)."""
    rows = _rows(table, model, step="final")
    if rows is None:
        return [], None
    measures, runs = [], []
    for task, of_task in rows.groupby(rows["task"].astype(str), sort=False):
        for seed, run in of_task.groupby(of_task["seed"].astype(str), sort=True):
            runs.append({"task": task, "seed": seed, "checkpoint": str(run["checkpoint"].iloc[0]),
                         "cosine": per_head(run, "cosine", shape),
                         "low": per_head(run, "ci_low", shape), "high": per_head(run, "ci_high", shape)})
        mean = of_task.groupby(["layer", "head"], as_index=False)["cosine"].mean()
        change = mean.assign(change=1.0 - mean["cosine"])
        n_seeds = of_task["seed"].nunique()
        measures.append(_measure(f"change.{task}", f"change after fine-tuning ({task})", "fine-tuning",
                                 per_head(change, "change", shape),
                                 f"1 - cosine of pretrained and final maps on {task} dev, mean of {n_seeds} seed(s)",
                                 "change"))
    return measures, {"runs": runs}


def read_pattern_shares(path: str | Path, shape: ModelShape) -> dict[str, np.ndarray]:
    """Share of each rule class among the maps of each head: class -> (layers * heads) array."""
    frame = pd.read_parquet(path, columns=["layer", "head", "rule_class"])
    index = frame["layer"].to_numpy(int) * shape.heads + frame["head"].to_numpy(int)
    totals = np.bincount(index, minlength=shape.head_count).astype(float)
    shares = {}
    for name in sorted(set(frame["rule_class"].astype(str))):
        counts = np.bincount(index[frame["rule_class"].astype(str).to_numpy() == name], minlength=shape.head_count)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares[name] = counts / totals
    return shares


def pattern_section(parts: Sequence[tuple[str, str, str | Path]], shape: ModelShape) -> tuple[list[dict], dict | None]:
    """Per (checkpoint, task, features file): each head's share of maps per rule class, its dominant class."""
    if not parts:
        return [], None
    read = [(checkpoint, task, read_pattern_shares(path, shape)) for checkpoint, task, path in parts]
    classes = sorted({name for _, _, shares in read for name in shares})
    measures, entries = [], []
    for checkpoint, task, shares in read:
        table = np.stack([shares.get(name, np.zeros(shape.head_count)) for name in classes])
        seen = np.isfinite(table).all(axis=0) & (np.nansum(table, axis=0) > 0)
        dominant = [int(i) if ok else None for i, ok in zip(np.argmax(np.nan_to_num(table, nan=-1), axis=0), seen)]
        stage = "pretrained" if checkpoint == PRETRAINED else "fine-tuned"
        entries.append({"task": task, "checkpoint": checkpoint, "stage": stage, "dominant": dominant,
                        "shares": [[None if not np.isfinite(v) else round(float(v), DIGITS) for v in row]
                                   for row in table]})
        measures.append(_measure(f"pattern.{task}.{checkpoint}", f"pattern class ({task}, {stage})", "fine-tuning",
                                 dominant, f"most frequent rule class of the head's maps on {task} dev, {checkpoint}",
                                 "category", categories=classes))
    return measures, {"classes": classes, "entries": entries}


def lexical_section(table: str | Path | None, model: str, shape: ModelShape,
                    checkpoints: Mapping[str, Sequence[str]]) -> dict | None:
    """Share of each lexical category among the most-attended words, per task, at the pretrained and final
    checkpoints (``checkpoints``: task -> the checkpoints to show)."""
    rows = _rows(table, model)
    if rows is None:
        return None
    categories = sorted(set(rows["category"].astype(str)))
    entries = []
    for task, names in checkpoints.items():
        for checkpoint in names:
            run = rows[(rows["task"].astype(str) == task) & (rows["checkpoint"].astype(str) == checkpoint)]
            if run.empty:
                continue
            entries.append({"task": task, "checkpoint": checkpoint,
                            "shares": [per_head(run[run["category"].astype(str) == c], "argmax_share", shape)
                                       if (run["category"].astype(str) == c).any() else [None] * shape.head_count
                                       for c in categories]})
    return {"categories": categories, "entries": entries} if entries else None
