"""The cross-model atlas figure (docs/report.md): one panel per role, each model's top heads by relative depth.

x: relative depth, each head at its own place in its layer's slice of depth, (layer + (head + 0.5) / heads) / layers
(the layer's slice is the one around (layer + 0.5) / layers, workflow_scripts/report/atlas.py says why), so that two
heads of one layer never share a point; y: one row per model, ordered by family, then parameters, then training step
(the table's order); colour: the head's score, on the panel's own scale from its lowest to its highest score (the
roles' scores are different quantities; the colour bar says the span and the unit). Marks are drawn from the lowest
score to the highest, so that where they touch the highest is on top, and each model's top head of the role is
ringed. A role with several details (each dependency relation's best head; several tasks) draws each detail's top
heads in the same panel. Readable from one model to a few dozen: the figure grows with the number of models and of
roles, and a model without a role's table keeps its empty row.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.ticker import ScalarFormatter

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv
from ..core.sizes import PARAMETERS, size_text
from .atlas import ACCURACY_ROLES, role_position

PRETRAINED = "pretrained"
TOP_HEADS = 3  # per (model, checkpoint, role, detail): enough to see where a role sits, few enough to read
COLUMNS_MAX = 4
ROLE_TITLES = {"sink": "attention sink (alpha_1)", "previous_token": "previous-token share",
               "induction": "induction score", "dependency": "dependency: best head per relation",
               "coreference": "coreference: best head", "causal_importance": "causal importance (metric drop)"}
ROLE_UNITS = {"sink": "share of attention", "previous_token": "share of attention", "induction": "induction score",
              "dependency": "accuracy", "coreference": "accuracy", "causal_importance": "dev-metric drop"}
RING = "#d62728"


def model_label(row: pd.Series) -> str:
    """'NAME (family, 110M[, step N])'."""
    parts = [str(row["family"])]
    if pd.notna(row["parameters"]):
        parts.append(size_text(int(row["parameters"]), PARAMETERS, digits=".3g"))
    if pd.notna(row["step"]):
        parts.append(f"step {int(row['step'])}")
    return literal_text(f"{row['model']} ({', '.join(parts)})")


def role_unit(role: str) -> str:
    return "share of maps" if role.startswith("pattern:") else ROLE_UNITS.get(role, "score")


def head_positions(frame: pd.DataFrame) -> pd.Series:
    """Each row's x: (layer + (head + 0.5) / heads) / layers, inside the layer's slice of relative depth. Heads per
    layer: the table's ``num_heads`` where it has one, else one more than the largest head index of the model's rows
    (exact where a per-head role lists every head)."""
    heads = frame.groupby(frame["model"].astype(str))["head"].transform("max").astype(float) + 1
    if "num_heads" in frame:
        heads = pd.to_numeric(frame["num_heads"], errors="coerce").astype(float).fillna(heads)
    return (frame["layer"].astype(float) + (frame["head"].astype(float) + 0.5) / heads) / frame["num_layers"].astype(
        float)


def span_text(low: float, high: float) -> str:
    """'LOW to HIGH' with the fewest significant digits (3 to 6) that tell them apart: a panel whose scores are close
    still says both ends."""
    low, high = float(low) + 0.0, float(high) + 0.0  # + 0.0: no "-0"
    for digits in range(3, 7):
        ends = f"{low:.{digits}g}", f"{high:.{digits}g}"
        if ends[0] != ends[1] or low == high:
            break
    return f"{ends[0]} to {ends[1]}"


def role_title(role: str) -> str:
    if role.startswith("pattern:"):
        return f"[K] pattern class {role.split(':', 1)[1]} (share of maps)"
    return ROLE_TITLES.get(role, role)


def shown_checkpoints(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows the figure draws: of each model and role, the pretrained checkpoint's where it has any, else every
    checkpoint's (causal importance: the fine-tuned ones). The atlas's other checkpoints are for
    tables/role_agreement.csv; drawn in the same row they would hide the pretrained heads."""
    pretrained = frame["checkpoint"].astype(str) == PRETRAINED
    has = pretrained.groupby([frame["model"].astype(str), frame["role"].astype(str)]).transform("any")
    return frame[pretrained | ~has]


