"""The syntax stage's share of the report: [C] Tables 1-3 beside its tables, and panels B, C and D.

Which study rows stand for a paper number (``report/paper_values/syntax.csv``; METHODS 7-9). The dependency and
probe tables hold every treebank of ``syntax.treebanks``; only the rows of ``StudyContext.syntax_treebank``
(the first labelled one, EWT by default) are compared and drawn:

- [C] Table 1 (``dependency_best``): ``dependency_best.csv``, heads selected on ``syntax.select_split`` and
  scored on ``syntax.score_split`` ("held out (train→dev)"), with the heads selected and scored on
  ``syntax.score_split`` beside them ("same split (dev→dev, as [C])"); direction ``either`` (the better
  direction, as [C] reported; ``all`` is dependent -> head only). Items name UD relations, or [C]'s
  Stanford labels that ``dependency.PAPER_LABELS`` maps to UD (pobj -> case, prep -> obl, both with the
  direction reversed).
- [C] Table 2 (``coreference``): ``coref_best.csv``, the head selected on one half of the documents of the
  coreference treebank's windows (gumwin by default) and scored on the other, both ways, pooled ("held out
  (GUM halves a→b, b→a)"); the head selected and scored on all windows beside it ("same split (all→all, as
  [C])"). The baselines select nothing.
- [C] Table 3 (``probes``): ``probes.csv``; ``random-init ...`` items read the random checkpoint,
  right-branching and distances+GloVe the checkpoint-free baselines (checkpoint ``none``).

Rows carry the tables' ``input_protocol`` (``words``: gold words joined by spaces, as [C]; ``text``: the
sentence text) where the table has one. The panels are in :mod:`.report_panels`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..core.table_names import COREF_BEST, DEPENDENCY_BEST, PROBES
from ..models.report import compared_checkpoints
from ..report.formatting import (
    CONTROL,
    NO_CHECKPOINT,
    ci_text,
    finite,
    found_row,
    input_protocol,
    input_text,
    int_text,
    join_text,
    missing_row,
    p_text,
    pct,
)
from ..report.items import PaperComparison, PaperItem, StageReport, StudyContext, StudyTables, SummaryPanel
from .dependency import PAPER_LABELS
from .report_items import (
    COREF_HELD_OUT,
    COREF_SAME_SPLIT,
    COREFERENCE_NOTE,
    GLOVE_PROBES,
    MENTION_TYPES,
    PROBE_NAMES,
    coref_key,
    dependency_rows,
    held_out_label,
    pooled,
    probe_key,
    relation_of,
    same_split_label,
    syntax_rows,
    treebank_note,
)
from .report_panels import draw_coreference, draw_dependency, draw_probes


def _first(rows: pd.DataFrame, checkpoint: str) -> dict[str, Any] | None:
    found = rows[rows["checkpoint"].astype(str) == checkpoint]
    return found.iloc[0].to_dict() if not found.empty else None


def _scored(row: Mapping[str, Any] | None, count: str = "n") -> bool:
    """A best-head row with an accuracy over at least one scored unit."""
    return row is not None and finite(row.get("accuracy")) and finite(row.get(count)) and float(row[count]) > 0


def _versus(text: str, p: Any, resamples: int, other: str) -> str:
    """``text``, then ', head vs <other> p=...' where there is a p-value."""
    test = p_text(p, resamples)
    return f"{text}, head vs {other} {test}" if test else text


def _control(row: Mapping[str, Any], resamples: int) -> str:
    if not finite(row.get("control_accuracy")):
        return ""
    return _versus(f"random-init control {pct(row['control_accuracy'])} (head {row.get('control_head_label')})",
                   row.get("p_vs_control"), resamples, "control")


def compare_dependency(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] Table 1: the head selected on select_split and scored on score_split; [C]'s same-split one beside it."""
    relation, reversed_ = relation_of(item.item)
    if relation is None:
        return [missing_row(f"no UD relation of the study stands for {item.item!r} (dependency.PAPER_LABELS)")]
    label = f"UD {relation}" + (f" ({PAPER_LABELS[relation]})" if reversed_ else "")
    if ctx.relations and relation not in ctx.relations:
        return [missing_row(f"{label} is not in syntax.relations ({', '.join(ctx.relations)})")]
    rows, why = syntax_rows(tables, DEPENDENCY_BEST, model, ctx)
    if rows is None:
        return [missing_row(why)]
    select, score, treebank = ctx.select_split, ctx.score_split, ctx.treebank_name()
    held_out = dependency_rows(rows, relation, select, score)
    same = dependency_rows(rows, relation, score, score)
    protocol = held_out_label(select, score) if select != score else same_split_label(score)
    if held_out.empty and same.empty:
        return [missing_row(f"{DEPENDENCY_BEST}.csv has no row for {label} scored on {score}",
                            input_protocol=input_protocol(rows))]
    out = []
    for checkpoint in compared_checkpoints(pd.concat([held_out, same]), ctx.role_checkpoints):
        row, paper_row = _first(held_out, checkpoint), _first(same, checkpoint)
        inputs = input_protocol(row or paper_row)
        same_value = paper_row["accuracy"] if _scored(paper_row) else None
        same_text = (f"{same_split_label(score)}: {pct(same_value)}, head {paper_row['head_label']}"
                     if select != score and same_value is not None else "")
        if row is None:
            out.append(missing_row(f"{DEPENDENCY_BEST}.csv has no row for {label} selected on {select} and scored "
                                   f"on {score}", checkpoint=checkpoint, detail=same_text, input_protocol=inputs))
            continue
        if not _scored(row):
            out.append(missing_row(f"no arc of {label} in {treebank} {score}", checkpoint=checkpoint,
                                   input_protocol=inputs))
            continue
        offset = row.get("baseline_offset")
        baseline = (_versus(f"offset baseline {pct(row.get('baseline_accuracy'))} (offset {int(float(offset)):+d})",
                            row.get("p_vs_baseline"), ctx.resamples, "baseline") if finite(offset) else "")
        detail = join_text(f"{label}, best head {row['head_label']} ({row.get('head_direction', '')}) selected on "
                           f"{treebank} {select}, scored on {treebank} {score}", f"n={int_text(row['n'])} arcs",
                           ci_text(row), baseline, same_text, _control(row, ctx.resamples), input_text(inputs))
        out.append(found_row(item, row["accuracy"], detail, checkpoint=checkpoint, protocol=protocol,
                             same_split=same_value, same_split_protocol=same_split_label(score),
                             input_protocol=inputs))
    return out or [missing_row(f"{DEPENDENCY_BEST}.csv has only the random-init control for this model")]


