"""The fine-tuning effects stage's share of the report: [K] section 4.1 and [L], and summary panel F.

Which study rows stand for a paper number (``report/paper_values/finetune_effects.csv``):

- [K] ``pattern_classifier``: the CNN's macro-F1 (``pattern_classifier.csv``; on human-labelled held-out
  maps when there are any);
- [K] ``pattern_classes``: the share of a class per task at the final fine-tuned checkpoints
  (``pattern_classes.csv``; pretrained for tasks the study does not fine-tune);
- [L] ``lexical``: the top layers per lexical category (``lexical_top_layers.csv``) of the pretrained and
  final checkpoints, and the last-layer change of content and function shares per [L] task
  (``lexical_last_layer.csv``, argmax measure).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.table_names import LEXICAL_LAST_LAYER, LEXICAL_TOP_LAYERS, PATTERN_CLASSES, PATTERN_CLASSIFIER
from ..finetune.tasks import TASK_NAMES
from ..models.report import checkpoint_order, compared_checkpoints, is_final
from ..report.drawing import not_in_study
from ..report.formatting import (
    ci_text,
    finite,
    found_row,
    int_text,
    join_text,
    layers_and_heads,
    missing_row,
    p_text,
    pct,
    task_order,
)
from ..report.items import PaperComparison, PaperItem, StageReport, StudyContext, StudyTables, SummaryPanel

DEV_NOTE = "each task's dev split"


def compare_pattern_classifier(item: PaperItem, model: str, tables: StudyTables,
                               ctx: StudyContext) -> list[dict[str, Any]]:
    """[K] section 4.1: the CNN's held-out macro-F1 (on human-labelled maps where there are any)."""
    rows, why = tables.model_rows(PATTERN_CLASSIFIER, model)
    if rows is None:
        return [missing_row(why)]
    cnn = rows[rows["classifier"].astype(str) == "cnn"]
    human = cnn[cnn["evaluated_on"].astype(str) == "heldout_human"]
    chosen = human if not human.empty else cnn[cnn["evaluated_on"].astype(str) == "heldout"]
    if chosen.empty or not finite(chosen.iloc[0].get("macro_f1")):
        return [missing_row(f"{PATTERN_CLASSIFIER}.csv has no held-out score of the CNN")]
    row = chosen.iloc[0].to_dict()
    source = str(row.get("label_source", ""))
    caveat = ("labels from the rule labeller only: the F1 says how well the CNN imitates the rules, not human "
              "judgement" if source == "rule" else "")
    examples = (f" of {int_text(row['n_heldout_examples'])} held-out examples (no example's maps on both sides)"
                if finite(row.get("n_heldout_examples")) else "")
    detail = join_text(f"macro-F1 of the CNN on {int_text(row['n'])} held-out maps{examples} "
                       f"({row['evaluated_on']}, labels: {source})",
                       f"accuracy {pct(row.get('accuracy'))}%" if finite(row.get("accuracy")) else "", caveat)
    return [found_row(item, round(float(row["macro_f1"]), 4), detail, fraction=False)]


def tasks_in_note(note: str) -> dict[str, float]:
    """Per-task values a note names, e.g. 'from MRPC (32) to QQP (61)' -> {'mrpc': 32, 'qqp': 61}."""
    found = {}
    for name, value in re.findall(r"([A-Za-z][A-Za-z0-9-]*)\s*\(\s*(-?[\d.]+)\s*\)", note):
        task = name.replace("-", "").lower()
        if task in TASK_NAMES:
            found[task] = float(value)
    return found


def _task_reason(task: str, ctx: StudyContext, *, finetuned: bool, table: str) -> str:
    if ctx.tasks and task not in ctx.tasks:
        return f"task {task} is not in study.tasks ({', '.join(ctx.tasks)})"
    if ctx.analysed_tasks and task not in ctx.analysed_tasks:
        return f"the study analyses no dev inputs of task {task} (finetune_effects.tasks, no dev split)"
    if finetuned and task not in ctx.finetuned_tasks:
        return f"the study fine-tunes no model on task {task} (no train split)"
    return f"{table}.csv has no " + ("final fine-tuned checkpoint" if finetuned else "rows") + f" of task {task}"


