"""Figures of the surface analyses of [C] §3 and §6: one panel row per (model, checkpoint).

Layers are labelled 1-based on the axes, as the papers print them (the tables stay 0-based).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.figures import save_figure
from ..core.io import read_csv
from .clustering import BEHAVIOURS

BEHAVIOUR_COLOURS = {"cls": "tab:red", "sep": "tab:blue", "punct": "tab:purple", "next": "tab:green",
                     "prev": "tab:olive", "self": "tab:brown", "broad": "tab:orange", "other": "tab:gray"}


def _read(path: str | Path, needed: list[str]) -> pd.DataFrame:
    frame = read_csv(path)
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AtlasError(f"{path}: columns {missing} are missing; rerun snakemake to rebuild it")
    if frame.empty:
        raise AtlasError(f"{path}: the table is empty, there is nothing to plot")
    return frame


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(frame["model"], frame["checkpoint"])))


def _layer_panels(frame: pd.DataFrame, columns: dict[str, str], png: str | Path, pdf: str | Path | None,
                  ylabel: str, share: bool = True, references: dict[str, str] | None = None) -> None:
    """Every head as a dot per layer (jittered), the layer mean as a line; panels: statistics x checkpoints."""
    import matplotlib.pyplot as plt

    pairs = _pairs(frame)
    figure, axes = plt.subplots(len(pairs), len(columns), figsize=(3.4 * len(columns), 2.8 * len(pairs)),
                                squeeze=False, sharey=share)
    rng = np.random.default_rng(0)
    for row, (model, checkpoint) in enumerate(pairs):
        part = frame[(frame["model"] == model) & (frame["checkpoint"] == checkpoint)]
        layers = part["layer"].to_numpy() + 1
        for col, (title, column) in enumerate(columns.items()):
            axis = axes[row][col]
            values = part[column].to_numpy(dtype=float)
            axis.scatter(layers + rng.uniform(-0.2, 0.2, len(layers)), values, s=10, alpha=0.6, color="tab:blue")
            means = part.groupby("layer")[column].mean()
            axis.plot(means.index + 1, means.to_numpy(), color="black", linewidth=1.5, label="layer mean")
            reference = (references or {}).get(column)
            if reference is not None and reference in part.columns:
                axis.axhline(float(part[reference].iloc[0]), color="tab:red", linestyle="--", linewidth=1,
                             label="uniform attention")
            axis.set_xticks(sorted(set(layers)))
            axis.set_title(f"{title}\n{model} / {checkpoint}", fontsize=8)
            axis.grid(alpha=0.3)
            if row == len(pairs) - 1:
                axis.set_xlabel("layer (1-based)")
            if col == 0:
                axis.set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7, loc="best")
    figure.tight_layout()
    save_figure(figure, png, pdf)


def plot_special_tokens(surface_csv: str | Path, png: str | Path, pdf: str | Path | None = None) -> None:
    """Per layer, each head's mean attention to [CLS], to separators and to . or , ([C] §3.2)."""
    frame = _read(surface_csv, ["model", "checkpoint", "layer", "head", "cls", "sep", "period", "comma"])
    frame = frame.assign(punct=frame["period"] + frame["comma"])
    _layer_panels(frame, {"first special token ([CLS])": "cls", "separators ([SEP])": "sep",
                          "'.' or ','": "punct"}, png, pdf, "mean attention")


def plot_positional(surface_csv: str | Path, png: str | Path, pdf: str | Path | None = None) -> None:
    """Per layer, each head's mean attention to the previous, same and next token."""
    frame = _read(surface_csv, ["model", "checkpoint", "layer", "head", "prev", "self", "next"])
    _layer_panels(frame, {"previous token": "prev", "same token": "self", "next token": "next"}, png, pdf,
                  "mean attention")


