"""The report stage: the study's numbers beside the published ones, and one summary page per model.

Two plain functions, with no Snakemake inside (rules/report.smk calls them through
``workflow_scripts.entrypoints.report``):

- :func:`paper_comparison` reads ``report/paper_values.csv`` (one row per published number of [C],
  [K] or [L]: paper, analysis, item, value, unit, note, source) and the study's own tables, and writes
  one row per (model, checkpoint where relevant, task where relevant, paper item): the paper's value,
  the study's value in the paper's unit, what it rests on (best head, counts, 95% interval, the
  random-init control) and its ``status``. An item the study cannot compute (a relation it does not
  score, a task it does not fine-tune, a table its config does not produce, a model too shallow for
  the layers the item names) gets an empty ``study_value`` and the ``reason``; no number is made up.
- ``summary_figure.summary_figure`` (its own module) draws one A4 page per model from the same tables: attention to special tokens
  per layer, dependency heads, probes, coreference, fine-tuning scores and the last-layer lexical
  change, each beside the paper's values where there are any. A panel whose table the study does not
  produce says so ("not in this study") instead of disappearing.

Which study rows stand for a paper number (METHODS 7-9). Headline heads are held out: selected on one
split and scored on another (``protocol``); [C]'s own protocol, select and score on the same data, is
the ``same_split_value`` beside it, so that the paper's number has its like-for-like study number:

- [C] Table 1 (dependency heads): ``dependency_best.csv``, heads selected on ``syntax.select_split`` and
  scored on ``syntax.score_split`` ("held out (train→dev)"), with the heads selected and scored on
  ``syntax.score_split`` beside them ("same split (dev→dev, as [C])"); direction ``either`` (the better
  direction, as [C] reported; ``all`` is dependent -> head only). Items name UD relations, or [C]'s
  Stanford labels that ``dependency.PAPER_LABELS`` maps to UD (pobj -> case, prep -> obl, both with the
  direction reversed).
- [C] Table 2 (coreference): ``coref_best.csv``, the head selected on one half of the GUM documents and
  scored on the other, both ways, pooled ("held out (GUM halves a→b, b→a)"); the head selected and
  scored on all windows beside it ("same split (all→all, as [C])"). The baselines select nothing.
- [C] Table 3 (probes): ``probes.csv``; ``random-init ...`` items read the random checkpoint,
  right-branching and distances+GloVe the checkpoint-free baselines (checkpoint ``none``).
- [C] section 3 (surface): counts of heads over a threshold, and the mean attention of the heads of a
  layer range (1-based), from ``surface_heads.csv``.
- [K] section 4.1: the CNN's macro-F1 (``pattern_classifier.csv``; on human-labelled held-out maps when
  there are any) and the share of a class per task at the final fine-tuned checkpoints
  (``pattern_classes.csv``).
- [L]: the top layers per lexical category (``lexical_top_layers.csv``) of the pretrained and final
  checkpoints, and the last-layer change of content and function shares per [L] task
  (``lexical_last_layer.csv``, argmax measure).

Items about the pretrained model are compared for every checkpoint of a table except the random-init
control (whose value goes into ``study_detail``) and the checkpoint-free baselines. Rows that rest on
the syntax and coreference tables carry their ``input_protocol`` (``words``: gold words joined by spaces,
as [C]; ``text``: the sentence text) where the table has one. Bootstrap p-values in the details are
printed by :func:`workflow_scripts.stats.format_p_value` ("p < 0.001" where no resample of 1000 reached 0).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..models.checkpoints import parse_checkpoint_name
from ..core.errors import AtlasError, InputFormatError
from ..core.figures import head_label
from ..core.io import write_csv
from ..core.stats import DEFAULT_RESAMPLES, format_p_value
from ..syntax.dependency import PAPER_LABELS
from ..finetune_effects.figures import TASK_NAMES

log = logging.getLogger(__name__)

PAPERS = {"C": "Clark et al. 2019", "K": "Kovaleva et al. 2019", "L": "Jang et al. 2024"}
PAPER_COLUMNS = ("paper", "analysis", "item", "value", "unit", "note", "source")
# Every study table the report reads; each may be absent from a study (then: None, and a reason).
TABLES = ("models", "surface_heads", "dependency_best", "coref_best", "probes", "finetune_metrics",
          "pattern_classes", "pattern_classifier", "lexical_top_layers", "lexical_last_layer")
COLUMNS = ["paper", "analysis", "item", "paper_value", "unit", "model", "checkpoint", "task", "study_value",
           "difference", "protocol", "same_split_value", "same_split_difference", "same_split_protocol",
           "input_protocol", "study_detail", "status", "reason", "paper_note", "source"]
COMPARED, NOT_COMPUTED = "compared", "not computed"
CONTROL, NO_CHECKPOINT = "random", "none"
EITHER, DEP_TO_HEAD = "either", "dependent_to_head"
MENTION_TYPES = ("all", "pronoun", "proper", "nominal")
COREF_METHODS = {"head word match": "head_word_match", "nearest mention": "nearest_mention", "head": "head"}
PROBE_NAMES = {"right-branching": "right_branching", "distances+glove": "distance_glove", "attn": "attn",
               "attn+glove": "attn_glove"}
GLOVE_PROBES = ("attn_glove", "distance_glove")
BASELINE_PROBES = ("right_branching", "distance_glove")
# input_protocol of the syntax tables: how treebank sentences were fed to the model.
INPUT_PROTOCOLS = {"words": "gold words joined by spaces ([C])", "text": "sentence text"}
COREF_HELD_OUT = "held out (GUM halves a→b, b→a)"
COREF_SAME_SPLIT = "same split (all→all, as [C])"


def held_out_label(select_split: str, score_split: str) -> str:
    """The label of a head selected on one split and scored on another, e.g. 'held out (train→dev)'."""
    return f"held out ({select_split}→{score_split})"


def same_split_label(split: str) -> str:
    """The label of [C]'s protocol, heads selected and scored on the same split: 'same split (dev→dev, as [C])'."""
    return f"same split ({split}→{split}, as [C])"


