"""GUM coreference mentions: spans, heads, chains and the errors of unreadable Entity values."""

from __future__ import annotations

import pytest

from support.conllu import line_of, tok, write_conllu
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.data.tables import MENTION_SCHEMA
from workflow_scripts.data.ud import mention_table, parse_conllu

# --- coreference mentions -------------------------------------------------------------------


def test_mentions(gum_file):
    table = mention_table(parse_conllu(gum_file), gum_file)
    assert table.schema.equals(MENTION_SCHEMA)
    rows = table.to_pylist()
    assert [(r["doc_id"], r["entity"], r["sent_id"], r["start"], r["end"]) for r in rows] == [
        ("doc1", "1", "doc1-1", 0, 2),   # Digital humanities
        ("doc1", "1", "doc1-2", 0, 1),   # They (single-word mention)
        ("doc1", "2", "doc1-2", 4, 7),   # the digital project (two opened on one word)
        ("doc1", "3", "doc1-2", 4, 6),   # the digital
        ("doc1", "4", "doc1-2", 6, 7),   # project ("(4-...-sgl)2)": single, then a close)
        ("doc1", "5", "doc1-3", 0, 3),   # Big red dogs ("6)5)" closes two)
        ("doc1", "6", "doc1-3", 1, 3),   # red dogs
        ("doc2", "1", "doc2-1", 0, 1),   # It: entity 1 again, but another document
    ]
    assert [r["mention_id"] for r in rows] == list(range(8))
    assert [r["example_id"] for r in rows] == [0, 1, 1, 1, 1, 2, 2, 3]
    assert [r["text"] for r in rows] == ["Digital humanities", "They", "the digital project", "the digital",
                                         "project", "Big red dogs", "red dogs", "It"]
    # Head: the span word whose head is outside the span (the first of the shallowest on a tie).
    assert [r["head"] for r in rows] == [1, 0, 6, 4, 6, 2, 2, 0]
    assert [r["head_form"] for r in rows] == ["humanities", "They", "project", "the", "project", "dogs",
                                              "dogs", "It"]
    assert [r["head_upos"] for r in rows][:3] == ["NOUN", "PRON", "NOUN"]
    assert [r["etype"] for r in rows] == ["abstract", "abstract", "object", "abstract", "object", "animal",
                                          "animal", "abstract"]
    assert [r["infstat"] for r in rows][:2] == ["new", "giv:act"]
    assert [r["link"] for r in rows] == ["coref", "coref", "coref", "coref", "sgl", "coref", "sgl", "coref"]
    assert [r["identity"] for r in rows] == [None, None, None, "Digital_humanities", None, None, None, None]
    # Chains are per (document, entity), in document order.
    assert [r["chain_position"] for r in rows] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [r["chain_size"] for r in rows] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert [r["antecedent"] for r in rows] == [-1, 0, -1, -1, -1, -1, -1, -1]
    # The line of each mention is the line of the word that opens it.
    assert rows[0]["line"] == line_of(gum_file, "1\tDigital")
    assert rows[2]["line"] == rows[3]["line"] == line_of(gum_file, "5\tthe")
    assert rows[4]["line"] == line_of(gum_file, "7\tproject")
    assert rows[6]["line"] == line_of(gum_file, "2\tred")


def test_nested_mentions_of_the_same_entity_close_innermost_first(tmp_path):
    path = write_conllu(tmp_path / "nested.conllu", [
        "# newdoc id = d",
        "# text = friends of friends",
        tok(1, "friends", head=0, deprel="root", misc="Entity=(1-person-new-s-cf1-1-coref"),
        tok(2, "of", head=3, deprel="case"),
        tok(3, "friends", head=1, deprel="nmod", misc="Entity=(1-person-giv-s-cf1-1-coref)1)"),
    ])
    rows = mention_table(parse_conllu(path), path).to_pylist()
    assert [(r["start"], r["end"], r["infstat"]) for r in rows] == [(0, 3, "new"), (2, 3, "giv")]
    assert [r["head"] for r in rows] == [0, 2]
    assert [r["antecedent"] for r in rows] == [-1, 0]
    assert [r["chain_size"] for r in rows] == [2, 2]


def test_mention_never_closed(tmp_path):
    path = write_conllu(tmp_path / "unclosed.conllu", [
        "# sent_id = s1",
        "# text = A big dog barks",
        tok(1, "A", head=3, deprel="det", misc="Entity=(1-animal-new-sssss-cf1-3-coref"),
        tok(2, "big", head=3, deprel="amod", misc="Entity=(2-abstract-new-sssss-cf2-1-sgl)"),
        tok(3, "dog", head=4, deprel="nsubj"),
        tok(4, "barks", head=0, deprel="root"),
        "",
        "# sent_id = s2",
        "# text = It ends",
        tok(1, "It", head=2, deprel="nsubj", misc="Entity=1)"),
        tok(2, "ends", head=0, deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 3: mention of entity 1 opened here never closes within sentence s1")


def test_mention_closed_without_open(tmp_path):
    path = write_conllu(tmp_path / "noopen.conllu", [
        "# sent_id = s1",
        "# text = A dog barks",
        tok(1, "A", head=2, deprel="det", misc="Entity=(1-animal-new-sssss-cf1-2-coref"),
        tok(2, "dog", head=3, deprel="nsubj", misc="Entity=9)1)"),
        tok(3, "barks", head=0, deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    assert str(info.value).startswith(f"{path}, line 4: mention of entity 9 closes but was never opened")


@pytest.mark.parametrize("value", ["()", "1-abstract", "(1-a-new-s-cf1-1-coref)x"])
def test_unreadable_entity_value(tmp_path, value):
    path = write_conllu(tmp_path / "weird.conllu", [
        "# text = Odd one",
        tok(1, "Odd", head=2, deprel="amod"),
        tok(2, "one", head=0, deprel="root", misc=f"Entity={value}"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    assert str(info.value).startswith(f"{path}, line 3: ")

