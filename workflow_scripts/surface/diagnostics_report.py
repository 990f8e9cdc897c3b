"""The head diagnostics beside the published numbers: Gu et al. 2025's sink rates, Wang et al. 2023's heads.

Paper items (``report/paper_values/surface.csv``), each with the hub ids of the model the paper measured (its
``model`` column), so that only that model of the study answers it:

- analysis ``sink rate`` ([G] Table 1): "<model> sink rate, natural text" (or "random tokens", "repeated token"),
  a percentage, answered by ``sink_rates.csv``'s whole-model row (layer ``all``) of the same input
  (``natural``, ``random``, ``one_token``): ``sink_rate``, computed as their released code does;
- analysis ``head roles`` ([W] section 3): "previous-token heads" (or "induction heads", "duplicate-token
  heads"), the heads the paper names as 0-based ``layer.head`` ("2.2, 4.11"), answered by
  ``head_diagnostics.csv``: the study's own top heads by the matching score (``previous_token`` on natural
  text, ``induction`` and ``duplicate`` on repeated random tokens), as many as the paper names, in the
  paper's notation, and the paper's heads' scores and ranks in the detail.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ..core.table_names import HEAD_DIAGNOSTICS, SINK_RATES
from ..models.report import compared_checkpoints
from ..report.formatting import CONTROL, found_row, join_text, missing_row
from ..report.items import PaperItem, StudyContext, StudyTables

# Gu et al.'s inputs -> the diagnostics' input kinds (docs/surface.md, Head diagnostics).
SINK_INPUTS = {"natural": "natural", "random": "random", "repeated": "one_token"}
SINK_ITEM = re.compile(r"sink\s+rate.*\b(?P<input>natural|random|repeated)\b", re.IGNORECASE)
# A head role -> (score column, input kind it is measured on).
ROLES = {"previous-token": ("previous_token", "natural"), "induction": ("induction", "random_repeated"),
         "duplicate-token": ("duplicate", "random_repeated")}
ROLE_ITEM = re.compile(r"(?P<role>previous-token|induction|duplicate-token)\s+heads?", re.IGNORECASE)
PAPER_HEAD = re.compile(r"(\d+)\.(\d+)")


def _control_text(rows: pd.DataFrame, measure: Any) -> str:
    control = rows[rows["checkpoint"].astype(str) == CONTROL]
    return f"random-init control: {measure(control)}" if not control.empty else ""


def _sequence_text(tables: StudyTables, model: str, kind: str) -> str:
    """'N sequences of T tokens' of an input kind, from head_diagnostics.csv (T: special tokens included)."""
    rows, _ = tables.model_rows(HEAD_DIAGNOSTICS, model)
    if rows is None or "tokens_per_sequence" not in rows.columns:
        return ""
    rows = rows[rows["input"].astype(str) == kind]
    return (f"{int(rows['n_sequences'].iloc[0])} sequences of {int(rows['tokens_per_sequence'].iloc[0])} tokens"
            if not rows.empty else "")


def compare_sink_rate(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[G] Table 1: the percentage of (sequence, layer, head) triples whose first-token attention exceeds 0.3."""
    match = SINK_ITEM.search(item.item)
    if match is None:
        return [missing_row(f"item {item.item!r} names no input the report knows "
                            "('... sink rate, natural text', '... random tokens', '... repeated token')")]
    kind = SINK_INPUTS[match["input"].lower()]
    rows, why = tables.model_rows(SINK_RATES, model)
    if rows is None:
        return [missing_row(why)]
    rows = rows[(rows["input"].astype(str) == kind) & (rows["layer"].astype(str) == "all")]
    if rows.empty:
        return [missing_row(f"{SINK_RATES}.csv has no {kind} input for model {model}"
                            + (": its texts are all shorter than 2 x surface.diagnostics.length tokens"
                               if kind == "natural" else ""))]

    def rate(part: pd.DataFrame) -> str:
        return f"{float(part['sink_rate'].iloc[0]):.2f}%"

    out = []
    for checkpoint in compared_checkpoints(rows, ctx.role_checkpoints):
        row = rows[rows["checkpoint"].astype(str) == checkpoint].iloc[0]
        detail = join_text(f"input {kind}: " + (_sequence_text(tables, model, kind)
                                                or f"{int(row['n_sequences'])} sequences")
                           + f", {int(row['heads'])} heads, threshold {float(row['threshold']):g}",
                           f"heads whose mean alpha_1 exceeds it: {float(row['sink_rate_mean_alpha']):.2f}%",
                           _control_text(rows, rate))
        out.append(found_row(item, round(float(row["sink_rate"]), 2), detail, checkpoint=checkpoint,
                             fraction=False))
    return out or [missing_row(f"{SINK_RATES}.csv has only the random-init control for this model")]


def paper_heads(item: PaperItem) -> list[tuple[int, int]]:
    """The heads an item names, 0-based (layer, head), from its value ("2.2, 4.11")."""
    return [(int(layer), int(head)) for layer, head in PAPER_HEAD.findall(item.value)]


def compare_head_roles(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[W]'s named heads of a role beside the study's top heads of the score that defines it."""
    match = ROLE_ITEM.search(item.item)
    heads = paper_heads(item)
    if match is None or not heads:
        return [missing_row(f"item {item.item!r} = {item.value!r} is not a head role the report knows "
                            f"({', '.join(f'{r} heads' for r in ROLES)}, value 'LAYER.HEAD, ...', 0-based)")]
    column, kind = ROLES[match["role"].lower()]
    rows, why = tables.model_rows(HEAD_DIAGNOSTICS, model)
    if rows is None:
        return [missing_row(why)]
    rows = rows[rows["input"].astype(str) == kind]
    if rows.empty:
        return [missing_row(f"{HEAD_DIAGNOSTICS}.csv has no rows of input {kind!r} for model {model}")]

    def ranked(part: pd.DataFrame) -> pd.DataFrame:
        """Heads by score, best first (equal scores by layer, then head); ``rank``: 1 + the heads scoring more."""
        part = part.sort_values([column, "layer", "head"], ascending=[False, True, True]).reset_index(drop=True)
        return part.assign(rank=part[column].rank(method="min", ascending=False).astype(int))

    def best(part: pd.DataFrame) -> str:
        top = ranked(part).iloc[0]
        return f"best head {int(top['layer'])}.{int(top['head'])} (0-based), {float(top[column]):.3f}"

    out = []
    for checkpoint in compared_checkpoints(rows, ctx.role_checkpoints):
        order = ranked(rows[rows["checkpoint"].astype(str) == checkpoint])
        top = order.head(len(heads))
        value = ", ".join(f"{int(r.layer)}.{int(r.head)}" for r in top.itertuples())
        named, found = [], 0
        for layer, head in heads:
            paper_head = order[(order["layer"] == layer) & (order["head"] == head)]
            if paper_head.empty:
                named.append(f"{layer}.{head}: not in this model")
                continue
            rank = int(paper_head["rank"].iloc[0])
            found += rank <= len(heads)
            named.append(f"{layer}.{head}: {float(paper_head[column].iloc[0]):.3f}, rank {rank} of {len(order)}")
        detail = join_text(f"the study's top {len(heads)} heads by {column} on input {kind} (layer.head, 0-based as "
                           "the paper)", "; ".join(named), f"the paper's heads among them: {found} of {len(heads)} "
                           "(a tie counts as the better rank)", _control_text(rows, best))
        out.append(found_row(item, value, detail, checkpoint=checkpoint))
    return out or [missing_row(f"{HEAD_DIAGNOSTICS}.csv has only the random-init control for this model")]
