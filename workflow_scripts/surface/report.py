"""The surface stage's share of the report: [C] section 3 beside ``surface_heads.csv``, and panel A; the head
diagnostics beside [G]'s sink rates and [W]'s named heads (``diagnostics_report.py``).

Panel A draws what the model has: an encoder's attention to [CLS], [SEP] and '.'/','; a decoder's (a causal
family, ``models.families``) to its first token instead, from ``first_token.csv`` (alpha_1 on the same dump): a
decoder has no [SEP], and its first special token, the [CLS] column, is none at all where the tokenizer adds no
BOS (GPT-2), though position 0 is where its sink heads attend.

Paper items (``report/paper_values/surface.csv``, analysis ``surface``): counts of heads over a
threshold ("heads >50% on previous token"), and the mean attention of the heads of a layer range,
1-based ("attention on [SEP] in layers 6-10"), not computed where the model has fewer layers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.subjects import base_model
from ..core.table_names import HEAD_DIAGNOSTICS, MODELS, SINK_RATES, SURFACE_HEADS
from ..models.families import declared_causal
from ..models.report import compared_checkpoints, main_checkpoint
from ..report.drawing import not_in_study
from ..report.formatting import (
    CONTROL,
    found_row,
    int_text,
    join_text,
    missing_row,
    pct,
)
from ..report.items import PaperComparison, PaperItem, StageReport, StudyContext, StudyTables, SummaryPanel
from .diagnostics_report import compare_head_roles, compare_sink_rate

SURFACE_THRESHOLD = re.compile(r"heads\s*>\s*(?P<pct>[\d.]+)\s*%\s*on\s+(?P<target>previous|next)\s+token",
                               re.IGNORECASE)
SURFACE_LAYERS = re.compile(r"attention\s+on\s+\[?(?P<target>sep|cls)\]?\s+in\s+layers\s+(?P<a>\d+)\s*-\s*(?P<b>\d+)",
                            re.IGNORECASE)
SURFACE_COLOURS = {"cls": "tab:red", "sep": "tab:blue", "punct": "tab:purple", "first_token": "tab:red"}


def compare_surface(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] section 3: a count of heads over a threshold, or the mean attention of a layer range."""
    # matplotlib is imported here, not with the module: planning the study imports this declaration.
    from ..core.labels import head_label

    count = SURFACE_THRESHOLD.search(item.item)
    layers = SURFACE_LAYERS.search(item.item)
    if count is None and layers is None:
        return [missing_row(f"item {item.item!r} is not a surface measure the report knows "
                            "('heads >N% on previous/next token', 'attention on [SEP] in layers A-B')")]
    rows, why = tables.model_rows(SURFACE_HEADS, model)
    if rows is None:
        return [missing_row(why)]
    out = []
    checkpoints = compared_checkpoints(rows, ctx.role_checkpoints)
    control = rows[rows["checkpoint"].astype(str) == CONTROL]

    def measure(part: pd.DataFrame) -> tuple[float | None, str]:
        if count is not None:
            column = {"previous": "prev", "next": "next"}[count["target"].lower()]
            threshold = float(count["pct"]) / 100
            over = part[part[column] > threshold].sort_values(["layer", "head"])
            labels = " ".join(head_label(int(r.layer), int(r.head)) for r in over.itertuples())
            return float(len(over)), f"{len(over)} of {len(part)} heads" + (f": {labels}" if labels else "")
        first, last = int(layers["a"]), int(layers["b"])
        column = layers["target"].lower()
        deepest = int(part["layer"].max()) + 1
        if deepest < last:
            return None, (f"the model has {deepest} layers; the item needs layers {first}-{last} "
                          "(1-based) of a 12-layer BERT")
        chosen = part[(part["layer"] + 1 >= first) & (part["layer"] + 1 <= last)]
        return float(chosen[column].mean()), f"mean over the {len(chosen)} heads of layers {first}-{last} (1-based)"

    for checkpoint in checkpoints:
        value, detail = measure(rows[rows["checkpoint"].astype(str) == checkpoint])
        if value is None:
            out.append(missing_row(detail, checkpoint=checkpoint))
            continue
        corpus = rows["corpus"].iloc[0] if "corpus" in rows.columns else "wiki"
        control_text = ""
        if not control.empty:
            control_value, _ = measure(control)
            if control_value is not None:
                control_text = ("random-init control " + (f"{int(control_value)} heads" if count is not None
                                                          else pct(control_value)))
        detail = join_text(detail, f"{int_text(rows['n_tokens'].iloc[0])} tokens of {corpus}"
                           if "n_tokens" in rows.columns else "", control_text)
        out.append(found_row(item, int(value) if count is not None else value, detail, checkpoint=checkpoint,
                             fraction=count is None))
    return out or [missing_row(f"{SURFACE_HEADS}.csv has only the random-init control for this model")]


