"""A treebank sentence and its words as the readers build them (``ud``, ``treebank_formats``) and the checks
read them (``ud_checks``): in a module of their own, so that the checks need not import the reader."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Word:
    form: str
    lemma: str
    upos: str
    xpos: str
    head: int  # 0-based, -1 for the root
    deprel: str
    start: int
    end: int
    mwt: int
    entity: str | None
    line: int


@dataclass
class Sentence:
    example_id: int
    sent_id: str
    doc_id: str | None
    text: str
    words: list[Word] = field(default_factory=list)
    line: int = 0
