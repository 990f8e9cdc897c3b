"""Treebanks in CoNLL-X and Malt-TAB, read into the same ``Sentence`` objects as CoNLL-U.

The probing steps only need words, tags and heads, so older dependency treebanks
can stand in for UD ones: CoNLL-X (the CoNLL 2006/2007 shared-task format) and the
three-column Malt-TAB format of the WSJ Penn Treebank sample that NLTK distributes.
Neither has a sentence-text comment, so the text is the words joined by single
spaces and every word's character span is its place in that text. Their tags are
Penn Treebank tags (Malt-TAB, CoNLL-X POSTAG), which ``PTB_TO_UPOS`` maps onto UD's
UPOS so that per-tag results can be compared with the UD treebanks. Bad input is
rejected with the file, the line and the fix, like ``parse_conllu`` does, and the
tree checks are the same (``ud_checks.check_tree``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core.errors import InputFormatError
from .text_files import open_text
from .ud import Sentence, Word, parse_conllu
from .ud_checks import check_tree

# The conversion table of the UD English treebanks (and Stanford's converter) for the
# 45 PTB tags plus the OntoNotes/EWT additions (ADD, AFX, GW, HYPH, NFP, XX).
PTB_TO_UPOS: dict[str, str] = {
    "NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN",
    "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB",
    "MD": "AUX",
    "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ", "AFX": "ADJ",
    "RB": "ADV", "RBR": "ADV", "RBS": "ADV", "WRB": "ADV",
    "RP": "ADP", "IN": "ADP",
    "DT": "DET", "PDT": "DET", "WDT": "DET",
    "PRP": "PRON", "PRP$": "PRON", "WP": "PRON", "WP$": "PRON", "EX": "PRON",
    "CC": "CCONJ", "CD": "NUM", "TO": "PART", "POS": "PART", "UH": "INTJ",
    "SYM": "SYM", "$": "SYM", "#": "SYM",
    ",": "PUNCT", ".": "PUNCT", ":": "PUNCT", "``": "PUNCT", "''": "PUNCT",
    "-LRB-": "PUNCT", "-RRB-": "PUNCT", "HYPH": "PUNCT", "NFP": "PUNCT",
    "FW": "X", "LS": "X", "-NONE-": "X", "ADD": "X", "GW": "X", "XX": "X",
}

FORMATS = ("conllu", "conllx", "malt_tab")
_TAGSETS = ("upos", "ptb")
# A whole number as the formats write it; int() alone would also take "+3", " 3" or "٣".
_INTEGER = re.compile(r"-?[0-9]+")
_HEAD_FIX = "HEAD is the number of the word's head in this sentence (1, 2, ...), or 0 for the root"


def ptb_to_upos(tag: str) -> str:
    """The UPOS of a Penn Treebank tag; "X" (UD's 'other') for a tag the table does not know."""
    return PTB_TO_UPOS.get(tag, "X")


def _check_tagset(tagset: str) -> None:
    if tagset not in _TAGSETS:
        raise InputFormatError("tagset", None, f"unknown tagset {tagset!r}",
                               f"use one of {', '.join(_TAGSETS)}")


def _blocks(path: Path, *, skip_comments: bool) -> Iterator[list[tuple[int, str]]]:
    """Yield each blank-line-separated block as (1-based line number, line without newline) pairs."""
    block: list[tuple[int, str]] = []
    # utf-8-sig: a leading byte-order mark is dropped, as in the CoNLL-U and CSV/TSV readers, not glued
    # to the first word.
    with open_text(path, encoding="utf-8-sig") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                if block:
                    yield block
                block = []
            # Only CoNLL-X skips comments: in Malt-TAB "#" is a word (tagged #), not a comment.
            elif not (skip_comments and line.startswith("#")):
                block.append((number, line))
    if block:
        yield block


# One word before the checks: (line, form, lemma, upos, xpos, raw HEAD, deprel).
_Row = tuple[int, str, str, str, str, str, str]


def _sentence(path: Path, rows: list[_Row], n_sentence: int, example_id: int) -> Sentence:
    """Build and check one sentence: HEADs whole numbers in 0..n, then a single tree."""
    sent_id = f"{path.stem}-{n_sentence}"
    n_words = len(rows)
    sentence = Sentence(example_id, sent_id, path.stem, " ".join(row[1] for row in rows), line=rows[0][0])
    cursor = 0
    for position, (line, form, lemma, upos, xpos, head, deprel) in enumerate(rows, start=1):
        if not _INTEGER.fullmatch(head):
            raise InputFormatError(path, line, f"HEAD {head!r} of word {position} ({form!r}) in sentence "
                                   f"{sent_id!r} is not an integer", _HEAD_FIX)
        head_id = int(head)
        if not 0 <= head_id <= n_words:
            raise InputFormatError(path, line, f"HEAD {head_id} of word {position} ({form!r}) is not a word of "
                                   f"sentence {sent_id!r} (1..{n_words}) or 0", _HEAD_FIX)
        # Words are joined by one space, so each starts one character after the previous one ends.
        sentence.words.append(Word(
            form=form, lemma=lemma, upos=upos, xpos=xpos, head=head_id - 1, deprel=deprel,
            start=cursor, end=cursor + len(form), mwt=-1, entity=None, line=line,
        ))
        cursor += len(form) + 1
    check_tree(sentence, path)
    return sentence


def _parse(path: str | Path, *, skip_comments: bool, name: str,
           read_row: Callable[[Path, int, str, int], _Row]) -> list[Sentence]:
    """The loop both formats share; ``read_row(path, line number, line, position)`` splits one word line."""
    path = Path(path)
    sentences: list[Sentence] = []
    for block in _blocks(path, skip_comments=skip_comments):
        rows = [read_row(path, number, line, position) for position, (number, line) in enumerate(block, start=1)]
        sentences.append(_sentence(path, rows, len(sentences) + 1, len(sentences)))
    if not sentences:
        raise InputFormatError(path, None, "no sentences found (the file has no word lines)",
                               f"is this a {name} file?")
    return sentences


def _no_empty_column(path: Path, number: int, columns: list[str], names: tuple[str, ...]) -> None:
    # Two tabs in a row leave an empty column, which would shift the meaning of the others.
    for name, value in zip(names, columns):
        if value == "":
            raise InputFormatError(path, number, f"column {name} is empty",
                                   "separate the columns by exactly one tab and write '_' for a missing value")


_CONLLX_COLUMNS = ("ID", "FORM", "LEMMA", "CPOSTAG", "POSTAG", "FEATS", "HEAD", "DEPREL", "PHEAD", "PDEPREL")


def parse_conllx(path: str | Path, *, tagset: str = "upos") -> list[Sentence]:
    """Parse a CoNLL-X file; UPOS is CPOSTAG (tagset "upos") or POSTAG mapped by ``ptb_to_upos`` ("ptb")."""
    _check_tagset(tagset)

    def read_row(path: Path, number: int, line: str, position: int) -> _Row:
        columns = line.split("\t")
        if len(columns) != 10:
            raise InputFormatError(path, number, f"line has {len(columns)} tab-separated columns, CoNLL-X needs 10",
                                   "separate " + " ".join(_CONLLX_COLUMNS) + " by tabs")
        _no_empty_column(path, number, columns, _CONLLX_COLUMNS)
        word_id, form, lemma, cpostag, postag, _feats, head, deprel = columns[:8]
        # Heads are turned into list indices (ID - 1), which is only right if IDs are 1..n in order.
        if word_id != str(position):
            raise InputFormatError(path, number, f"word ID {word_id!r} where {position} was expected",
                                   "number the words of a sentence 1, 2, 3, ... in order, without gaps or repeats")
        upos = cpostag if tagset == "upos" else ptb_to_upos(postag)
        return number, form, lemma, upos, postag, head, deprel

    return _parse(path, skip_comments=True, name="CoNLL-X", read_row=read_row)


_MALT_COLUMNS = ("word", "tag", "head", "deprel")


def parse_malt_tab(path: str | Path, *, tagset: str = "ptb") -> list[Sentence]:
    """Parse a Malt-TAB file (word, tag, 1-based head, optional deprel); UPOS is the mapped tag
    (tagset "ptb") or the tag itself ("upos")."""
    _check_tagset(tagset)

    def read_row(path: Path, number: int, line: str, position: int) -> _Row:
        # Some copies use spaces instead of tabs; words never contain spaces in this format.
        columns = line.strip().split("\t") if "\t" in line else line.split()
        if len(columns) not in (3, 4):
            raise InputFormatError(path, number, f"line has {len(columns)} columns, Malt-TAB needs 3 "
                                   "(word, tag, head) or 4 (word, tag, head, deprel)",
                                   "write one word per line as word<TAB>tag<TAB>head[<TAB>deprel]")
        _no_empty_column(path, number, columns, _MALT_COLUMNS)
        form, tag, head = columns[:3]
        deprel = columns[3] if len(columns) == 4 else "_"
        upos = ptb_to_upos(tag) if tagset == "ptb" else tag
        return number, form, "_", upos, tag, head, deprel

    return _parse(path, skip_comments=False, name="Malt-TAB", read_row=read_row)


_DEFAULT_TAGSET = {"conllu": "upos", "conllx": "upos", "malt_tab": "ptb"}


def read_treebank(paths: list[Path | str], fmt: str, *, tagset: str | None = None) -> list[Sentence]:
    """Read the files in order into one list of sentences, example_id numbered 0.. across all of them.

    ``tagset`` None means the format's own default ("upos" for conllu and conllx, "ptb"
    for malt_tab); for conllu, "ptb" replaces UPOS by the XPOS column mapped through
    ``ptb_to_upos``.
    """
    if fmt not in FORMATS:
        raise InputFormatError("read_treebank", None, f"unknown treebank format {fmt!r}",
                               f"use one of {', '.join(FORMATS)}")
    if not paths:
        raise InputFormatError("read_treebank", None, f"no {fmt} files given",
                               "name at least one treebank file")
    tagset = _DEFAULT_TAGSET[fmt] if tagset is None else tagset
    _check_tagset(tagset)
    sentences: list[Sentence] = []
    for path in paths:
        path = Path(path)
        if fmt == "conllx":
            part = parse_conllx(path, tagset=tagset)
        elif fmt == "malt_tab":
            part = parse_malt_tab(path, tagset=tagset)
        else:
            part = parse_conllu(path)
            for sentence in part:
                # Files without '# newdoc id' are taken to be one document each.
                if sentence.doc_id is None:
                    sentence.doc_id = path.stem
                if tagset == "ptb":
                    for word in sentence.words:
                        word.upos = ptb_to_upos(word.xpos)
        sentences.extend(part)
    # Each parser numbers from 0 within its file; example_id must be unique across the treebank.
    for example_id, sentence in enumerate(sentences):
        sentence.example_id = example_id
    return sentences
