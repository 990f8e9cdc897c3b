"""What a stage hands the report, and the values the report hands back to a stage's code.

A stage that publishes tables, paper comparisons or summary panels declares them in its own
``workflow_scripts/<stage>/report.py`` as one module-level :class:`StageReport` named ``REPORT``;
:mod:`workflow_scripts.report.registry` finds it through ``core.stages.STAGES``. Nothing in the
report package names an analysis: adding one means writing its ``report.py`` (and its published
numbers, ``report/paper_values/<stage>.csv``), never editing the report. See docs/report.md.

- :class:`PaperComparison`: which ``analysis`` of the published numbers the stage answers, and the
  function that turns one :class:`PaperItem` into rows of ``paper_comparison.csv``
  (build them with :func:`.formatting.found_row` / :func:`.formatting.missing_row`).
- :class:`SummaryPanel`: one panel of the summary page, its letter (its place on the page), the
  function that draws it and the note on its data that the page's footnote carries.
- :class:`StudyContext`, :class:`StudyTables`: what the config selects and the study's tables, read once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import AtlasError
from ..core.subjects import base_model


@dataclass(frozen=True, kw_only=True)
class StudyContext:
    """What the study's config selects, so that a missing number can say why it is missing.

    The fields without a default are config values (their defaults live in the config schema, once);
    the others default to "nothing selected", which no comparison reads as a reason.
    """

    models: tuple[str, ...]
    select_split: str                          # syntax.select_split
    score_split: str                           # syntax.score_split ([C]'s protocol: select and score on it)
    glove: bool                                # study.glove
    resamples: int                             # syntax.bootstrap_resamples (the p-values of the syntax tables)
    input_protocol: str                        # attention.input_protocol: how treebank sentences were fed
    relations: tuple[str, ...] = ()            # syntax.relations (empty: every relation)
    tasks: tuple[str, ...] = ()                # study.tasks
    finetuned_tasks: tuple[str, ...] = ()      # the tasks the study fine-tunes (a train split)
    analysed_tasks: tuple[str, ...] = ()       # the tasks whose dev inputs finetune_effects analyses
    predictions: Mapping[str, Sequence[str]] = field(default_factory=dict)  # [L]'s task groups
    annotator: str = ""                        # annotation.annotator (text without gold annotation)
    annotator_caption: str = ""                # the same as the captions' RST shows it literally (report/*.rst)
    # The labelled treebank the paper comparison and summary panels B and C read (rows of the syntax tables
    # whose treebank column is it); the study model sets it to the first labelled treebank of syntax.treebanks.
    syntax_treebank: str = "ewt"
    treebank_names: dict[str, str] = field(default_factory=dict)  # display names: {"ewt": "EWT", ...}
    languages: dict[str, str] = field(default_factory=dict)       # corpus -> ISO 639 code: {"ewt": "en"}
    # The fine-tuned checkpoints measured for their head roles alone (roles.finetuned, not attention.checkpoints):
    # role agreement compares them; the paper comparison of the pretrained model's items leaves them out.
    role_checkpoints: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StudyContext:
        """The context from a rule's ``params.context`` (``STUDY.report.report_context()``); unknown keys are ignored,
        missing ones take their defaults (a context of an older study has no syntax_treebank, treebank_names
        or languages)."""
        tuples = ("models", "relations", "tasks", "finetuned_tasks", "analysed_tasks", "role_checkpoints")
        known = {k: (tuple(v) if k in tuples else v) for k, v in values.items() if k in cls.__dataclass_fields__}
        if "predictions" in known:
            known["predictions"] = {g: list(t) for g, t in dict(known["predictions"]).items()}
        for name in ("treebank_names", "languages"):
            if name in known:
                known[name] = {str(k): str(v) for k, v in dict(known[name] or {}).items()}
        if known.get("syntax_treebank") in (None, ""):
            known.pop("syntax_treebank", None)
        return cls(**known)

    def treebank_name(self, treebank: str | None = None) -> str:
        """The display name of ``treebank`` (default: ``syntax_treebank``), else its name upper-cased."""
        name = treebank or self.syntax_treebank
        return self.treebank_names.get(name) or name.upper()


def as_number(text: Any) -> float | None:
    """The value as a float, or None for a range, a list or words ("32-61", "1, 10, 11, 12")."""
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class PaperItem:
    """One published number: a row of a stage's ``report/paper_values/<stage>.csv``.

    ``model``: the hub ids (space-separated) of the model the paper measured, for a number that belongs to
    one model (Gu et al.'s GPT2-XL, Wang et al.'s GPT-2 small); empty for a number compared with every
    model of the study ([C]'s BERT-base numbers).
    """

    paper: str
    analysis: str
    item: str
    value: str
    unit: str
    note: str
    source: str
    model: str = ""

    @property
    def hub_ids(self) -> tuple[str, ...]:
        return tuple(self.model.split())

    @property
    def number(self) -> float | None:
        return as_number(self.value)

    @property
    def scale(self) -> float:
        """Study tables hold fractions; a unit in % (accuracy %, UAS) prints them as percentages."""
        unit = self.unit.strip().lower()
        return 100.0 if "%" in unit or unit in ("uas", "uuas") else 1.0


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

    def model_rows(self, name: str, model: str, *, treebank: str | None = None) -> tuple[pd.DataFrame | None, str]:
        """The rows of ``model`` in table ``name``, or None and the reason there are none.

        ``treebank``: only the rows of that treebank where the table has a ``treebank`` column (the syntax
        tables; a table written before they had one, or with no such column, keeps every row).
        """
        frame = self.get(name)
        if frame is None:
            return None, self.why_absent(name)
        if frame.empty or "model" not in frame.columns:
            return None, f"{name}.csv has no rows"
        rows = frame[frame["model"].astype(str) == model]
        if rows.empty and model != base_model(model):
            # A subject MODEL@SIGNAL shares its model's rows in the tables no signal changes (fine-tuning, cards).
            rows = frame[frame["model"].astype(str) == base_model(model)]
        if rows.empty:
            return None, f"{name}.csv has no rows for model {model}"
        if treebank is not None and "treebank" in rows.columns:
            rows = rows[rows["treebank"].astype(str) == treebank]
            if rows.empty:
                return None, f"{name}.csv has no rows for model {model} on treebank {treebank}"
        return rows, ""


# compare(item, model, tables, context) -> rows of paper_comparison.csv (formatting.found_row / missing_row)
Compare = Callable[[PaperItem, str, StudyTables, StudyContext], list[dict[str, Any]]]
# draw(ax, model, tables, items, context) -> None where drawn, else the reason it is "not in this study"
Draw = Callable[[Any, str, StudyTables, Sequence[PaperItem], StudyContext], "str | None"]


@dataclass(frozen=True)
class PaperComparison:
    """The stage answers the published numbers whose ``analysis`` column is ``analysis`` with ``compare``."""

    analysis: str
    compare: Compare


@dataclass(frozen=True)
class SummaryPanel:
    """One panel of the summary page.

    ``letter``: its place on the page (A-F fill a 2 x 3 grid row by row). ``draw`` draws it on a
    matplotlib axes. ``data_note``: what it rests on, for the page's footnote ("wiki segments"), or a
    function of the :class:`StudyContext` that says it; consecutive letters with the same note share it
    ("B-C ..."). ``protocol_table``: the table whose ``input_protocol`` column the footnote names for
    this panel (treebank panels), or None.
    """

    letter: str
    draw: Draw
    data_note: str | Callable[[StudyContext], str]
    protocol_table: str | None = None

    def note(self, context: StudyContext) -> str:
        return self.data_note(context) if callable(self.data_note) else self.data_note


@dataclass(frozen=True)
class StageReport:
    """A stage's share of the report, declared as ``REPORT`` in ``workflow_scripts/<stage>/report.py``.

    ``tables``: the study tables (``{results}/tables/<name>.csv``) the report reads from this stage;
    the report rules take them as inputs. ``comparisons``: the paper analyses the stage answers.
    ``panels``: its summary panels. ``paper_values``: the file name of its published numbers under
    ``report/paper_values/`` (columns ``paper,analysis,item,value,unit,note,source``), or None.
    """

    tables: tuple[str, ...] = ()
    comparisons: tuple[PaperComparison, ...] = ()
    panels: tuple[SummaryPanel, ...] = ()
    paper_values: str | None = None
