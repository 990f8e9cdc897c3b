"""Where a role changes (docs/roles.md, "tables/role_change_by_layer.csv"): per pair of related subjects, role and
layer, the mean absolute change of the layer's heads' scores, with a percentile bootstrap interval over the layer's
heads, so that [K]'s finding that fine-tuning changes the last layers most is tested role by role.

The pairs and roles are those tables/role_agreement.csv compares (role_agreement.compared_roles), of roles with a
score per head (a best-head role has one head per subject: no layer to average); ``mean_change`` is the signed mean
(second minus first). The figure (:func:`draw_role_change`) draws one panel per role, the change against relative
depth, a line per pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv, write_csv
from .atlas import relative_depth, role_position
from .head_ranks import LEVEL
from .role_agreement import compared_roles, role_rows, roles_of, subject_rows, subject_shape

COLUMNS = ["relation", "role", "detail", "first_model", "first_checkpoint", "second_model", "second_checkpoint",
           "layer", "num_layers", "relative_depth", "heads", "mean_abs_change", "ci_low", "ci_high", "mean_change",
           "bootstrap_resamples", "bootstrap_seed"]
MAX_PANELS = 24


def layer_changes(first: pd.Series, second: pd.Series, num_layers: int, *, resamples: int,
                  seed: int) -> list[dict[str, Any]]:
    """Per layer: heads, the mean |second - first| of its heads with its bootstrap interval, the signed mean."""
    common = first.index.intersection(second.index)
    change = (second.loc[common] - first.loc[common]).dropna()
    rng = np.random.default_rng(seed)
    alpha = (1 - LEVEL) / 2
    rows = []
    for layer in range(num_layers):
        values = change[change.index.get_level_values("layer") == layer].to_numpy(float)
        if not len(values):
            continue
        absolute = np.abs(values)
        low = high = np.nan
        if resamples > 0 and len(values) > 1:
            means = absolute[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
            low, high = (float(v) for v in np.quantile(means, [alpha, 1 - alpha]))
        rows.append({"layer": layer, "num_layers": num_layers, "heads": len(values),
                     "mean_abs_change": float(absolute.mean()), "ci_low": low, "ci_high": high,
                     "mean_change": float(values.mean())})
    return rows


def role_change_by_layer(atlas: pd.DataFrame, pairs: Sequence[Mapping[str, Any]], *, resamples: int,
                         seed: int) -> pd.DataFrame:
    """Every compared pair's per-layer change of every role with a score per head, in the order of ``pairs``."""
    rows = []
    for pair in pairs:
        first = subject_rows(atlas, str(pair["first_model"]), str(pair["first_checkpoint"]))
        second = subject_rows(atlas, str(pair["second_model"]), str(pair["second_checkpoint"]))
        if first.empty or second.empty or subject_shape(first) != subject_shape(second):
            continue
        roles_a, roles_b = roles_of(first, pair.get("task")), roles_of(second, pair.get("task"))
        base = {key: pair[key] for key in ("relation", "first_model", "first_checkpoint", "second_model",
                                           "second_checkpoint")}
        for role, detail in compared_roles(roles_a, roles_b):
            scores_a, scores_b = role_rows(roles_a, role, detail)["score"], role_rows(roles_b, role, detail)["score"]
            if min(len(scores_a), len(scores_b)) <= 1:
                continue
            for row in layer_changes(scores_a, scores_b, subject_shape(first)[0], resamples=resamples, seed=seed):
                rows.append({**base, "role": role, "detail": detail, **row})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if len(frame):
        frame["relative_depth"] = relative_depth(frame["layer"].astype(int), frame["num_layers"].astype(int))
    return frame.assign(bootstrap_resamples=resamples, bootstrap_seed=seed).astype(
        {"layer": "Int64", "num_layers": "Int64", "heads": "Int64"})


def role_change_table(atlas: str | Path, output: str | Path, *, pairs: Sequence[Mapping[str, Any]], resamples: int,
                      seed: int) -> pd.DataFrame:
    """Write tables/role_change_by_layer.csv from tables/atlas.csv (rule role_agreement)."""
    frame = role_change_by_layer(read_csv(atlas), pairs, resamples=resamples, seed=seed)
    write_csv(frame, output)
    return frame


def _panel_key(role: str, detail: str) -> str:
    """A panel per role; a pattern class's detail is its task (a line of its own), a relation's is a panel."""
    return role if role.startswith("pattern:") or role in ("sink", "previous_token", "induction") else (
        f"{role} ({detail})" if detail else role)


def draw_role_change(table: str | Path, png: str | Path, pdf: str | Path) -> None:
    """One panel per role (a relation's accuracy each its own), the layers' mean absolute change against relative
    depth with its interval, a line per pair (first -> second checkpoint)."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    frame = frame.assign(detail=frame["detail"].fillna("").astype(str), panel=[
        _panel_key(str(role), str(detail)) for role, detail in zip(frame["role"], frame["detail"].fillna(""))])
    panels = sorted(dict.fromkeys(frame["panel"]), key=lambda p: (role_position(p.split(" (")[0]), p))
    shown = panels[:MAX_PANELS]
    columns = max(1, min(4, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.6 * rows + 0.8), squeeze=False,
                                constrained_layout=True)
    for ax, panel in zip(axes.ravel(), shown):
        part = frame[frame["panel"] == panel]
        for (_, first, second, detail), line in part.groupby(
                ["relation", "first_checkpoint", "second_checkpoint", "detail"], sort=False):
            line = line.sort_values("relative_depth")
            label = f"{first} -> {second}" + (f" ({detail})" if detail and panel.startswith("pattern:") else "")
            ax.errorbar(line["relative_depth"], line["mean_abs_change"],
                        yerr=[line["mean_abs_change"] - line["ci_low"], line["ci_high"] - line["mean_abs_change"]],
                        marker="o", markersize=3, capsize=2, linewidth=1, label=literal_text(label))
        ax.set_title(literal_text(panel), fontsize=8)
        ax.set_xlim(0, 1)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(shown):]:
        ax.axis("off")
    if not shown:
        axes[0, 0].text(0.5, 0.5, "no role compared between related subjects", ha="center", fontsize=9)
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles[:12], labels[:12], loc="outside lower center", fontsize=6, ncol=3, frameon=False)
    more = (f" (the first {MAX_PANELS} of {len(panels)} roles; the table has every one)"
            if len(panels) > MAX_PANELS else "")
    figure.suptitle("Mean absolute change of the heads' scores per layer, 95% bootstrap interval over the layer's "
                    f"heads; x: relative depth{more}", fontsize=9)
    save_figure(figure, png, pdf)
