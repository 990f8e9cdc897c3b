"""A user's own task files (CSV, TSV, JSON Lines, a hub dataset) to the normalised text-task table.

Every file is written here with its rows, labels and line numbers known by construction; every bad
case checks that the error names the file, the line (or hub row), the entry and the config key to change.
"""

from __future__ import annotations

import gzip
import math

import datasets
import pyarrow as pa
import pytest

from support.source_files import write
from workflow_scripts.core.errors import ConfigError, InputFormatError
from workflow_scripts.data.tables import text_task_schema
from workflow_scripts.data.task_files import load_task_from_hub, read_task_file, task_file_format

SENTIMENT = {"text": ["sentence"], "label": "sentiment", "kind": "classification",
             "labels": ["negative", "positive"]}


def read(path, fmt=None, **task):
    return read_task_file(path, entry="mytask", fmt=fmt, **{**SENTIMENT, **task})


def error_of(path, fmt=None, **task) -> InputFormatError:
    with pytest.raises(InputFormatError) as caught:
        read(path, fmt, **task)
    return caught.value


def names(error: InputFormatError, path, line: int | None, *keys: str) -> None:
    """The error names the file, the line, the entry and each given key."""
    message = str(error)
    assert str(path) in message and error.line == line
    assert (f", line {line}:" in message) == (line is not None)
    assert "task entry 'mytask'" in message
    for key in keys:
        assert key in message, (key, message)


# --- well-formed files ------------------------------------------------------------


def test_csv_single_text_labels_by_position(tmp_path):
    path = write(tmp_path / "train.csv",
                 "sentence,sentiment\n"
                 "A fine film.,positive\n"
                 "Dull.,negative\n"
                 "  Loved it!  , positive \n", bom=True)
    table = read(path)
    assert table.schema == text_task_schema(False)
    assert table["example_id"].to_pylist() == [0, 1, 2]
    # No id field: the source id is the line where the row starts (the header is line 1).
    assert table["source_id"].to_pylist() == ["2", "3", "4"]
    assert table["text_a"].to_pylist() == ["A fine film.", "Dull.", "  Loved it!  "]
    assert table["text_b"].to_pylist() == [None, None, None]
    # Class ids are positions in the declared list, not in the file's order; labels are stripped.
    assert table["label"].to_pylist() == [1, 0, 1]
    # Declared in the other order, the ids swap.
    assert read(path, labels=["positive", "negative"])["label"].to_pylist() == [0, 1, 0]


def test_csv_quoted_comma_and_newline_keep_line_numbers(tmp_path):
    path = write(tmp_path / "dev.csv",
                 "sentence,sentiment\n"                        # line 1
                 '"Good, and\nlong ""quoted"" text.",positive\n'  # lines 2-3
                 "\n"                                            # line 4, blank
                 "Bad.,negative\n"                               # line 5
                 "Odd.,neutral\n")                               # line 6
    names(error_of(path), path, 6, "'neutral'", "tasks.mytask.labels")
    table = read(path, labels=["negative", "positive", "neutral"])
    assert table["text_a"].to_pylist() == ['Good, and\nlong "quoted" text.', "Bad.", "Odd."]
    assert table["source_id"].to_pylist() == ["2", "5", "6"]
    assert table["label"].to_pylist() == [1, 0, 2]


def test_crlf_line_endings(tmp_path):
    path = write(tmp_path / "dev.csv", 'sentence,sentiment\r\n"Two\r\nlines.",positive\r\nBad.,negatve\r\n')
    names(error_of(path), path, 4, "'negatve'")


def test_tsv_pair_task_with_quotes_and_id(tmp_path):
    path = write(tmp_path / "train.tsv",
                 "id\tpremise\thypothesis\tgold\n"
                 'p1\tA man "sleeps".\tSomeone rests.\tentailment\n'
                 "p2\tA cat.\tNo animal.\tcontradiction\n")
    table = read(path, text=["premise", "hypothesis"], label="gold", labels=["entailment", "contradiction"])
    assert table["text_a"].to_pylist() == ['A man "sleeps".', "A cat."]
    assert table["text_b"].to_pylist() == ["Someone rests.", "No animal."]
    assert table["label"].to_pylist() == [0, 1]
    assert table["source_id"].to_pylist() == ["p1", "p2"]


def test_jsonl_integer_labels_idx_and_blank_lines(tmp_path):
    path = write(tmp_path / "train.jsonl",
                 '{"idx": 7, "sentence": "Yes.", "sentiment": 1}\n'
                 "\n"
                 '{"idx": 9, "sentence": "No.", "sentiment": 0}\n'
                 '{"sentence": "Maybe.", "sentiment": "1"}\n')
    table = read(path, labels=[0, 1])
    assert table["label"].to_pylist() == [1, 0, 1]
    # idx when the row has one, else the line (4).
    assert table["source_id"].to_pylist() == ["7", "9", "4"]


