"""The one-page summary of a model (rule ``summary_figure``): six panels beside the papers' values.

Each panel reads the study tables through :class:`.report.StudyTables` and shows the numbers the
paper comparison (``report.py``) headlines: held-out heads, with the same-split ones beside them,
and the input protocol of the treebank dumps. A panel the study has no data for says "not in
this study" and why. See docs/report.md.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.figures import save_figure
from ..syntax.dependency import PAPER_LABELS
from ..finetune_effects.figures import TASK_NAMES
from .comparison import (
    CONTROL,
    COREF_HELD_OUT,
    COREF_SAME_SPLIT,
    MENTION_TYPES,
    NO_CHECKPOINT,
    SURFACE_LAYERS,
    PaperItem,
    StudyContext,
    StudyTables,
    _compared_checkpoints,
    _dependency_rows,
    _finite,
    _is_final,
    _model_shape,
    _pooled,
    _task_order,
    _value,
    coref_key,
    held_out_label,
    input_protocol,
    input_text,
    probe_key,
    read_paper_values,
    relation_of,
    same_split_label,
)

log = logging.getLogger(__name__)

SURFACE_COLOURS = {"cls": "tab:red", "sep": "tab:blue", "punct": "tab:purple"}
PAPER_STYLE = {"marker": "D", "color": "black", "markersize": 5, "linestyle": "none", "zorder": 5}
FIGSIZE = (11.69, 8.27)  # A4 landscape, inches


def _not_in_study(ax: Any, title: str, reason: str) -> str:
    """Write "not in this study" and the reason into the panel; return the reason."""
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("0.8")
    ax.text(0.5, 0.5, "not in this study:\n" + textwrap.fill(reason, 42), ha="center", va="center", fontsize=8,
            color="0.35", transform=ax.transAxes)
    return reason


def _reference(items: Sequence[PaperItem], analysis: str) -> list[PaperItem]:
    return [i for i in items if i.analysis == analysis and i.number is not None]


def _main_checkpoint(rows: pd.DataFrame) -> str | None:
    names = _compared_checkpoints(rows)
    return "pretrained" if "pretrained" in names else (names[0] if names else None)


def _panel_surface(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem]) -> str | None:
    title = "A  Attention to special tokens per layer"
    rows, why = tables.model_rows("surface_heads", model)
    checkpoint = _main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return _not_in_study(ax, title, why or "no pretrained rows in surface_heads.csv")
    rows = rows.assign(punct=rows["period"] + rows["comma"])
    labels = {"cls": "[CLS]", "sep": "[SEP]", "punct": "'.' or ','"}
    top = 0.0
    for name, style in ((checkpoint, "-"), (CONTROL, "--")):
        part = rows[rows["checkpoint"].astype(str) == name]
        if part.empty:
            continue
        means = part.groupby("layer")[["cls", "sep", "punct"]].mean()
        top = max(top, float(np.nanmax(means.to_numpy())))
        for column, colour in SURFACE_COLOURS.items():
            ax.plot(means.index + 1, means[column], style, color=colour, marker="o" if style == "-" else None,
                    markersize=3, linewidth=1.5 if style == "-" else 1, alpha=1 if style == "-" else 0.6,
                    label=labels[column] if style == "-" else None)
    if (rows["checkpoint"].astype(str) == CONTROL).any():
        ax.plot([], [], "--", color="0.4", linewidth=1, label="random-init")
    layers = int(rows["layer"].max()) + 1
    for item in items:
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
    ax.set_title(f"{title}\n({corpus}; {checkpoint}, solid; random-init, dashed)", fontsize=9, loc="left")
    ax.legend(fontsize=6.5, loc="upper left", frameon=False)
    return None


def _two_lines(label: str) -> str:
    """'held out (train→dev)' -> 'held out\n(train→dev)', for a narrow legend."""
    return label.replace(" (", "\n(", 1)


def _panel_dependency(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                      ctx: StudyContext) -> str | None:
    """Per relation: the head selected on select_split and scored on score_split (held out), the head selected and
    scored on score_split ([C]'s same-split protocol) and the best fixed offset (held out)."""
    title = "B  Best head per dependency relation (EWT)"
    rows, why = tables.model_rows("dependency_best", model)
    checkpoint = _main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return _not_in_study(ax, title, why or "no pretrained rows in dependency_best.csv")
    rows = rows[rows["checkpoint"].astype(str) == checkpoint]
    present = list(dict.fromkeys(rows["relation"].astype(str)))
    order = [r for r in (ctx.relations or present) if r in present]
    paper = {}
    for item in _reference(items, "dependency_best"):
        relation, _ = relation_of(item.item)
        if relation is not None:
            paper[relation] = item.number
    select, score = ctx.select_split, ctx.score_split
    held_out = select != score
    protocols = [(select, score, held_out_label(select, score) if held_out else same_split_label(score), "tab:blue")]
    if held_out:
        protocols.append((score, score, same_split_label(score), "lightsteelblue"))

    def accuracy(row: pd.Series | None, column: str) -> float:
        return 100 * float(row[column]) if row is not None and _finite(row[column]) else np.nan

    bars: dict[str, list[float]] = {label: [] for _, _, label, _ in protocols}
    baselines, head_labels, names = [], [], []
    for relation in order:
        for k, (sel, sco, label, _) in enumerate(protocols):
            part = _dependency_rows(rows, relation, sel, sco)
            row = part.iloc[0] if not part.empty else None
            bars[label].append(accuracy(row, "accuracy"))
            if k == 0:
                baselines.append(accuracy(row, "baseline_accuracy"))
                head_labels.append(str(row["head_label"]) if row is not None and _finite(row["accuracy"]) else "")
        stanford = PAPER_LABELS.get(relation, "").split(" ", 1)[0]
        names.append(relation if not stanford or stanford.lower() == relation else f"{relation} ({stanford})")
    y = np.arange(len(order))[::-1]
    height = 0.8 / (len(protocols) + 1)
    offsets = [height * (len(protocols) / 2 - k) for k in range(len(protocols) + 1)]
    for k, (_, _, label, colour) in enumerate(protocols):
        ax.barh(y + offsets[k], bars[label], height=height, color=colour, label=_two_lines(label))
    ax.barh(y + offsets[-1], baselines, height=height, color="0.7", label=f"fixed offset,\n{protocols[0][2]}")
    for yy, value, label in zip(y, bars[protocols[0][2]], head_labels):
        if label:
            ax.text(value + 1, yy + offsets[0], label, va="center", fontsize=5.5, color="tab:blue")
    px = [paper.get(r, np.nan) for r in order]
    if any(np.isfinite(px)):
        ax.plot(px, y + offsets[len(protocols) - 1], **PAPER_STYLE, label="[C] BERT-base\n(same split)")
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xlim(0, 185)  # the legend sits right of 100%, clear of the longest bars and their labels
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel(f"accuracy (%) on EWT {score}", fontsize=8)
    inputs = input_text(input_protocol(rows))
    ax.set_title(f"{title}\n({checkpoint}; bars: best heads, labelled layer-head)"
                 + (f"\n{inputs}" if inputs else ""), fontsize=9, loc="left")
    ax.legend(fontsize=5.5, loc="lower right", frameon=True, title="best head:", title_fontsize=5.5)
    return None


def _bars_with_paper(ax: Any, names: list[str], values: list[float], paper: list[float], colours: list[str]) -> None:
    x = np.arange(len(names))
    ax.bar(x, values, color=colours, width=0.6)
    for xx, value in zip(x, values):
        ax.text(xx, (value if np.isfinite(value) else 0) + 1.5, f"{value:.0f}" if np.isfinite(value) else "n/a",
                ha="center", fontsize=6.5)
    if any(np.isfinite(paper)):
        ax.plot(x, paper, **PAPER_STYLE, label="[C] BERT-base")
    ax.set_xticks(x)
    ax.set_xticklabels(names, fontsize=6.5)


def _panel_probes(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                  ctx: StudyContext) -> str | None:
    title = "C  Attention probes, UAS (EWT)"
    rows, why = tables.model_rows("probes", model)
    if rows is None:
        return _not_in_study(ax, title, why)
    paper = {probe_key(i.item): i.number for i in _reference(items, "probes")}
    checkpoint = _main_checkpoint(rows) or "pretrained"
    bars = [("right-\nbranch.", NO_CHECKPOINT, "right_branching", (NO_CHECKPOINT, "right_branching")),
            ("dist.+\nGloVe", NO_CHECKPOINT, "distance_glove", (NO_CHECKPOINT, "distance_glove")),
            ("random\nattn+\nGloVe", CONTROL, "attn_glove", (CONTROL, "attn_glove")),
            ("attn", checkpoint, "attn", (None, "attn")),
            ("attn+\nGloVe", checkpoint, "attn_glove", (None, "attn_glove")),
            (f"MST,\nbest head\n{ctx.select_split}→\n{ctx.score_split}", checkpoint, "mst_best_head", None)]
    values, references, colours = [], [], []
    for _, name, probe, key in bars:
        found = rows[(rows["checkpoint"].astype(str) == name) & (rows["probe"].astype(str) == probe)]
        values.append(_value(found, "uas"))
        references.append(paper.get(key, np.nan) if key else np.nan)
        colours.append("0.7" if name in (NO_CHECKPOINT, CONTROL) else "tab:blue")
    _bars_with_paper(ax, [b[0] for b in bars], values, references, colours)
    ax.set_ylim(0, 100)
    ax.set_ylabel("UAS (%), punctuation excluded", fontsize=8)
    inputs = input_text(input_protocol(rows))
    ax.set_title(f"{title}\n(blue: {checkpoint}; grey: baselines, control;\nMST: UUAS, head selected on "
                 f"{ctx.select_split}, scored on {ctx.score_split})" + (f"\n{inputs}" if inputs else ""), fontsize=9,
                 loc="left")
    if any(np.isfinite(references)):
        ax.legend(fontsize=6.5, loc="upper left", frameon=False)
    return None


def _panel_coreference(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem]) -> str | None:
    """Per mention type: the held-out head (halves a→b, b→a, pooled), the same-split one ([C]), the baselines."""
    title = "D  Coreference: antecedent accuracy (GUM)"
    rows, why = tables.model_rows("coref_best", model)
    checkpoint = _main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return _not_in_study(ax, title, why or "no pretrained rows in coref_best.csv")
    paper = {coref_key(i.item): i.number for i in _reference(items, "coreference")}
    every = (rows["select_documents"].astype(str) == "all") & (rows["score_documents"].astype(str) == "all")
    halves = ((rows["select_documents"].astype(str) != "all")
              & (rows["select_documents"].astype(str) != rows["score_documents"].astype(str)))
    head = (rows["method"].astype(str) == "head") & (rows["checkpoint"].astype(str) == checkpoint)
    bars = [("head, " + COREF_HELD_OUT.replace("GUM halves ", ""), "tab:blue", rows[head & halves], None),
            ("head, " + COREF_SAME_SPLIT.replace(", as [C]", ", [C]"), "lightsteelblue", rows[head & every], "head"),
            ("nearest mention", "0.75", rows[every & (rows["method"].astype(str) == "nearest_mention")],
             "nearest_mention"),
            ("head-word match", "0.5", rows[every & (rows["method"].astype(str) == "head_word_match")],
             "head_word_match")]
    x = np.arange(len(MENTION_TYPES))
    width = 0.2
    for k, (label, colour, part, method) in enumerate(bars):
        values = []
        for mention in MENTION_TYPES:
            found = part[part["mention_type"].astype(str) == mention]
            if k == 0:  # the two held-out halves, pooled over their mentions
                pooled = _pooled(found, "accuracy")
                values.append(100 * pooled if pooled is not None else np.nan)
            else:
                values.append(_value(found, "accuracy"))
        offset = (k - 1.5) * width
        ax.bar(x + offset, values, width=width, color=colour, label=label)
        reference = [paper.get((method, m), np.nan) for m in MENTION_TYPES]
        if any(np.isfinite(reference)):
            ax.plot(x + offset, reference, **{**PAPER_STYLE, "markersize": 4},
                    label="[C] BERT-base (head 5-4 / baselines)" if method == "head" else None)
    labels = rows[head & halves & (rows["mention_type"].astype(str) == "all")]
    best = (", best heads " + " / ".join(f"{r['select_documents']}→{r['score_documents']} {r['head_label']}"
                                        for _, r in labels.iterrows())) if not labels.empty else ""
    inputs = input_text(input_protocol(rows))
    ax.set_xticks(x)
    ax.set_xticklabels(MENTION_TYPES, fontsize=7)
    ax.set_ylim(0, 118)  # the legend sits above 100%
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("accuracy (%)", fontsize=8)
    ax.set_title(f"{title}\n({checkpoint}{best})" + (f"\n{inputs}" if inputs else ""), fontsize=9, loc="left")
    ax.legend(fontsize=5.5, loc="upper left", frameon=False, ncol=2)
    return None


