"""The head-disabling heatmaps (docs/ablation.md): per model, the change in each task's dev metric when one
head is disabled, layer x head, as Michel et al. (2019) and Kovaleva et al. (2019) show it.

One panel per fine-tuned run (task and seed) of the model, for mode ``zero`` (or, where the table has
no ``zero`` rows, its first mode); a diverging colour map centred at 0 (red: the metric drops), its range
symmetric and per panel, since the tasks' metrics differ. Labels are 1-based "layer-head"; the table
stays 0-based.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv
from ..finetune.tasks import TASK_NAMES

PREFERRED_MODE = "zero"


def shown_mode(table: pd.DataFrame) -> str | None:
    """``zero`` where the table has it, else its first mode (the config's first)."""
    modes = list(dict.fromkeys(table["mode"].astype(str)))
    return PREFERRED_MODE if PREFERRED_MODE in modes else (modes[0] if modes else None)


def plot_head_disabling(table_csv: str | Path, png: str | Path, pdf: str | Path, *, model: str) -> None:
    """One layer x head panel of ``delta`` per fine-tuned run of ``model`` in ``tables/head_disabling.csv``."""
    import matplotlib.pyplot as plt

    table = read_csv(table_csv)
    table = table[table["model"].astype(str) == model] if len(table) else table
    mode = shown_mode(table) if len(table) else None
    runs = list(dict.fromkeys(table["checkpoint"].astype(str))) if mode else []
    if not runs:
        figure, ax = plt.subplots(figsize=(5, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, literal_text(f"{model}: no head-disabling rows in {Path(table_csv).name}\n"
                                       "(ablation.tasks selects no fine-tuned task of this model)"),
                ha="center", va="center", fontsize=9)
        save_figure(figure, png, pdf)
        return
    table = table[table["mode"].astype(str) == mode]
    layers, heads = int(table["layer"].max()) + 1, int(table["head"].max()) + 1
    columns = min(3, len(runs))
    rows = math.ceil(len(runs) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(0.32 * heads * columns + 1.6 * columns,
                                                        (0.3 * layers + 1.3) * rows + 0.6),
                                squeeze=False, constrained_layout=True)
    for ax, run in zip(axes.flat, runs):
        panel = table[table["checkpoint"].astype(str) == run]
        grid = np.full((layers, heads), np.nan)
        grid[panel["layer"].to_numpy(int), panel["head"].to_numpy(int)] = panel["delta"].to_numpy(float)
        finite = np.abs(grid[np.isfinite(grid)])
        limit = float(finite.max()) if finite.size and finite.max() > 0 else 1e-3
        image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
        first = panel.iloc[0]
        task = str(first["task"])
        ax.set_title(literal_text(f"{TASK_NAMES.get(task, task)} ({run}): {first['metric']}\n"
                                  f"baseline {float(first['baseline_score']):.3f}, n={int(first['n_examples'])}"),
                     fontsize=8)
        ax.set_xticks(range(heads))
        ax.set_xticklabels([str(h + 1) for h in range(heads)], fontsize=6)
        ax.set_yticks(range(layers))
        ax.set_yticklabels([str(layer + 1) for layer in range(layers)], fontsize=6)
        ax.set_xlabel("head", fontsize=7)
        ax.set_ylabel("layer", fontsize=7)
        colorbar = figure.colorbar(image, ax=ax, shrink=0.85)
        colorbar.set_label(literal_text(f"{first['metric']} change (disabled - baseline)"), fontsize=6)
        colorbar.ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    figure.suptitle(literal_text(f"{model}: dev metric change with one head disabled (mode {mode})"), fontsize=9)
    save_figure(figure, png, pdf)
