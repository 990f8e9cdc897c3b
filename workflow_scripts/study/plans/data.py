"""The data stage's plan: every corpus's tables (planned by data/corpora.py from the entries) and the summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.table_names import DATA_SUMMARY
from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "data"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Data"
ANALYSES = (Analysis(DATA_SUMMARY, "the study", tables=(DATA_SUMMARY,), captions=("data_summary.rst",)),)


def plan(study: Study) -> Plan:
    return Plan(study=study, outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)])


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The data stage's plan, with the input and params functions of rules/data.smk (``STUDY.data``)."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    def data_tables(self) -> list[str]:
        """Every data table the study builds (with the mention tables of the coreference treebanks)."""
        study = self.study
        tables = [self.paths.data_table(c, s) for c, splits in study.splits.items() for s in splits]
        for treebank in study.config[STAGE]["coreference_treebanks"]:
            tables += [self.paths.mentions_table(treebank, s) for s in study.splits.get(treebank, [])]
        return tables

    def entry_pattern(self, *readers: str) -> str:
        """The wildcard constraint of a data rule: the names of the entries it reads ('treebank', or task
        readers 'glue', 'wic', 'hub', 'table'); a pattern that matches nothing when there are none."""
        corpora = self.study.corpora
        names = list(corpora.treebanks) if readers == ("treebank",) else [
            name for name, spec in corpora.tasks.items() if spec.reader in readers]
        return "|".join(sorted(names, key=len, reverse=True)) or "(?!x)x"

    def source_files(self, corpus: str, split: str) -> list[str]:
        """The local files of a split: the mirror's or a local entry's (tracked, so touching one reruns its
        table), or none to download."""
        return [str(p) for p in self.study.corpora.source_files(corpus, split)]

    def treebank_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's treebank (``treebank`` wildcard)."""
        return self.study.corpora.treebanks[wc.treebank].params()

    def task_files(self, wc: Any) -> list[str]:
        """The local files of the job's task split (``task`` wildcard; :meth:`source_files`)."""
        return self.source_files(wc.task, wc.split)

    def treebank_files(self, wc: Any) -> list[str]:
        """The local files of the job's treebank split (``treebank`` wildcard; :meth:`source_files`)."""
        return self.source_files(wc.treebank, wc.split)

    def wiki_files(self, wc: Any) -> list[str]:
        """The local files of the Wikipedia segments (:meth:`source_files`)."""
        return self.source_files("wiki", "segments")

    def glove_files(self, wc: Any) -> list[str]:
        """The local files of the GloVe vectors (:meth:`source_files`)."""
        return self.source_files("glove", "vectors")

    def glue_task(self, wc: Any) -> str:
        """A params function: the GLUE task the job's task entry reads (its source's ``task``)."""
        return self.study.task_spec(wc.task).source["task"]

    # Functions, not values: Snakemake would read the templates' {repo}, {tag} and {file} as wildcards.
    def ud_url(self, wc: Any) -> str:
        """A params function: the template of a UD treebank file's URL (data.ud_url)."""
        return self.study.config[STAGE]["ud_url"]

    def ud_api_url(self, wc: Any) -> str | None:
        """A params function: the template of the UD release's API URL (data.ud_api_url)."""
        return self.study.config[STAGE]["ud_api_url"]
