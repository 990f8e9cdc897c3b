"""GLUE TSV parsing, the registry's mirror look-up, and the GLUE builder."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.entries import TASKS, UD
from support.source_files import input_error, no_partials, write
from workflow_scripts.core import io as atlas_io
from workflow_scripts.core.errors import InputFormatError, SourceUnavailableError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_glue
from workflow_scripts.data.glue import parse_glue_tsv
from workflow_scripts.data.registry import GLUE_TASKS, find_in_mirror

MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
STSB_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"


# --- GLUE: well-formed files ------------------------------------------------------


def test_cola_headerless_rows_and_labels(tmp_path):
    path = write(tmp_path / "CoLA" / "dev.tsv",
                 "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
                 "gj04\t0\t*\tThe rode sailors breeze.\n"
                 "\n"
                 'cj99\t1\t\tShe said "hi" to me.\n')
    table = parse_glue_tsv("cola", path)
    assert table.num_rows == 3
    assert table.column_names == ["example_id", "source_id", "text_a", "text_b", "label"]
    assert table.schema.field("label").type == pa.int64()
    assert table["example_id"].to_pylist() == [0, 1, 2]
    # CoLA has no index column: the source id is the line number (the blank line 3 is skipped).
    assert table["source_id"].to_pylist() == ["1", "2", "4"]
    assert table["text_a"].to_pylist() == ["The sailors rode the breeze clear of the rocks.",
                                           "The rode sailors breeze.", 'She said "hi" to me.']
    assert table["text_b"].to_pylist() == [None, None, None]
    assert table["label"].to_pylist() == [1, 0, 1]


def test_cola_crlf_line_endings(tmp_path):
    path = write(tmp_path / "dev.tsv", "gj04\t1\t\tLine one.\r\ngj04\t0\t*\tLine two.\r\n")
    table = parse_glue_tsv("cola", path)
    assert table["text_a"].to_pylist() == ["Line one.", "Line two."]
    assert table["label"].to_pylist() == [1, 0]


def test_mrpc_bom_header_and_literal_quotes(tmp_path):
    # An unbalanced quote must stay literal text (quoting is off) and not swallow the next line.
    path = write(tmp_path / "MRPC" / "dev.tsv",
                 f"{MRPC_HEADER}\n"
                 '1\t1355540\t1355592\tHe said the pie "fits.\t"The pie fits.\n'
                 "0\t2029631\t2029565\tMagnarelli said so.\tHis wife said no.\n",
                 bom=True)
    table = parse_glue_tsv("mrpc", path)
    assert table.num_rows == 2
    assert table["text_a"].to_pylist() == ['He said the pie "fits.', "Magnarelli said so."]
    assert table["text_b"].to_pylist() == ['"The pie fits.', "His wife said no."]
    assert table["label"].to_pylist() == [1, 0]
    assert table["source_id"].to_pylist() == ["2", "3"]


def test_stsb_float_scores(tmp_path):
    path = write(tmp_path / "dev.tsv",
                 f"{STSB_HEADER}\n"
                 "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man is dancing.\tA man dances.\t5.000\n"
                 "1\tmain-captions\tMSRvid\t2012test\t0002\tnone\tnone\tA child rides.\tA dog sleeps.\t0.250\n"
                 "7\tmain-news\tMSRpar\t2012test\t0009\tnone\tnone\tOne.\tTwo.\t0\n")
    table = parse_glue_tsv("stsb", path)
    assert table.schema.field("label").type == pa.float64()
    assert table["label"].to_pylist() == [5.0, 0.25, 0.0]
    assert table["source_id"].to_pylist() == ["0", "1", "7"]
    assert table["text_b"].to_pylist() == ["A man dances.", "A dog sleeps.", "Two."]


@pytest.mark.parametrize(("task", "header", "raw_labels", "expected"), [
    ("qnli", "index\tquestion\tsentence\tlabel", ["entailment", "not_entailment"], [0, 1]),
    ("rte", "index\tsentence1\tsentence2\tlabel", ["not_entailment", "entailment"], [1, 0]),
    ("mnli", "index\tsentence1\tsentence2\tgold_label",
     ["contradiction", "neutral", "entailment"], [2, 1, 0]),
    # WNLI's TSV uses ids; 1 means entailment, as on the hub (0 not_entailment, 1 entailment).
    ("wnli", "index\tsentence1\tsentence2\tlabel", ["1", "0"], [1, 0]),
    ("sst2", "sentence\tlabel", ["0", "1"], [0, 1]),
    ("qqp", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", ["1", "0"], [1, 0]),
])
def test_string_and_id_labels_map_to_hub_ids(tmp_path, task, header, raw_labels, expected):
    lines = [header]
    for i, raw in enumerate(raw_labels):
        values = {"index": str(10 + i), "label": raw, "gold_label": raw, "is_duplicate": raw}
        lines.append("\t".join(values.get(c, f"{c} {i}.") for c in header.split("\t")))
    path = write(tmp_path / f"{task}.tsv", "\n".join(lines) + "\n")
    table = parse_glue_tsv(task, path)
    assert table["label"].to_pylist() == expected
    task_def = GLUE_TASKS[task]
    assert table["text_a"].to_pylist() == [f"{task_def.text_a} {i}." for i in range(len(raw_labels))]
    if task_def.text_b:
        assert table["text_b"].to_pylist() == [f"{task_def.text_b} {i}." for i in range(len(raw_labels))]
    if "index" in header.split("\t"):
        assert table["source_id"].to_pylist() == [str(10 + i) for i in range(len(raw_labels))]


def test_label_ids_match_registry_order():
    assert GLUE_TASKS["mnli"].labels == ("entailment", "neutral", "contradiction")
    assert GLUE_TASKS["qnli"].labels.index("not_entailment") == 1
    assert GLUE_TASKS["rte"].labels.index("entailment") == 0
    assert GLUE_TASKS["stsb"].is_regression and not GLUE_TASKS["cola"].is_regression
    assert tuple(TASKS["mnli"].splits) == ("train", "dev_matched", "dev_mismatched")
    assert TASKS["mnli"].dev_split == "dev_matched" and TASKS["mnli"].splits["dev_matched"] == "validation_matched"
    assert tuple(TASKS["wic"].splits) == ("train", "dev", "test")
    assert TASKS["stsb"].metrics == ("pearson", "spearman") and TASKS["mrpc"].main_metric == "f1"
    assert TASKS["cola"].is_pair is False and TASKS["rte"].is_pair and TASKS["wic"].labels == ("F", "T")


# --- GLUE: bad input ------------------------------------------------------------------


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path / "RTE_dev.tsv",
                 "index\tsentence1\tsentence2\tlabel\n"
                 "0\tA.\tB.\tentailment\n"
                 "1\tA tab\tinside.\tB.\tentailment\n")
    error = input_error(parse_glue_tsv, "rte", path)
    message = str(error)
    assert str(path) in message
    assert "line 3" in message
    assert "expected 4 tab-separated columns, found 5" in message
    assert error.line == 3


def test_cola_wrong_column_count(tmp_path):
    path = write(tmp_path / "cola_dev.tsv", "gj04\t1\t\tFine.\ngj04\t1\tBroken row.\n")
    with pytest.raises(InputFormatError, match=r"line 2: expected 4 tab-separated columns, found 3") as info:
        parse_glue_tsv("cola", path)
    assert str(path) in str(info.value)


def test_missing_label_names_line(tmp_path):
    path = write(tmp_path / "stsb_dev.tsv",
                 f"{STSB_HEADER}\n"
                 "0\tg\tf\ty\to\tn\tn\tA man.\tA guy.\t5.000\n"
                 "1\tg\tf\ty\to\tn\tn\tA man.\tA guy.\t\n")
    message = str(input_error(parse_glue_tsv, "stsb", path))
    assert f"{path}, line 3: missing label in column 'score'" in message


def test_missing_label_classification(tmp_path):
    path = write(tmp_path / "qnli_dev.tsv", "index\tquestion\tsentence\tlabel\n0\tQ?\tS.\t \n")
    with pytest.raises(InputFormatError, match=r"qnli_dev\.tsv, line 2: missing label"):
        parse_glue_tsv("qnli", path)


@pytest.mark.parametrize(("task", "text", "bad_line", "fragment"), [
    ("rte", "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tentailment\n1\tA.\tB.\tentailed\n", 3,
     "label 'entailed' is not a label of rte"),
    ("cola", "gj04\t1\t\tOk.\ngj04\t2\t*\tTwo is not a label.\n", 2, "label '2' is not a label of cola"),
    ("mnli", "index\tsentence1\tsentence2\tgold_label\n0\tA.\tB.\t-\n", 2, "label '-' is not a label of mnli"),
    ("sst2", "sentence\tlabel\nfine .\t-1\n", 2, "label '-1' is not a label of sst2"),
    ("stsb", f"{STSB_HEADER}\n0\tg\tf\ty\to\tn\tn\tA.\tB.\t5.5\n", 2, "score 5.5 is outside 0..5"),
    ("stsb", f"{STSB_HEADER}\n0\tg\tf\ty\to\tn\tn\tA.\tB.\t-0.1\n", 2, "score -0.1 is outside 0..5"),
    ("stsb", f"{STSB_HEADER}\n0\tg\tf\ty\to\tn\tn\tA.\tB.\thigh\n", 2, "label 'high' is not a number"),
])
def test_label_outside_label_set(tmp_path, task, text, bad_line, fragment):
    path = write(tmp_path / f"{task}_bad.tsv", text)
    message = str(input_error(parse_glue_tsv, task, path))
    assert message.startswith(f"{path}, line {bad_line}: ")
    assert fragment in message


def test_unicode_digit_label_is_an_input_error(tmp_path):
    path = write(tmp_path / "sst_sup.tsv", "sentence\tlabel\nfine .\t\u00b2\n")
    message = str(input_error(parse_glue_tsv, "sst2", path))
    assert message.startswith(f"{path}, line 2: ")


# An empty file (a headerless CoLA file of blank lines too) names the file, and the line where it can.
@pytest.mark.parametrize(("task", "text", "begins"), [
    ("rte", "", ", line 1: the file is empty"),
    ("cola", "\n\n", ""),
    ("cola", "", ", line 1"),
])
def test_an_empty_file_is_an_input_error_naming_it(tmp_path, task, text, begins):
    path = write(tmp_path / f"{task}_empty.tsv", text)
    message = str(input_error(parse_glue_tsv, task, path))
    assert message.startswith(f"{path}{begins}")


def test_header_only_file(tmp_path):
    path = write(tmp_path / "rte_header.tsv", "index\tsentence1\tsentence2\tlabel\n")
    with pytest.raises(InputFormatError, match="no examples found") as info:
        parse_glue_tsv("rte", path)
    assert str(path) in str(info.value)


def test_header_missing_column(tmp_path):
    path = write(tmp_path / "rte_nolabel.tsv", "index\tsentence1\tsentence2\n0\tA.\tB.\n")
    message = str(input_error(parse_glue_tsv, "rte", path))
    assert message.startswith(f"{path}, line 1: header lacks column(s) ['label']")
    assert "RTE" in message


def test_mrpc_header_without_bom_handling_would_miss_quality(tmp_path):
    # The BOM must not end up in the first header name (else 'Quality' would be missing).
    path = write(tmp_path / "mrpc.tsv", f"{MRPC_HEADER}\n1\t1\t2\tA.\tB.\n", bom=True)
    assert parse_glue_tsv("mrpc", path)["label"].to_pylist() == [1]
    wrong = write(tmp_path / "mrpc_wrong.tsv", "Quality\t#1 ID\t#2 ID\tString1\tString2\n1\t1\t2\tA.\tB.\n")
    with pytest.raises(InputFormatError, match=r"line 1: header lacks column\(s\) \['#1 String', '#2 String'\]"):
        parse_glue_tsv("mrpc", wrong)


def test_empty_text_names_line(tmp_path):
    path = write(tmp_path / "sst.tsv", "sentence\tlabel\ngood .\t1\n  \t0\n")
    with pytest.raises(InputFormatError, match=r"sst\.tsv, line 3: empty text in column 'sentence'"):
        parse_glue_tsv("sst2", path)


# --- registry: which mirror files provide a split ------------------------------------------


def test_find_in_mirror(tmp_path):
    assert find_in_mirror(None, "cola", "dev") == []
    assert find_in_mirror(tmp_path, "cola", "dev") == []
    cola = write(tmp_path / "glue" / "CoLA" / "dev.tsv", "gj04\t1\t\tOk.\n")
    assert find_in_mirror(tmp_path, "cola", "dev") == [cola]
    # SST-2 train falls back to the first-20000-lines file.
    sst = write(tmp_path / "glue" / "SST-2" / "train.first20000lines.tsv", "sentence\tlabel\nok .\t1\n")
    assert find_in_mirror(tmp_path, "sst2", "train") == [sst]
    full = write(tmp_path / "glue" / "SST-2" / "train.tsv", "sentence\tlabel\nok .\t1\n")
    assert find_in_mirror(tmp_path, "sst2", "train") == [full]
    # WiC needs both the data and the gold file.
    data = write(tmp_path / "wic" / "dev" / "dev.data.txt", "x")
    assert find_in_mirror(tmp_path, "wic", "dev") == []
    gold = write(tmp_path / "wic" / "dev" / "dev.gold.txt", "T")
    assert find_in_mirror(tmp_path, "wic", "dev") == [data, gold]
    assert UD["ewt"].mirror_candidates("dev") == [["ud/UD_English-EWT/en_ewt-ud-dev.conllu"]]


# --- GLUE builder ------------------------------------------------------------------------


def test_build_glue_from_mirror_file(tmp_path):
    source = write(tmp_path / "mirror" / "glue" / "CoLA" / "dev.tsv",
                   "gj04\t1\t\tGood one.\ngj04\t0\t*\tOne bad.\n")
    output = tmp_path / "out" / "cola" / "dev.parquet"
    build_glue("cola", "dev", [source], output, mirror=str(tmp_path / "mirror"), offline=True)
    table = pq.read_table(output)
    assert table["label"].to_pylist() == [1, 0]
    assert table["text_a"].to_pylist() == ["Good one.", "One bad."]
    meta = read_metadata(output)
    assert meta == {"corpus": "cola", "split": "dev", "source": f"mirror:{source}"}
    assert no_partials(tmp_path / "out") == []


def test_build_glue_offline_without_mirror_files(tmp_path):
    output = tmp_path / "out" / "rte_dev.parquet"
    with pytest.raises(SourceUnavailableError) as info:
        build_glue("rte", "dev", [], output, mirror=None, offline=True)
    message = str(info.value)
    assert "corpus 'rte', split 'dev'" in message
    assert "no mirror is set" in message
    assert "places tried:" in message
    assert "hub dataset nyu-mll/glue (rte, validation) (skipped: 'offline' is true)" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message
    assert not output.exists()


def test_build_glue_offline_with_mirror_lacking_the_split(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(SourceUnavailableError) as info:
        build_glue("sst2", "train", find_in_mirror(mirror, "sst2", "train"), tmp_path / "o.parquet",
                   mirror=str(mirror), offline=True)
    message = str(info.value)
    assert f"the mirror {mirror} does not hold it" in message
    assert f"mirror {mirror / 'glue/SST-2/train.tsv'}" in message
    assert f"mirror {mirror / 'glue/SST-2/train.first20000lines.tsv'}" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message


def test_build_glue_bad_file_leaves_no_output(tmp_path):
    source = write(tmp_path / "bad.tsv", "gj04\t1\t\tGood.\ngj04\tx\t*\tBad label.\n")
    out_dir = tmp_path / "out"
    with pytest.raises(InputFormatError, match="line 2"):
        build_glue("cola", "dev", [source], out_dir / "cola.parquet", mirror=None, offline=True)
    assert not (out_dir / "cola.parquet").exists()
    assert no_partials(tmp_path) == []


def test_write_table_is_atomic_when_writing_fails(tmp_path, monkeypatch):
    destination = tmp_path / "t.parquet"
    atlas_io.write_table(pa.table({"x": [1, 2]}), destination)
    assert pq.read_table(destination)["x"].to_pylist() == [1, 2]

    def broken_write(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(atlas_io.pq, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        atlas_io.write_table(pa.table({"x": [3]}), destination)
    with pytest.raises(OSError, match="disk full"):
        atlas_io.write_table(pa.table({"x": [3]}), tmp_path / "new.parquet")
    monkeypatch.undo()
    # The complete earlier file is untouched, the new one never appears, no temp file is left.
    assert pq.read_table(destination)["x"].to_pylist() == [1, 2]
    assert not (tmp_path / "new.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]

