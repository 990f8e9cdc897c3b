"""The data of the study's atlas page (``explorer/_index.html``, docs/explorer.md): every model's heads in each role
of tables/atlas.csv, one row per model, and the role agreement of related models (tables/role_agreement.csv) where
the study has it, as plain JSON-ready data that atlas.js draws.

Column-wise, as the explorer pages keep theirs (one list per quantity, one entry per head of a role), so that
25 models of up to 1,024 heads in several roles stay a few megabytes and parse in milliseconds. Missing values
are None; numbers are rounded to ``DIGITS`` decimals.

A click on a head opens its model's explorer page on that head with the role's measure selected; the page reads
the URL fragment ``#layer=L&head=H&measure=ID[&measure=ID2...]`` (layers and heads from 1, as the explorer numbers
them; the first ``measure`` the page has is selected). :func:`role_measures` gives, for a role of the atlas, the
explorer's measures of the same quantity in order of preference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.io import read_csv
from ..core.table_names import HEAD_DIAGNOSTICS
from .head_tables import checkpoint_id

DIGITS = 4
PRETRAINED = "pretrained"
# Roles in the order of the report's atlas figure; pattern classes in [K]'s order after coreference, then the rest.
ROLE_ORDER = ("sink", "previous_token", "induction", "dependency", "dependency_accuracy", "coreference",
              "coreference_accuracy")
PATTERN_ORDER = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block")
ROLE_LABELS = {"sink": "attention sink (alpha_1)", "previous_token": "previous-token share",
               "induction": "induction score", "dependency": "dependency: best head per relation",
               "dependency_accuracy": "dependency: every head's accuracy per relation",
               "coreference": "coreference: best head", "coreference_accuracy": "coreference: every head's accuracy",
               "causal_importance": "causal importance"}
ROLE_UNITS = {"sink": "share of attention to the first token", "previous_token": "share of attention",
              "induction": "induction score (share of attention)", "dependency": "accuracy",
              "dependency_accuracy": "accuracy on the score split", "coreference": "accuracy",
              "coreference_accuracy": "accuracy", "causal_importance": "drop of the dev metric with the head disabled"}
COUNT_COLUMNS = ("heads", "top_heads", "role_heads")
# What a role's ``detail`` is, for the selector's "all details" entry.
DETAIL_NAMES = {"dependency": "relations", "dependency_accuracy": "relations", "causal_importance": "runs"}
AGREEMENT_COLUMNS = ("relation", "role", "detail", "first_model", "first_checkpoint", "second_model",
                     "second_checkpoint", "heads", "rho", "rho_low", "rho_high", "split_half_rho", "floor_rho",
                     "floor_low", "floor_high", "seed_checkpoint", "seed_rho", "seed_low", "seed_high", "verdict",
                     "first_best", "second_best", "best_kept", "best_change", "best_change_low", "best_change_high",
                     "top_heads", "jaccard_top", "role_heads", "kept_share", "note", "role_rule", "lost_heads")


def role_position(role: str) -> tuple[int, str]:
    if role in ROLE_ORDER:
        return ROLE_ORDER.index(role), role
    if role.startswith("pattern:"):
        name = role.split(":", 1)[1]
        return len(ROLE_ORDER) + (PATTERN_ORDER.index(name) if name in PATTERN_ORDER else len(PATTERN_ORDER)), role
    return 100, role


def role_label(role: str) -> str:
    if role.startswith("pattern:"):
        return f"[K] pattern class {role.split(':', 1)[1]}"
    return ROLE_LABELS.get(role, role)


def role_unit(role: str) -> str:
    return "share of the head's maps in the class" if role.startswith("pattern:") else ROLE_UNITS.get(role, "score")


def role_measures(role: str, detail: str, treebank: str | None, checkpoint: str = PRETRAINED) -> list[str]:
    """The explorer measure ids (page.py, head_tables.py) of the quantity ``role`` scores on ``checkpoint``, most
    alike first; none where the explorer has no such measure (causal importance). A fine-tuned checkpoint's are
    ``ID@CHECKPOINT`` (page.checkpoint_measures); the pattern classes name their checkpoint themselves."""
    if role.startswith("pattern:"):
        return [f"pattern.{detail}.{checkpoint}"]
    return [checkpoint_id(measure, checkpoint) for measure in _pretrained_measures(role, detail, treebank)]


def _pretrained_measures(role: str, detail: str, treebank: str | None) -> list[str]:
    if role == "sink":
        natural = ["measure.first_token.first_token"]
        random = [f"measure.{HEAD_DIAGNOSTICS}.first_token.random"]
        return [*(random + natural if detail == "random" else natural + random), "surface.cls"]
    if role == "previous_token":
        return ["measure.previous_token.previous_token", "surface.prev"]
    if role == "induction":
        return [f"measure.{HEAD_DIAGNOSTICS}.induction.random_repeated"]
    if role in ("dependency", "dependency_accuracy") and treebank:
        return [f"dependency.{treebank}.all" if detail == "all" else f"dependency.{treebank}.best"]
    if role in ("coreference", "coreference_accuracy"):
        return ["coreference.all"]
    return []


def _numbers(values: pd.Series) -> list[float | None]:
    array = pd.to_numeric(values, errors="coerce").to_numpy(float)
    return [None if not np.isfinite(v) else round(float(v), DIGITS) for v in array]


def _integers(values: pd.Series) -> list[int | None]:
    array = pd.to_numeric(values, errors="coerce").to_numpy(float)
    return [None if not np.isfinite(v) else int(v) for v in array]


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def model_rows(atlas: pd.DataFrame, heads: Mapping[str, int], pages: Mapping[str, str]) -> tuple[list, list]:
    """The atlas's models, grouped by family (the family of the smallest model first) and ordered by size
    (parameters), a series' revisions under it by step; and the rows of the page: a heading per family and per
    series of several revisions, a row per model (atlas.js adds a row per other checkpoint a role has of it).
    Heads per layer: the atlas's ``num_heads`` where it has the column, else ``heads`` (the models table), else one
    more than the largest head index of the model's rows."""
    info = atlas.drop_duplicates("model")[["model", "family", "parameters", "series", "revision", "step",
                                           "num_layers"]].copy()
    info["series"] = info["series"].fillna(info["model"]).astype(str)
    info = info.assign(parameters=pd.to_numeric(info["parameters"], errors="coerce"),
                       family=info["family"].fillna("").astype(str))
    # A series is as large as its largest revision; a family comes where its smallest model does.
    info["size"] = info.groupby("series")["parameters"].transform("max")
    info["family_size"] = info.groupby("family")["size"].transform("min")
    info = info.sort_values(["family_size", "family", "size", "series", "step", "model"], na_position="last",
                            kind="stable")
    models, rows, family = [], [], None
    counts = info["series"].value_counts()
    series_seen: set[str] = set()
    for record in info.itertuples(index=False):
        name = str(record.model)
        if record.family != family:
            family = record.family
            rows.append({"kind": "family", "text": family or "(no family)"})
        revision = counts[record.series] > 1
        if revision and record.series not in series_seen:
            series_seen.add(record.series)
            rows.append({"kind": "series", "text": record.series})
        layers = int(record.num_layers)
        found = atlas.loc[atlas["model"] == record.model, [c for c in ("head", "num_heads") if c in atlas]]
        count = (found["num_heads"].max() if "num_heads" in found and found["num_heads"].notna().any()
                 else heads.get(name) or (found["head"].max() + 1 if len(found) else 1))
        models.append({
            "name": name, "family": record.family, "parameters": _integers(pd.Series([record.parameters]))[0],
            "series": record.series, "revision": _text(record.revision),
            "step": _integers(pd.Series([record.step]))[0], "layers": layers,
            "heads": int(max(count, found["head"].max() + 1 if len(found) else 1)), "page": pages.get(name)})
        rows.append({"kind": "model", "model": len(models) - 1, "indent": bool(revision)})
    return models, rows


