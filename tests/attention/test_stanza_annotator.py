"""The stanza annotator run for real, on tiny models trained offline by the session fixture ``tiny_stanza``.

The models learn the templated sentences of tests/support/stanza_models.py almost perfectly, so the words
and multi-word tokens below are what the tokenizer must give; the checks on trees are structural (one root
per sentence, heads inside their sentence and segment, renumbered from the text's first word).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.stanza_models import as_stanza_models
from workflow_scripts.attention.annotate import annotate_table, build_annotation
from workflow_scripts.attention.stanza_annotator import StanzaAnnotator, stanza_model_problems
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.tables import text_task_schema

pytestmark = pytest.mark.stanza


@pytest.fixture(scope="module")
def raw(tiny_stanza):
    return StanzaAnnotator(None, models=as_stanza_models(tiny_stanza))


def _sentences(heads: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each sentence: the words whose head chains reach the same root."""
    def root(i: int) -> int:
        while heads[i] != -1:
            i = heads[i]
        return i
    roots = [root(i) for i in range(len(heads))]
    return [(roots.index(r), len(roots) - roots[::-1].index(r)) for r in dict.fromkeys(roots)]


def test_raw_text_gives_words_offsets_multiword_tokens_and_heads_renumbered_across_sentences(raw):
    text = "The dog doesn't run. A cat sleeps."
    [result] = raw.annotate([text])
    assert result.words == ["The", "dog", "does", "n't", "run", ".", "A", "cat", "sleeps", "."]
    spans = list(zip(result.char_start, result.char_end))
    # the two words of a multi-word token share its span; every other word is its own text
    assert spans[2] == spans[3] == (8, 15) and text[8:15] == "doesn't"
    assert all(text[s:e] == w for w, (s, e) in zip(result.words, spans) if w not in ("does", "n't"))
    assert result.head.count(-1) == 2
    assert _sentences(result.head) == [(0, 6), (6, 10)]  # the second sentence's heads count from word 6
    assert all(0 <= h < len(result.words) for h in result.head if h != -1)
    assert result.lemmas == result.words  # no lemmatizer given: the lemma is the word
    assert set(result.upos) <= {"DET", "NOUN", "AUX", "PART", "VERB", "PUNCT", "ADJ", "PRON", "ADV", "ADP", "CCONJ"}


def test_a_text_pair_numbers_words_and_heads_across_both_segments(raw, tmp_path):
    table = pa.Table.from_pydict({"example_id": [0], "source_id": ["0"], "text_a": ["A cat sleeps."],
                                  "text_b": ["The dog doesn't run."], "label": [1]}, schema=text_task_schema(False))
    pq.write_table(table, tmp_path / "pair.parquet")
    row = annotate_table(tmp_path / "pair.parquet", raw).to_pylist()[0]
    assert row["words"] == ["A", "cat", "sleeps", ".", "The", "dog", "does", "n't", "run", "."]
    assert row["segment"] == [0] * 4 + [1] * 6
    assert _sentences(row["head"]) == [(0, 4), (4, 10)]  # segment b's heads count from its first word, 4
    assert row["char_start"][4:7] == [0, 4, 8] and row["char_end"][6:8] == [15, 15]  # offsets in text_b
    assert row["annotator"].startswith("stanza:")


def test_pretokenized_text_keeps_its_words_and_their_spans(tiny_stanza):
    annotator = StanzaAnnotator(None, models=as_stanza_models(tiny_stanza), pretokenized=True)
    text = "The  dog runs . A cat sleeps"
    [result] = annotator.annotate([text])
    assert result.words == ["The", "dog", "runs", ".", "A", "cat", "sleeps"]
    assert list(zip(result.char_start, result.char_end))[:3] == [(0, 3), (5, 8), (9, 13)]
    assert result.head.count(-1) == 1  # one text, one sentence: its words are not re-split


def test_the_annotation_table_records_the_annotator_and_its_models(tiny_stanza, tmp_path):
    table = pa.Table.from_pydict({"example_id": [0, 1], "source_id": ["0", "1"], "text_a": ["A cat sleeps.",
                                  "The dog runs."], "text_b": [None, None], "label": [0, 1]},
                                 schema=text_task_schema(False))
    pq.write_table(table, tmp_path / "dev.parquet")
    models = as_stanza_models(tiny_stanza)
    build_annotation("mine", tmp_path / "dev.parquet", tmp_path / "annotation.parquet", annotator="stanza",
                     spacy_model="unused", stanza_dir=None, offline=True, stanza_models=models)
    meta = read_metadata(tmp_path / "annotation.parquet")
    assert meta["annotator"].startswith("stanza:") and meta["annotator_models"] == models
    assert meta["pretokenized"] is False
    assert pq.read_table(tmp_path / "annotation.parquet")["words"].to_pylist() == [["A", "cat", "sleeps", "."],
                                                                                 ["The", "dog", "runs", "."]]


def test_missing_model_files_are_named_with_their_processor(tmp_path):
    models = {"pos": str(tmp_path / "pos.pt"), "depparse": str(tmp_path / "depparse.pt")}
    problems = stanza_model_problems(models, "annotation.stanza_models", raw_text=True)
    assert "config key 'annotation.stanza_models': no 'pos_pretrain' model" in problems[0]
    assert any(f"'annotation.stanza_models.pos': the stanza pos model {tmp_path / 'pos.pt'} is not a file" in p
               for p in problems)
    assert any("no 'tokenize' model, but the study annotates raw text" in p for p in problems)
    assert not any("tokenize" in p for p in stanza_model_problems(models, "k", raw_text=False))
