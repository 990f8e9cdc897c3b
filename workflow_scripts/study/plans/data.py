"""The data stage's plan: every corpus's tables (planned by data/corpora.py from the entries) and the summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "data"
ANALYSES = (Analysis("data_summary", "the study", tables=("data_summary",), captions=("data_summary.rst",)),)


def plan(study: Study) -> Plan:
    return Plan(study=study, outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)])


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The data stage's plan, with the input and params functions of rules/data.smk (``STUDY.data``)."""

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
