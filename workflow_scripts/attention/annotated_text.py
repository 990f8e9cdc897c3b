"""One text as an annotator returns it: its words with their spans in the text, lemmas, UPOS and tree.

Shared by the annotators (spaCy in annotate.py, stanza in stanza_annotator.py) and the table builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AnnotatedText:
    words: list[str] = field(default_factory=list)
    lemmas: list[str | None] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    head: list[int] | None = field(default_factory=list)  # 0-based within the text, -1 root; None: no parse
    deprel: list[str] | None = field(default_factory=list)
    char_start: list[int] = field(default_factory=list)
    char_end: list[int] = field(default_factory=list)