def compare_pattern_classes(item: PaperItem, model: str, tables: StudyTables,
                            ctx: StudyContext) -> list[dict[str, Any]]:
    """[K] section 4.1: the share of a class per task at the final fine-tuned checkpoints."""
    rows, why = tables.model_rows(PATTERN_CLASSES, model)
    if rows is None:
        return [missing_row(why)]
    wanted = item.item.split(" ", 1)[0].lower()
    classes = {str(c).lower(): str(c) for c in rows["class"].unique()}
    if wanted not in classes:
        return [missing_row(f"no class {item.item.split(' ', 1)[0]!r} in {PATTERN_CLASSES}.csv "
                            f"({', '.join(classes.values())})")]
    rows = rows[rows["class"].astype(str) == classes[wanted]]
    paper_tasks = tasks_in_note(item.note)
    out, seen = [], set()
    for task in task_order(rows["task"], TASK_NAMES):
        part = rows[rows["task"].astype(str) == task]
        final = [c for c in compared_checkpoints(part) if is_final(c)]
        pretrained_only = task not in ctx.finetuned_tasks
        paper = f"paper's {TASK_NAMES.get(task, task)}: {paper_tasks[task]:g}" if task in paper_tasks else ""
        if not final and not pretrained_only:
            out.append(missing_row(f"{PATTERN_CLASSES}.csv has no final fine-tuned checkpoint of task {task}",
                                   task=task, detail=paper))
            seen.add(task)
            continue
        for checkpoint in final or ["pretrained"]:
            found = part[part["checkpoint"].astype(str) == checkpoint]
            if found.empty:
                continue
            row = found.iloc[0].to_dict()
            detail = join_text(f"{row['class']} maps of {TASK_NAMES.get(task, task)} dev "
                               f"({row.get('classifier', '')} classifier)",
                               f"{int_text(row.get('n_maps'))} of {int_text(row.get('n'))} maps, "
                               f"{int_text(row.get('n_examples'))} examples", ci_text(row),
                               "pretrained only: the study fine-tunes no model on this task" if pretrained_only
                               else "", paper)
            out.append(found_row(item, row["share"], detail, checkpoint=checkpoint, task=task))
            seen.add(task)
    for task in paper_tasks:
        if task not in seen:
            out.append(missing_row(_task_reason(task, ctx, finetuned=False, table=PATTERN_CLASSES), task=task,
                                   detail=f"paper's {TASK_NAMES.get(task, task)}: {paper_tasks[task]:g}"))
    return out or [missing_row(f"{PATTERN_CLASSES}.csv has no rows for this class")]


# --- [L] lexical categories ----------------------------------------------------------------------------


def _l_tasks(ctx: StudyContext) -> list[str]:
    return [t for tasks in ctx.predictions.values() for t in tasks]


