"""GLUE tasks: the GLUE TSV release (or the hub's ``nyu-mll/glue``) to one normalised table."""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from ..core.errors import InputFormatError
from .registry import GLUE_HUB_DATASET, GLUE_TASKS, GlueTask
from .tables import text_task_schema
from .text_files import open_text

log = logging.getLogger(__name__)


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    # GLUE files are plain tab-separated lines: quotes are literal text (MRPC, SST-2),
    # so csv's quoting must be off; utf-8-sig drops MRPC's byte-order mark.
    with open_text(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                if "field larger than field limit" in str(exc):  # no GLUE text is near it: a damaged file
                    raise InputFormatError(
                        path, reader.line_num, f"a field is longer than {csv.field_size_limit()} characters, "
                        "which no GLUE text is: the file is damaged or is not the task's GLUE TSV",
                        "replace it with the release's file (delete it and run snakemake again to download "
                        "it, or copy it from the mirror again)") from None
                raise InputFormatError(path, reader.line_num, f"unreadable TSV: {exc}") from None
            if row == [] or row == [""]:
                continue
            yield reader.line_num, row


def parse_label(task: GlueTask, raw: str, path: Path, line: int) -> int | float:
    """Map a label string of the TSV release to the hub's label id (or a float for STS-B)."""
    value = raw.strip()
    if value == "":
        raise InputFormatError(path, line, f"missing label in column {task.label_column!r}",
                               "every training and dev row needs a label")
    if task.labels is None:
        try:
            score = float(value)
        except ValueError:
            raise InputFormatError(path, line, f"label {value!r} is not a number",
                                   "STS-B scores are numbers from 0 to 5") from None
        if not 0.0 <= score <= 5.0:
            raise InputFormatError(path, line, f"score {score} is outside 0..5")
        return score
    if value in task.labels:
        return task.labels.index(value)
    if value.isascii() and value.isdigit() and int(value) < len(task.labels):
        return int(value)
    raise InputFormatError(
        path, line, f"label {value!r} is not a label of {task.name}",
        f"allowed: {', '.join(task.labels)} or their ids 0..{len(task.labels) - 1}")


def parse_glue_tsv(task_name: str, path: str | Path) -> pa.Table:
    """Parse one GLUE TSV file into the normalised text-task table."""
    task = GLUE_TASKS[task_name]
    path = Path(path)
    rows = _rows(path)
    if task.headerless_columns is not None:
        header = list(task.headerless_columns)
    else:
        try:
            _, header = next(rows)
        except StopIteration:
            raise InputFormatError(path, 1, "the file is empty", "expected a GLUE TSV with a header") from None
    missing = [c for c in (task.text_a, task.text_b, task.label_column) if c and c not in header]
    if missing:
        raise InputFormatError(path, 1, f"header lacks column(s) {missing}; found {header}",
                               f"is this the {task.folder} file of the GLUE release?")
    position = {name: i for i, name in enumerate(header)}
    columns: dict[str, list] = {"example_id": [], "source_id": [], "text_a": [], "text_b": [], "label": []}
    for line, row in rows:
        if len(row) != len(header):
            raise InputFormatError(
                path, line, f"expected {len(header)} tab-separated columns, found {len(row)}",
                "fix or remove the row; a tab inside a sentence must not be there")
        text_a = row[position[task.text_a]]
        if not text_a.strip():
            raise InputFormatError(path, line, f"empty text in column {task.text_a!r}")
        columns["example_id"].append(len(columns["example_id"]))
        columns["source_id"].append(row[position["index"]] if "index" in position else str(line))
        columns["text_a"].append(text_a)
        columns["text_b"].append(row[position[task.text_b]] if task.text_b else None)
        columns["label"].append(parse_label(task, row[position[task.label_column]], path, line))
    if not columns["example_id"]:
        if task.headerless_columns is not None:
            raise InputFormatError(path, 1, "the file is empty", f"expected the {task.folder} TSV of the GLUE release")
        raise InputFormatError(path, None, "no examples found", "the file holds only a header")
    return pa.Table.from_pydict(columns, schema=text_task_schema(task.is_regression))


def load_glue_from_hub(task_name: str, split: str) -> pa.Table:
    """Download one split of a GLUE task from the hub and normalise it."""
    import datasets

    task = GLUE_TASKS[task_name]
    dataset = datasets.load_dataset(GLUE_HUB_DATASET, task_name, split=task.splits[split])
    labels = dataset["label"]
    columns = {
        "example_id": list(range(len(dataset))),
        "source_id": [str(i) for i in dataset["idx"]],
        "text_a": dataset[task.hub_text_a],
        "text_b": dataset[task.hub_text_b] if task.hub_text_b else [None] * len(dataset),
        # The hub marks unlabelled rows with -1.
        "label": [None if (lab == -1) else lab for lab in labels],
    }
    return pa.Table.from_pydict(columns, schema=text_task_schema(task.is_regression))