@dataclass(frozen=True)
class StudyContext:
    """What the study's config selects, so that a missing number can say why it is missing."""

    models: tuple[str, ...]
    relations: tuple[str, ...] = ()            # syntax.relations
    select_split: str = "train"                # syntax.select_split
    score_split: str = "dev"                   # syntax.score_split ([C]'s protocol: select and score on it)
    tasks: tuple[str, ...] = ()                # study.tasks
    finetuned_tasks: tuple[str, ...] = ()      # the tasks the study fine-tunes (a train split)
    analysed_tasks: tuple[str, ...] = ()       # the tasks whose dev inputs finetune_effects analyses
    predictions: Mapping[str, Sequence[str]] = field(default_factory=dict)  # [L]'s task groups
    glove: bool = True                         # study.glove
    annotator: str = ""                        # annotation.annotator (text without gold annotation)
    resamples: int = DEFAULT_RESAMPLES         # syntax.bootstrap_resamples (the p-values of the syntax tables)
    input_protocol: str = "words"              # attention.input_protocol: how treebank sentences were fed

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StudyContext:
        tuples = ("models", "relations", "tasks", "finetuned_tasks", "analysed_tasks")
        known = {k: (tuple(v) if k in tuples else v) for k, v in values.items() if k in cls.__dataclass_fields__}
        if "predictions" in known:
            known["predictions"] = {g: list(t) for g, t in dict(known["predictions"]).items()}
        return cls(**known)


@dataclass(frozen=True)
class PaperItem:
    """One row of report/paper_values.csv."""

    paper: str
    analysis: str
    item: str
    value: str
    unit: str
    note: str
    source: str

    @property
    def number(self) -> float | None:
        return as_number(self.value)

    @property
    def scale(self) -> float:
        """Study tables hold fractions; a unit in % (accuracy %, UAS) prints them as percentages."""
        unit = self.unit.strip().lower()
        return 100.0 if "%" in unit or unit in ("uas", "uuas") else 1.0


def as_number(text: Any) -> float | None:
    """The value as a float, or None for a range, a list or words ("32-61", "1, 10, 11, 12")."""
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_paper_values(path: str | Path) -> list[PaperItem]:
    """The published numbers, checked: every column present, a known paper, an analysis, item and value."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputFormatError(path, None, f"unreadable paper values ({exc})",
                               f"it must be a CSV with columns {', '.join(PAPER_COLUMNS)}") from exc
    missing = [c for c in PAPER_COLUMNS if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"columns {missing} are missing",
                               f"it needs {', '.join(PAPER_COLUMNS)}; see docs/report.md")
    items = []
    for row, values in enumerate(frame[list(PAPER_COLUMNS)].itertuples(index=False), start=2):
        item = PaperItem(*(str(v).strip() for v in values))
        if item.paper not in PAPERS:
            raise InputFormatError(path, row, f"paper {item.paper!r} is not one of {', '.join(PAPERS)}",
                                   "C = Clark et al. 2019, K = Kovaleva et al. 2019, L = Jang et al. 2024")
        for name in ("analysis", "item", "value"):
            if not getattr(item, name):
                raise InputFormatError(path, row, f"the {name} is empty", "every row needs analysis, item and value")
        items.append(item)
    return items


class StudyTables:
    """The study tables by name, read once; a table the study does not produce is None, with its reason."""

    def __init__(self, paths: Mapping[str, str | Path | None], absent: Mapping[str, str] | None = None) -> None:
        self.paths = {name: path for name, path in paths.items() if path}
        self.absent = dict(absent or {})
        self._frames: dict[str, pd.DataFrame] = {}

    def get(self, name: str) -> pd.DataFrame | None:
        if name not in self.paths:
            return None
        if name not in self._frames:
            path = self.paths[name]
            try:
                self._frames[name] = pd.read_csv(path, keep_default_na=False, na_values=[""])
            except pd.errors.EmptyDataError:
                self._frames[name] = pd.DataFrame()
            except (OSError, pd.errors.ParserError) as exc:
                raise AtlasError(f"{path}: unreadable table ({exc}); rerun snakemake to rebuild it") from exc
        return self._frames[name]

    def why_absent(self, name: str) -> str:
        return self.absent.get(name) or f"the study does not produce {name}.csv"

    def model_rows(self, name: str, model: str) -> tuple[pd.DataFrame | None, str]:
        """The rows of ``model`` in table ``name``, or None and the reason there are none."""
        frame = self.get(name)
        if frame is None:
            return None, self.why_absent(name)
        if frame.empty or "model" not in frame.columns:
            return None, f"{name}.csv has no rows"
        rows = frame[frame["model"].astype(str) == model]
        if rows.empty:
            return None, f"{name}.csv has no rows for model {model}"
        return rows, ""


# --- helpers -------------------------------------------------------------------------------------------


def _checkpoint_order(name: str) -> tuple:
    try:
        info = parse_checkpoint_name(name)
    except AtlasError:
        return (3, name, 0, 0)
    if info["kind"] != "finetuned":
        return ({"pretrained": 0, CONTROL: 2}[info["kind"]], "", 0, 0)
    step = info["step"]
    return (1, info["task"], info["seed"], math.inf if step == "final" else step)


def _compared_checkpoints(rows: pd.DataFrame) -> list[str]:
    """Checkpoints compared with a pretrained-model item: all but the random-init control and 'none'."""
    names = {str(c) for c in rows["checkpoint"]} - {CONTROL, NO_CHECKPOINT}
    return sorted(names, key=_checkpoint_order)


def _task_order(tasks: Any) -> list[str]:
    """Tasks in the GLUE order of TASK_NAMES, unknown ones last."""
    known = list(TASK_NAMES)
    return sorted({str(t) for t in tasks}, key=lambda t: (known.index(t) if t in known else len(known), t))


def _value(found: pd.DataFrame, column: str, scale: float = 100.0) -> float:
    """``scale`` x the first row's ``column``, NaN when there is no row or no number."""
    if found.empty or not _finite(found[column].iloc[0]):
        return np.nan
    return scale * float(found[column].iloc[0])