def decoder_like(model: str, tables: StudyTables, rows: pd.DataFrame) -> bool:
    """Whether panel A shows the first token rather than [CLS]/[SEP]: the model's family is causal (models.csv's
    ``model_type``), or, without a card that says, no head of the rows attends to a special token at all."""
    causal = declared_causal(tables.get(MODELS), base_model(model))
    if causal is not None:
        return causal
    return not (rows[["cls", "sep"]].fillna(0).to_numpy() > 0).any()


def _first_token(model: str, tables: StudyTables, rows: pd.DataFrame) -> tuple[pd.DataFrame | None, str]:
    """A decoder's first-token rows (first_token.csv; None where the study has none) and their legend label."""
    first, _ = tables.model_rows("first_token", model)
    # The first special token of a decoder's text is the BOS its tokenizer puts at position 0.
    label = "first token (BOS)" if (rows[["cls"]].fillna(0).to_numpy() > 0).any() else "first token"
    return first, label


def draw_surface(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                 ctx: StudyContext) -> str | None:
    """Panel A: mean attention to [CLS], [SEP] and '.'/',' per layer, with [C]'s [SEP] range; a decoder's to its
    first token (the attention sink) and '.'/','."""
    title = "A  Attention to special tokens per layer"
    rows, why = tables.model_rows(SURFACE_HEADS, model)
    checkpoint = main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return not_in_study(ax, title, why or f"no pretrained rows in {SURFACE_HEADS}.csv")
    rows = rows.assign(punct=rows["period"] + rows["comma"])
    labels = {"cls": "[CLS]", "sep": "[SEP]", "punct": "'.' or ','"}
    columns, first, missing = ["cls", "sep", "punct"], None, ""
    decoder = decoder_like(model, tables, rows[rows["checkpoint"].astype(str) == checkpoint])
    if decoder:
        title = "A  Attention to the first token per layer"
        first, labels["first_token"] = _first_token(model, tables, rows)
        columns = ["first_token", "punct"] if first is not None else ["punct"]
        missing = "" if first is not None else "\nfirst token: not in this study (no first_token.csv rows)"
    top = 0.0
    for name, style in ((checkpoint, "-"), (CONTROL, "--")):
        part = rows[rows["checkpoint"].astype(str) == name]
        if part.empty:
            continue
        means = part.groupby("layer")[[c for c in columns if c != "first_token"]].mean()
        if first is not None:  # aligned on the layer; NaN (no point) where a checkpoint has no first-token rows
            sinks = first[first["checkpoint"].astype(str) == name]
            means["first_token"] = sinks.groupby("layer")["first_token"].mean()
        top = max(top, float(np.nanmax(means.to_numpy(dtype=float), initial=0.0)))
        for column in columns:
            ax.plot(means.index + 1, means[column], style, color=SURFACE_COLOURS[column],
                    marker="o" if style == "-" else None, markersize=3, linewidth=1.5 if style == "-" else 1,
                    alpha=1 if style == "-" else 0.6, label=labels[column] if style == "-" else None)
    if (rows["checkpoint"].astype(str) == CONTROL).any():
        ax.plot([], [], "--", color="0.4", linewidth=1, label="random-init")
    layers = int(rows["layer"].max()) + 1
    # [C]'s ranges are of BERT's [CLS]/[SEP], which a decoder's panel does not draw.
    for item in () if decoder else items:
        match = SURFACE_LAYERS.search(item.item) if item.analysis == "surface" else None
        if not match or item.number is None:
            continue
        text = f"[C] BERT-base: [{match['target'].upper()}] > {item.number:g}% in layers {match['a']}-{match['b']}"
        if int(match["b"]) <= layers:
            ax.hlines(item.number / 100, int(match["a"]), int(match["b"]), color="black", linestyle=":",
                      linewidth=1.5, label=text)
        else:
            ax.text(0.98, 0.98, f"{text}\n(this model has {layers} layers)", transform=ax.transAxes, ha="right",
                    va="top", fontsize=6, color="0.3")
    ax.set_xticks(range(1, layers + 1))
    ax.set_xlabel("layer (1-based)", fontsize=8)
    ax.set_ylabel("mean attention (layer mean of heads)", fontsize=8)
    ax.set_ylim(0, max(0.6, top * 1.15))
    corpus = rows["corpus"].iloc[0] if "corpus" in rows.columns else "wiki"
    ax.set_title(f"{title}\n({corpus}; {checkpoint}, solid; random-init, dashed){missing}", fontsize=9, loc="left")
    ax.legend(fontsize=6.5, loc="upper left", frameon=False)
    return None


REPORT = StageReport(
    tables=(SURFACE_HEADS, "first_token", HEAD_DIAGNOSTICS, SINK_RATES),
    comparisons=(PaperComparison("surface", compare_surface), PaperComparison("sink rate", compare_sink_rate),
                 PaperComparison("head roles", compare_head_roles)),
    panels=(SummaryPanel("A", draw_surface, "wiki segments"),),
    paper_values="surface.csv",
)