def compare_lexical(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[L]: the layers preferring content/function words, or the direction fine-tuning moves them."""
    text = item.item.lower()
    if "layers preferring" in text:
        return _lexical_layers(item, model, tables, ctx, "content" if "content" in text else "function")
    if "direction" in text:
        return _lexical_direction(item, model, tables, ctx)
    return [missing_row(f"item {item.item!r} is not a lexical measure the report knows "
                        "('layers preferring content/function words', 'fine-tuning direction')")]


def _lexical_layers(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext,
                    category: str) -> list[dict[str, Any]]:
    rows, why = tables.model_rows(LEXICAL_TOP_LAYERS, model)
    if rows is None:
        return [missing_row(why)]
    rows = rows[rows["category"].astype(str) == category]
    layers, _ = layers_and_heads(tables, model)
    depth = f"the model has {layers} layers (paper: 12)" if layers and layers != 12 else ""
    out = []
    for (task, checkpoint), part in rows.groupby([rows["task"].astype(str), rows["checkpoint"].astype(str)]):
        if checkpoint != "pretrained" and not is_final(checkpoint):
            continue
        part = part.sort_values("rank")
        chosen = sorted(int(v) + 1 for v in part["layer"])
        shares = ", ".join(f"{int(r.layer) + 1} ({pct(r.argmax_share)}%)" for r in part.itertuples())
        detail = join_text(f"top {len(part)} layers (1-based) by share of {category} words among the "
                           f"most-attended words, {TASK_NAMES.get(task, task)} dev: {shares}", depth)
        out.append(found_row(item, ", ".join(map(str, chosen)), detail, checkpoint=checkpoint, task=task))
    tasks = task_order([r["task"] for r in out], TASK_NAMES)
    out.sort(key=lambda r: (tasks.index(r["task"]), checkpoint_order(r["checkpoint"])))
    return out or [missing_row(f"{LEXICAL_TOP_LAYERS}.csv has no {category} rows")]


def _lexical_p(row: Mapping[str, Any]) -> str:
    """The p of a lexical_last_layer row as its ``p_text`` says, or formatted from ``p`` and its resamples."""
    text = row.get("p_text")
    if isinstance(text, str) and text.strip():
        return f"p {text.strip()}" if text.strip().startswith("<") else f"p={text.strip()}"
    return p_text(row.get("p"), row.get("bootstrap_resamples"))


def _lexical_direction(item: PaperItem, model: str, tables: StudyTables,
                       ctx: StudyContext) -> list[dict[str, Any]]:
    tasks = _l_tasks(ctx)
    if not tasks:
        return [missing_row("finetune_effects.predictions names no task groups")]
    groups = {t: g for g, ts in ctx.predictions.items() for t in ts}
    rows, why = tables.model_rows(LEXICAL_LAST_LAYER, model)
    out = []
    for task in tasks:
        part = None
        if rows is not None:
            part = rows[(rows["task"].astype(str) == task) & (rows["measure"].astype(str) == "argmax")]
        finals = [c for c in compared_checkpoints(part) if is_final(c)] if part is not None and len(part) else []
        if not finals:
            reason = why if rows is None else _task_reason(task, ctx, finetuned=True, table=LEXICAL_LAST_LAYER)
            out.append(missing_row(reason, task=task))
            continue
        for checkpoint in finals:
            found = part[part["checkpoint"].astype(str) == checkpoint].set_index("category")
            moves, verdicts = [], []
            for category in ("content", "function"):
                if category not in found.index:
                    continue
                r = found.loc[category]
                moves.append(f"{category} {100 * float(r['difference']):+.1f} pts")
                moved = str(r.get("moved_as_predicted", "")).lower()
                significant = str(r.get("significant", "")).lower()
                verdicts.append(f"{category} {'as predicted' if moved == 'true' else 'against the prediction'}"
                                f" ({'significant' if significant == 'true' else 'not significant'}, "
                                f"{_lexical_p(r)})" if finite(r.get("p")) else category)
            if not moves:
                out.append(missing_row(f"{LEXICAL_LAST_LAYER}.csv has no content/function rows",
                                       checkpoint=checkpoint, task=task))
                continue
            first = found.iloc[0]
            detail = join_text(f"last layer ({int(first['layer']) + 1}), share of most-attended words, fine-tuned "
                               f"minus pretrained on {int_text(first.get('n'))} words of "
                               f"{int_text(first.get('n_examples'))} {TASK_NAMES.get(task, task)} dev examples",
                               f"[L] group: {groups.get(task, 'none')}", ", ".join(verdicts))
            out.append(found_row(item, ", ".join(moves), detail, checkpoint=checkpoint, task=task))
    return out


def draw_lexical(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                 ctx: StudyContext) -> str | None:
    """Panel F: the last layer's change of the content and function shares per task, 95% intervals."""
    title = "F  Last layer: change of most-attended word category"
    rows, why = tables.model_rows(LEXICAL_LAST_LAYER, model)
    if rows is None:
        return not_in_study(ax, title, why)
    rows = rows[(rows["measure"].astype(str) == "argmax") & rows["checkpoint"].astype(str).map(is_final)]
    if rows.empty:
        return not_in_study(ax, title, f"{LEXICAL_LAST_LAYER}.csv has no final fine-tuned checkpoint for this model")
    first_seed = pd.to_numeric(rows["seed"], errors="coerce")
    rows = rows[first_seed == first_seed.groupby(rows["task"]).transform("min")]
    tasks = task_order(rows["task"], TASK_NAMES)
    groups = {t: g for g, ts in ctx.predictions.items() for t in ts}
    x = np.arange(len(tasks))
    for k, (category, colour) in enumerate((("content", "tab:orange"), ("function", "tab:cyan"))):
        values, low, high = [], [], []
        for task in tasks:
            found = rows[(rows["task"].astype(str) == task) & (rows["category"].astype(str) == category)]
            r = found.iloc[0] if not found.empty else None
            values.append(100 * float(r["difference"]) if r is not None and finite(r["difference"]) else np.nan)
            low.append(100 * float(r["ci_low"]) if r is not None and finite(r["ci_low"]) else np.nan)
            high.append(100 * float(r["ci_high"]) if r is not None and finite(r["ci_high"]) else np.nan)
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


REPORT = StageReport(
    tables=(PATTERN_CLASSES, PATTERN_CLASSIFIER, LEXICAL_TOP_LAYERS, LEXICAL_LAST_LAYER),
    comparisons=(PaperComparison("pattern_classifier", compare_pattern_classifier),
                 PaperComparison("pattern_classes", compare_pattern_classes),
                 PaperComparison("lexical", compare_lexical)),
    panels=(SummaryPanel("F", draw_lexical, DEV_NOTE),),
    paper_values="finetune_effects.csv",
)
