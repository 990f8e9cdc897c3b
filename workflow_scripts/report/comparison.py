"""The report stage: the study's numbers beside the published ones (rule ``paper_comparison``).

A plain function, with no Snakemake inside (rules/report.smk calls it through
``workflow_scripts.entrypoints.report``), and no analysis inside either: each stage declares the
paper analyses it answers in its own ``workflow_scripts/<stage>/report.py``
(:class:`.items.PaperComparison`), found through :mod:`.registry`.

:func:`paper_comparison` reads the published numbers (``report/paper_values/<stage>.csv``, one row per
number of [C], [K] or [L]: paper, analysis, item, value, unit, note, source; ordered by
:func:`.paper_values.item_order`) and the study's own tables, and writes one row per (model, checkpoint
where relevant, task where relevant, paper item): the paper's value, the study's value in the paper's
unit, what it rests on (best head, counts, 95% interval, the random-init control) and its ``status``.
An item the study cannot compute (a relation it does not score, a task it does not fine-tune, a table
its config does not produce, a model too shallow for the layers the item names) gets an empty
``study_value`` and the ``reason``; no number is made up. An ``analysis`` no stage answers gets a
``not computed`` row naming the known ones, so a new published number never breaks the run.

Headline heads are held out: selected on one split and scored on another (``protocol``); [C]'s own
protocol, select and score on the same data, is the ``same_split_value`` beside it. Items about the
pretrained model are compared for every checkpoint of a table except the random-init control (whose
value goes into ``study_detail``) and the checkpoint-free baselines. See docs/report.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..core.io import write_csv
from ..core.stages import STAGES
from ..core.subjects import base_model
from ..core.table_names import MODELS
from .formatting import finite, missing_row
from .items import PaperItem, StudyContext, StudyTables
from .paper_values import read_paper_items
from .registry import comparisons

log = logging.getLogger(__name__)

COLUMNS = ["paper", "analysis", "item", "paper_value", "unit", "model", "checkpoint", "task", "study_value",
           "difference", "protocol", "same_split_value", "same_split_difference", "same_split_protocol",
           "input_protocol", "study_detail", "status", "reason", "paper_note", "source"]


def compare_with_papers(items: Sequence[PaperItem], tables: StudyTables, context: StudyContext,
                        stages: Sequence[str] = STAGES) -> pd.DataFrame:
    """One row per (model, checkpoint/task where relevant, paper item), answered by the stages' comparisons."""
    known = comparisons(stages)
    rows = []
    # A number measured on one model (its ``model`` column: hub ids) is compared with the study's models from one of
    # those ids, read through their attention weights (a subject MODEL@SIGNAL is another reading of the same model).
    measured = {item: {model for model in context.models
                       if model == base_model(model) and measured_model(item, model, tables)}
                for item in items if item.hub_ids}
    pairs = [(model, item) for model in context.models for item in items
             if not item.hub_ids or model in measured[item]]
    # A number of a model the study does not have: one row that says which model to add.
    pairs += [("", item) for item in items if item.hub_ids and not measured[item]]
    for model, item in pairs:
        if not model:
            first, *others = item.hub_ids
            also = f" (or {', '.join(others)})" if others else ""
            results = [missing_row(f"no model of this study has hub id {first}{also} ({MODELS}.csv, column hub_id); "
                                   f"to compare, add it to the config: models: NAME: {{hub: {first}}}, and NAME to "
                                   "study.models")]
        else:
            comparison = known.get(item.analysis)
            results = (comparison.compare(item, model, tables, context) if comparison else
                       [missing_row(f"no study analysis answers paper analysis {item.analysis!r} "
                                    f"(known: {', '.join(known)})")])
        for result in results:
            differences = {}
            for value, column in (("study_value", "difference"), ("same_split_value", "same_split_difference")):
                study = result.get(value, "")
                differences[column] = (round(float(study) - item.number, 4) if item.number is not None
                                       and not isinstance(study, str) and finite(study) else "")
            row = {"paper": item.paper, "analysis": item.analysis, "item": item.item, "paper_value": item.value,
                   "unit": item.unit, "model": model, **result, **differences, "paper_note": item.note,
                   "source": item.source}
            rows.append({column: row.get(column, "") for column in COLUMNS})
    return pd.DataFrame(rows, columns=COLUMNS)


def measured_model(item: PaperItem, model: str, tables: StudyTables) -> bool:
    """Whether study ``model`` comes from one of the hub ids of ``item``: its model card's ``hub_id`` (its hub
    entry's id, or the id the prefetch downloaded its folder from) is one of them, letter case aside. Model
    cards written before they had a ``hub_id`` give the location of a hub model instead."""
    cards = tables.get(MODELS)
    if cards is None or "name" not in cards.columns:
        return False
    card = cards[cards["name"].astype(str) == base_model(model)]
    if card.empty:
        return False
    if "hub_id" in card.columns:
        hub_id = card["hub_id"].iloc[0]
    elif "source" in card.columns and str(card["source"].iloc[0]) == "hub":
        hub_id = card["location"].iloc[0]
    else:
        return False
    return isinstance(hub_id, str) and hub_id.lower() in {hub.lower() for hub in item.hub_ids}


def paper_comparison(paper_values: str | Path | Iterable[str | Path], tables: Mapping[str, str | Path | None],
                     output: str | Path, *, context: StudyContext, absent: Mapping[str, str] | None = None,
                     stages: Sequence[str] = STAGES) -> pd.DataFrame:
    """Write the comparison of the study with the published numbers (``output``, CSV).

    ``paper_values``: the stages' files of published numbers (``registry.paper_value_files``), or one
    file. ``tables``: table name -> path, None where the study does not produce it (``absent`` says
    why). ``stages``: whose comparisons answer the items (default: every stage of the study).
    """
    items = read_paper_items(paper_values)
    frame = compare_with_papers(items, StudyTables(tables, absent), context, stages)
    write_csv(frame, output)
    counts = frame["status"].value_counts().to_dict() if len(frame) else {}
    log.info("%d paper items x %d models: %d rows (%s)", len(items), len(context.models), len(frame), counts)
    return frame