METRIC_NAMES = {"matthews_corr": "MCC", "accuracy": "acc", "f1": "F1", "pearson": "Pearson", "spearman": "Spearman"}


def _panel_finetune(ax: Any, model: str, tables: StudyTables) -> str | None:
    title = "E  Fine-tuning: dev score vs majority baseline"
    rows, why = tables.model_rows("finetune_metrics", model)
    if rows is None:
        return _not_in_study(ax, title, why)
    main = rows["main_metric"].astype(str).str.lower() == "true"
    rows = rows[main & (rows["step"].astype(str) == "final")]
    if rows.empty:
        return _not_in_study(ax, title, "finetune_metrics.csv has no final checkpoint for this model")
    tasks = _task_order(rows["task"])
    x = np.arange(len(tasks))
    means, majority, names = [], [], []
    for xx, task in zip(x, tasks):
        part = rows[rows["task"].astype(str) == task]
        values = 100 * part["value"].astype(float).to_numpy()
        means.append(float(np.nanmean(values)) if np.isfinite(values).any() else np.nan)
        if len(values) > 1:
            ax.plot(np.full(len(values), xx), values, "o", color="navy", markersize=2.5)
        base = pd.to_numeric(part["majority_baseline"], errors="coerce").iloc[0]
        majority.append(100 * float(base) if _finite(base) else np.nan)
        metric = str(part["metric"].iloc[0])
        names.append(f"{TASK_NAMES.get(task, task)}\n{METRIC_NAMES.get(metric, metric)}")
    ax.bar(x, means, width=0.6, color="tab:green", label="fine-tuned (final" + (", mean of seeds)"
                                                                               if rows["seed"].nunique() > 1 else ")"))
    ax.hlines(majority, x - 0.35, x + 0.35, color="black", linewidth=1.5, label="majority baseline")
    for xx, value in zip(x, means):
        if np.isfinite(value):
            ax.text(xx, max(value, 0) + 1.5, f"{value:.0f}", ha="center", fontsize=6.5)
    ax.axhline(0, color="0.5", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(names, fontsize=6.5)
    low = min(0.0, float(np.nanmin([*means, 0.0])) - 5)
    ax.set_ylim(low, 105)
    ax.set_ylabel("dev score (x100; main GLUE metric)", fontsize=8)
    note = "final checkpoints; no majority baseline for STS-B" if "stsb" in tasks else "final checkpoints"
    ax.set_title(f"{title}\n({note})", fontsize=9, loc="left")
    ax.legend(fontsize=6.5, loc="upper right", frameon=False)
    return None


def _panel_lexical(ax: Any, model: str, tables: StudyTables, ctx: StudyContext) -> str | None:
    title = "F  Last layer: change of most-attended word category"
    rows, why = tables.model_rows("lexical_last_layer", model)
    if rows is None:
        return _not_in_study(ax, title, why)
    rows = rows[(rows["measure"].astype(str) == "argmax") & rows["checkpoint"].astype(str).map(_is_final)]
    if rows.empty:
        return _not_in_study(ax, title, "lexical_last_layer.csv has no final fine-tuned checkpoint for this model")
    first_seed = pd.to_numeric(rows["seed"], errors="coerce")
    rows = rows[first_seed == first_seed.groupby(rows["task"]).transform("min")]
    tasks = _task_order(rows["task"])
    groups = {t: g for g, ts in ctx.predictions.items() for t in ts}
    x = np.arange(len(tasks))
    for k, (category, colour) in enumerate((("content", "tab:orange"), ("function", "tab:cyan"))):
        values, low, high = [], [], []
        for task in tasks:
            found = rows[(rows["task"].astype(str) == task) & (rows["category"].astype(str) == category)]
            r = found.iloc[0] if not found.empty else None
            values.append(100 * float(r["difference"]) if r is not None and _finite(r["difference"]) else np.nan)
            low.append(100 * float(r["ci_low"]) if r is not None and _finite(r["ci_low"]) else np.nan)
            high.append(100 * float(r["ci_high"]) if r is not None and _finite(r["ci_high"]) else np.nan)
        values_ = np.asarray(values)
        errors = np.vstack([values_ - np.asarray(low), np.asarray(high) - values_])
        errors = np.where(np.isfinite(errors), np.abs(errors), 0)
        ax.bar(x + (k - 0.5) * 0.38, values_, width=0.38, color=colour, yerr=errors, capsize=2,
               error_kw={"linewidth": 0.8}, label=f"{category} words")
    ax.axhline(0, color="black", linewidth=0.8)
    short = {"syntactic": "\n(syn)", "semantic": "\n(sem)"}
    ax.set_xticks(x)
    ax.set_xticklabels([f"{TASK_NAMES.get(t, t)}{short.get(groups.get(t, ''), '')}" for t in tasks], fontsize=6.5)
    layer = int(rows["layer"].max()) + 1
    ax.set_ylabel("fine-tuned minus pretrained (pts)", fontsize=8)
    ax.set_title(f"{title}\n(layer {layer}, share of most-attended words; 95% CI)", fontsize=9, loc="left")
    # Headroom above the bars keeps the legend clear of them, whatever the signs of the changes.
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, top + 0.35 * (top - bottom))
    ax.legend(fontsize=6.5, loc="upper left", frameon=False, ncol=2,
              title="[L]: sem -> content up, syn -> function up", title_fontsize=6.5)
    return None


