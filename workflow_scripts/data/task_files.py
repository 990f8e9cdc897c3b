"""A researcher's own text task (a local CSV / TSV / JSON Lines file, or a hub dataset) to one normalised table.

A task entry of the config (``tasks.NAME`` with ``text``, ``label``, ``kind`` and ``labels``) names the
fields of its file; everything downstream (fine-tuning, the attention analyses) reads only the
normalised table of ``tables.text_task_schema``. So this is the one place where a user's file meets
the code, and its errors must let the user fix either the file or the entry without reading code:
each names the file and the line (or the hub dataset and the row), the entry, and the config key
to change (``tasks.NAME.text``, ``tasks.NAME.labels``, ...).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.errors import ConfigError, InputFormatError
from .tables import text_task_schema
from .text_files import TextFile, open_text

FORMATS = ("csv", "tsv", "jsonl")
_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}
# A row's own identifier, kept as source_id so that a prediction can be traced back to the user's data.
_ID_FIELDS = ("id", "idx")


def task_file_format(path: str | Path, fmt: str | None, *, entry: str | None = None) -> str:
    """The entry's ``format`` when given, else the one the file's suffix names (``.gz`` allowed)."""
    key = f"tasks.{entry}.format" if entry else "the entry's 'format'"
    if fmt is not None:
        if fmt not in FORMATS:
            raise ConfigError(f"{key} is {fmt!r}; expected one of {', '.join(FORMATS)}")
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    who = f"task entry '{entry}': " if entry else ""
    raise InputFormatError(path, None, f"{who}cannot tell the file's format from its name",
                           f"set {key} to one of {', '.join(FORMATS)}, or name the file *.csv, *.tsv or *.jsonl")


class _RowProblem(Exception):
    """A bad row; the caller adds where it is (a file's line or a hub dataset's row)."""

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def _label_keys(value: Any) -> list[str]:
    # Labels are compared as text so that [negative, positive] and [0, 1] both work whether the file
    # holds strings (CSV) or numbers and booleans (JSON, YAML). Python spells booleans True/False,
    # JSON and YAML true/false: both spellings match, and 1.0 matches a declared 1.
    text = str(value).strip()
    keys = [text]
    if isinstance(value, bool):
        keys.append(text.lower())
    elif isinstance(value, float) and value.is_integer():
        keys.append(str(int(value)))
    return keys


class _Task:
    """The checked entry: what each row must hold, and the builder of the table."""

    def __init__(self, entry: str, text: list[str], label: str, kind: str, labels: list | None) -> None:
        self.entry, self.text, self.label = entry, list(text), label
        if len(self.text) not in (1, 2):
            raise ConfigError(f"{self.key('text')} names {len(self.text)} fields; a task has one text or a pair")
        if kind not in ("classification", "regression"):
            raise ConfigError(f"{self.key('kind')} is {kind!r}; expected 'classification' or 'regression'")
        self.regression = kind == "regression"
        self.labels = list(labels or [])
        self.ids: dict[str, int] = {}
        if not self.regression:
            if len(self.labels) < 2:
                raise ConfigError(f"{self.key('labels')} must list at least 2 classes for a classification task")
            for i, declared in enumerate(self.labels):
                for key in _label_keys(declared):
                    if self.ids.setdefault(key, i) != i:
                        raise ConfigError(f"{self.key('labels')} lists {key!r} twice")
        self.columns: dict[str, list] = {"example_id": [], "source_id": [], "text_a": [], "text_b": [], "label": []}

    def key(self, name: str) -> str:
        return f"tasks.{self.entry}.{name}"

    def say(self, problem: str) -> str:
        return f"task entry '{self.entry}': {problem}"

    def missing_fields(self, found: list[str]) -> tuple[str, str] | None:
        """(problem, fix) for the first text or label field that ``found`` lacks."""
        for field, key in [*((f, "text") for f in self.text), (self.label, "label")]:
            if field not in found:
                return (self.say(f"no {key} field {field!r}; the fields are {found}"),
                        f"set {self.key(key)} to one of them")
        return None

    def add(self, row: Mapping[str, Any], source_id: str, label: Any = None, *, label_given: bool = False) -> None:
        """Append one row; ``label`` (with ``label_given``) overrides the row's own (a hub ClassLabel id)."""
        missing = self.missing_fields(list(row))
        if missing:
            raise _RowProblem(*missing)
        texts = [self._text(row[field], field) for field in self.text]
        value = self._label(row[self.label]) if not label_given else label
        for field in _ID_FIELDS:
            if row.get(field) not in (None, ""):
                source_id = str(row[field])
                break
        self.columns["example_id"].append(len(self.columns["example_id"]))
        self.columns["source_id"].append(source_id)
        self.columns["text_a"].append(texts[0])
        self.columns["text_b"].append(texts[1] if len(texts) == 2 else None)
        self.columns["label"].append(value)

    def _text(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise _RowProblem(self.say(f"text field {field!r} holds {value!r}, not a string"),
                              f"check {self.key('text')}: it must name the field(s) holding the text")
        if not value.strip():
            raise _RowProblem(self.say(f"empty text in field {field!r}"), "fill in the text or remove the row")
        return value

    def _label(self, value: Any) -> int | float:
        if self.regression:
            try:
                score = float(str(value).strip()) if not isinstance(value, bool) else math.nan
            except ValueError:
                score = math.nan
            if not math.isfinite(score):
                raise _RowProblem(self.say(f"label {value!r} in field {self.label!r} is not a finite number"),
                                  f"a regression task needs a number in every row; is {self.key('label')} right?")
            return score
        for key in _label_keys(value):
            if key in self.ids:
                return self.ids[key]
        raise _RowProblem(self.say(f"label {value!r} in field {self.label!r} is not one of {self.labels}"),
                          f"add it to {self.key('labels')} or fix the row")

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=text_task_schema(self.regression))