def role_entries(atlas: pd.DataFrame, models: Sequence[Mapping[str, Any]], treebank: str | None) -> list[dict]:
    """One entry per role: its label, unit, details, checkpoints (``measures[detail][checkpoint]``: the explorer's
    measures of each) and its heads, column-wise. ``merged``: no model has two details of the role on a checkpoint
    (the detail says how it was measured, e.g. the sink's input), so the selector offers the role once; otherwise
    once for all its details and once per detail."""
    index = {model["name"]: i for i, model in enumerate(models)}
    entries = []
    for role in sorted(set(atlas["role"].astype(str)), key=role_position):
        rows = atlas[atlas["role"].astype(str) == role]
        details = list(dict.fromkeys(rows["detail"].fillna("").astype(str)))
        detail_index = {detail: i for i, detail in enumerate(details)}
        checkpoints = sorted(set(rows["checkpoint"].astype(str)), key=lambda name: (name != PRETRAINED, name))
        checkpoint_index = {name: i for i, name in enumerate(checkpoints)}
        per_model = rows.groupby(["model", "checkpoint"])["detail"].nunique(dropna=False)
        entries.append({
            "role": role, "label": role_label(role), "unit": role_unit(role), "details": details,
            "detail_name": DETAIL_NAMES.get(role, "details"), "merged": bool(per_model.max() <= 1),
            "measures": [[role_measures(role, detail, treebank, checkpoint) for checkpoint in checkpoints]
                         for detail in details], "checkpoints": checkpoints,
            "columns": {
                "model": [index[m] for m in rows["model"].astype(str)],
                "checkpoint": [checkpoint_index[c] for c in rows["checkpoint"].astype(str)],
                "detail": [detail_index[d] for d in rows["detail"].fillna("").astype(str)],
                "layer": _integers(rows["layer"]), "head": _integers(rows["head"]), "score": _numbers(rows["score"]),
                "low": _numbers(rows["ci_low"]), "high": _numbers(rows["ci_high"]),
                "random": _numbers(rows["random_score"]), "rank": _integers(rows["rank"])}})
    return entries