def compare_coreference(item: PaperItem, model: str, tables: StudyTables,
                        ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] Table 2: the head selected on one half of the coreference treebank's documents (gumwin windows by
    default) and scored on the other (both ways, pooled); [C]'s protocol (select and score on all windows) beside
    it."""
    method, mention = coref_key(item.item)
    if method is None:
        return [missing_row(f"item {item.item!r} names no coreference method (head, nearest mention, head word "
                            f"match) and mention type ({', '.join(MENTION_TYPES)})")]
    rows, why = tables.model_rows(COREF_BEST, model)
    if rows is None:
        return [missing_row(why)]
    chosen = rows[(rows["method"].astype(str) == method) & (rows["mention_type"].astype(str) == mention)]
    same = chosen[(chosen["select_documents"].astype(str) == "all") & (chosen["score_documents"].astype(str) == "all")]
    inputs = input_protocol(chosen)
    if same.empty:
        return [missing_row(f"{COREF_BEST}.csv has no {method} row for {mention} mentions", input_protocol=inputs)]
    if method != "head":  # baselines select nothing and do not depend on the checkpoint
        row = same.iloc[0].to_dict()
        if not finite(row.get("accuracy")):
            return [missing_row(f"no {mention} mention with an antecedent in the GUM windows",
                                checkpoint=NO_CHECKPOINT, input_protocol=inputs)]
        detail = join_text(f"{method.replace('_', ' ')} on GUM windows", f"n={int_text(row['n'])} mentions",
                           ci_text(row))
        return [found_row(item, row["accuracy"], detail, checkpoint=NO_CHECKPOINT, input_protocol=inputs)]
    out = []
    for checkpoint in compared_checkpoints(same, ctx.role_checkpoints):
        row = _first(same, checkpoint)
        same_value = row["accuracy"] if finite(row.get("accuracy")) else None
        same_text = (", ".join(t for t in (f"{COREF_SAME_SPLIT}: {pct(same_value)}", f"head {row['head_label']}",
                                           ci_text(row)) if t) if same_value is not None else "")
        halves = chosen[(chosen["checkpoint"].astype(str) == checkpoint)
                        & (chosen["select_documents"].astype(str) != "all")
                        & (chosen["select_documents"].astype(str) != chosen["score_documents"].astype(str))]
        accuracy = pooled(halves, "accuracy")
        if accuracy is None:
            out.append(missing_row(f"{COREF_BEST}.csv has no held-out {mention} rows (a head selected on one half of "
                                   "the GUM documents and scored on the other) with mentions in both halves",
                                   checkpoint=checkpoint, detail=same_text, input_protocol=inputs))
            continue
        heads = ", ".join(f"{h['select_documents']}→{h['score_documents']}: head {h['head_label']} "
                          f"{pct(h['accuracy'])} (n={int_text(h['n'])})" for _, h in halves.iterrows())
        control = pooled(halves, "control_accuracy") if "control_accuracy" in halves.columns else None
        detail = join_text(f"best head selected on one half of the GUM documents, scored on the other, pooled "
                           f"({heads})", f"n={int_text(halves['n'].astype(float).sum())} mentions", same_text,
                           f"random-init control {pct(control)} (held out the same way)" if control is not None
                           else "", input_text(inputs))
        out.append(found_row(item, accuracy, detail, checkpoint=checkpoint, protocol=COREF_HELD_OUT,
                             same_split=same_value, same_split_protocol=COREF_SAME_SPLIT, input_protocol=inputs))
    return out or [missing_row(f"{COREF_BEST}.csv has only the random-init control for this model",
                               input_protocol=inputs)]


def compare_probes(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] Table 3: a probe's UAS per compared checkpoint, the random-init one, or a checkpoint-free baseline."""
    checkpoint, probe = probe_key(item.item)
    if probe is None:
        return [missing_row(f"no probe of the study stands for {item.item!r} ({', '.join(PROBE_NAMES)})")]
    if probe in GLOVE_PROBES and not ctx.glove:
        return [missing_row("the study builds no GloVe vectors (study.glove: false)", checkpoint=checkpoint or "")]
    rows, why = syntax_rows(tables, PROBES, model, ctx)
    if rows is None:
        return [missing_row(why, checkpoint=checkpoint or "")]
    treebank = ctx.treebank_name()
    rows = rows[rows["probe"].astype(str) == probe]
    trained = probe != "right_branching"  # trained on select_split, scored on score_split: held out
    if checkpoint is None:
        names = compared_checkpoints(rows, ctx.role_checkpoints) if not rows.empty else []
    else:
        names = [checkpoint]
    if not names or rows.empty:
        return [missing_row(f"{PROBES}.csv has no {probe} probe for model {model}", checkpoint=checkpoint or "")]
    out = []
    for name in names:
        found = rows[rows["checkpoint"].astype(str) == name]
        if found.empty:
            why = ("the study dumps no random-init checkpoint (attention.checkpoints)" if name == CONTROL
                   else f"{PROBES}.csv has no {probe} probe for checkpoint {name}")
            out.append(missing_row(why, checkpoint=name))
            continue
        row = found.iloc[0].to_dict()
        training = (f"trained on {int_text(row.get('train_sentences'))} {treebank} {ctx.select_split} sentences, "
                    f"{int_text(row.get('epochs'))} epochs" if finite(row.get("epochs")) else "")
        control = f"random-init control {pct(row.get('control_uas'))}" if finite(row.get("control_uas")) else ""
        inputs = input_protocol(row)
        detail = join_text(f"{probe} {row.get('metric', 'uas')} on {treebank} {ctx.score_split}",
                           f"n={int_text(row['n'])} words of {int_text(row.get('sentences'))} sentences",
                           ci_text(row), training,
                           _versus(control, row.get("p_vs_control"), ctx.resamples, "control") if control else "",
                           input_text(inputs))
        out.append(found_row(item, row["uas"], detail, checkpoint=name, input_protocol=inputs,
                             protocol=held_out_label(ctx.select_split, ctx.score_split) if trained else ""))
    return out


REPORT = StageReport(
    tables=(DEPENDENCY_BEST, COREF_BEST, PROBES),
    comparisons=(PaperComparison("dependency_best", compare_dependency),
                 PaperComparison("coreference", compare_coreference),
                 PaperComparison("probes", compare_probes)),
    panels=(SummaryPanel("B", draw_dependency, treebank_note, protocol_table=DEPENDENCY_BEST),
            SummaryPanel("C", draw_probes, treebank_note, protocol_table=PROBES),
            SummaryPanel("D", draw_coreference, COREFERENCE_NOTE, protocol_table=COREF_BEST)),
    paper_values="syntax.csv",
)