def plot_entropy(surface_csv: str | Path, png: str | Path, pdf: str | Path | None = None) -> None:
    """Per layer, each head's mean attention entropy, and that of the first special token's row ([C] §3.3)."""
    frame = _read(surface_csv, ["model", "checkpoint", "layer", "head", "entropy", "cls_entropy"])
    _layer_panels(frame, {"all tokens": "entropy", "first special token ([CLS]) only": "cls_entropy"}, png, pdf,
                  "entropy (nats)", references={"entropy": "uniform_entropy", "cls_entropy": "uniform_cls_entropy"})


def plot_sep_gradient(gradient_csv: str | Path, png: str | Path, pdf: str | Path | None = None) -> None:
    """Per layer, mean |dL/dA| for attention to separators vs to other tokens ([C] Fig. 3)."""
    import matplotlib.pyplot as plt

    frame = _read(gradient_csv, ["model", "checkpoint", "layer", "grad_to_sep", "grad_to_other", "skipped"])
    pairs = _pairs(frame)
    figure, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 3.2), squeeze=False)
    for col, (model, checkpoint) in enumerate(pairs):
        axis = axes[0][col]
        part = frame[(frame["model"] == model) & (frame["checkpoint"] == checkpoint)].sort_values("layer")
        axis.set_title(f"{model} / {checkpoint}", fontsize=8)
        reason = part["skipped"].dropna().astype(str)
        reason = reason[reason != ""]
        if part["grad_to_sep"].isna().all():
            text = "skipped: " + (reason.iloc[0] if len(reason) else "no gradient")
            axis.text(0.5, 0.5, _wrap(text, 45), ha="center", va="center", fontsize=7, transform=axis.transAxes)
            axis.set_xticks([])
            axis.set_yticks([])
            continue
        layers = part["layer"].to_numpy() + 1
        for column, label, colour in (("grad_to_sep", "to separators", "tab:blue"),
                                      ("grad_to_other", "to other tokens", "tab:orange")):
            axis.plot(layers, part[column], marker="o", label=label, color=colour)
            if f"{column}_low" in part.columns:
                axis.fill_between(layers, part[f"{column}_low"], part[f"{column}_high"], color=colour, alpha=0.2)
        loss = part["loss"].iloc[0] if "loss" in part.columns else ""
        axis.set_xlabel("layer (1-based)")
        axis.set_ylabel(f"mean |gradient| ({loss} loss)")
        axis.set_xticks(layers)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    save_figure(figure, png, pdf)


def plot_head_clusters(clusters_csv: str | Path, png: str | Path, pdf: str | Path | None = None) -> None:
    """2-D MDS of the heads' JS divergences, coloured by behaviour, labelled by layer ([C] §6)."""
    import matplotlib.pyplot as plt

    frame = _read(clusters_csv, ["model", "checkpoint", "layer", "head", "x", "y", "behaviour"])
    pairs = _pairs(frame)
    figure, axes = plt.subplots(1, len(pairs), figsize=(4.6 * len(pairs), 4.4), squeeze=False)
    for col, (model, checkpoint) in enumerate(pairs):
        axis = axes[0][col]
        part = frame[(frame["model"] == model) & (frame["checkpoint"] == checkpoint)]
        for behaviour in BEHAVIOURS:
            points = part[part["behaviour"] == behaviour]
            if len(points):
                axis.scatter(points["x"], points["y"], s=40, color=BEHAVIOUR_COLOURS[behaviour], alpha=0.8,
                             label=f"{behaviour} ({len(points)})", edgecolors="white", linewidths=0.5)
        for x, y, layer in zip(part["x"], part["y"], part["layer"]):
            axis.annotate(str(layer + 1), (x, y), fontsize=5, ha="center", va="center")
        title = f"{model} / {checkpoint}"
        if "mean_js_to_others" in part.columns:
            title += f"\nmean JS divergence between heads {part['mean_js_to_others'].mean():.3f} nats"
        axis.set_title(title, fontsize=8)
        axis.set_xticks([])
        axis.set_yticks([])
        axis.legend(fontsize=6, loc="best", title="behaviour", title_fontsize=6)
    figure.tight_layout()
    save_figure(figure, png, pdf)


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
