"""The cross-model atlas figure (docs/report.md): one panel per role, each model's top heads by relative depth.

x: relative depth, (layer + 0.5) / layers (workflow_scripts/report/atlas.py says why); y: one row per model, ordered
by family, then parameters, then training step (the table's order); colour: the head's score, on the panel's own
scale (the roles' scores are different quantities). A role with several details (each dependency relation's best
head; several tasks) draws each detail's top heads in the same panel. Readable from one model to a few dozen: the
figure grows with the number of models and of roles, and a model without a role's table keeps its empty row.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv
from .atlas import role_position

TOP_HEADS = 3  # per (model, checkpoint, role, detail): enough to see where a role sits, few enough to read
COLUMNS_MAX = 4
ROLE_TITLES = {"sink": "attention sink (alpha_1)", "previous_token": "previous-token share",
               "induction": "induction score", "dependency": "dependency: best head per relation",
               "coreference": "coreference: best head", "causal_importance": "causal importance (metric drop)"}


def model_label(row: pd.Series) -> str:
    """'NAME (family, 110M[, step N])'."""
    parts = [str(row["family"])]
    if pd.notna(row["parameters"]):
        parts.append(_size(int(row["parameters"])))
    if pd.notna(row["step"]):
        parts.append(f"step {int(row['step'])}")
    return literal_text(f"{row['model']} ({', '.join(parts)})")


def _size(parameters: int) -> str:
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if parameters >= scale:
            return f"{parameters / scale:.3g}{suffix}"
    return str(parameters)


def role_title(role: str) -> str:
    if role.startswith("pattern:"):
        return f"[K] pattern class {role.split(':', 1)[1]} (share of maps)"
    return ROLE_TITLES.get(role, role)


def draw_atlas(table: str | Path, png: str | Path, pdf: str | Path, *, top: int = TOP_HEADS) -> None:
    """Draw the atlas figure from tables/atlas.csv."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
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
        points = ax.scatter(part["relative_depth"].astype(float), part["model"].astype(str).map(order),
                            c=part["score"].astype(float), cmap="viridis", s=28, edgecolors="black", linewidths=0.3)
        figure.colorbar(points, ax=ax, shrink=0.8, pad=0.01)
        ax.set(title=literal_text(role_title(role)), xlim=(0, 1), xlabel="relative depth, (layer + 0.5) / layers")
        ax.title.set_fontsize(9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="y", labelsize=7)
    first = axes[0][0]
    first.set_yticks(range(len(order)), [model_label(row) for _, row in models.iterrows()])
    if order:
        first.set_ylim(len(order) - 0.5, -0.5)  # the first model on top
    figure.suptitle(f"Where each role's top {top} heads sit, by relative depth (pretrained weights; causal "
                    "importance: fine-tuned)", fontsize=10)
    save_figure(figure, png, pdf)
