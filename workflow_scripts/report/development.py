"""Head development over pretraining (docs/models.md, "Pretraining checkpoints"): for a model studied at several hub
revisions (``models.NAME.revisions``), three measures per layer against the training step each revision names.

- ``sink_rate``: Gu et al.'s sink rate as their released code computes it (sink_rates.csv): the percentage of the
  layer's (sequence, head) pairs in which the head's attention to the first token, averaged over every query,
  exceeds the threshold; on ``natural`` text where every revision of the model has it, otherwise on random tokens;
- ``induction``: the layer's highest induction score (head_diagnostics.csv, repeated random tokens);
- ``dependency_accuracy``: the accuracy, on ``syntax.score_split``, of the layer's head best at predicting every
  dependent's head (relation ``all``) on ``syntax.select_split``, in the direction a map allows ([C]'s
  dependent -> head for an encoder, the causal union for a decoder; dependency_heads.csv).

All on each revision's own weights (checkpoint ``pretrained``). A measure a table has no rows for is left out,
never drawn as zero. The figure draws, beside the induction score (its right axis), Olsson et al. 2022's
in-context learning score of each revision where the study has it (tables/icl_score.csv, the surface stage's: loss
late in the context minus early; negative where later tokens are predicted better), so that the phase change in
which induction heads form and in-context learning appears shows on one panel.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.figures import literal_text, save_figure
from ..core.io import read_csv, write_csv
from ..core.labels import CAUSAL_UNION, DEP_TO_HEAD

PRETRAINED = "pretrained"
SINK_INPUTS = ("natural", "random")  # the first the study has
INDUCTION_INPUT = "random_repeated"
ALL_RELATIONS = "all"
COLUMNS = ["series", "model", "revision", "step", "order", "measure", "layer", "value", "head", "input", "direction"]
MEASURES = {"sink_rate": "sink rate (% of the layer's heads x sequences)",
            "induction": "best induction score in the layer",
            "dependency_accuracy": "dependency accuracy of the layer's best head"}


def head_development(sink_rates: str | Path | None, diagnostics: str | Path | None,
                     dependency_heads: str | Path | None, output: str | Path, *, series: dict[str, list[list]],
                     treebank: str, select_split: str, score_split: str) -> pd.DataFrame:
    """Write the long table: one row per (series, revision, measure, layer). ``series``: name -> [[model, revision,
    step], ...] in the order the config lists the revisions."""
    points = [(name, str(model), str(revision), step, order)
              for name, revisions in series.items() for order, (model, revision, step) in enumerate(revisions)]
    rows: list[dict] = []
    if sink_rates is not None:
        rows += _sink_rows(read_csv(sink_rates), points)
    if diagnostics is not None:
        rows += _induction_rows(read_csv(diagnostics), points)
    if dependency_heads is not None:
        rows += _dependency_rows(read_csv(dependency_heads), points, treebank, select_split, score_split)
    frame = pd.DataFrame(rows, columns=COLUMNS).astype({"head": "Int64", "step": "Int64"})
    write_csv(frame, output)
    return frame


def _base(point: tuple) -> dict:
    name, model, revision, step, order = point
    return {"series": name, "model": model, "revision": revision, "step": step, "order": order}


def _pretrained(frame: pd.DataFrame, model: str) -> pd.DataFrame:
    return frame[(frame["model"].astype(str) == model) & (frame["checkpoint"].astype(str) == PRETRAINED)]


def _sink_rows(rates: pd.DataFrame, points: list[tuple]) -> list[dict]:
    rates = rates[(rates["checkpoint"].astype(str) == PRETRAINED) & (rates["layer"].astype(str) != "all")]
    inputs = {model: set(part["input"].astype(str)) for model, part in rates.groupby(rates["model"].astype(str))}
    # One input per model with revisions: the first that every revision has, so that a line never mixes inputs.
    sources = {}
    for name in dict.fromkeys(point[0] for point in points):
        models = [point[1] for point in points if point[0] == name]
        sources[name] = next((kind for kind in SINK_INPUTS if all(kind in inputs.get(m, ()) for m in models)), None)
    rows = []
    for point in points:
        part, source = _pretrained(rates, point[1]), sources[point[0]]
        for row in part[part["input"].astype(str) == source].itertuples(index=False):
            rows.append({**_base(point), "measure": "sink_rate", "layer": int(row.layer),
                         "value": float(row.sink_rate), "input": source})
    return rows


def _best_per_layer(heads: pd.DataFrame, column: str) -> list[tuple[int, pd.Series]]:
    """Each layer's row of the highest ``column`` (the first on a tie); rows without a value (an empty selection
    split) are left out, and a layer with none has no row."""
    heads = heads.dropna(subset=[column])
    return [(int(layer), part.loc[part[column].astype(float).idxmax()])
            for layer, part in heads.groupby("layer", sort=True)]


def _induction_rows(diagnostics: pd.DataFrame, points: list[tuple]) -> list[dict]:
    rows = []
    for point in points:
        part = _pretrained(diagnostics, point[1])
        part = part[part["input"].astype(str) == INDUCTION_INPUT]
        for layer, best in _best_per_layer(part, "induction"):
            rows.append({**_base(point), "measure": "induction", "layer": int(layer),
                         "value": float(best["induction"]), "head": int(best["head"]), "input": INDUCTION_INPUT})
    return rows


def _dependency_rows(heads: pd.DataFrame, points: list[tuple], treebank: str, select_split: str,
                     score_split: str) -> list[dict]:
    heads = heads[(heads["treebank"].astype(str) == treebank) & (heads["relation"].astype(str) == ALL_RELATIONS)
                  & (heads["select_split"].astype(str) == select_split)
                  & (heads["score_split"].astype(str) == score_split)]
    rows = []
    for point in points:
        part = _pretrained(heads, point[1])
        directions = set(part["direction"].astype(str))
        direction = CAUSAL_UNION if CAUSAL_UNION in directions else DEP_TO_HEAD
        part = part[part["direction"].astype(str) == direction]
        for layer, best in _best_per_layer(part, "select_accuracy"):
            rows.append({**_base(point), "measure": "dependency_accuracy", "layer": int(layer),
                         "value": float(best["accuracy"]), "head": int(best["head"]), "direction": direction})
    return rows


def draw_head_development(table: str | Path, png: str | Path, pdf: str | Path, *, series: str,
                          icl_score: str | Path | None = None) -> None:
    """One panel per measure: the value per layer (one line each, layer 1 lightest) against the training step (the
    revisions' order where a revision names no step); with ``icl_score`` (tables/icl_score.csv), the series' ICL
    score on the induction panel's right axis."""
    import matplotlib.pyplot as plt

    frame = read_csv(table)
    frame = frame[frame["series"].astype(str) == series]
    by_step = frame["step"].notna().all() and len(frame)
    x_column = "step" if by_step else "order"
    figure, axes = plt.subplots(1, len(MEASURES), figsize=(5 * len(MEASURES) + 1, 4), sharex=True,
                                constrained_layout=True)
    layers = sorted(frame["layer"].dropna().astype(int).unique())
    colours = {layer: plt.get_cmap("viridis")(index / max(len(layers) - 1, 1)) for index, layer in enumerate(layers)}
    for ax, (measure, label) in zip(axes, MEASURES.items(), strict=True):
        part = frame[frame["measure"].astype(str) == measure]
        for layer in layers:
            line = part[part["layer"].astype(int) == layer].sort_values(x_column)
            if len(line):
                ax.plot(line[x_column].astype(float), line["value"].astype(float), marker="o", markersize=3,
                        color=colours[layer])
        ax.set(title=label, xlabel="training step" if by_step else "revision (in the order listed)")
        if not len(part):
            ax.text(0.5, 0.5, "not measured in this study", ha="center", transform=ax.transAxes)
    if icl_score is not None:
        _draw_icl(axes[list(MEASURES).index("induction")], read_csv(icl_score), frame, series, x_column)
    steps = frame[x_column].astype(float)
    if by_step and len(steps) and steps.min() > 0 and steps.max() >= 10 * steps.min():
        axes[0].set_xscale("log")  # Pythia's steps 1000 ... 143000 (shared by every panel)
    if not by_step and len(frame):
        revisions = frame.drop_duplicates("order").sort_values("order")
        axes[0].set_xticks(revisions["order"].astype(float), [literal_text(r) for r in revisions["revision"]])
    if layers:
        handles = [plt.Line2D([], [], color=colours[layer], marker="o", markersize=3) for layer in layers]
        figure.legend(handles, [f"layer {layer + 1}" for layer in layers], fontsize=7, loc="outside right center")
    figure.suptitle(literal_text(f"{series}: head development over pretraining (each revision's own weights)"))
    save_figure(figure, png, pdf)


def _draw_icl(ax, icl: pd.DataFrame, frame: pd.DataFrame, series: str, x_column: str) -> None:
    """The series' ICL score per revision (black, dashed, its 95% interval as bars) on ``ax``'s right axis; x the
    training step, or the revision's order in the head-development table where a revision names no step."""
    icl = icl[(icl["series"].astype(str) == series)].dropna(subset=["icl_score"])
    if x_column == "order":
        order = dict(zip(frame["model"].astype(str), frame["order"], strict=False))
        icl = icl.assign(order=icl["model"].astype(str).map(order)).dropna(subset=["order"])
    if icl.empty:
        return
    icl = icl.sort_values(x_column)
    right = ax.twinx()
    x, value = icl[x_column].astype(float), icl["icl_score"].astype(float)
    right.errorbar(x, value, yerr=[value - icl["icl_low"].astype(float), icl["icl_high"].astype(float) - value],
                   color="black", linestyle="--", marker="s", markersize=3, capsize=2, linewidth=1)
    right.axhline(0.0, color="black", linewidth=0.5, alpha=0.4)
    first = icl.iloc[0]
    right.set_ylabel(f"ICL score, nats (loss at token {int(first['late_position'])} minus token "
                     f"{int(first['early_position'])})", fontsize=8)
    ax.set_title(f"{MEASURES['induction']}; dashed: ICL score (right)")
