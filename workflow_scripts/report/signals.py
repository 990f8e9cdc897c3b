"""Signals side by side (docs/signals.md): one table and one figure per model, when the study reads its models
through more than one signal (``attention.signals``).

Two of [C]'s headline measures, taken from the study's own tables for every signal of a model, on the
pretrained checkpoint:

- per layer, the share of attention (for ``norm``: of the row-normalised norms) to [CLS], to separators and to
  punctuation (period and comma), averaged over the layer's heads (surface_heads.csv; [C] Figure 2);
- per dependency relation, the accuracy of the best head and its label (dependency_best.csv: the syntax
  treebank, the headline selection protocol ``syntax.select_split`` -> ``syntax.score_split``, either
  direction), beside the offset baseline.

A signal a table has no rows for is left out of that measure, never drawn as zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv, write_csv
from ..core.subjects import subject_name

PRETRAINED = "pretrained"
# surface_heads.csv column(s) -> the measure's name; punctuation is period + comma, as [C] counts it.
SHARES = {"cls": ("cls",), "sep": ("sep",), "punct": ("period", "comma")}
COLUMNS = ["model", "signal", "subject", "measure", "layer", "relation", "head_label", "value", "baseline", "n"]
DIRECTION = "either"


def signal_comparison(surface_heads: str | Path | None, dependency_best: str | Path | None, output: str | Path, *,
                      models: list[str], signals: list[str], treebank: str, select_split: str,
                      score_split: str) -> pd.DataFrame:
    """Write the long table of the measures above, one row per (model, signal, measure, layer or relation)."""
    rows: list[dict] = []
    subjects = {subject_name(m, s): (m, s) for m in models for s in signals}
    if surface_heads is not None:
        surface = read_csv(surface_heads)
        surface = surface[(surface["checkpoint"].astype(str) == PRETRAINED)
                          & surface["model"].astype(str).isin(list(subjects))]
        for (subject, layer), part in surface.groupby([surface["model"].astype(str), "layer"], sort=True):
            model, signal = subjects[subject]
            for measure, columns in SHARES.items():
                value = float(part[list(columns)].sum(axis=1).mean())
                rows.append({"model": model, "signal": signal, "subject": subject, "measure": f"share_to_{measure}",
                             "layer": int(layer), "value": value, "n": len(part)})
    if dependency_best is not None:
        best = read_csv(dependency_best)
        best = best[(best["checkpoint"].astype(str) == PRETRAINED) & (best["treebank"].astype(str) == treebank)
                    & (best["select_split"].astype(str) == select_split)
                    & (best["score_split"].astype(str) == score_split)
                    & (best["direction"].astype(str) == DIRECTION)
                    & best["model"].astype(str).isin(list(subjects))]
        for row in best.itertuples(index=False):
            model, signal = subjects[str(row.model)]
            rows.append({"model": model, "signal": signal, "subject": str(row.model),
                         "measure": "best_head_accuracy", "relation": str(row.relation),
                         "head_label": str(row.head_label), "value": float(row.accuracy),
                         "baseline": float(row.baseline_accuracy), "n": int(row.n)})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_csv(frame, output)
    return frame


def draw_signal_comparison(table: str | Path, png: str | Path, pdf: str | Path, *, model: str) -> None:
    """Left: attention share per layer to [CLS], separators, punctuation, one line style per signal. Right: the
    best head's accuracy per relation, one bar per signal, the offset baseline as a mark."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    frame = frame[frame["model"].astype(str) == model]
    signals = list(dict.fromkeys(frame["signal"].astype(str)))
    figure, (shares_ax, best_ax) = plt.subplots(1, 2, figsize=(13, 4.6), constrained_layout=True,
                                                gridspec_kw={"width_ratios": [1, 1.6]})
    styles = ["-", "--", ":", "-."]
    colours = {"cls": "tab:blue", "sep": "tab:red", "punct": "tab:green"}
    shares = frame[frame["measure"].astype(str).str.startswith("share_to_")]
    for index, signal in enumerate(signals):
        for measure, colour in colours.items():
            part = shares[(shares["signal"] == signal) & (shares["measure"] == f"share_to_{measure}")]
            if len(part):
                shares_ax.plot(part["layer"].astype(int) + 1, part["value"].astype(float), styles[index % 4],
                               color=colour, marker="o", markersize=3,
                               label=literal_text(f"{measure.upper() if measure != 'punct' else 'punct.'}, {signal}"))
    shares_ax.set(xlabel="layer", ylabel="mean share over the layer's heads",
                  title="Attention to [CLS], [SEP] and punctuation per signal")
    if len(shares):
        # Below the panel: the lines fill the axes.
        shares_ax.legend(fontsize=7, ncol=len(signals), loc="upper center", bbox_to_anchor=(0.5, -0.14), handlelength=4)
    best = frame[frame["measure"] == "best_head_accuracy"]
    relations = list(dict.fromkeys(best["relation"].astype(str)))
    width = 0.8 / max(len(signals), 1)
    x = np.arange(len(relations))
    for index, signal in enumerate(signals):
        part = best[best["signal"] == signal].set_index(best[best["signal"] == signal]["relation"].astype(str))
        values = [float(part.loc[r, "value"]) if r in part.index else np.nan for r in relations]
        best_ax.bar(x + (index - (len(signals) - 1) / 2) * width, values, width, label=literal_text(signal))
    if len(best):
        baseline = best.drop_duplicates("relation").set_index(best.drop_duplicates("relation")["relation"].astype(str))
        best_ax.scatter(x, [float(baseline.loc[r, "baseline"]) for r in relations], marker="_", s=200, color="black",
                        zorder=3, label="offset baseline")
    best_ax.set_xticks(x, [literal_text(r) for r in relations], rotation=45, ha="right", fontsize=8)
    best_ax.set(ylabel="accuracy of the best head", ylim=(0, 1), title="Best head per dependency relation")
    if len(best):
        best_ax.legend(fontsize=7)
    if not signals:
        for ax in (shares_ax, best_ax):
            ax.text(0.5, 0.5, "no rows for this model", ha="center", transform=ax.transAxes)
    figure.suptitle(literal_text(f"{model}: signals side by side (pretrained)"))
    save_figure(figure, png, pdf)