def _inputs(tables: StudyTables, model: str) -> list[tuple[str, str]]:
    """(panel letters, input_protocol) of the syntax and coreference tables of ``model`` that have one."""
    found = {}
    for letter, name in (("B", "dependency_best"), ("C", "probes"), ("D", "coref_best")):
        rows, _ = tables.model_rows(name, model)
        found.setdefault(input_protocol(rows), []).append(letter)
    return [("-".join(letters), protocol) for protocol, letters in found.items()]


def summary_figure(model: str, tables: Mapping[str, str | Path | None], paper_values: str | Path,
                   png: str | Path, pdf: str | Path | None = None, *, context: StudyContext,
                   absent: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """One A4 page for ``model``: six panels (A-F) from the study tables, with the papers' values.

    Returns every panel's letter -> None where it is drawn, or the reason it says "not in this study".
    """
    import matplotlib.pyplot as plt

    items = read_paper_values(paper_values)
    study = StudyTables(tables, absent)
    layers, heads = _model_shape(study, model)
    figure, axes = plt.subplots(2, 3, figsize=FIGSIZE)
    panels = {
        "A": _panel_surface(axes[0][0], model, study, items),
        "B": _panel_dependency(axes[0][1], model, study, items, context),
        "C": _panel_probes(axes[0][2], model, study, items, context),
        "D": _panel_coreference(axes[1][0], model, study, items),
        "E": _panel_finetune(axes[1][1], model, study),
        "F": _panel_lexical(axes[1][2], model, study, context),
    }
    for ax in axes.flat:
        ax.tick_params(labelsize=7)
        ax.grid(axis="both", alpha=0.25)
    shape = f" ({layers} layers x {heads} heads)" if layers and heads else ""
    figure.suptitle(f"{model}{shape}: what its attention heads do", fontsize=13, x=0.01, ha="left")
    annotator = f"; text without gold annotation tagged by {context.annotator}" if context.annotator else ""
    select, score = context.select_split, context.score_split
    inputs = "; ".join(f"{letter} {input_text(protocol)}" for letter, protocol in _inputs(study, model) if protocol)
    if select != score:
        heads_note = (f"headline heads selected on {select}, scored on {score}: {held_out_label(select, score)}; "
                      f"light bars: selected and scored on {score}, {same_split_label(score)}")
    else:
        heads_note = f"heads selected and scored on {score}, {same_split_label(score)}"
    figure.text(0.01, 0.005, textwrap.fill(
        f"Data: A wiki segments; B-C UD English EWT (gold trees; {heads_note}); D GUM windows (gold coreference; held out: selected on one half of the "
        f"documents, scored on the other){'; ' + inputs if inputs else ''}; E-F each task's dev split{annotator}. "
        "Black diamonds: the papers' values for BERT-base ([C] Clark et al. 2019, selected and scored on the same "
        "data), not this model. Layers and heads are 1-based.", 200), fontsize=7, color="0.3", va="bottom")
    figure.tight_layout(rect=(0, 0.035, 1, 0.96))
    save_figure(figure, png, pdf)
    missing = {k: v for k, v in panels.items() if v}
    log.info("summary page of %s: %s (%s)", model, png,
             "; ".join(f"{k} not in this study: {v}" for k, v in missing.items()) or "every panel drawn")
    return panels