def _is_final(checkpoint: str) -> bool:
    try:
        return parse_checkpoint_name(checkpoint)["step"] == "final"
    except AtlasError:
        return False


def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _pct(value: Any, digits: int = 1) -> str:
    return f"{100 * float(value):.{digits}f}" if _finite(value) else "n/a"


def _ci(row: Mapping[str, Any], low: str = "ci_low", high: str = "ci_high") -> str:
    if _finite(row.get(low)) and _finite(row.get(high)):
        return f"95% CI {_pct(row[low])}-{_pct(row[high])}"
    return ""


def _int(value: Any) -> str:
    return str(int(float(value))) if _finite(value) else "n/a"


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _scaled(item: PaperItem, value: Any, fraction: bool = True) -> Any:
    """``value`` in the paper's unit: a fraction scaled unless ``fraction`` is False; text as it is."""
    if isinstance(value, str) or not fraction:
        return value
    return round(float(value) * item.scale, 2 if item.scale == 100 else 4)


def _found(item: PaperItem, value: Any, detail: str, *, checkpoint: str = "", task: str = "", fraction: bool = True,
           protocol: str = "", same_split: Any = None, same_split_protocol: str = "",
           input_protocol: str = "") -> dict[str, Any]:
    """A compared row: ``value`` (and ``same_split``, [C]'s protocol) are fractions unless ``fraction`` is False."""
    same = _scaled(item, same_split, fraction) if _finite(same_split) else ""
    return {"checkpoint": checkpoint, "task": task, "study_value": _scaled(item, value, fraction),
            "study_detail": detail, "status": COMPARED, "reason": "", "protocol": protocol,
            "same_split_value": same, "same_split_protocol": same_split_protocol if same != "" else "",
            "input_protocol": input_protocol}


def _missing(reason: str, *, checkpoint: str = "", task: str = "", detail: str = "",
             input_protocol: str = "") -> dict[str, Any]:
    return {"checkpoint": checkpoint, "task": task, "study_value": "", "study_detail": detail,
            "status": NOT_COMPUTED, "reason": reason, "input_protocol": input_protocol}


def input_protocol(rows: pd.DataFrame | pd.Series | Mapping[str, Any] | None) -> str:
    """The ``input_protocol`` of table rows ('words', 'text', both joined by ', '), or '' where there is none."""
    if rows is None:
        return ""
    if isinstance(rows, pd.DataFrame):
        values = rows["input_protocol"] if "input_protocol" in rows.columns else []
    else:
        values = [rows.get("input_protocol")]
    found = sorted({str(v).strip() for v in values if isinstance(v, str) and v.strip()})
    return ", ".join(found)


def input_text(protocol: str) -> str:
    """'input: gold words joined by spaces ([C])' for 'words', 'input: sentence text' for 'text'; '' for ''."""
    if not protocol:
        return ""
    return "input: " + " / ".join(INPUT_PROTOCOLS.get(p.strip(), p.strip()) for p in protocol.split(","))


def _p(value: Any, resamples: Any = None) -> str:
    """A bootstrap p-value for a detail: 'p < 0.001' at the floor 1/B, 'p=0.012' otherwise ('' without one)."""
    if not _finite(value):
        return ""
    text = format_p_value(value, int(float(resamples)) if _finite(resamples) else DEFAULT_RESAMPLES)
    return f"p {text}" if text.startswith("<") else f"p={text}"


