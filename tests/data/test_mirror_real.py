"""The parsers on the real offline mirror (ATLAS_TEST_MIRROR or ../shared/data); skipped when it is absent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from support.entries import UD
from support.paths import SHARED_DATA
from workflow_scripts.data.glove import parse_glove_file
from workflow_scripts.data.glue import parse_glue_tsv
from workflow_scripts.data.registry import find_in_mirror
from workflow_scripts.data.ud import mention_table, parse_conllu, treebank_table
from workflow_scripts.data.wic import parse_wic_files
from workflow_scripts.data.wiki import sample_segments

MIRROR = SHARED_DATA  # ATLAS_TEST_MIRROR, or ../shared/data beside the clone

pytestmark = [
    pytest.mark.mirror,
    pytest.mark.skipif(not MIRROR.is_dir(), reason=f"offline mirror {MIRROR} is absent"),
]


def mirror_file(corpus: str, split: str) -> list[Path]:
    files = find_in_mirror(MIRROR, corpus, split, UD[corpus].mirror_candidates(split) if corpus in UD else None)
    if not files:
        pytest.skip(f"the mirror {MIRROR} does not hold {corpus}/{split}")
    return files


@pytest.fixture(scope="module")
def ewt_dev():
    return parse_conllu(mirror_file("ewt", "dev")[0])


@pytest.fixture(scope="module")
def gum_dev():
    path = mirror_file("gum", "dev")[0]
    return path, parse_conllu(path)


def test_ewt_dev_counts(ewt_dev):
    assert len(ewt_dev) == 2001
    assert sum(len(s.words) for s in ewt_dev) == 25147
    table = treebank_table(ewt_dev)
    assert table.num_rows == 2001
    assert sum(len(h) for h in table["head"].to_pylist()) == 25147
    assert ewt_dev[0].doc_id is not None


def test_ewt_dev_char_spans_equal_forms(ewt_dev):
    mismatched = []
    n_mwt_words = 0
    for sentence in ewt_dev:
        roots = [w for w in sentence.words if w.head == -1]
        assert len(roots) == 1, sentence.sent_id
        for word in sentence.words:
            assert 0 <= word.start < word.end <= len(sentence.text)
            assert -1 <= word.head < len(sentence.words)
            if word.mwt != -1:
                n_mwt_words += 1
                continue
            if sentence.text[word.start:word.end] != word.form:
                mismatched.append((sentence.sent_id, word.form))
    assert mismatched == []
    # EWT dev has multi-word tokens (it's, don't, ...): their parts were covered too.
    assert n_mwt_words > 0


def test_ewt_dev_multiword_tokens_spell_out(ewt_dev):
    # "won't" = "wo" + "n't": the parts of a multi-word token tile its surface span.
    for sentence in ewt_dev:
        groups: dict[int, list] = {}
        for word in sentence.words:
            if word.mwt != -1:
                groups.setdefault(word.mwt, []).append(word)
        assert sorted(groups) == list(range(len(groups)))
        for parts in groups.values():
            assert len(parts) >= 2
            surface = sentence.text[parts[0].start:parts[-1].end]
            if "".join(p.form for p in parts).lower() == surface.lower():
                assert all(a.end == b.start for a, b in zip(parts, parts[1:]))


def test_gum_dev_mentions(gum_dev):
    path, sentences = gum_dev
    table = mention_table(sentences, path)
    assert table.num_rows == 7897
    rows = table.to_pylist()
    for row in rows[:2000]:
        assert row["start"] <= row["head"] < row["end"]
        assert 0 <= row["chain_position"] < row["chain_size"]
        if row["chain_position"] == 0:
            assert row["antecedent"] == -1
        else:
            antecedent = rows[row["antecedent"]]
            assert (antecedent["doc_id"], antecedent["entity"]) == (row["doc_id"], row["entity"])
            assert antecedent["chain_position"] == row["chain_position"] - 1
    links = Counter(table["link"].to_pylist())
    assert links["coref"] > 0 and links["sgl"] > 0
    # The first sentence of GUM dev is "Introduction", a one-word singleton mention.
    assert rows[0]["text"] == "Introduction"
    assert (rows[0]["start"], rows[0]["end"], rows[0]["link"]) == (0, 1, "sgl")


def test_cola_dev():
    table = parse_glue_tsv("cola", mirror_file("cola", "dev")[0])
    assert table.num_rows == 1043
    assert set(table["label"].to_pylist()) == {0, 1}
    assert table["text_a"][0].as_py() == "The sailors rode the breeze clear of the rocks."
    assert table["label"][0].as_py() == 1


def test_mrpc_dev():
    table = parse_glue_tsv("mrpc", mirror_file("mrpc", "dev")[0])
    assert table.num_rows == 408
    assert set(table["label"].to_pylist()) == {0, 1}
    assert table["label"][0].as_py() == 1
    # The literal quote that opens the first row's second sentence stays text.
    assert table["text_b"][0].as_py().startswith('"The foodservice pie business')


def test_stsb_dev():
    table = parse_glue_tsv("stsb", mirror_file("stsb", "dev")[0])
    assert table.num_rows == 1500
    labels = table["label"].to_pylist()
    assert min(labels) >= 0.0 and max(labels) <= 5.0
    assert labels[:2] == [5.0, 4.75]


@pytest.mark.parametrize(("task", "rows", "labels"), [
    ("sst2", 872, {0, 1}),
    ("rte", 277, {0, 1}),
    ("qnli", 5463, {0, 1}),
    ("wnli", 71, {0, 1}),
])
def test_other_glue_dev(task, rows, labels):
    table = parse_glue_tsv(task, mirror_file(task, "dev")[0])
    assert table.num_rows == rows
    assert set(table["label"].to_pylist()) == labels


def test_wic_dev():
    data, gold = mirror_file("wic", "dev")
    table = parse_wic_files(data, gold)
    assert table.num_rows == 638
    assert set(table["label"].to_pylist()) == {0, 1}
    first = table.slice(0, 1).to_pylist()[0]
    assert (first["word"], first["pos"], first["word_index_a"], first["word_index_b"], first["label"]) == \
        ("board", "N", 2, 2, 0)


def test_wiki_segments_from_mirror():
    (source,) = mirror_file("wiki", "segments")
    with open(source, encoding="utf-8") as handle:
        lines = handle.readlines()
    table = sample_segments(lines, n_segments=50, seed=13, max_words=128, source_name=str(source))
    assert table.num_rows == 50
    for a, b in zip(table["text_a"].to_pylist(), table["text_b"].to_pylist()):
        assert 0 < len(a.split()) and len(a.split()) + len(b.split()) <= 128
        assert " @-@ " not in a and " @-@ " not in b


def test_glove_from_mirror():
    (source,) = mirror_file("glove", "vectors")
    table = parse_glove_file(source, max_words=1000)
    assert table.num_rows == 1000
    assert table.schema.field("vector").type.list_size == 50
    assert table["word"][0].as_py() == "the"
    assert table["vector"][0].as_py()[0] == pytest.approx(0.418)
