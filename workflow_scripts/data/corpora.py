"""Every corpus a config defines, by name: its kind, its splits, and the local files of each split.

:class:`Corpora` joins the config's entries (``treebanks:``, ``tasks:``, see :mod:`.entries`) with the
corpora that are not entries (the Wikipedia segments and GloVe) and with the coreference windows cut
from a treebank (``NAMEwin``). The study model asks it which splits exist and which files a split's
job reads (so that touching one reruns its table); the config checks ask it whether an entry's files
are there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .entries import TaskSpec, TreebankEntry, task_spec, treebank_entry
from .registry import FIXED_CORPORA, find_in_mirror, mirror_candidates

WINDOW_SUFFIX = "win"  # gum -> gumwin: a treebank's documents cut into windows (syntax.coref_treebank)


class Corpora:
    """The corpora of one config, by name."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.mirror: str | None = config["mirror"]
        data = config["data"]
        self.ud_release: str = data["ud_release"]
        self.treebanks: dict[str, TreebankEntry] = {
            name: treebank_entry(name, entry, treebank_splits=list(data["treebank_splits"]))
            for name, entry in config["treebanks"].items()}
        self.tasks: dict[str, TaskSpec] = {name: task_spec(name, entry) for name, entry in config["tasks"].items()}

    def kind(self, corpus: str) -> str:
        """'treebank', 'task', 'windows', 'wiki' or 'glove'."""
        if corpus in self.treebanks:
            return "treebank"
        if corpus in self.tasks:
            return "task"
        if corpus in FIXED_CORPORA:
            return corpus
        if corpus.endswith(WINDOW_SUFFIX) and corpus[:-len(WINDOW_SUFFIX)] in self.treebanks:
            return "windows"
        known = ", ".join([*self.treebanks, *self.tasks, *FIXED_CORPORA])
        raise KeyError(f"unknown corpus {corpus!r}; defined: {known}")

    def splits(self, corpus: str) -> tuple[str, ...]:
        kind = self.kind(corpus)
        if kind == "treebank":
            return tuple(self.treebanks[corpus].splits)
        if kind == "task":
            return tuple(self.tasks[corpus].splits)
        if kind == "windows":
            return self.splits(corpus[:-len(WINDOW_SUFFIX)])
        return FIXED_CORPORA[corpus]

    def mirror_candidates(self, corpus: str, split: str) -> list[list[str]]:
        """Mirror-relative file sets that can provide a split, best first (none for local entries)."""
        kind = self.kind(corpus)
        if kind == "treebank":
            return self.treebanks[corpus].mirror_candidates(split)
        if kind == "task":
            return self.tasks[corpus].mirror_candidates(split)
        return [] if kind == "windows" else mirror_candidates(corpus, split)

    def source_files(self, corpus: str, split: str) -> list[Path]:
        """The local files a split's table is built from: the mirror's, or a local entry's own files.

        Empty when the split is downloaded (or a local entry's files are missing: its job says so)."""
        kind = self.kind(corpus)
        if kind == "treebank" and self.treebanks[corpus].source == "path":
            return self.treebanks[corpus].local_files(split)
        if kind == "task" and self.tasks[corpus].reader == "table":
            return self.tasks[corpus].local_files(split)
        candidates = self.mirror_candidates(corpus, split)
        return find_in_mirror(self.mirror, corpus, split, candidates) if candidates else []

    def is_local(self, corpus: str) -> bool:
        """Whether a corpus is read from the researcher's own files (never downloaded)."""
        kind = self.kind(corpus)
        return ((kind == "treebank" and self.treebanks[corpus].source == "path")
                or (kind == "task" and self.tasks[corpus].reader == "table"))

    def language(self, corpus: str) -> str:
        kind = self.kind(corpus)
        if kind == "treebank":
            return self.treebanks[corpus].language
        if kind == "task":
            return self.tasks[corpus].language
        return self.language(corpus[:-len(WINDOW_SUFFIX)]) if kind == "windows" else "en"