def atlas_figure(frame: pd.DataFrame, *, top: int = TOP_HEADS):
    """The atlas figure of the rows of tables/atlas.csv, as a matplotlib Figure (the caller saves or closes it).
    In each role's panel the heads' marks are the collection labelled ``heads`` (in drawing order, the highest
    score last) and the rings of each model's top head the collection labelled ``top head``."""
    import matplotlib.pyplot as plt

    # The best-head roles stand for every head's accuracy of the same quantity (the atlas page draws those).
    frame = frame[~frame["role"].astype(str).isin(ACCURACY_ROLES)]
    frame = frame.assign(x=head_positions(frame)) if not frame.empty else frame.assign(x=pd.Series(dtype=float))
    frame = shown_checkpoints(frame)
    models = frame.drop_duplicates("model")  # the table is in the figure's model order
    order = {model: index for index, model in enumerate(models["model"].astype(str))}
    roles = sorted(set(frame["role"].astype(str)), key=lambda role: (role_position(role), role))
    columns = max(1, min(COLUMNS_MAX, len(roles)))
    rows = max(1, math.ceil(len(roles) / columns))
    height = 1.2 + 0.28 * max(len(order), 3)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns + 2.5, height * rows), squeeze=False,
                                sharey=True, constrained_layout=True)
    for ax in axes.flat[len(roles):]:
        ax.set_visible(False)
    if not roles:
        axes[0][0].set_visible(True)
        axes[0][0].text(0.5, 0.5, "no role measured in this study", ha="center", transform=axes[0][0].transAxes)
    for ax, role in zip(axes.flat, roles, strict=False):
        part = frame[(frame["role"].astype(str) == role) & (frame["rank"].astype(float) <= top)]
        part = part.assign(score=part["score"].astype(float)).sort_values("score", kind="stable", na_position="first")
        y = part["model"].astype(str).map(order)
        scored = part["score"].notna().any()
        low, high = (part["score"].min(), part["score"].max()) if scored else (None, None)
        points = ax.scatter(part["x"], y, c=part["score"], cmap="viridis", vmin=low, vmax=high, s=28,
                            edgecolors="black", linewidths=0.3, zorder=2, label="heads")
        best = part.dropna(subset=["score"]).groupby(part["model"].astype(str), sort=False)["score"].idxmax()
        ax.scatter(part.loc[best, "x"], y[best], s=110, facecolors="none", edgecolors=RING, linewidths=1.3,
                   zorder=3, label="top head")
        bar = figure.colorbar(points, ax=ax, shrink=0.8, pad=0.01)
        bar.set_label(f"{role_unit(role)}: {span_text(low, high)}" if scored else role_unit(role), fontsize=7)
        if isinstance(bar.ax.yaxis.get_major_formatter(), ScalarFormatter):
            bar.ax.yaxis.get_major_formatter().set_useOffset(False)  # the ticks say the scores themselves
        ax.set(title=literal_text(role_title(role)), xlim=(0, 1),
               xlabel="relative depth, (layer + (head + 0.5) / heads) / layers")
        ax.title.set_fontsize(9)
        ax.xaxis.label.set_fontsize(8)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="y", labelsize=7)
    first = axes[0][0]
    first.set_yticks(range(len(order)), [model_label(row) for _, row in models.iterrows()])
    if order:
        first.set_ylim(len(order) - 0.5, -0.5)  # the first model on top
    figure.suptitle(f"Where each role's top {top} heads sit, by relative depth (pretrained weights; causal "
                    "importance: fine-tuned). Ring: each model's top head of the role; colour: the panel's own span",
                    fontsize=10)
    return figure


def draw_atlas(table: str | Path, png: str | Path, pdf: str | Path, *, top: int = TOP_HEADS) -> None:
    """Draw the atlas figure from tables/atlas.csv."""
    save_figure(atlas_figure(read_csv(table), top=top), png, pdf)
