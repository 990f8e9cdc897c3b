"""The syntax stage's plan ([C] sections 4-6): dependency heads and probes per (model, checkpoint, treebank) of
syntax.treebanks whose selection and score splits are dumped; coreference heads on syntax.coref_treebank's windows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.table_names import COREF_BEST, COREF_HEADS, DEPENDENCY_BEST, DEPENDENCY_HALVES, DEPENDENCY_HEADS, PROBES
from ...data.corpora import WINDOW_SUFFIX
from .declarations import Analysis, StagePlan, declared_figures, declared_tables
from .surface import REPORT_CATEGORY

if TYPE_CHECKING:
    from ..model import Study

STAGE = "syntax"
COREFERENCE = "coreference"
PER_TARGET = "(subject, checkpoint, treebank)"
FIGURE_NAME = "{model}_{checkpoint}_{treebank}"
# The syntax stage's figures, by these names in their rules (rules/syntax.smk) too.
DEPENDENCY_HEADS_FIGURE = f"dependency_heads_{FIGURE_NAME}"
BEST_HEAD_MAPS_FIGURE = f"best_head_maps_{FIGURE_NAME}"


def no_syntax_dump(study: Study) -> str:
    """Why the study has no dependency heads or probes (the report says it)."""
    return (f"the study dumps no {' and '.join(study.syntax.splits)} attention of a treebank of "
            "syntax.treebanks (study.treebanks, attention.corpora)")


def no_coreference(study: Study) -> str:
    """Why the study has no coreference heads (the report says it)."""
    syntax = study.config["syntax"]
    return (f"the study scores no {syntax['coref_treebank']} {syntax['coref_split']} coreference "
            "(study.treebanks, data.coreference_treebanks, syntax.coref_treebank, attention.corpora)")


ANALYSES = (
    Analysis("dependency", f"{PER_TARGET} x split x shard group",
             tables=(DEPENDENCY_HEADS, DEPENDENCY_BEST, DEPENDENCY_HALVES),
             figures=(DEPENDENCY_HEADS_FIGURE, BEST_HEAD_MAPS_FIGURE),
             captions=("syntax_dependency_heads.rst", "syntax_dependency_best.rst", "syntax_dependency_halves.rst",
                       "syntax_dependency_heatmap.rst", "syntax_best_head_maps.rst"), sharded=True,
             explorer_tables=(DEPENDENCY_HEADS,), absent_because=no_syntax_dump),
    Analysis(PROBES, f"{PER_TARGET} x probe", tables=(PROBES,), captions=("syntax_probes.rst",),
             absent_because=no_syntax_dump),
    Analysis(COREFERENCE, "(subject, checkpoint) of the coreference windows", tables=(COREF_HEADS, COREF_BEST),
             captions=("syntax_coref_heads.rst", "syntax_coref_best.rst"), explorer_tables=(COREF_HEADS,),
             absent_because=no_coreference),
)


def plan(study: Study) -> Plan:
    """Dependency heads and probes per (model, checkpoint, treebank) of syntax.treebanks whose selection and
    score splits are dumped; coreference heads on syntax.coref_treebank's windows."""
    syntax = study.config["syntax"]
    splits = sorted({syntax["select_split"], syntax["score_split"]})
    dumped = set(study.attention.dumps)
    all_targets = []
    for treebank in syntax["treebanks"]:
        if treebank not in study.config["study"]["treebanks"]:
            study.notes.append(f"syntax: treebank {treebank!r} of 'syntax.treebanks' is not in 'study.treebanks'; "
                               "it is left out")
            continue
        targets = sorted({(m, c, treebank) for m, c, corpus, _ in dumped if corpus == treebank
                          and all((m, c, treebank, s) in dumped for s in splits)})
        if targets and not study.corpora.treebanks[treebank].labelled:
            study.notes.append(f"syntax: treebank {treebank!r} has no relation labels: its 'all' heads, probes and "
                               "MST run; the named relations of 'syntax.relations' are skipped on it")
        all_targets += targets
    coref_treebank = syntax["coref_treebank"]
    coref = (syntax["coref_split"] in study.splits.get(coref_treebank, [])
             and coref_treebank in study.config["data"]["coreference_treebanks"])
    coref_pairs = sorted({(m, c) for m, c, _ in all_targets}) if coref else []
    # A fine-tuned checkpoint's roles (roles.finetuned): each syntax treebank's score split alone, where its model's
    # pretrained checkpoint is a target (selected and scored there), and the coreference windows where its pretrained
    # checkpoint is scored on them.
    dumped_score = {(m, c, t) for m, c, t, s in study.attention.role_dumps if s == syntax["score_split"]}
    role_targets = [(m, c, t) for m, c, t in sorted(dumped_score)
                    if (m, "pretrained", t) in all_targets and (m, c, t) not in all_targets]
    coref_pairs += [(m, c) for m, c in study.finetune.role_analysed(COREFERENCE)
                    if (m, "pretrained") in coref_pairs and (m, c) not in coref_pairs]
    glove = "glove" in study.splits
    outputs = []
    if all_targets:
        analyses = tuple(a for a in ANALYSES if a.name != COREFERENCE or coref_pairs)
        outputs = [study.paths.table(name) for name in declared_tables(analyses)]
        for model, checkpoint, treebank in all_targets:
            outputs += study.paths.figures(STAGE, [figure.format(model=model, checkpoint=checkpoint, treebank=treebank)
                                                   for figure in declared_figures(ANALYSES)])
    return Plan(study=study, splits=splits, targets=all_targets, role_targets=role_targets, coref_pairs=coref_pairs,
                attention_probes=["attn", *(["attn_glove"] if glove else [])],
                baseline_probes=["right_branching", *(["distance_glove"] if glove else [])], outputs=outputs)


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The syntax stage's plan (``STUDY.syntax``), with the input and params functions of rules/syntax.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY  # [C]'s title, as the surface stage's

    splits: list[str]                         # the selection and score splits
    targets: list[tuple[str, str, str]]       # (subject, checkpoint, treebank): both splits, probes and figures
    role_targets: list[tuple[str, str, str]]  # (model, fine-tuned checkpoint, treebank): the score split alone
    coref_pairs: list[tuple[str, str]]        # (subject, checkpoint) of the coreference windows
    attention_probes: list[str]
    baseline_probes: list[str]

    @property
    def coref_corpus(self) -> str:
        """The coreference windows' corpus: syntax.coref_treebank's documents cut into windows (gumwin)."""
        return self.study.config[STAGE]["coref_treebank"] + WINDOW_SUFFIX

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(model, checkpoint) with syntax analyses on any treebank."""
        return sorted({(m, c) for m, c, _ in self.targets})

    def dependency_parts(self) -> list[tuple[str, str, str, str]]:
        """(model, checkpoint, treebank, split) of every dependency score part dependency_tables reads: both splits
        of a target, the score split of a fine-tuned checkpoint's roles."""
        score = self.study.config[STAGE]["score_split"]
        return ([(m, c, t, s) for m, c, t in self.targets for s in self.splits]
                + [(m, c, t, score) for m, c, t in self.role_targets])

    def probe_parts(self) -> list[tuple[str, str, str, str, str]]:
        """(model, checkpoint or 'none', treebank, probe, path) of every probe result the probes table combines."""
        parts = []
        for model, checkpoint, treebank in self.targets:
            parts += [(model, checkpoint, treebank, p,
                       self.paths.analysis(STAGE, model, checkpoint, PROBES, treebank, f"{p}.parquet"))
                      for p in (*self.attention_probes, "mst_best_head")]
        for model, treebank in sorted({(m, t) for m, _, t in self.targets}):
            parts += [(model, "none", treebank, p, self.paths.analysis(STAGE, model, "baselines", treebank,
                                                                       f"{p}.parquet"))
                      for p in self.baseline_probes]
        return parts

    def _splits(self) -> tuple[str, str]:
        syntax = self.study.config[STAGE]
        return syntax["select_split"], syntax["score_split"]

    def probe_attention(self, wc: Any) -> dict[str, str]:
        """Probe features of the selection (train) and score splits, their annotation, GloVe for attn_glove."""
        select, score = self._splits()
        inputs = {
            "train_maps": self.probe_features(wc.model, wc.checkpoint, f"{wc.treebank}_{select}.maps.npy"),
            "train_index": self.probe_features(wc.model, wc.checkpoint, f"{wc.treebank}_{select}.index.npz"),
            "test_maps": self.probe_features(wc.model, wc.checkpoint, f"{wc.treebank}_{score}.maps.npy"),
            "test_index": self.probe_features(wc.model, wc.checkpoint, f"{wc.treebank}_{score}.index.npz"),
            "train_annotation": self.paths.annotation(wc.treebank, select),
            "test_annotation": self.paths.annotation(wc.treebank, score),
        }
        if wc.probe == "attn_glove":
            inputs["glove"] = self.paths.data_table("glove", "vectors")
        return inputs

    def probe_features(self, model: str, checkpoint: str, name: str) -> str:
        """A file of the attention probes' features (rule probe_features), e.g. 'ewt_train.maps.npy'."""
        return self.paths.analysis(STAGE, model, checkpoint, "probe_features", name)

    def probe_baseline(self, wc: Any) -> dict[str, str]:
        """Token tables and annotation of both splits (no attention), GloVe for distance_glove."""
        select, score = self._splits()
        inputs = {
            "train_tokens": self.paths.token_table(wc.model, wc.treebank, select),
            "test_tokens": self.paths.token_table(wc.model, wc.treebank, score),
            "train_annotation": self.paths.annotation(wc.treebank, select),
            "test_annotation": self.paths.annotation(wc.treebank, score),
        }
        if wc.probe == "distance_glove":
            inputs["glove"] = self.paths.data_table("glove", "vectors")
        return inputs

    # --- the job's dump and token table: of its treebank and split, of the score split, of the coreference windows --

    def dump_manifest(self, wc: Any) -> str:
        """The dump of the job's subject and checkpoint on its treebank and split."""
        return self.paths.dump_manifest(wc.model, wc.checkpoint, wc.treebank, wc.split)

    def token_table(self, wc: Any) -> str:
        """The token table of the job's subject on its treebank and split."""
        return self.paths.token_table(wc.model, wc.treebank, wc.split)

    def score_dump(self, wc: Any) -> str:
        """The dump of the job's subject and checkpoint on its treebank's score split (syntax.score_split)."""
        return self.paths.dump_manifest(wc.model, wc.checkpoint, wc.treebank, self._splits()[1])

    def score_tokens(self, wc: Any) -> str:
        """The token table of the job's subject on its treebank's score split (syntax.score_split)."""
        return self.paths.token_table(wc.model, wc.treebank, self._splits()[1])

    def coref_sentences(self, wc: Any) -> str:
        """The data table of syntax.coref_treebank's split the job cuts into windows."""
        return self.paths.data_table(self.study.config[STAGE]["coref_treebank"], wc.split)

    def coref_mentions(self, wc: Any) -> str:
        """The mentions table of syntax.coref_treebank's split the job cuts into windows."""
        return self.paths.mentions_table(self.study.config[STAGE]["coref_treebank"], wc.split)

    def coref_dump(self, wc: Any) -> str:
        """The dump of the job's subject and checkpoint on the coreference windows' syntax.coref_split."""
        return self.paths.dump_manifest(wc.model, wc.checkpoint, self.coref_corpus,
                                        self.study.config[STAGE]["coref_split"])

    def coref_tokens(self, wc: Any) -> str:
        """The token table of the job's subject on the coreference windows' syntax.coref_split."""
        return self.paths.token_table(wc.model, self.coref_corpus, self.study.config[STAGE]["coref_split"])

    def probe_max_sentences(self, wc: Any) -> int | None:
        """A params function: syntax.probe_max_train_sentences for the selection split, None (no cap) for another."""
        syntax = self.study.config[STAGE]
        return syntax["probe_max_train_sentences"] if wc.split == syntax["select_split"] else None