def test_jsonl_booleans_match_either_spelling(tmp_path):
    path = write(tmp_path / "train.jsonl",
                 '{"sentence": "a", "sentiment": true}\n{"sentence": "b", "sentiment": false}\n')
    assert read(path, labels=["false", "true"])["label"].to_pylist() == [1, 0]
    assert read(path, labels=[False, True])["label"].to_pylist() == [1, 0]
    csv_path = write(tmp_path / "train.csv", "sentence,sentiment\na,true\nb,False\n")
    assert read(csv_path, labels=[False, True])["label"].to_pylist() == [1, 0]


def test_jsonl_regression(tmp_path):
    path = write(tmp_path / "train.jsonl",
                 '{"s1": "A.", "s2": "B.", "score": 4.5}\n{"s1": "C.", "s2": "D.", "score": "2"}\n')
    table = read(path, text=["s1", "s2"], label="score", kind="regression", labels=None)
    assert table.schema == text_task_schema(True)
    assert table["label"].to_pylist() == [4.5, 2.0]
    assert table["text_b"].to_pylist() == ["B.", "D."]


def test_gzipped_file_and_explicit_format(tmp_path):
    path = tmp_path / "train.data.gz"
    path.write_bytes(gzip.compress(b"sentence\tsentiment\nGood.\tpositive\n"))
    assert read(path, fmt="tsv")["label"].to_pylist() == [1]


def test_format_from_suffix():
    assert [task_file_format(name, None) for name in ("a.csv", "a.TSV", "a.tab", "a.json", "a.ndjson",
                                                      "a.jsonl.gz", "a.csv.gz")] == \
        ["csv", "tsv", "tsv", "jsonl", "jsonl", "jsonl", "csv"]
    assert task_file_format("a.txt", "tsv") == "tsv"
    with pytest.raises(ConfigError, match="tasks.mytask.format"):
        task_file_format("a.csv", "xlsx", entry="mytask")


# --- bad files --------------------------------------------------------------------


def test_missing_text_field_lists_the_header(tmp_path):
    path = write(tmp_path / "train.csv", "text,sentiment\nGood.,positive\n")
    error = error_of(path)
    names(error, path, 1, "'sentence'", "['text', 'sentiment']", "tasks.mytask.text")


