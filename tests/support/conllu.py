"""CoNLL-U text built by hand for the data tests: token lines, files, and a small GUM-like treebank."""

from __future__ import annotations

from pathlib import Path


def tok(id_, form, lemma="_", upos="_", xpos="_", head="_", deprel="_", misc="_") -> str:
    """One 10-column CoNLL-U token line."""
    return "\t".join(str(c) for c in (id_, form, lemma, upos, xpos, "_", head, deprel, "_", misc))


def mwt(id_, form, misc="_") -> str:
    return "\t".join([id_, form, "_", "_", "_", "_", "_", "_", "_", misc])


def write_conllu(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def line_of(path: Path, prefix: str, occurrence: int = 1) -> int:
    """1-based number of the ``occurrence``-th line of ``path`` that starts with ``prefix``."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith(prefix):
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"no line {prefix!r}")


# A small GUM-like file: two documents, multi-word tokens, nested and multiple mentions.
GUM_LINES = [
    "# newdoc id = doc1",
    "# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity",
    "# sent_id = doc1-1",
    "# text = Digital humanities won't wait.",
    tok(1, "Digital", "digital", "ADJ", "JJ", 2, "amod", "Entity=(1-abstract-new-sssss-cf1-1,2-coref"),
    tok(2, "humanities", "humanity", "NOUN", "NNS", 5, "nsubj", "Entity=1)"),
    mwt("3-4", "won't"),
    tok(3, "wo", "will", "AUX", "MD", 5, "aux"),
    tok(4, "n't", "not", "PART", "RB", 5, "advmod"),
    tok(5, "wait", "wait", "VERB", "VB", 0, "root", "SpaceAfter=No"),
    tok(6, ".", ".", "PUNCT", ".", 5, "punct"),
    "",
    "# sent_id = doc1-2",
    "# text = They can't stop the digital project.",
    tok(1, "They", "they", "PRON", "PRP", 4, "nsubj", "Entity=(1-abstract-giv:act-sssss-cf1-1-coref)"),
    mwt("2-3", "can't"),
    tok(2, "ca", "can", "AUX", "MD", 4, "aux"),
    tok(3, "n't", "not", "PART", "RB", 4, "advmod"),
    tok(4, "stop", "stop", "VERB", "VB", 0, "root"),
    tok(5, "the", "the", "DET", "DT", 7, "det",
        "Entity=(2-object-new-ssnns-cf2-1,2,3-coref(3-abstract-new-sssss-cf3-1,2-coref-Digital_humanities"),
    tok(6, "digital", "digital", "ADJ", "JJ", 7, "amod", "Entity=3)"),
    tok(7, "project", "project", "NOUN", "NN", 4, "obj", "Entity=(4-object-new-nnnnn-cf4-1-sgl)2)|SpaceAfter=No"),
    tok(8, ".", ".", "PUNCT", ".", 4, "punct"),
    "",
    "# sent_id = doc1-3",
    "# text = Big red dogs bark.",
    tok(1, "Big", "big", "ADJ", "JJ", 3, "amod", "Entity=(5-animal-new-sssss-cf5-1,2,3-coref"),
    tok(2, "red", "red", "ADJ", "JJ", 3, "amod", "Entity=(6-animal-new-sssss-cf6-1,2-sgl"),
    tok(3, "dogs", "dog", "NOUN", "NNS", 4, "nsubj", "Entity=6)5)"),
    tok(4, "bark", "bark", "VERB", "VBP", 0, "root", "SpaceAfter=No"),
    tok(5, ".", ".", "PUNCT", ".", 4, "punct"),
    "",
    "# newdoc id = doc2",
    "# sent_id = doc2-1",
    "# text = It works.",
    tok(1, "It", "it", "PRON", "PRP", 2, "nsubj", "Entity=(1-abstract-giv:inact-sssss-cf1-1-coref)"),
    tok(2, "works", "work", "VERB", "VBZ", 0, "root", "SpaceAfter=No"),
    tok(3, ".", ".", "PUNCT", ".", 2, "punct"),
]


def gold_treebank(folder: Path, conllu: str) -> tuple[Path, Path]:
    """The data table and gold annotation table of a CoNLL-U text, written in ``folder``: (data, annotation)."""
    from workflow_scripts.attention.annotate import gold_annotation
    from workflow_scripts.core.io import write_table
    from workflow_scripts.data.ud import parse_conllu, treebank_table

    source = folder / "s.conllu"
    source.write_text(conllu)
    data = folder / "data.parquet"
    write_table(treebank_table(parse_conllu(source)), data)
    annotation = folder / "annotation.parquet"
    write_table(gold_annotation(data), annotation)
    return data, annotation