def _model_shape(tables: StudyTables, model: str) -> tuple[int | None, int | None]:
    """(layers, heads) of ``model`` from models.csv (one row per model card, keyed by ``name``)."""
    frame = tables.get("models")
    if frame is None or "name" not in frame.columns:
        return None, None
    rows = frame[frame["name"].astype(str) == model]
    if rows.empty:
        return None, None
    row = rows.iloc[0]
    layers = int(row["num_layers"]) if _finite(row.get("num_layers")) else None
    heads = int(row["num_heads"]) if _finite(row.get("num_heads")) else None
    return layers, heads


# --- [C] dependency heads ------------------------------------------------------------------------------


def relation_of(item: str) -> tuple[str | None, bool]:
    """The UD relation that stands for a [C] Table 1 item, and whether it is [C]'s label with the
    direction reversed. Items name UD relations (``obj``, ``aux:pass``) or [C]'s Stanford labels
    (``dobj``, ``pobj (...)``), mapped by ``dependency.PAPER_LABELS``."""
    text = item.strip()
    if text in PAPER_LABELS:
        return text, "reversed" in PAPER_LABELS[text]
    first = text.split(" ", 1)[0].lower()
    if first in PAPER_LABELS:
        return first, "reversed" in PAPER_LABELS[first]
    stanford = {label.split(" ", 1)[0].lower(): ud for ud, label in PAPER_LABELS.items()}
    if first in stanford:
        ud = stanford[first]
        return ud, "reversed" in PAPER_LABELS[ud]
    return None, False


def _dependency_rows(rows: pd.DataFrame, relation: str, select_split: str, score_split: str) -> pd.DataFrame:
    direction = DEP_TO_HEAD if relation == "all" else EITHER
    return rows[(rows["relation"].astype(str) == relation) & (rows["direction"].astype(str) == direction)
                & (rows["select_split"].astype(str) == select_split) & (rows["score_split"].astype(str) == score_split)]


def _first(rows: pd.DataFrame, checkpoint: str) -> dict[str, Any] | None:
    found = rows[rows["checkpoint"].astype(str) == checkpoint]
    return found.iloc[0].to_dict() if not found.empty else None


def _scored(row: Mapping[str, Any] | None, count: str = "n") -> bool:
    """A best-head row with an accuracy over at least one scored unit."""
    return row is not None and _finite(row.get("accuracy")) and _finite(row.get(count)) and float(row[count]) > 0


def _versus(text: str, p: Any, resamples: int, other: str) -> str:
    """``text``, then ', head vs <other> p=...' where there is a p-value."""
    test = _p(p, resamples)
    return f"{text}, head vs {other} {test}" if test else text


def _control(row: Mapping[str, Any], resamples: int) -> str:
    if not _finite(row.get("control_accuracy")):
        return ""
    return _versus(f"random-init control {_pct(row['control_accuracy'])} (head {row.get('control_head_label')})",
                   row.get("p_vs_control"), resamples, "control")


def _dependency(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] Table 1: the head selected on select_split and scored on score_split; [C]'s same-split one beside it."""
    relation, reversed_ = relation_of(item.item)
    if relation is None:
        return [_missing(f"no UD relation of the study stands for {item.item!r} (dependency.PAPER_LABELS)")]
    label = f"UD {relation}" + (f" ({PAPER_LABELS[relation]})" if reversed_ else "")
    if ctx.relations and relation not in ctx.relations:
        return [_missing(f"{label} is not in syntax.relations ({', '.join(ctx.relations)})")]
    rows, why = tables.model_rows("dependency_best", model)
    if rows is None:
        return [_missing(why)]
    select, score = ctx.select_split, ctx.score_split
    held_out = _dependency_rows(rows, relation, select, score)
    same = _dependency_rows(rows, relation, score, score)
    protocol = held_out_label(select, score) if select != score else same_split_label(score)
    if held_out.empty and same.empty:
        return [_missing(f"dependency_best.csv has no row for {label} scored on {score}",
                         input_protocol=input_protocol(rows))]
    out = []
    for checkpoint in _compared_checkpoints(pd.concat([held_out, same])):
        row, paper_row = _first(held_out, checkpoint), _first(same, checkpoint)
        inputs = input_protocol(row or paper_row)
        same_value = paper_row["accuracy"] if _scored(paper_row) else None
        same_text = (f"{same_split_label(score)}: {_pct(same_value)}, head {paper_row['head_label']}"
                     if select != score and same_value is not None else "")
        if row is None:
            out.append(_missing(f"dependency_best.csv has no row for {label} selected on {select} and scored on "
                                f"{score}", checkpoint=checkpoint, detail=same_text, input_protocol=inputs))
            continue
        if not _scored(row):
            out.append(_missing(f"no arc of {label} in EWT {score}", checkpoint=checkpoint, input_protocol=inputs))
            continue
        offset = row.get("baseline_offset")
        baseline = (_versus(f"offset baseline {_pct(row.get('baseline_accuracy'))} (offset {int(float(offset)):+d})",
                            row.get("p_vs_baseline"), ctx.resamples, "baseline") if _finite(offset) else "")
        detail = _join(f"{label}, best head {row['head_label']} ({row.get('head_direction', '')}) selected on EWT "
                       f"{select}, scored on EWT {score}", f"n={_int(row['n'])} arcs", _ci(row), baseline,
                       same_text, _control(row, ctx.resamples), input_text(inputs))
        out.append(_found(item, row["accuracy"], detail, checkpoint=checkpoint, protocol=protocol,
                          same_split=same_value, same_split_protocol=same_split_label(score), input_protocol=inputs))
    return out or [_missing("dependency_best.csv has only the random-init control for this model")]