def test_missing_label_field(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,polarity\nGood.,positive\n")
    names(error_of(path), path, 1, "'sentiment'", "tasks.mytask.label")


def test_tab_separated_file_read_as_csv_says_so(tmp_path):
    path = write(tmp_path / "train.csv", "sentence\tsentiment\nGood.\tpositive\n")
    names(error_of(path), path, 1, "tasks.mytask.text", "set tasks.mytask.format to tsv")


def test_jsonl_row_missing_a_field_names_that_row(tmp_path):
    path = write(tmp_path / "train.jsonl", '{"sentence": "a", "sentiment": 1}\n\n{"sentence": "b"}\n')
    names(error_of(path, labels=[0, 1]), path, 3, "'sentiment'", "tasks.mytask.label")


def test_label_outside_the_set(tmp_path):
    path = write(tmp_path / "train.tsv", "sentence\tsentiment\nGood.\tpositive\nMeh.\tmixed\n")
    names(error_of(path), path, 3, "'mixed'", "['negative', 'positive']", "tasks.mytask.labels")


def test_integer_label_outside_the_set(tmp_path):
    path = write(tmp_path / "train.jsonl", '{"sentence": "a", "sentiment": 1}\n{"sentence": "b", "sentiment": 2}\n')
    names(error_of(path, labels=[0, 1]), path, 2, "label 2", "tasks.mytask.labels")


def test_regression_label_not_a_number(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,score\nA.,1.5\nB.,high\nC.,nan\n")
    error = error_of(path, label="score", kind="regression", labels=None)
    names(error, path, 3, "'high'", "not a finite number", "tasks.mytask.label")
    nan = write(tmp_path / "nan.csv", "sentence,score\nA.,1.5\nC.,nan\n")
    names(error_of(nan, label="score", kind="regression", labels=None), nan, 3, "'nan'")


def test_malformed_json_line(tmp_path):
    path = write(tmp_path / "train.jsonl", '{"sentence": "a", "sentiment": 1}\n{"sentence": "b", "sentiment": 0,}\n')
    names(error_of(path, labels=[0, 1]), path, 2, "malformed JSON", "JSON Lines")


def test_json_array_file_is_not_json_lines(tmp_path):
    path = write(tmp_path / "train.json", '[{"sentence": "a", "sentiment": 1}]\n')
    names(error_of(path, labels=[0, 1]), path, 1, "JSON list, not an object")


def test_wrong_number_of_columns(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,sentiment\nGood.,positive\nGood, really.,positive\n")
    names(error_of(path), path, 3, "expected 2 columns", "found 3", "double-quoted")


def test_unbalanced_quote_points_at_the_row_that_opens_it(tmp_path):
    path = write(tmp_path / "train.csv", 'sentence,sentiment\n"Good.,positive\nBad.,negative\n')
    names(error_of(path), path, 2, "found 1", "lines 2-3", "unbalanced")


def test_empty_text(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,sentiment\nGood.,positive\n  ,negative\n")
    names(error_of(path), path, 3, "empty text in field 'sentence'")


def test_empty_and_header_only_files(tmp_path):
    empty = write(tmp_path / "empty.csv", "")
    names(error_of(empty), empty, 1, "the file is empty")
    header = write(tmp_path / "header.tsv", "sentence\tsentiment\n\n")
    names(error_of(header), header, 1, "no rows")
    blank = write(tmp_path / "blank.jsonl", "\n\n")
    names(error_of(blank, labels=[0, 1]), blank, 1, "no rows")


def test_unknown_suffix(tmp_path):
    path = write(tmp_path / "train.txt", "sentence,sentiment\nGood.,positive\n")
    error = error_of(path)
    names(error, path, None, "tasks.mytask.format")


def test_bad_entries_are_config_errors(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,sentiment\nGood.,positive\n")
    with pytest.raises(ConfigError, match="tasks.mytask.labels"):
        read(path, labels=["positive"])
    with pytest.raises(ConfigError, match="tasks.mytask.labels"):
        read(path, labels=[1, "1"])
    with pytest.raises(ConfigError, match="tasks.mytask.kind"):
        read(path, kind="ranking")
    with pytest.raises(ConfigError, match="tasks.mytask.text"):
        read(path, text=["a", "b", "c"])


# --- hub datasets (a fake load_dataset; no network) -------------------------------


@pytest.fixture
def hub(monkeypatch):
    """Serve ``datasets.Dataset.from_dict`` tables as hub datasets; records the call."""
    served: dict = {}

    def fake_load_dataset(name, config=None, *, split, revision=None):
        served["call"] = (name, config, split, revision)
        return served["data"]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    return served


def class_label_data(labels: list[int], names_: list[str]) -> datasets.Dataset:
    features = datasets.Features({"idx": datasets.Value("int32"), "sentence": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=names_)})
    return datasets.Dataset.from_dict({"idx": list(range(10, 10 + len(labels))),
                                       "sentence": [f"s{i}" for i in range(len(labels))], "label": labels},
                                      features=features)


def from_hub(**task):
    args = {"entry": "mytask", "dataset": "user/sentiment", "config": "default", "revision": "abc", "split": "train",
            "text": ["sentence"], "label": "label", "kind": "classification", "labels": ["negative", "positive"]}
    return load_task_from_hub(**{**args, **task})


def test_hub_class_label_mapped_by_name(hub):
    hub["data"] = class_label_data([0, 1, 1], ["negative", "positive"])
    table = from_hub(labels=["positive", "negative"])
    assert hub["call"] == ("user/sentiment", "default", "train", "abc")
    assert table["label"].to_pylist() == [1, 0, 0]
    assert table["source_id"].to_pylist() == ["10", "11", "12"]
    assert table["text_a"].to_pylist() == ["s0", "s1", "s2"]
    # Labels declared as the ids themselves.
    assert from_hub(labels=[0, 1])["label"].to_pylist() == [0, 1, 1]


def test_hub_unlabelled_and_unknown_labels_name_the_row(hub):
    hub["data"] = class_label_data([0, -1], ["negative", "positive"])
    with pytest.raises(InputFormatError) as caught:
        from_hub()
    message = str(caught.value)
    assert "user/sentiment" in message and "row 1" in message and "unlabelled" in message
    assert "tasks.mytask.splits" in message
    hub["data"] = class_label_data([0, 2], ["negative", "positive", "neutral"])
    with pytest.raises(InputFormatError, match=r"row 1.*'neutral'.*tasks\.mytask\.labels"):
        from_hub()


def test_hub_missing_column_lists_the_columns(hub):
    hub["data"] = class_label_data([0], ["negative", "positive"])
    with pytest.raises(InputFormatError) as caught:
        from_hub(text=["text"])
    message = str(caught.value)
    assert "user/sentiment" in message and "task entry 'mytask'" in message and "tasks.mytask.text" in message
    assert "['idx', 'sentence', 'label']" in message


def test_hub_regression_and_plain_string_labels(hub):
    hub["data"] = datasets.Dataset.from_dict({"a": ["x", "y"], "b": ["u", "v"], "score": [0.5, 3.0]})
    table = from_hub(text=["a", "b"], label="score", kind="regression", labels=None)
    assert table["label"].to_pylist() == [0.5, 3.0] and table["source_id"].to_pylist() == ["0", "1"]
    hub["data"] = datasets.Dataset.from_dict({"a": ["x"], "score": [math.inf]})
    with pytest.raises(InputFormatError, match="row 0.*not a finite number"):
        from_hub(text=["a"], label="score", kind="regression", labels=None)
    hub["data"] = datasets.Dataset.from_dict({"a": ["x", "y"], "tag": ["pos", "neg"]})
    assert from_hub(text=["a"], label="tag", labels=["neg", "pos"])["label"].to_pylist() == [1, 0]
    assert isinstance(from_hub(text=["a"], label="tag", labels=["neg", "pos"]), pa.Table)