def _open(path: Path, newline: str | None) -> TextFile:
    # utf-8-sig: spreadsheet programs start their CSV exports with a byte-order mark.
    opener = (lambda: gzip.open(path, "rb")) if path.suffix.lower() == ".gz" else None
    return open_text(path, encoding="utf-8-sig", newline=newline, open_binary=opener)


def _delimited_rows(path: Path, fmt: str, task: _Task) -> Iterator[tuple[int, dict[str, str]]]:
    # csv.reader rather than csv.DictReader (the same parser): DictReader skips blank lines silently,
    # which would shift the start line computed below, and hides a short or long row in restval/restkey.
    delimiter = "\t" if fmt == "tsv" else ","
    header: list[str] | None = None
    header_line = 1
    with _open(path, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        end = 0  # the last physical line read: a quoted field may span lines, so a row starts after it
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise _csv_error(exc, path, reader.line_num, fmt, task) from None
            start, end = end + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header, header_line = row, start
                _check_header(path, fmt, header, header_line, task)
                continue
            if len(row) != len(header):
                spans = f" (lines {start}-{end}: a quoted field runs on; is a double quote unbalanced?)" \
                    if end > start else ""
                raise InputFormatError(path, start, task.say(f"expected {len(header)} columns as in the header, "
                                                             f"found {len(row)}{spans}"),
                                       f"fix the row; a {'tab' if fmt == 'tsv' else 'comma'} inside a text "
                                       "must be inside a double-quoted field")
            yield start, dict(zip(header, row))
    if header is None:
        raise InputFormatError(path, 1, task.say("the file is empty"), f"expected a {fmt.upper()} file with a header")


def _csv_error(exc: csv.Error, path: Path, line: int, fmt: str, task: _Task) -> InputFormatError:
    """The csv module's error as one the user can act on; its field-size error names no file and no fix."""
    if "field larger than field limit" in str(exc):
        return field_limit_error(path, line, fmt, task.say)
    return InputFormatError(path, line, task.say(f"unreadable {fmt.upper()}: {exc}"))


def field_limit_error(path: Path, line: int, fmt: str, say=lambda problem: problem) -> InputFormatError:
    """A field longer than the csv reader's limit (data.max_field_chars), with what to do about it."""
    limit = csv.field_size_limit()
    return InputFormatError(
        path, line, say(f"a field is longer than {limit} characters, the most the {fmt.upper()} reader takes in "
                        "one field (config data.max_field_chars)"),
        "if no text should be this long, look for a double quote left open, which runs a field on to the end of "
        "the file; if the text is right, shorten or split it (the model reads only its first max_length "
        f"tokens), or raise data.max_field_chars above {limit} (--config 'data={{max_field_chars: 1000000}}')")


def _check_header(path: Path, fmt: str, header: list[str], line: int, task: _Task) -> None:
    repeated = sorted({name for name in header if header.count(name) > 1 and name in (*task.text, task.label)})
    if repeated:
        raise InputFormatError(path, line, task.say(f"the header names {repeated} more than once"),
                               "give each column its own name")
    missing = task.missing_fields(header)
    if missing:
        problem, fix = missing
        # The usual cause of a one-column header is the wrong delimiter: say so.
        other = "," if fmt == "tsv" else "\t"
        if len(header) == 1 and other in header[0]:
            fix += f"; the file looks {'comma' if other == ',' else 'tab'}-separated: " \
                   f"set {task.key('format')} to {'csv' if other == ',' else 'tsv'}"
        raise InputFormatError(path, line, problem, fix)


def _jsonl_rows(path: Path, task: _Task) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path, newline=None) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFormatError(path, number, task.say(f"malformed JSON at column {exc.colno}: {exc.msg}"),
                                       "each line must hold one JSON object (JSON Lines); convert a file holding "
                                       "one JSON array with: jq -c '.[]' FILE > FILE.jsonl") from None
            if not isinstance(row, dict):
                raise InputFormatError(path, number, task.say(f"the line holds a JSON {type(row).__name__}, "
                                                              "not an object"),
                                       "each line must hold one JSON object with the task's fields")
            yield number, row