# --- [C] coreference -----------------------------------------------------------------------------------


def coref_key(item: str) -> tuple[str | None, str | None]:
    """(method, mention type) of a [C] Table 2 item: 'head 5-4 all', 'nearest mention all', ..."""
    words = item.strip().lower().split()
    if not words or words[-1] not in MENTION_TYPES:
        return None, None
    text = " ".join(words[:-1])
    for prefix, method in COREF_METHODS.items():
        if text == prefix or text.startswith(prefix + " "):
            return method, words[-1]
    return None, None


def _pooled(halves: pd.DataFrame, column: str) -> float | None:
    """The accuracy (``column``) of two held-out halves pooled over their mentions, None if a half has none."""
    if halves.empty or not all(_finite(v) for v in halves[column]) or not all(_finite(v) for v in halves["n"]):
        return None
    n = halves["n"].astype(float)
    return float((halves[column].astype(float) * n).sum() / n.sum()) if n.sum() > 0 else None


def _coreference(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    """[C] Table 2: the head selected on one half of the GUM documents and scored on the other (both ways, pooled);
    [C]'s protocol (select and score on all windows) beside it."""
    method, mention = coref_key(item.item)
    if method is None:
        return [_missing(f"item {item.item!r} names no coreference method (head, nearest mention, head word match) "
                         f"and mention type ({', '.join(MENTION_TYPES)})")]
    rows, why = tables.model_rows("coref_best", model)
    if rows is None:
        return [_missing(why)]
    chosen = rows[(rows["method"].astype(str) == method) & (rows["mention_type"].astype(str) == mention)]
    same = chosen[(chosen["select_documents"].astype(str) == "all") & (chosen["score_documents"].astype(str) == "all")]
    inputs = input_protocol(chosen)
    if same.empty:
        return [_missing(f"coref_best.csv has no {method} row for {mention} mentions", input_protocol=inputs)]
    if method != "head":  # baselines select nothing and do not depend on the checkpoint
        row = same.iloc[0].to_dict()
        if not _finite(row.get("accuracy")):
            return [_missing(f"no {mention} mention with an antecedent in the GUM windows", checkpoint=NO_CHECKPOINT,
                             input_protocol=inputs)]
        detail = _join(f"{method.replace('_', ' ')} on GUM windows", f"n={_int(row['n'])} mentions", _ci(row))
        return [_found(item, row["accuracy"], detail, checkpoint=NO_CHECKPOINT, input_protocol=inputs)]
    out = []
    for checkpoint in _compared_checkpoints(same):
        row = _first(same, checkpoint)
        same_value = row["accuracy"] if _finite(row.get("accuracy")) else None
        same_text = (", ".join(t for t in (f"{COREF_SAME_SPLIT}: {_pct(same_value)}", f"head {row['head_label']}",
                                           _ci(row)) if t) if same_value is not None else "")
        halves = chosen[(chosen["checkpoint"].astype(str) == checkpoint)
                        & (chosen["select_documents"].astype(str) != "all")
                        & (chosen["select_documents"].astype(str) != chosen["score_documents"].astype(str))]
        accuracy = _pooled(halves, "accuracy")
        if accuracy is None:
            out.append(_missing(f"coref_best.csv has no held-out {mention} rows (a head selected on one half of the "
                                "GUM documents and scored on the other) with mentions in both halves",
                                checkpoint=checkpoint, detail=same_text, input_protocol=inputs))
            continue
        heads = ", ".join(f"{h['select_documents']}→{h['score_documents']}: head {h['head_label']} "
                          f"{_pct(h['accuracy'])} (n={_int(h['n'])})" for _, h in halves.iterrows())
        control = _pooled(halves, "control_accuracy") if "control_accuracy" in halves.columns else None
        detail = _join(f"best head selected on one half of the GUM documents, scored on the other, pooled ({heads})",
                       f"n={_int(halves['n'].astype(float).sum())} mentions", same_text,
                       f"random-init control {_pct(control)} (held out the same way)" if control is not None else "",
                       input_text(inputs))
        out.append(_found(item, accuracy, detail, checkpoint=checkpoint, protocol=COREF_HELD_OUT,
                          same_split=same_value, same_split_protocol=COREF_SAME_SPLIT, input_protocol=inputs))
    return out or [_missing("coref_best.csv has only the random-init control for this model", input_protocol=inputs)]


# --- [C] probes ----------------------------------------------------------------------------------------


def probe_key(item: str) -> tuple[str | None, str | None]:
    """(checkpoint, probe) of a [C] Table 3 item; checkpoint None: every compared checkpoint."""
    text = item.strip().lower()
    checkpoint = None
    if text.startswith("random-init "):
        checkpoint, text = CONTROL, text[len("random-init "):].strip()
    probe = PROBE_NAMES.get(text)
    if probe in BASELINE_PROBES:
        checkpoint = NO_CHECKPOINT
    return checkpoint, probe


def _probes(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    checkpoint, probe = probe_key(item.item)
    if probe is None:
        return [_missing(f"no probe of the study stands for {item.item!r} ({', '.join(PROBE_NAMES)})")]
    if probe in GLOVE_PROBES and not ctx.glove:
        return [_missing("the study builds no GloVe vectors (study.glove: false)", checkpoint=checkpoint or "")]
    rows, why = tables.model_rows("probes", model)
    if rows is None:
        return [_missing(why, checkpoint=checkpoint or "")]
    rows = rows[rows["probe"].astype(str) == probe]
    trained = probe != "right_branching"  # trained on select_split, scored on score_split: held out
    if checkpoint is None:
        names = _compared_checkpoints(rows) if not rows.empty else []
    else:
        names = [checkpoint]
    if not names or rows.empty:
        return [_missing(f"probes.csv has no {probe} probe for model {model}", checkpoint=checkpoint or "")]
    out = []
    for name in names:
        found = rows[rows["checkpoint"].astype(str) == name]
        if found.empty:
            why = ("the study dumps no random-init checkpoint (attention.checkpoints)" if name == CONTROL
                   else f"probes.csv has no {probe} probe for checkpoint {name}")
            out.append(_missing(why, checkpoint=name))
            continue
        row = found.iloc[0].to_dict()
        training = (f"trained on {_int(row.get('train_sentences'))} EWT {ctx.select_split} sentences, "
                    f"{_int(row.get('epochs'))} epochs" if _finite(row.get("epochs")) else "")
        control = f"random-init control {_pct(row.get('control_uas'))}" if _finite(row.get("control_uas")) else ""
        inputs = input_protocol(row)
        detail = _join(f"{probe} {row.get('metric', 'uas')} on EWT {ctx.score_split}",
                       f"n={_int(row['n'])} words of {_int(row.get('sentences'))} sentences", _ci(row), training,
                       _versus(control, row.get("p_vs_control"), ctx.resamples, "control") if control else "",
                       input_text(inputs))
        out.append(_found(item, row["uas"], detail, checkpoint=name, input_protocol=inputs,
                          protocol=held_out_label(ctx.select_split, ctx.score_split) if trained else ""))
    return out


# --- [C] surface ---------------------------------------------------------------------------------------

SURFACE_THRESHOLD = re.compile(r"heads\s*>\s*(?P<pct>[\d.]+)\s*%\s*on\s+(?P<target>previous|next)\s+token",
                               re.IGNORECASE)
SURFACE_LAYERS = re.compile(r"attention\s+on\s+\[?(?P<target>sep|cls)\]?\s+in\s+layers\s+(?P<a>\d+)\s*-\s*(?P<b>\d+)",
                            re.IGNORECASE)


def _surface(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    count = SURFACE_THRESHOLD.search(item.item)
    layers = SURFACE_LAYERS.search(item.item)
    if count is None and layers is None:
        return [_missing(f"item {item.item!r} is not a surface measure the report knows "
                         "('heads >N% on previous/next token', 'attention on [SEP] in layers A-B')")]
    rows, why = tables.model_rows("surface_heads", model)
    if rows is None:
        return [_missing(why)]
    out = []
    checkpoints = _compared_checkpoints(rows)
    control = rows[rows["checkpoint"].astype(str) == CONTROL]

    def measure(part: pd.DataFrame) -> tuple[float | None, str]:
        if count is not None:
            column = {"previous": "prev", "next": "next"}[count["target"].lower()]
            threshold = float(count["pct"]) / 100
            over = part[part[column] > threshold].sort_values(["layer", "head"])
            labels = " ".join(head_label(int(r.layer), int(r.head)) for r in over.itertuples())
            return float(len(over)), f"{len(over)} of {len(part)} heads" + (f": {labels}" if labels else "")
        first, last = int(layers["a"]), int(layers["b"])
        column = layers["target"].lower()
        deepest = int(part["layer"].max()) + 1
        if deepest < last:
            return None, (f"the model has {deepest} layers; the item needs layers {first}-{last} "
                          "(1-based) of a 12-layer BERT")
        chosen = part[(part["layer"] + 1 >= first) & (part["layer"] + 1 <= last)]
        return float(chosen[column].mean()), f"mean over the {len(chosen)} heads of layers {first}-{last} (1-based)"

    for checkpoint in checkpoints:
        value, detail = measure(rows[rows["checkpoint"].astype(str) == checkpoint])
        if value is None:
            out.append(_missing(detail, checkpoint=checkpoint))
            continue
        corpus = rows["corpus"].iloc[0] if "corpus" in rows.columns else "wiki"
        control_text = ""
        if not control.empty:
            control_value, _ = measure(control)
            if control_value is not None:
                control_text = ("random-init control " + (f"{int(control_value)} heads" if count is not None
                                                          else _pct(control_value)))
        detail = _join(detail, f"{_int(rows['n_tokens'].iloc[0])} tokens of {corpus}" if "n_tokens" in rows.columns
                       else "", control_text)
        out.append(_found(item, int(value) if count is not None else value, detail, checkpoint=checkpoint,
                          fraction=count is None))
    return out or [_missing("surface_heads.csv has only the random-init control for this model")]


# --- [K] pattern classes and classifier ----------------------------------------------------------------


def _pattern_classifier(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    rows, why = tables.model_rows("pattern_classifier", model)
    if rows is None:
        return [_missing(why)]
    cnn = rows[rows["classifier"].astype(str) == "cnn"]
    human = cnn[cnn["evaluated_on"].astype(str) == "heldout_human"]
    chosen = human if not human.empty else cnn[cnn["evaluated_on"].astype(str) == "heldout"]
    if chosen.empty or not _finite(chosen.iloc[0].get("macro_f1")):
        return [_missing("pattern_classifier.csv has no held-out score of the CNN")]
    row = chosen.iloc[0].to_dict()
    source = str(row.get("label_source", ""))
    caveat = ("labels from the rule labeller only: the F1 says how well the CNN imitates the rules, not human "
              "judgement" if source == "rule" else "")
    examples = (f" of {_int(row['n_heldout_examples'])} held-out examples (no example's maps on both sides)"
                if _finite(row.get("n_heldout_examples")) else "")
    detail = _join(f"macro-F1 of the CNN on {_int(row['n'])} held-out maps{examples} ({row['evaluated_on']}, "
                   f"labels: {source})",
                   f"accuracy {_pct(row.get('accuracy'))}%" if _finite(row.get("accuracy")) else "", caveat)
    return [_found(item, round(float(row["macro_f1"]), 4), detail, fraction=False)]


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


def _pattern_classes(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    rows, why = tables.model_rows("pattern_classes", model)
    if rows is None:
        return [_missing(why)]
    wanted = item.item.split(" ", 1)[0].lower()
    classes = {str(c).lower(): str(c) for c in rows["class"].unique()}
    if wanted not in classes:
        return [_missing(f"no class {item.item.split(' ', 1)[0]!r} in pattern_classes.csv "
                         f"({', '.join(classes.values())})")]
    rows = rows[rows["class"].astype(str) == classes[wanted]]
    paper_tasks = tasks_in_note(item.note)
    out, seen = [], set()
    for task in _task_order(rows["task"]):
        part = rows[rows["task"].astype(str) == task]
        final = [c for c in _compared_checkpoints(part) if _is_final(c)]
        pretrained_only = task not in ctx.finetuned_tasks
        paper = f"paper's {TASK_NAMES.get(task, task)}: {paper_tasks[task]:g}" if task in paper_tasks else ""
        if not final and not pretrained_only:
            out.append(_missing(f"pattern_classes.csv has no final fine-tuned checkpoint of task {task}", task=task,
                                detail=paper))
            seen.add(task)
            continue
        for checkpoint in final or ["pretrained"]:
            found = part[part["checkpoint"].astype(str) == checkpoint]
            if found.empty:
                continue
            row = found.iloc[0].to_dict()
            detail = _join(f"{row['class']} maps of {TASK_NAMES.get(task, task)} dev ({row.get('classifier', '')} "
                           f"classifier)", f"{_int(row.get('n_maps'))} of {_int(row.get('n'))} maps, "
                           f"{_int(row.get('n_examples'))} examples", _ci(row),
                           "pretrained only: the study fine-tunes no model on this task" if pretrained_only else "",
                           paper)
            out.append(_found(item, row["share"], detail, checkpoint=checkpoint, task=task))
            seen.add(task)
    for task in paper_tasks:
        if task not in seen:
            out.append(_missing(_task_reason(task, ctx, finetuned=False, table="pattern_classes"), task=task,
                                detail=f"paper's {TASK_NAMES.get(task, task)}: {paper_tasks[task]:g}"))
    return out or [_missing("pattern_classes.csv has no rows for this class")]


# --- [L] lexical categories ----------------------------------------------------------------------------


def _l_tasks(ctx: StudyContext) -> list[str]:
    return [t for tasks in ctx.predictions.values() for t in tasks]


def _lexical(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    text = item.item.lower()
    if "layers preferring" in text:
        return _lexical_layers(item, model, tables, ctx, "content" if "content" in text else "function")
    if "direction" in text:
        return _lexical_direction(item, model, tables, ctx)
    return [_missing(f"item {item.item!r} is not a lexical measure the report knows "
                     "('layers preferring content/function words', 'fine-tuning direction')")]


def _lexical_layers(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext,
                    category: str) -> list[dict[str, Any]]:
    rows, why = tables.model_rows("lexical_top_layers", model)
    if rows is None:
        return [_missing(why)]
    rows = rows[rows["category"].astype(str) == category]
    layers, _ = _model_shape(tables, model)
    depth = f"the model has {layers} layers (paper: 12)" if layers and layers != 12 else ""
    out = []
    for (task, checkpoint), part in rows.groupby([rows["task"].astype(str), rows["checkpoint"].astype(str)]):
        if checkpoint != "pretrained" and not _is_final(checkpoint):
            continue
        part = part.sort_values("rank")
        chosen = sorted(int(v) + 1 for v in part["layer"])
        shares = ", ".join(f"{int(r.layer) + 1} ({_pct(r.argmax_share)}%)" for r in part.itertuples())
        detail = _join(f"top {len(part)} layers (1-based) by share of {category} words among the most-attended words, "
                       f"{TASK_NAMES.get(task, task)} dev: {shares}", depth)
        out.append(_found(item, ", ".join(map(str, chosen)), detail, checkpoint=checkpoint, task=task))
    tasks = _task_order(r["task"] for r in out)
    out.sort(key=lambda r: (tasks.index(r["task"]), _checkpoint_order(r["checkpoint"])))
    return out or [_missing(f"lexical_top_layers.csv has no {category} rows")]


def _lexical_p(row: Mapping[str, Any]) -> str:
    """The p of a lexical_last_layer row as its ``p_text`` says, or formatted from ``p`` and its resamples."""
    text = row.get("p_text")
    if isinstance(text, str) and text.strip():
        return f"p {text.strip()}" if text.strip().startswith("<") else f"p={text.strip()}"
    return _p(row.get("p"), row.get("bootstrap_resamples"))


def _lexical_direction(item: PaperItem, model: str, tables: StudyTables, ctx: StudyContext) -> list[dict[str, Any]]:
    tasks = _l_tasks(ctx)
    if not tasks:
        return [_missing("finetune_effects.predictions names no task groups")]
    groups = {t: g for g, ts in ctx.predictions.items() for t in ts}
    rows, why = tables.model_rows("lexical_last_layer", model)
    out = []
    for task in tasks:
        part = None
        if rows is not None:
            part = rows[(rows["task"].astype(str) == task) & (rows["measure"].astype(str) == "argmax")]
        finals = [c for c in _compared_checkpoints(part) if _is_final(c)] if part is not None and len(part) else []
        if not finals:
            reason = why if rows is None else _task_reason(task, ctx, finetuned=True, table="lexical_last_layer")
            out.append(_missing(reason, task=task))
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
                                f"{_lexical_p(r)})" if _finite(r.get("p")) else category)
            if not moves:
                out.append(_missing("lexical_last_layer.csv has no content/function rows", checkpoint=checkpoint,
                                    task=task))
                continue
            first = found.iloc[0]
            detail = _join(f"last layer ({int(first['layer']) + 1}), share of most-attended words, fine-tuned minus "
                           f"pretrained on {_int(first.get('n'))} words of {_int(first.get('n_examples'))} "
                           f"{TASK_NAMES.get(task, task)} dev examples", f"[L] group: {groups.get(task, 'none')}",
                           ", ".join(verdicts))
            out.append(_found(item, ", ".join(moves), detail, checkpoint=checkpoint, task=task))
    return out


HANDLERS: dict[str, Callable[[PaperItem, str, StudyTables, StudyContext], list[dict[str, Any]]]] = {
    "dependency_best": _dependency,
    "coreference": _coreference,
    "probes": _probes,
    "surface": _surface,
    "pattern_classifier": _pattern_classifier,
    "pattern_classes": _pattern_classes,
    "lexical": _lexical,
}


def compare_with_papers(items: Sequence[PaperItem], tables: StudyTables, context: StudyContext) -> pd.DataFrame:
    """One row per (model, checkpoint/task where relevant, paper item); see the module docstring."""
    rows = []
    for model in context.models:
        for item in items:
            handler = HANDLERS.get(item.analysis)
            results = (handler(item, model, tables, context) if handler else
                       [_missing(f"no study analysis answers paper analysis {item.analysis!r} "
                                 f"(known: {', '.join(HANDLERS)})")])
            for result in results:
                differences = {}
                for value, column in (("study_value", "difference"), ("same_split_value", "same_split_difference")):
                    study = result.get(value, "")
                    differences[column] = (round(float(study) - item.number, 4) if item.number is not None
                                           and not isinstance(study, str) and _finite(study) else "")
                row = {"paper": item.paper, "analysis": item.analysis, "item": item.item, "paper_value": item.value,
                       "unit": item.unit, "model": model, **result, **differences, "paper_note": item.note,
                       "source": item.source}
                rows.append({column: row.get(column, "") for column in COLUMNS})
    return pd.DataFrame(rows, columns=COLUMNS)


def paper_comparison(paper_values: str | Path, tables: Mapping[str, str | Path | None], output: str | Path, *,
                     context: StudyContext, absent: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Write the comparison of the study with the published numbers (``output``, CSV)."""
    items = read_paper_values(paper_values)
    frame = compare_with_papers(items, StudyTables(tables, absent), context)
    write_csv(frame, output)
    counts = frame["status"].value_counts().to_dict() if len(frame) else {}
    log.info("%d paper items x %d models: %d rows (%s)", len(items), len(context.models), len(frame), counts)
    return frame