def agreement_rows(table: str | Path | None) -> list[dict] | None:
    """The rows of tables/role_agreement.csv (None: the study has no such table); a column the table lacks is None
    (``role_rule`` and ``lost_heads`` are shown where it has them). A row without a role is a pair's note for every
    role (a pair of different shapes, roles measured on one subject only)."""
    if table is None or not Path(table).exists():
        return None
    frame = read_csv(table)
    rows = []
    for record in frame.to_dict("records"):
        row = {}
        for column in AGREEMENT_COLUMNS:
            value = record.get(column)
            if column == "best_kept":
                row[column] = None if value is None or pd.isna(value) else str(value).lower() == "true"
            elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                number = None if not np.isfinite(value) else round(float(value), DIGITS)
                row[column] = int(number) if number is not None and column in COUNT_COLUMNS else number
            else:
                row[column] = _text(value)
        rows.append(row)
    return rows


def atlas_data(atlas: str | Path | None, heads: Mapping[str, int], pages: Mapping[str, str], *,
               agreement: str | Path | None = None, treebank: str | None = None) -> dict[str, Any]:
    """Everything the atlas page draws. ``heads``: heads per layer of each model (tables/models.csv); ``pages``:
    model -> its explorer page's file name (beside the atlas page); ``agreement``: tables/role_agreement.csv
    (None or absent: the study has none); ``treebank``: the syntax treebank the atlas's dependency role is
    scored on (the explorer's dependency measures are per treebank)."""
    frame = read_csv(atlas) if atlas is not None and Path(atlas).exists() else None
    if frame is None or frame.empty:
        models, rows, roles = [], [], []
    else:
        models, rows = model_rows(frame, heads, pages)
        roles = role_entries(frame, models, treebank)
    checkpoints = [] if frame is None else sorted(set(frame["checkpoint"].astype(str)),
                                                  key=lambda name: (name != PRETRAINED, name))
    return {"models": models, "rows": rows, "roles": roles, "has_atlas": frame is not None,
            "checkpoints": checkpoints, "agreement": agreement_rows(agreement)}
