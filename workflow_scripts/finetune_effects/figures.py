"""Figures of the fine-tuning effects (METHODS 8, 9): class shares, change per head, lexical shares, trajectory.

Layers and heads are labelled 1-based in the figures ([K], [L] count from 1); tables stay 0-based.
Tasks the study does not fine-tune (no train split) appear with their pretrained checkpoint only,
and the figures say so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.figures import save_figure
from ..core.io import read_csv
from ..finetune.tasks import TASK_NAMES
from .lexical import CATEGORIES
from .pattern_rules import CLASSES

CLASS_COLOURS = {"Vertical": "#4c72b0", "Diagonal": "#dd8452", "Vertical+Diagonal": "#937860",
                 "Block": "#55a868", "Heterogeneous": "#c44e52"}


def _order(frame: pd.DataFrame) -> pd.DataFrame:
    """Checkpoints in training order: pretrained, then by seed and global step (final last)."""
    frame = frame.copy()
    frame["_final"] = frame["step"].astype(str) == "final"
    frame["_seed"] = pd.to_numeric(frame["seed"], errors="coerce").fillna(-1)
    frame["_step"] = pd.to_numeric(frame["global_step"], errors="coerce").fillna(0)
    return frame.sort_values(["_seed", "_final", "_step"], kind="stable")


def _short(checkpoint: str, seeds: int) -> str:
    if checkpoint == "pretrained":
        return "pre"
    parts = checkpoint.split(".")
    return parts[-1] if seeds <= 1 else f"{parts[1]}\n{parts[-1]}"


def _panels(keys: list, columns: int = 4, width: float = 3.2, height: float = 2.8):
    import matplotlib.pyplot as plt

    columns = max(1, min(columns, len(keys)))
    rows = max(1, math.ceil(len(keys) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    return figure, axes


def _title(model: str, task: str, models: int) -> str:
    name = TASK_NAMES.get(task, task)
    return f"{name} ({model})" if models > 1 else name


def _final(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the final checkpoint of the lowest seed of every (model, task)."""
    rows = frame[frame["step"].astype(str) == "final"].copy()
    rows["_seed"] = pd.to_numeric(rows["seed"], errors="coerce")
    first = rows.groupby(["model", "task"])["_seed"].transform("min")
    return rows[rows["_seed"] == first]


def _model_task_rows(table: str | Path) -> tuple[pd.DataFrame, int, list[tuple[str, str]]]:
    """The table's rows, how many models they cover, and their (model, task) pairs sorted (a panel each); a table
    without rows is an error: there is nothing to plot."""
    frame = read_csv(table)
    if frame.empty:
        raise AtlasError(f"{table}: no rows to plot")
    return frame, frame["model"].nunique(), sorted(frame.groupby(["model", "task"]).groups)


