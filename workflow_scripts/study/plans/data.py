"""The data stage's plan: every corpus's tables (planned by data/corpora.py from the entries) and the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .declarations import Analysis

if TYPE_CHECKING:
    from ..model import Study

STAGE = "data"
ANALYSES = (Analysis("data_summary", "the study", tables=("data_summary",), captions=("data_summary.rst",)),)


def plan(study: Study) -> None:
    study.stage_outputs[STAGE] = [study.paths.table(name) for name in ANALYSES[0].tables]


class Inputs:
    """Input and params functions of rules/data.smk (``STUDY.inputs.data``)."""

    def __init__(self, study: Study) -> None:
        self.study = study

    def source_files(self, corpus: str, split: str) -> list[str]:
        """The local files of a split: the mirror's or a local entry's (tracked, so touching one reruns its
        table), or none to download."""
        return [str(p) for p in self.study.corpora.source_files(corpus, split)]

    def task_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's task (``task`` wildcard), as the job rebuilds it."""
        return self.study.task_spec(wc.task).params()

    def treebank_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's treebank (``treebank`` wildcard)."""
        return self.study.corpora.treebanks[wc.treebank].params()
