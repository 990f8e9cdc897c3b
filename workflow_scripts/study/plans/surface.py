"""The surface stage's plan: [C] section 3's statistics, the separator gradient, the head clusters, the attention
distance and every declared head measure (surface/measures.py), on the surface corpus's dumps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.errors import ConfigError
from ...core.subjects import split_subject
from ...models.checkpoints import parse_checkpoint_name
from ...surface.measures import HEAD_MEASURES, measure_named
from ..revisions import revision_series
from .declarations import Analysis, ExplorerMeasure, declared_figures, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "surface"
PER_SHARD = "(subject, checkpoint) x shard group of the surface dump"
PER_CHECKPOINT = "(subject, checkpoint) of the surface dump"
GRADIENT = "sep_gradient"
DIAGNOSTICS = "head_diagnostics"
ICL = "icl_score"
ANALYSES = (
    Analysis("surface_heads", PER_SHARD, tables=("surface_heads",),
             figures=("special_tokens", "positional", "entropy"),
             captions=("surface_heads.rst", "surface_special_tokens.rst", "surface_positional.rst",
                       "surface_entropy.rst"), sharded=True, explorer_tables=("surface_heads",)),
    Analysis(GRADIENT, "(model, checkpoint) of the surface dump, attention weights only", tables=(GRADIENT,),
             figures=(GRADIENT,), captions=("surface_sep_gradient.rst", "surface_sep_gradient_figure.rst")),
    Analysis("head_clusters", PER_CHECKPOINT, tables=("head_clusters",), figures=("head_clusters",),
             captions=("surface_head_clusters.rst", "surface_head_clusters_figure.rst"),
             explorer_tables=("head_clusters",)),
    Analysis("attention_distance", PER_SHARD, tables=("attention_distance",),
             captions=("surface_attention_distance.rst",), sharded=True, explorer_tables=("attention_distance",)),
    Analysis(DIAGNOSTICS, "(model, checkpoint): the model run on synthetic token sequences",
             tables=(DIAGNOSTICS, "sink_rates"),
             captions=("surface_head_diagnostics.rst", "surface_sink_rates.rst"), explorer_tables=(DIAGNOSTICS,),
             explorer_measures=(
                 ExplorerMeasure(DIAGNOSTICS, "induction", "induction score (repeated random tokens)", "share",
                                 (("input", "random_repeated"),)),
                 ExplorerMeasure(DIAGNOSTICS, "duplicate", "duplicate-token score (repeated random tokens)", "share",
                                 (("input", "random_repeated"),)),
                 ExplorerMeasure(DIAGNOSTICS, "first_token", "attention to the first token (random tokens)", "share",
                                 (("input", "random"),)),
             )),
    Analysis(ICL, "(model, pretrained) of a model studied at two or more revisions: its causal LM on the surface "
             "corpus's text", tables=(ICL,), captions=("surface_icl_score.rst",)),
    # Each head measure is run by the shared rules head_measure_{shard,part,table}; its caption is its own.
    *(Analysis(m.name, PER_SHARD, tables=(m.name,), captions=("surface_head_measure.rst",), sharded=True,
               explorer_tables=(m.name,) if m.in_explorer else (),
               explorer_measures=(ExplorerMeasure(m.name, m.name, m.label, m.unit),) if m.in_explorer else ())
      for m in HEAD_MEASURES),
)
MEASURE_NAMES = tuple(m.name for m in HEAD_MEASURES)
# The ``measure`` wildcard of the head-measure rules: a declared name only (a pattern that matches nothing when none
# is declared), so that their outputs never match another rule's.
MEASURE_PATTERN = "|".join(sorted(MEASURE_NAMES, key=len, reverse=True)) or "(?!x)x"


def plan(study: Study) -> None:
    """The (subject, checkpoint) pairs dumped on surface.corpus/surface.split; the gradient's pairs (attention
    weights only: the gradient with respect to the weights is a property of the weights alone)."""
    surface = study.config[STAGE]
    study.surface_pairs = [(m, c) for m, c, corpus, split in study.dumps
                           if corpus == surface["corpus"] and split == surface["split"]]
    study.gradient_pairs = [(m, c) for m, c in study.surface_pairs if split_subject(m)[1] == "attention"]
    # The diagnostics run the model on their own inputs: one job per model and checkpoint, never per signal.
    study.diagnostic_pairs = list(study.gradient_pairs)
    study.diagnostic_lengths = diagnostic_lengths(study)
    # The ICL score beside the induction heads of the head-development figure: each revision of a series.
    study.icl_points = {point.model: [name, point.revision, point.step]
                        for name, points in revision_series(study.config).items() if len(points) >= 2
                        for point in points if (point.model, "pretrained") in study.diagnostic_pairs}
    planned = {GRADIENT: bool(study.gradient_pairs), DIAGNOSTICS: bool(study.diagnostic_pairs),
               ICL: bool(study.icl_points)}
    analyses = [a for a in ANALYSES if planned.get(a.name, True)]
    study.stage_outputs[STAGE] = ([study.paths.table(name) for name in declared_tables(tuple(analyses))]
                                  + study.paths.figures(STAGE, declared_figures(tuple(analyses)))
                                  if study.surface_pairs else [])


def diagnostic_lengths(study: Study) -> dict[str, int]:
    """L of each diagnosed model: surface.diagnostics.length, or less where 2L tokens and their special tokens would
    exceed the model's max_length (a note says so; the table records the L used)."""
    length = study.config[STAGE]["diagnostics"]["length"]
    lengths = {}
    for model in dict.fromkeys(m for m, _ in study.diagnostic_pairs):
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


class Inputs:
    """Input and params functions of rules/surface.smk (``STUDY.inputs.surface``)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.paths = study.paths

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
        return self.study.diagnostic_lengths[wc.model]

    def icl_point(self, wc: Any) -> list:
        """A params function: [series, revision, step] of the job's model (plan: ``icl_points``)."""
        return self.study.icl_points[wc.model]

    def max_length(self, wc: Any) -> int:
        """A params function: the job's model's max_length (its entry's, or the schema's default)."""
        return int(self.study.config["models"][wc.model]["max_length"])

    def measure_caption(self, wc: Any) -> str:
        """A params function: the declared caption of the job's head measure (report/surface_head_measure.rst)."""
        return measure_named(wc.measure).caption