def plot_pattern_classes(table: str | Path, png: str | Path, pdf: str | Path) -> None:
    """[K] Fig. 2: stacked shares of the five classes, one panel per task, one bar per checkpoint."""
    frame, models, keys = _model_task_rows(table)
    figure, axes = _panels(keys)
    for ax, (model, task) in zip(axes.flat, keys):
        panel = _order(frame[(frame["model"] == model) & (frame["task"] == task)])
        checkpoints = list(dict.fromkeys(panel["checkpoint"]))
        seeds = panel.loc[panel["checkpoint"] != "pretrained", "seed"].nunique()
        bottom = np.zeros(len(checkpoints))
        for name in CLASSES:
            values = np.array([panel.loc[(panel["checkpoint"] == c) & (panel["class"] == name), "share"].sum()
                               for c in checkpoints])
            ax.bar(range(len(checkpoints)), values, bottom=bottom, color=CLASS_COLOURS[name], label=name, width=0.7)
            bottom += values
        ax.set_xticks(range(len(checkpoints)), [_short(c, seeds) for c in checkpoints], fontsize=7)
        ax.set_ylim(0, 1)
        ax.tick_params(axis="y", labelsize=7)
        title = _title(model, task, models)
        if checkpoints == ["pretrained"]:
            title += "\n(pretrained only: not fine-tuned)"
        ax.set_title(title, fontsize=9)
    axes.flat[0].set_ylabel("share of (example, head) maps", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles[::-1], labels[::-1], loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    classifier = ", ".join(sorted(set(frame["classifier"].astype(str))))
    figure.suptitle(f"Attention pattern classes per task and checkpoint (classifier: {classifier})", fontsize=10)
    figure.tight_layout()
    save_figure(figure, png, pdf)


def plot_finetune_change(table: str | Path, png: str | Path, pdf: str | Path, *,
                         pretrained_only: list[str] | None = None) -> None:
    """[K] §4.3: cosine between pretrained and final fine-tuned maps, layer x head, one panel per task."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    final = _final(frame) if not frame.empty else frame
    keys = sorted(final.groupby(["model", "task"]).groups) if not final.empty else []
    models = final["model"].nunique() if not final.empty else 1
    figure, axes = _panels(keys or [None], width=3.4, height=2.6)
    image = None
    low = float(np.nanmin(final["cosine"])) if not final.empty else 0.0
    for ax, key in zip(axes.flat, keys):
        model, task = key
        panel = final[(final["model"] == model) & (final["task"] == task)]
        layers, heads = int(panel["layer"].max()) + 1, int(panel["head"].max()) + 1
        grid = np.full((layers, heads), np.nan)
        grid[panel["layer"].to_numpy(), panel["head"].to_numpy()] = panel["cosine"].to_numpy()
        image = ax.imshow(grid, vmin=min(low, 0.99), vmax=1.0, cmap="magma", aspect="auto")
        ax.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=6)
        ax.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=6)
        ax.set_xlabel("head", fontsize=7)
        ax.set_ylabel("layer", fontsize=7)
        ax.set_title(f"{_title(model, task, models)}: {panel['checkpoint'].iloc[0]}\n"
                     f"mean {np.nanmean(grid):.3f}, min {np.nanmin(grid):.3f} (n={int(panel['n'].iloc[0])})",
                     fontsize=8)
    if not keys:
        axes.flat[0].text(0.5, 0.5, "no fine-tuned checkpoint in this study", ha="center", va="center")
        axes.flat[0].axis("off")
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.7, label="cosine(pretrained, fine-tuned)")
    note = ""
    if pretrained_only:
        note = ("\nnot fine-tuned (pretrained only, no change): "
                f"{', '.join(TASK_NAMES.get(t, t) for t in pretrained_only)}")
    figure.suptitle("Change of every head after fine-tuning (1 = unchanged; layers, heads 1-based)" + note,
                    fontsize=10)
    save_figure(figure, png, pdf)
    plt.close("all")


def plot_lexical_layers(table: str | Path, png: str | Path, pdf: str | Path) -> None:
    """[L]: share of content / function words among the most-attended words per layer, before vs after."""
    frame, models, keys = _model_task_rows(table)
    categories = [c for c in CATEGORIES if c != "other"]
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(categories), len(keys), figsize=(2.9 * len(keys), 2.5 * len(categories)),
                                squeeze=False, sharey="row")
    final = _final(frame)
    for column, (model, task) in enumerate(keys):
        panel = frame[(frame["model"] == model) & (frame["task"] == task)]
        before = panel[panel["checkpoint"] == "pretrained"]
        after = final[(final["model"] == model) & (final["task"] == task)]
        for row, category in enumerate(categories):
            ax = axes[row, column]
            series = [("pretrained", before, "#8c8c8c")]
            if not after.empty:
                series.append((after["checkpoint"].iloc[0].split(".")[-1] + " fine-tuned", after, "#c44e52"))
            width = 0.8 / len(series)
            for k, (label, rows, colour) in enumerate(series):
                rows = rows[rows["category"] == category].sort_values("layer")
                x = rows["layer"].to_numpy() + (k - (len(series) - 1) / 2) * width
                y = rows["argmax_share"].to_numpy()
                error = np.abs(np.vstack([y - rows["ci_low"].to_numpy(), rows["ci_high"].to_numpy() - y]))
                ax.bar(x, y, width=width, color=colour, label=label, yerr=error, capsize=1.5,
                       error_kw={"linewidth": 0.6})
            layers = int(panel["layer"].max()) + 1
            ax.set_xticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
            if row == 0:
                title = _title(model, task, models)
                if after.empty:
                    title += "\n(pretrained only)"
                ax.set_title(title, fontsize=9)
            if row == len(categories) - 1:
                ax.set_xlabel("layer (1-based)", fontsize=7)
            if column == 0:
                ax.set_ylabel(f"{category} share of\nmost-attended words", fontsize=8)
            if row == 0 and column == 0:
                ax.legend(fontsize=6, loc="upper left")
    figure.suptitle("Lexical category of the most-attended word, per layer (mean of heads), before vs after "
                    "fine-tuning; bars: 95% bootstrap intervals", fontsize=10)
    figure.tight_layout()
    save_figure(figure, png, pdf)


def plot_trajectory(lexical: str | Path, classes: str | Path, change: str | Path, png: str | Path,
                    pdf: str | Path) -> None:
    """Shares along the fine-tuning trajectory (pretrained = step 0, each saved step, final)."""
    import matplotlib.pyplot as plt

    lexical_frame, classes_frame, change_frame = read_csv(lexical), read_csv(classes), read_csv(change)
    figure, axes = plt.subplots(1, 4, figsize=(16, 3.4))
    last = lexical_frame["layer"].max()
    panels = [
        (axes[0], lexical_frame[(lexical_frame["layer"] == last) & (lexical_frame["category"] == "content")],
         "argmax_share", "last layer: content share"),
        (axes[1], lexical_frame[(lexical_frame["layer"] == last) & (lexical_frame["category"] == "function")],
         "argmax_share", "last layer: function share"),
        (axes[2], classes_frame[classes_frame["class"] == "Heterogeneous"], "share", "Heterogeneous maps"),
    ]
    colours = plt.get_cmap("tab10")
    tasks = sorted(set(lexical_frame["task"]) | set(classes_frame["task"]))
    colour_of = {t: colours(i % 10) for i, t in enumerate(tasks)}
    for ax, rows, value, title in panels:
        for (_model, task, _seed), group in _trajectories(rows):
            group = group.sort_values("_x")
            ax.plot(group["_x"], group[value], marker="o", markersize=3, color=colour_of[task],
                    label=TASK_NAMES.get(task, task))
        ax.set_title(title, fontsize=9)
    if not change_frame.empty:
        mean = (change_frame.groupby(["model", "task", "checkpoint", "seed", "step", "global_step"], dropna=False)
                ["cosine"].mean().reset_index())
        pre = mean.drop_duplicates(["model", "task", "seed"]).assign(checkpoint="pretrained", step="", global_step=0,
                                                                     cosine=1.0)
        for (_model, task, _seed), group in _trajectories(pd.concat([pre, mean], ignore_index=True)):
            group = group.sort_values("_x")
            axes[3].plot(group["_x"], group["cosine"], marker="o", markersize=3, color=colour_of.get(task, "k"),
                         label=TASK_NAMES.get(task, task))
    axes[3].set_title("mean cosine to pretrained (all heads)", fontsize=9)
    axes[3].ticklabel_format(axis="y", useOffset=False)
    for ax in axes:
        ax.set_xlabel("fine-tuning step (0 = pretrained)", fontsize=8)
        ax.tick_params(labelsize=7)
    handles: dict = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    figure.suptitle("Along the fine-tuning trajectory (tasks without fine-tuning show one point at step 0)",
                    fontsize=10)
    figure.tight_layout()
    save_figure(figure, png, pdf)


def _trajectories(rows: pd.DataFrame):
    """(model, task, seed) -> rows of pretrained plus that seed's checkpoints, with x = global step."""
    rows = rows.copy()
    rows["_x"] = pd.to_numeric(rows["global_step"], errors="coerce").fillna(0)
    pretrained = rows[rows["checkpoint"] == "pretrained"]
    tuned = rows[rows["checkpoint"] != "pretrained"]
    seeds = tuned.groupby(["model", "task"])["seed"].unique().to_dict()
    for (model, task), group in pretrained.groupby(["model", "task"]):
        for seed in seeds.get((model, task), [None]):
            extra = tuned[(tuned["model"] == model) & (tuned["task"] == task) & (tuned["seed"] == seed)]
            yield (model, task, seed), pd.concat([group, extra], ignore_index=True)
