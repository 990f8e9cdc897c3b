"""The surface stage's plan: [C] section 3's statistics, the separator gradient, the head clusters, the attention
distance and every declared head measure (surface/measures.py), on the surface corpus's dumps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.errors import ConfigError
from ...core.subjects import split_subject
from ...core.table_names import (
    ATTENTION_DISTANCE,
    HEAD_CLUSTERS,
    HEAD_DIAGNOSTICS,
    HEAD_DIAGNOSTICS_HALVES,
    ICL_SCORE,
    SEP_GRADIENT,
    SINK_RATES,
    SURFACE_HEADS,
)
from ...models.checkpoints import parse_checkpoint_name
from ...surface.measures import HEAD_MEASURES, measure_named
from ..revisions import revision_series
from .declarations import (
    Analysis,
    ExplorerMeasure,
    StagePlan,
    declared_figures,
    declared_tables,
    stacked_pattern,
    stacked_table_caption,
)

if TYPE_CHECKING:
    from ..model import Study

STAGE = "surface"
# The report's category of the stage's tables and figures, and of the syntax stage's: [C]'s title.
REPORT_CATEGORY = "What does BERT look at?"
PER_SHARD = "(subject, checkpoint) x shard group of the surface dump"
PER_CHECKPOINT = "(subject, checkpoint) of the surface dump"
HEAD_KEY = ("model", "checkpoint", "layer", "head")
# The surface statistics' figures, by these names in their rule (rules/surface.smk) too.
SPECIAL_TOKENS_FIGURE = "special_tokens"
POSITIONAL_FIGURE = "positional"
ENTROPY_FIGURE = "entropy"


def no_surface_dump(study: Study) -> str:
    """Why the study has no surface statistics (the report says it)."""
    surface = study.config[STAGE]
    return (f"the study dumps no {surface['corpus']}/{surface['split']} attention "
            "(study.wiki, attention.corpora, surface.corpus)")


def no_diagnosed_pairs(study: Study) -> str:
    """Why the study has no head diagnostics (the report says it)."""
    surface = study.config[STAGE]
    return (f"the study dumps no {surface['corpus']}/{surface['split']} attention weights, whose (model, "
            "checkpoint) pairs the head diagnostics run on (study.wiki, attention.corpora, attention.signals)")


ANALYSES = (
    Analysis(SURFACE_HEADS, PER_SHARD, tables=(SURFACE_HEADS,), absent_because=no_surface_dump,
             figures=(SPECIAL_TOKENS_FIGURE, POSITIONAL_FIGURE, ENTROPY_FIGURE),
             captions=("surface_heads.rst", "surface_special_tokens.rst", "surface_positional.rst",
                       "surface_entropy.rst"), sharded=True, explorer_tables=(SURFACE_HEADS,), stack_key=HEAD_KEY),
    Analysis(SEP_GRADIENT, "(model, checkpoint) of the surface dump, attention weights only", tables=(SEP_GRADIENT,),
             figures=(SEP_GRADIENT,), captions=("surface_sep_gradient.rst", "surface_sep_gradient_figure.rst"),
             stack_key=("model", "checkpoint", "layer")),
    Analysis(HEAD_CLUSTERS, PER_CHECKPOINT, tables=(HEAD_CLUSTERS,), figures=(HEAD_CLUSTERS,),
             captions=("surface_head_clusters.rst", "surface_head_clusters_figure.rst"),
             explorer_tables=(HEAD_CLUSTERS,), stack_key=HEAD_KEY),
    Analysis(ATTENTION_DISTANCE, PER_SHARD, tables=(ATTENTION_DISTANCE,),
             captions=("surface_attention_distance.rst",), sharded=True, explorer_tables=(ATTENTION_DISTANCE,),
             stack_key=HEAD_KEY),
    Analysis(HEAD_DIAGNOSTICS, "(model, checkpoint): the model run on synthetic token sequences",
             tables=(HEAD_DIAGNOSTICS, SINK_RATES, HEAD_DIAGNOSTICS_HALVES),
             captions=("surface_head_diagnostics.rst", "surface_sink_rates.rst", "surface_head_diagnostics_halves.rst"),
             explorer_tables=(HEAD_DIAGNOSTICS,), report_subcategory="Head diagnostics",
             absent_because=no_diagnosed_pairs,
             explorer_measures=(
                 ExplorerMeasure(HEAD_DIAGNOSTICS, "induction", "induction score (repeated random tokens)", "share",
                                 (("input", "random_repeated"),)),
                 ExplorerMeasure(HEAD_DIAGNOSTICS, "duplicate", "duplicate-token score (repeated random tokens)",
                                 "share",
                                 (("input", "random_repeated"),)),
                 ExplorerMeasure(HEAD_DIAGNOSTICS, "first_token", "attention to the first token (random tokens)",
                                 "share",
                                 (("input", "random"),)),
             )),
    Analysis(ICL_SCORE, "(model, pretrained) of a model studied at two or more revisions: its causal LM on the surface "
             "corpus's text", tables=(ICL_SCORE,), captions=("surface_icl_score.rst",),
             stack_key=("series", "step", "model", "checkpoint"), report_subcategory="Head diagnostics"),
    # Each head measure is run by the shared rules head_measure_{shard,part} and surface_table; its caption is the
    # declaration's (HeadMeasure.caption), which report/surface_table.rst shows as every stacked table's.
    *(Analysis(m.name, PER_SHARD, tables=(m.name,), captions=(stacked_table_caption(STAGE),), sharded=True,
               explorer_tables=(m.name,) if m.in_explorer else (),
               explorer_measures=(ExplorerMeasure(m.name, m.name, m.label, m.unit),) if m.in_explorer else (),
               stack_key=HEAD_KEY, report_subcategory="Head measures")
      for m in HEAD_MEASURES),
)
# The ``table`` wildcard of the generic rule surface_table: the tables it stacks.
STACKED_PATTERN = stacked_pattern(ANALYSES)
MEASURE_NAMES = tuple(m.name for m in HEAD_MEASURES)
# The ``measure`` wildcard of the head-measure rules: a declared name only (a pattern that matches nothing when none
# is declared), so that their outputs never match another rule's.
MEASURE_PATTERN = "|".join(sorted(MEASURE_NAMES, key=len, reverse=True)) or "(?!x)x"


def plan(study: Study) -> Plan:
    """The (subject, checkpoint) pairs dumped on surface.corpus/surface.split; the gradient's pairs (attention
    weights only: the gradient with respect to the weights is a property of the weights alone)."""
    surface = study.config[STAGE]
    pairs = [(m, c) for m, c, corpus, split in study.attention.dumps
             if corpus == surface["corpus"] and split == surface["split"]]
    # A fine-tuned checkpoint dumped for its roles alone (roles.finetuned) gets the statistics, the attention distance
    # and the head measures of its dump; the gradient and the clusters are of attention.checkpoints' checkpoints.
    dumped = set(study.config["attention"]["checkpoints"])
    cluster_pairs = [(m, c) for m, c in pairs if c in dumped]
    gradient_pairs = [(m, c) for m, c in cluster_pairs if split_subject(m)[1] == "attention"]
    # The diagnostics run the model on their own inputs: one job per model and checkpoint, never per signal; a
    # fine-tuned checkpoint's where roles.finetuned gives it them and its model's pretrained checkpoint has them.
    diagnostic_pairs = list(gradient_pairs)
    diagnostic_pairs += [(m, c) for m, c in study.finetune.role_analysed("head_diagnostics")
                         if (m, "pretrained") in gradient_pairs and (m, c) not in diagnostic_pairs]
    # The ICL score beside the induction heads of the head-development figure: each revision of a series.
    icl_points = {point.model: [name, point.revision, point.step]
                  for name, points in revision_series(study.config).items() if len(points) >= 2
                  for point in points if (point.model, "pretrained") in diagnostic_pairs}
    planned = {SEP_GRADIENT: bool(gradient_pairs), HEAD_DIAGNOSTICS: bool(diagnostic_pairs),
               ICL_SCORE: bool(icl_points)}
    analyses = tuple(a for a in ANALYSES if planned.get(a.name, True))
    outputs = ([study.paths.table(name) for name in declared_tables(analyses)]
               + study.paths.figures(STAGE, declared_figures(analyses)) if pairs else [])
    return Plan(study=study, pairs=pairs, cluster_pairs=cluster_pairs, gradient_pairs=gradient_pairs,
                diagnostic_pairs=diagnostic_pairs,
                diagnostic_lengths=diagnostic_lengths(study, diagnostic_pairs), icl_points=icl_points,
                outputs=outputs)


def diagnostic_lengths(study: Study, diagnostic_pairs: list[tuple[str, str]]) -> dict[str, int]:
    """L of each diagnosed model: surface.diagnostics.length, or less where 2L tokens and their special tokens would
    exceed the model's max_length (a note says so; the table records the L used)."""
    length = study.config[STAGE]["diagnostics"]["length"]
    lengths = {}
    for model in dict.fromkeys(m for m, _ in diagnostic_pairs):
        max_length = study.config["models"][model].get("max_length")
        fits = length if max_length is None else min(length, (max_length - 2) // 2)
        if fits < 2:
            raise ConfigError(f"config key 'surface.diagnostics.length': model {model!r}'s max_length {max_length} "
                              f"('models.{model}.max_length') leaves no room for two copies of a sequence; raise it")
        if fits < length:
            study.notes.append(f"surface.diagnostics: model {model!r} reads sequences of 2 x {fits} tokens, not "
                               f"2 x {length}: its max_length is {max_length} ('models.{model}.max_length')")
        lengths[model] = fits
    return lengths


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The surface stage's plan (``STUDY.surface``), with the input and params functions of rules/surface.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    pairs: list[tuple[str, str]]              # (subject, checkpoint) of the surface dump
    cluster_pairs: list[tuple[str, str]]      # those of attention.checkpoints: the head clusters
    gradient_pairs: list[tuple[str, str]]     # those of the attention signal: the separator gradient
    diagnostic_pairs: list[tuple[str, str]]   # (model, checkpoint): synthetic inputs
    diagnostic_lengths: dict[str, int]        # model -> the L it reads
    icl_points: dict[str, list]               # model -> [series, revision, step]: the ICL score

    def _corpus(self) -> tuple[str, str]:
        surface = self.study.config[STAGE]
        return surface["corpus"], surface["split"]

    def dump(self, wc: Any) -> dict[str, str]:
        """Checkpoint, dump and token table of the surface corpus."""
        corpus, split = self._corpus()
        return {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "dump": self.paths.dump_manifest(wc.model, wc.checkpoint, corpus, split),
            "tokens": self.paths.token_table(wc.model, corpus, split),
        }

    def checkpoint_manifest(self, wc: Any) -> str:
        """The job's checkpoint (:meth:`dump`'s ``checkpoint``)."""
        return self.dump(wc)["checkpoint"]

    def dump_manifest(self, wc: Any) -> str:
        """The job's dump of the surface corpus (:meth:`dump`'s ``dump``)."""
        return self.dump(wc)["dump"]

    def token_table(self, wc: Any) -> str:
        """The job's token table of the surface corpus (:meth:`dump`'s ``tokens``)."""
        return self.dump(wc)["tokens"]

    def sep_gradient(self, wc: Any) -> dict[str, str]:
        """A fine-tuned checkpoint also reads its own task's dev examples (for its task loss)."""
        corpus, split = self._corpus()
        inputs = {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "tokens": self.paths.token_table(wc.model, corpus, split),
        }
        info = parse_checkpoint_name(wc.checkpoint)
        if info["kind"] == "finetuned":
            inputs["task_data"] = self.paths.data_table(info["task"], self.study.dev_split(info["task"]))
        return inputs

    def checkpoint_task(self, wc: Any) -> dict[str, Any] | None:
        """A params function: the entry of a fine-tuned checkpoint's task (None for pretrained and random)."""
        info = parse_checkpoint_name(wc.checkpoint)
        return self.study.task_spec(info["task"]).params() if info["kind"] == "finetuned" else None

    def diagnostic_length(self, wc: Any) -> int:
        """A params function: L of the job's model (plan: :func:`diagnostic_lengths`)."""
        return self.diagnostic_lengths[wc.model]

    def icl_point(self, wc: Any) -> list:
        """A params function: [series, revision, step] of the job's model (plan: ``icl_points``)."""
        return self.icl_points[wc.model]

    def max_length(self, wc: Any) -> int:
        """A params function: the job's model's max_length (its entry's, or the schema's default)."""
        return int(self.study.config["models"][wc.model]["max_length"])

    def stacked_parts(self, wc: Any) -> list[str]:
        """The parts a stacked table (``table`` wildcard) stacks: one per (subject, checkpoint) its analysis runs on."""
        pairs = {SEP_GRADIENT: self.gradient_pairs, HEAD_CLUSTERS: self.cluster_pairs,
                 ICL_SCORE: [(model, "pretrained") for model in self.icl_points]}
        return [self.table_part(m, c, wc.table) for m, c in pairs.get(wc.table, self.pairs)]

    def table_part(self, model: str, checkpoint: str, table: str) -> str:
        """The (model, checkpoint) part of table ``table``: what its analysis's rule writes and the stage's table
        rule stacks (:meth:`stacked_parts`)."""
        return self.paths.analysis(STAGE, model, checkpoint, f"{table}.csv")

    def table_caption(self, wc: Any) -> str:
        """A params function: a head measure's declared caption, else the text of its analysis's first caption file
        (``StagePlan.table_caption``)."""
        if wc.table in MEASURE_NAMES:
            return measure_named(wc.table).caption
        return super().table_caption(wc)
