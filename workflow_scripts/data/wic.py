"""WiC (Word-in-Context): the official release files to one normalised table."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa

from ..core.errors import InputFormatError
from .registry import WIC_LABELS
from .tables import text_task_schema
from .text_files import decode_text, read_text

WIC_EXTRA = [
    pa.field("word", pa.string()),
    pa.field("pos", pa.string()),
    # Index of the target word among the whitespace-separated words of each sentence.
    pa.field("word_index_a", pa.int32()),
    pa.field("word_index_b", pa.int32()),
]


def parse_wic_lines(data_lines: list[str], gold_lines: list[str] | None,
                    data_name: str, gold_name: str) -> pa.Table:
    """Parse the release's ``*.data.txt`` lines and, when given, its ``*.gold.txt`` lines."""
    data_lines = [line.rstrip("\r\n") for line in data_lines]
    if gold_lines is not None:
        gold_lines = [line.rstrip("\r\n") for line in gold_lines]
        while gold_lines and gold_lines[-1] == "":
            gold_lines.pop()
    while data_lines and data_lines[-1] == "":
        data_lines.pop()
    if gold_lines is not None and len(gold_lines) != len(data_lines):
        raise InputFormatError(gold_name, None,
                               f"{len(gold_lines)} labels for {len(data_lines)} examples in {data_name}",
                               "the data and gold files must have one line per example")
    rows: dict[str, list] = {k: [] for k in
                             ("example_id", "source_id", "text_a", "text_b", "label",
                              "word", "pos", "word_index_a", "word_index_b")}
    for number, line in enumerate(data_lines, start=1):
        fields = line.split("\t")
        if len(fields) != 5:
            raise InputFormatError(data_name, number, f"expected 5 tab-separated fields, found {len(fields)}",
                                   "format: word, POS, i-j, sentence 1, sentence 2")
        word, pos, indices, sentence_a, sentence_b = fields
        try:
            index_a, index_b = (int(i) for i in indices.split("-"))
        except ValueError:
            raise InputFormatError(data_name, number, f"word indices {indices!r} are not 'i-j'") from None
        for index, sentence in ((index_a, sentence_a), (index_b, sentence_b)):
            if not 0 <= index < len(sentence.split(" ")):
                raise InputFormatError(data_name, number,
                                       f"word index {index} is outside the sentence {sentence!r}")
        label = None
        if gold_lines is not None:
            gold = gold_lines[number - 1].strip()
            if gold not in WIC_LABELS:
                raise InputFormatError(gold_name, number, f"label {gold!r} is not T or F")
            label = WIC_LABELS.index(gold)
        rows["example_id"].append(number - 1)
        rows["source_id"].append(str(number))
        rows["text_a"].append(sentence_a)
        rows["text_b"].append(sentence_b)
        rows["label"].append(label)
        rows["word"].append(word)
        rows["pos"].append(pos)
        rows["word_index_a"].append(index_a)
        rows["word_index_b"].append(index_b)
    return pa.Table.from_pydict(rows, schema=text_task_schema(False, WIC_EXTRA))


def parse_wic_files(data_path: str | Path, gold_path: str | Path | None) -> pa.Table:
    data = read_text(data_path).splitlines()
    gold = read_text(gold_path).splitlines() if gold_path else None
    return parse_wic_lines(data, gold, str(data_path), str(gold_path))


def parse_wic_release_zip(zip_path: str | Path, split: str) -> pa.Table:
    """Read one split out of the official ``WiC_dataset.zip``."""
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()

        def member(suffix: str) -> str | None:
            return next((n for n in names if n.endswith(f"{split}/{split}.{suffix}.txt")), None)

        data_name, gold_name = member("data"), member("gold")
        if data_name is None:
            raise InputFormatError(zip_path, None, f"no {split}/{split}.data.txt in the archive")
        data = decode_text(archive.read(data_name), f"{zip_path}:{data_name}").splitlines()
        gold = (decode_text(archive.read(gold_name), f"{zip_path}:{gold_name}").splitlines()
                if gold_name else None)
    return parse_wic_lines(data, gold, f"{zip_path}:{data_name}", f"{zip_path}:{gold_name}")
