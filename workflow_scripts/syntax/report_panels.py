"""Summary panels B, C and D: held-out best heads per relation, probes, coreference (declared in .report).

Panels B and C read the rows of one treebank, ``StudyContext.syntax_treebank``; D the coreference windows
(gumwin by default). Each panel shows the numbers the paper comparison headlines: held-out heads, with the same-split
ones beside them, and the input protocol of the treebank dumps; [C]'s values as black diamonds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.labels import CAUSAL_DIRECTIONS, CAUSAL_UNION
from ..core.table_names import COREF_BEST, DEPENDENCY_BEST, PROBES
from ..models.report import main_checkpoint
from ..report.drawing import PAPER_STYLE, not_in_study, reference_items
from ..report.formatting import (
    CONTROL,
    NO_CHECKPOINT,
    finite,
    input_protocol,
    input_text,
    percent_value,
)
from ..report.items import PaperItem, StudyContext, StudyTables
from .dependency import PAPER_LABELS
from .report_items import (
    COREF_HELD_OUT,
    COREF_SAME_SPLIT,
    MENTION_TYPES,
    coref_key,
    dependency_rows,
    held_out_label,
    pooled,
    probe_key,
    relation_of,
    same_split_label,
    syntax_rows,
)


def _two_lines(label: str) -> str:
    """'held out (train→dev)' -> 'held out\n(train→dev)', for a narrow legend."""
    return label.replace(" (", "\n(", 1)


def draw_dependency(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                    ctx: StudyContext) -> str | None:
    """Panel B. Per relation: the head selected on select_split and scored on score_split (held out), the head
    selected and scored on score_split ([C]'s same-split protocol) and the best fixed offset (held out); in [C]'s
    directions, or a decoder's causal union."""
    title = f"B  Best head per dependency relation ({ctx.treebank_name()})"
    rows, why = syntax_rows(tables, DEPENDENCY_BEST, model, ctx)
    checkpoint = main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return not_in_study(ax, title, why or f"no pretrained rows in {DEPENDENCY_BEST}.csv")
    rows = rows[rows["checkpoint"].astype(str) == checkpoint]
    # A decoder's rows have none of [C]'s directions: its bars are the causal union, each arc scored in the one
    # direction its causal mask allows (docs/syntax.md), with that union's own offset baseline.
    causal = bool(rows["direction"].astype(str).isin(CAUSAL_DIRECTIONS).any())
    direction = CAUSAL_UNION if causal else None
    present = list(dict.fromkeys(rows["relation"].astype(str)))
    order = [r for r in (ctx.relations or present) if r in present]
    paper = {}
    for item in reference_items(items, "dependency_best"):
        relation, _ = relation_of(item.item)
        if relation is not None:
            paper[relation] = item.number
    select, score = ctx.select_split, ctx.score_split
    held_out = select != score
    protocols = [(select, score, held_out_label(select, score) if held_out else same_split_label(score), "tab:blue")]
    if held_out:
        protocols.append((score, score, same_split_label(score), "lightsteelblue"))

    def accuracy(row: pd.Series | None, column: str) -> float:
        return 100 * float(row[column]) if row is not None and finite(row[column]) else np.nan

    bars: dict[str, list[float]] = {label: [] for _, _, label, _ in protocols}
    baselines, head_labels, names = [], [], []
    for relation in order:
        for k, (sel, sco, label, _) in enumerate(protocols):
            part = dependency_rows(rows, relation, sel, sco, direction)
            row = part.iloc[0] if not part.empty else None
            bars[label].append(accuracy(row, "accuracy"))
            if k == 0:
                baselines.append(accuracy(row, "baseline_accuracy"))
                head_labels.append(str(row["head_label"]) if row is not None and finite(row["accuracy"]) else "")
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
    ax.set_xlabel(f"accuracy (%) on {ctx.treebank_name()} {score}", fontsize=8)
    inputs = input_text(input_protocol(rows))
    how = "\ndecoder: each arc in the direction its causal mask allows" if causal else ""
    ax.set_title(f"{title}\n({checkpoint}; bars: best heads, labelled layer-head){how}"
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


def draw_probes(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                ctx: StudyContext) -> str | None:
    """Panel C: probe UAS, the baselines, the random-init control and the best head's spanning tree."""
    title = f"C  Attention probes, UAS ({ctx.treebank_name()})"
    rows, why = syntax_rows(tables, PROBES, model, ctx)
    if rows is None:
        return not_in_study(ax, title, why)
    paper = {probe_key(i.item): i.number for i in reference_items(items, "probes")}
    checkpoint = main_checkpoint(rows) or "pretrained"
    bars = [("right-\nbranch.", NO_CHECKPOINT, "right_branching", (NO_CHECKPOINT, "right_branching")),
            ("dist.+\nGloVe", NO_CHECKPOINT, "distance_glove", (NO_CHECKPOINT, "distance_glove")),
            ("random\nattn+\nGloVe", CONTROL, "attn_glove", (CONTROL, "attn_glove")),
            ("attn", checkpoint, "attn", (None, "attn")),
            ("attn+\nGloVe", checkpoint, "attn_glove", (None, "attn_glove")),
            (f"MST,\nbest head\n{ctx.select_split}→\n{ctx.score_split}", checkpoint, "mst_best_head", None)]
    values, references, colours = [], [], []
    for _, name, probe, key in bars:
        found = rows[(rows["checkpoint"].astype(str) == name) & (rows["probe"].astype(str) == probe)]
        values.append(percent_value(found, "uas"))
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


def draw_coreference(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                     ctx: StudyContext) -> str | None:
    """Panel D. Per mention type: the held-out head (halves a→b, b→a, pooled), the same-split one ([C]), the
    baselines."""
    title = "D  Coreference: antecedent accuracy (GUM)"
    rows, why = tables.model_rows(COREF_BEST, model)
    checkpoint = main_checkpoint(rows) if rows is not None else None
    if rows is None or checkpoint is None:
        return not_in_study(ax, title, why or f"no pretrained rows in {COREF_BEST}.csv")
    paper = {coref_key(i.item): i.number for i in reference_items(items, "coreference")}
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
                accuracy = pooled(found, "accuracy")
                values.append(100 * accuracy if accuracy is not None else np.nan)
            else:
                values.append(percent_value(found, "accuracy"))
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
