"""Entry points of the surface, gradient and clustering analyses (rules/surface.smk)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import entry_point


def _gather_shards(smk: Any, gather: Callable[..., object], *measure: Any) -> None:
    """A checkpoint's per-head table gathered by ``gather`` from the partials of its dump's shards: every per-head
    measure's part rule gives it the same inputs (after the measure itself, for the declared measures)."""
    p = smk.params
    gather(*measure, smk.input.dump, list(smk.input.partials), smk.output[0], model=smk.wildcards.model,
           checkpoint=smk.wildcards.checkpoint, corpus=p.corpus, split=p.split, resamples=p.resamples,
           seed=p.bootstrap_seed)


@entry_point("surface_heads_shard")
def surface_heads_shard(smk: Any) -> None:
    from ..surface.statistics import separator_token_id
    from ..surface.statistics import surface_heads_shard as run

    run(smk.input.dump, smk.input.tokens, smk.output[0], shard_group=smk.wildcards.shard_group,
        sep_token_id=separator_token_id(smk.input.checkpoint, offline=smk.params.offline, token_table=smk.input.tokens))


@entry_point("surface_heads_part")
def surface_heads_part(smk: Any) -> None:
    from ..surface.statistics import surface_heads_gather

    _gather_shards(smk, surface_heads_gather)


@entry_point("sep_gradient_part")
def sep_gradient_part(smk: Any) -> None:
    from ..surface.gradient import sep_gradient

    p = smk.params
    sep_gradient(smk.input.checkpoint, smk.input.tokens, smk.output[0],
                 task_data=smk.input.get("task_data"), task=p.task, max_examples=p.examples, mask_prob=p.mask_prob,
                 precision=p.precision, seed=p.seed, resamples=p.resamples, bootstrap_seed=p.bootstrap_seed,
                 threads=smk.threads, offline=p.offline, data_name=f"{p.corpus}/{p.split}")


@entry_point("head_clusters_part")
def head_clusters_part(smk: Any) -> None:
    from ..surface.clustering import head_clusters

    p = smk.params
    head_clusters(smk.input.dump, smk.input.tokens, smk.input.surface, smk.output.clusters,
                  smk.output.distances, model=smk.wildcards.model, checkpoint=smk.wildcards.checkpoint,
                  max_examples=p.examples, seed=p.seed, distance=p.distance, threshold=p.threshold,
                  broad_entropy=p.broad_entropy)


@entry_point("surface_table")
def surface_table(smk: Any) -> None:
    """Every table of the stage that only stacks its parts (rules/surface.smk), sorted by its declared key."""
    from ..surface.statistics import concat_parts

    concat_parts(list(smk.input), smk.output[0], list(smk.params.key))


@entry_point("surface_figures")
def surface_figures(smk: Any) -> None:
    from ..surface.figures import (
        plot_entropy,
        plot_positional,
        plot_special_tokens,
    )

    out = smk.output
    plot_special_tokens(smk.input[0], out.special_png, out.special_pdf)
    plot_positional(smk.input[0], out.positional_png, out.positional_pdf)
    plot_entropy(smk.input[0], out.entropy_png, out.entropy_pdf)


@entry_point("sep_gradient_figure")
def sep_gradient_figure(smk: Any) -> None:
    from ..surface.figures import plot_sep_gradient

    plot_sep_gradient(smk.input[0], smk.output.png, smk.output.pdf)


@entry_point("head_clusters_figure")
def head_clusters_figure(smk: Any) -> None:
    from ..surface.figures import plot_head_clusters

    plot_head_clusters(smk.input[0], smk.output.png, smk.output.pdf)


@entry_point("attention_distance_shard")
def attention_distance_shard(smk: Any) -> None:
    from ..surface.distance import attention_distance_shard as run

    run(smk.input.dump, smk.output[0], shard_group=smk.wildcards.shard_group)


@entry_point("attention_distance_part")
def attention_distance_part(smk: Any) -> None:
    from ..surface.distance import attention_distance_gather

    _gather_shards(smk, attention_distance_gather)


# --- the declared head measures (surface/measures.py), one set of rules for all -------------------------------


@entry_point("head_measure_shard")
def head_measure_shard(smk: Any) -> None:
    from ..surface.head_measures import head_measure_shard as run
    from ..surface.measures import measure_named

    run(measure_named(smk.wildcards.measure), smk.input.dump, smk.input.tokens, smk.output[0],
        shard_group=smk.wildcards.shard_group)


@entry_point("head_measure_part")
def head_measure_part(smk: Any) -> None:
    from ..surface.head_measures import head_measure_gather
    from ..surface.measures import measure_named

    _gather_shards(smk, head_measure_gather, measure_named(smk.wildcards.measure))


@entry_point("head_diagnostics_part")
def head_diagnostics_part(smk: Any) -> None:
    from ..surface.diagnostics import Settings, write_diagnostics_part

    p = smk.params
    given = dict(p.settings)
    settings = Settings(sequences=given["sequences"], length=int(p.length), seed=given["seed"],
                        token_range=tuple(given["token_range"]) if given["token_range"] is not None else None,
                        prepend_bos=given["prepend_bos"], batch_size=given["batch_size"],
                        sink_threshold=given["sink_threshold"])
    write_diagnostics_part(smk.input.checkpoint, smk.output.diagnostics, model=smk.wildcards.model,
                     checkpoint=smk.wildcards.checkpoint, settings=settings, resamples=p.resamples,
                     bootstrap_seed=p.bootstrap_seed, threads=smk.threads, offline=p.offline,
                     natural_tokens=smk.input.tokens, dtype=p.dtype, halves_output=smk.output.halves)


@entry_point("head_diagnostics_table")
def head_diagnostics_table(smk: Any) -> None:
    from ..core.io import write_csv
    from ..surface.diagnostics import sink_rates
    from ..surface.statistics import concat_parts

    key = ["model", "checkpoint", "input", "layer", "head"]
    diagnostics = concat_parts(list(smk.input.parts), smk.output.diagnostics, key)
    write_csv(sink_rates(diagnostics), smk.output.sink_rates)
    concat_parts(list(smk.input.halves), smk.output.halves, key)


@entry_point("icl_score_part")
def icl_score_part(smk: Any) -> None:
    from ..surface.icl_score import icl_score_part as run

    p = smk.params
    series, revision, step = p.point
    run(smk.input.checkpoint, smk.input.tokens, smk.output[0], model=smk.wildcards.model,
        checkpoint=smk.wildcards.checkpoint, series=series, revision=revision, step=step, max_length=p.max_length,
        contexts=p.contexts, batch_size=p.batch_size, prepend_bos=p.prepend_bos, resamples=p.resamples,
        bootstrap_seed=p.bootstrap_seed, threads=smk.threads, offline=p.offline, dtype=p.dtype)
