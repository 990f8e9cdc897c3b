"""A leading UTF-8 byte-order mark is read the same way in every text format (CoNLL-U, CoNLL-X, Malt-TAB,
task CSV/TSV, GLUE TSV, WiC, GloVe, WikiText): the file reads as if it had none. A CSV/TSV field over the csv
module's size limit is an InputFormatError naming the file, the line, the limit and the fix."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from support.conllu import GUM_LINES
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.data.glove import parse_glove_file
from workflow_scripts.data.glue import parse_glue_tsv
from workflow_scripts.data.task_files import read_task_file
from workflow_scripts.data.text_files import open_text
from workflow_scripts.data.treebank_formats import parse_conllx, parse_malt_tab
from workflow_scripts.data.ud import parse_conllu
from workflow_scripts.data.wic import parse_wic_files

BOM = b"\xef\xbb\xbf"
TASK = {"text": ["sentence"], "label": "sentiment", "kind": "classification", "labels": ["negative", "positive"]}


def both(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """The same file, without and with a BOM; same file name, so names taken from it agree."""
    plain, marked = tmp_path / "plain" / name, tmp_path / "bom" / name
    for path, head in ((plain, b""), (marked, BOM)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(head + text.encode("utf-8"))
    return plain, marked


def test_conllu_with_bom_reads_as_without(tmp_path):
    plain, marked = both(tmp_path, "en_gum-ud-dev.conllu", "\n".join(GUM_LINES) + "\n")
    assert parse_conllu(marked) == parse_conllu(plain)


def test_conllu_with_bom_before_a_token_line(tmp_path):
    # No comment first: the BOM would be glued to the first token's ID.
    text = "1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_\n\n"
    plain, marked = both(tmp_path, "x.conllu", text)
    (sentence,) = parse_conllu(marked)
    assert sentence == parse_conllu(plain)[0] and sentence.text == "Hello"


@pytest.mark.parametrize(("parse", "line"), [
    (parse_conllx, "1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_"),
    (parse_malt_tab, "Hello\tUH\t0\tROOT"),
])
def test_other_treebank_formats_with_bom(tmp_path, parse, line):
    plain, marked = both(tmp_path, "x.txt", line + "\n\n")
    (sentence,) = parse(marked)
    assert sentence == parse(plain)[0] and sentence.words[0].form == "Hello"


@pytest.mark.parametrize(("name", "text"), [
    ("reviews.csv", "sentence,sentiment\nGood.,positive\n\"Bad, bad.\",negative\n"),
    ("reviews.tsv", "sentence\tsentiment\nGood.\tpositive\nBad.\tnegative\n"),
])
def test_task_file_with_bom_reads_as_without(tmp_path, name, text):
    plain, marked = both(tmp_path, name, text)
    table = read_task_file(marked, entry="mytask", fmt=None, **TASK)
    assert table.equals(read_task_file(plain, entry="mytask", fmt=None, **TASK))
    assert table.column("text_a").to_pylist()[0] == "Good."


def test_glue_tsv_with_bom_reads_as_without(tmp_path):
    plain, marked = both(tmp_path, "dev.tsv", "sentence\tlabel\nGood.\t1\nBad.\t0\n")
    assert parse_glue_tsv("sst2", marked).equals(parse_glue_tsv("sst2", plain))


@pytest.fixture
def small_field_limit():
    # The project leaves the limit at the csv module's default (131072); a smaller one keeps the file small.
    old = csv.field_size_limit(100)
    yield 100
    csv.field_size_limit(old)


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_field_over_the_csv_limit_names_file_line_limit_and_fix(tmp_path, small_field_limit, suffix):
    sep = "," if suffix == "csv" else "\t"
    path = tmp_path / f"reviews.{suffix}"
    path.write_text(f"sentence{sep}sentiment\nGood.{sep}positive\n{'x' * 150}{sep}negative\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_task_file(path, entry="mytask", fmt=None, **TASK)
    message = str(caught.value)
    assert caught.value.line == 3 and f"{path}, line 3:" in message
    assert "task entry 'mytask'" in message
    assert f"longer than {small_field_limit} characters" in message
    assert "shorten or split it" in message and "max_length" in message
    assert "raise data.max_field_chars above 100" in message and "double quote left open" in message
    assert "field larger than field limit" not in message


def test_default_limit_is_named(tmp_path):
    path = tmp_path / "reviews.csv"
    limit = csv.field_size_limit()
    path.write_text(f"sentence,sentiment\n{'x' * (limit + 1)},positive\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=f"longer than {limit} characters"):
        read_task_file(path, entry="mytask", fmt=None, **TASK)


def test_glue_tsv_field_over_the_limit_is_a_damaged_file(tmp_path, small_field_limit):
    path = tmp_path / "dev.tsv"
    path.write_text(f"sentence\tlabel\nGood.\t1\n{'x' * 150}\t0\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        parse_glue_tsv("sst2", path)
    assert caught.value.line == 3 and f"{path}, line 3:" in str(caught.value)
    assert "longer than 100 characters" in str(caught.value) and "damaged" in str(caught.value)


def test_wic_glove_and_wikitext_with_bom_read_as_without(tmp_path):
    data = "bank\tN\t1-3\tThe bank was closed .\tHe sat on the bank .\n"
    plain, marked = both(tmp_path, "dev.data.txt", data)
    gold_plain, gold_marked = both(tmp_path, "dev.gold.txt", "F\n")
    assert parse_wic_files(marked, gold_marked).equals(parse_wic_files(plain, gold_plain))
    plain, marked = both(tmp_path, "glove.txt", "the 0.1 0.2\ncat 0.3 0.4\n")
    table = parse_glove_file(marked, None)
    assert table.equals(parse_glove_file(plain, None)) and table.column("word").to_pylist()[0] == "the"
    plain, marked = both(tmp_path, "wiki.train.tokens", " = Title = \n\n One two three . \n\n")
    with open_text(marked) as handle:
        assert handle.readlines() == plain.read_text(encoding="utf-8").splitlines(keepends=True)