def read_task_file(path: str | Path, *, entry: str, fmt: str | None, text: list[str], label: str, kind: str,
                   labels: list | None) -> pa.Table:
    """Parse one split's file of task entry ``entry`` into the normalised text-task table.

    ``source_id`` is the row's ``id`` or ``idx`` field when it has one, else the line where the row starts.
    """
    path = Path(path)
    task = _Task(entry, text, label, kind, labels)
    fmt = task_file_format(path, fmt, entry=entry)
    rows = _jsonl_rows(path, task) if fmt == "jsonl" else _delimited_rows(path, fmt, task)
    for line, row in rows:
        try:
            task.add(row, str(line))
        except _RowProblem as bad:
            raise InputFormatError(path, line, bad.problem, bad.fix) from None
    if not task.columns["example_id"]:
        what = "no rows" if fmt == "jsonl" else "a header but no rows"
        raise InputFormatError(path, 1, task.say(f"the file holds {what}"), "every split needs at least one example")
    return task.table()


def load_task_from_hub(*, entry: str, dataset: str, config: str | None, revision: str | None, split: str,
                       text: list[str], label: str, kind: str, labels: list | None) -> pa.Table:
    """Download one split of a hub dataset named by task entry ``entry`` and normalise it.

    A ClassLabel column holds class ids in the dataset's own order; they are mapped by name onto
    the declared ``labels`` (whose order sets the table's ids), or read as the label values themselves.
    """
    import datasets  # heavy; only the jobs that read the hub pay for it

    task = _Task(entry, text, label, kind, labels)
    source = f"hub dataset {dataset}" + (f" ({config})" if config else "") + f", split {split!r}"
    data = datasets.load_dataset(dataset, config, split=split, revision=revision)
    missing = task.missing_fields(list(data.column_names))
    if missing:
        raise InputFormatError(source, None, *missing)
    feature = data.features[label]
    names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    for index, row in enumerate(data):
        try:
            if names is None or task.regression:
                task.add(row, str(index))
            else:
                task.add(row, str(index), _class_id(task, row[label], names), label_given=True)
        except _RowProblem as bad:
            raise InputFormatError(f"{source}, row {index}", None, bad.problem, bad.fix) from None
    if not task.columns["example_id"]:
        raise InputFormatError(source, None, task.say("the split has no rows"), f"check {task.key('splits')}")
    return task.table()


def _class_id(task: _Task, value: Any, names: list[str]) -> int:
    # The hub marks an unlabelled row (a GLUE test split) with -1.
    if value == -1:
        raise _RowProblem(task.say("the row is unlabelled (the hub's label -1)"),
                          f"map the study split to a labelled hub split in {task.key('splits')}")
    if isinstance(value, int) and 0 <= value < len(names) and names[value].strip() in task.ids:
        return task.ids[names[value].strip()]
    if str(value) in task.ids:
        return task.ids[str(value)]
    raise _RowProblem(task.say(f"label {value!r} (class name {names[value]!r}) is not one of {task.labels}"
                               if isinstance(value, int) and 0 <= value < len(names) else
                               f"label {value!r} is not one of {task.labels}"),
                      f"set {task.key('labels')} to the dataset's class names {names} or to their ids")
