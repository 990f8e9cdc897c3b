"""Checks of CoNLL-U input that ``conllu`` does not make, with errors on the offending line.

``conllu`` parses a sentence block as a whole and accepts any HEAD values, so a
bad HEAD would be reported for the whole block, and a sentence with no root, two
roots or a cycle would pass silently and make every later walk up the tree loop
or answer arbitrarily.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import conllu

from ..core.errors import InputFormatError

if TYPE_CHECKING:
    from .ud_sentence import Sentence

# What ``conllu`` accepts as an integer field (no sign on 0, no leading zeros); HEAD is
# checked against it before parsing so that a bad HEAD is reported on its own line.
_INTEGER = re.compile(r"0|-?[1-9][0-9]*")
_HEAD_FIX = "HEAD is the ID of the word's head in this sentence (a whole number), or 0 for the root"


def check_head_column(path: Path, block_start: int, block: str) -> None:
    """Reject a HEAD that is not an integer, on the token's own line.

    ``conllu`` would reject it too, but for the whole block and without saying which
    token, so the check comes first.
    """
    for offset, line in enumerate(block.split("\n")):
        columns = line.split("\t")
        if line.startswith("#") or len(columns) < 7:
            continue
        head = columns[6]
        if head != "_" and not _INTEGER.fullmatch(head):
            raise InputFormatError(path, block_start + offset,
                                   f"HEAD {head!r} of token {columns[0]} is not an integer", _HEAD_FIX)


def unparsable_line(block_start: int, block: str) -> int:
    """Line of the first token line ``conllu`` cannot parse on its own (else the block start).

    ``conllu`` parses token lines independently, so the line that fails alone is
    the one that failed within the block.
    """
    for offset, line in enumerate(block.split("\n")):
        if line.strip() and not line.startswith("#"):
            try:
                conllu.parse(line + "\n")
            except Exception:
                return block_start + offset
    return block_start


def check_tree(sentence: Sentence, path: Path) -> None:
    """Reject a sentence whose HEAD column is not a tree: exactly one root and no cycles.

    Later steps (word depths, a mention's head word, tree distances) walk heads up
    to the root; a second root or a cycle would make them loop or answer arbitrarily.
    Word IDs are 1..n here (``ud._add_words`` checks it), so word i has ID i + 1.
    """
    words = sentence.words
    roots = [i for i, word in enumerate(words) if word.head == -1]
    if not roots:
        raise InputFormatError(
            path, sentence.line, f"sentence {sentence.sent_id!r} has no root (no word has HEAD 0)",
            "give exactly one word HEAD 0 and DEPREL root; every other HEAD must lead to it")
    if len(roots) > 1:
        ids = ", ".join(str(i + 1) for i in roots)
        raise InputFormatError(
            path, words[roots[1]].line,
            f"sentence {sentence.sent_id!r} has {len(roots)} roots: words {ids} all have HEAD 0 "
            f"(this line is word {roots[1] + 1}, the second)",
            "only one word per sentence may have HEAD 0; attach the others to a word of the sentence")
    # Follow each word's heads; meeting a word of the current walk again means a cycle.
    reaches_root = [False] * len(words)
    for start in range(len(words)):
        walk: list[int] = []
        on_walk: set[int] = set()
        index = start
        while index != -1 and not reaches_root[index]:
            if index in on_walk:
                cycle = walk[walk.index(index):]
                first = min(cycle)
                ids = " -> ".join(str(i + 1) for i in [*cycle, cycle[0]])
                raise InputFormatError(
                    path, words[first].line,
                    f"sentence {sentence.sent_id!r}: the HEADs of words {ids} form a cycle, so word "
                    f"{first + 1} never reaches the root",
                    "fix the HEAD of one of these words so that every word's chain of heads ends at "
                    "the word with HEAD 0")
            walk.append(index)
            on_walk.add(index)
            index = words[index].head
        for index in walk:
            reaches_root[index] = True
