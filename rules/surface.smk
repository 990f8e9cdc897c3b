# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/surface.py.
# Surface, gradient and clustering analyses of "What Does BERT Look At?" (METHODS 7.1, 7.2, 7.6, 10).
# One job per (model, checkpoint) and analysis writes a part under {results}/analysis/surface/; study-wide
# rules combine the parts into {results}/tables/ (the tables of the surface plan's analyses, and one table per
# declared head measure) and draw the figures under {results}/figures/surface/. See docs/surface.md.

from workflow_scripts.study.plans.surface import (
    ENTROPY_FIGURE,
    MEASURE_PATTERN,
    POSITIONAL_FIGURE,
    SPECIAL_TOKENS_FIGURE,
    STACKED_PATTERN,
)

SURFACE = STUDY.config["surface"]


# The surface statistics and attention distance sum over a dump's examples: one job per shard group of the dump
# (attention.analysis_shards_per_job shards, by default one; `--cores N` and the SLURM profile run N jobs at once)
# writes its examples' sums under shards/, and the part's job gathers them into the table one job over the whole
# dump would write (workflow_scripts/attention/partials.py).
rule surface_heads_shard:
    input:
        unpack(STUDY.surface.dump),
    output:
        STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", TABLE.SURFACE_HEADS),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_surface_heads.{shard_group}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule surface_heads_part:
    input:
        dump=STUDY.surface.dump_manifest,
        partials=expand(
            STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", TABLE.SURFACE_HEADS),
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.SURFACE_HEADS),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_surface_heads"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule sep_gradient_part:
    input:
        unpack(STUDY.surface.sep_gradient),
    output:
        STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.SEP_GRADIENT),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_sep_gradient"),
    conda:
        "../envs/surface.yaml"
    threads: SURFACE["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        examples=SURFACE["gradient_examples"],
        task=STUDY.surface.checkpoint_task,
        mask_prob=SURFACE["gradient_mask_prob"],
        precision=SURFACE["gradient_precision"],
        seed=SURFACE["gradient_seed"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule head_clusters_part:
    input:
        unpack(STUDY.surface.dump),
        surface=STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.SURFACE_HEADS),
    output:
        clusters=STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.HEAD_CLUSTERS),
        distances=STUDY.paths.analysis("surface", "{model}", "{checkpoint}", "head_distances.csv"),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_head_clusters"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        examples=SURFACE["cluster_examples"],
        seed=SURFACE["cluster_seed"],
        distance=SURFACE["cluster_distance"],
        threshold=SURFACE["behaviour_threshold"],
        broad_entropy=SURFACE["broad_entropy"],
    script:
        "scripts/entry.py"


rule attention_distance_shard:
    input:
        dump=STUDY.surface.dump_manifest,
    output:
        STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", TABLE.ATTENTION_DISTANCE),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_attention_distance.{shard_group}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
    script:
        "scripts/entry.py"


rule attention_distance_part:
    input:
        dump=STUDY.surface.dump_manifest,
        partials=expand(
            STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", TABLE.ATTENTION_DISTANCE),
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.ATTENTION_DISTANCE),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_attention_distance"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
    script:
        "scripts/entry.py"


# The declared head measures (workflow_scripts/surface/measures.py): these two rules run every one of them, on the
# surface dump per shard group as the attention distance does, and surface_table stacks their parts; the table's
# caption is the declaration's own. docs/contributing.md, "Recipe: add an analysis".
rule head_measure_shard:
    input:
        dump=STUDY.surface.dump_manifest,
        tokens=STUDY.surface.token_table,
    output:
        STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", "{measure}"),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_{measure}.{shard_group}"),
    wildcard_constraints:
        measure=MEASURE_PATTERN,
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    script:
        "scripts/entry.py"


rule head_measure_part:
    input:
        dump=STUDY.surface.dump_manifest,
        partials=expand(
            STUDY.paths.shard_partial("surface", "{model}", "{checkpoint}", "{measure}"),
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        STUDY.surface.table_part("{model}", "{checkpoint}", "{measure}"),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_{measure}"),
    wildcard_constraints:
        measure=MEASURE_PATTERN,
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
    script:
        "scripts/entry.py"


# Every table of the stage that only stacks its jobs' parts (one per subject and checkpoint), as its plan declares
# it (ANALYSES' stack_key, workflow_scripts/study/plans/surface.py): the rows sorted by the declared key, the
# caption the analysis's own (the stage's table caption shows params.caption).
rule surface_table:
    input:
        STUDY.surface.stacked_parts,
    output:
        STUDY.surface.report_stacked(),
    log:
        STUDY.paths.log("surface", "{table}_table"),
    wildcard_constraints:
        table=STACKED_PATTERN,
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        key=STUDY.surface.stack_key,
        caption=STUDY.surface.table_caption,
    script:
        "scripts/entry.py"


# Head diagnostics: each model and checkpoint (attention weights only) run on the surface corpus's text cut to a
# fixed length and on synthetic token sequences (random, repeated random, one token repeated): first-token,
# previous-token, induction and duplicate-token scores, and the sink rates per layer (Gu et al. 2025's code).
rule head_diagnostics_part:
    input:
        checkpoint=STUDY.surface.checkpoint_manifest,
        tokens=STUDY.surface.token_table,
    output:
        diagnostics=STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.HEAD_DIAGNOSTICS),
        halves=STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.HEAD_DIAGNOSTICS_HALVES),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_head_diagnostics"),
    conda:
        "../envs/surface.yaml"
    threads: SURFACE["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        settings=SURFACE["diagnostics"],
        length=STUDY.surface.diagnostic_length,
        dtype=STUDY.surface.dtype,
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule head_diagnostics_table:
    input:
        parts=[STUDY.surface.table_part(m, c, TABLE.HEAD_DIAGNOSTICS) for m, c in STUDY.surface.diagnostic_pairs],
        halves=[
            STUDY.surface.table_part(m, c, TABLE.HEAD_DIAGNOSTICS_HALVES) for m, c in STUDY.surface.diagnostic_pairs
        ],
    output:
        diagnostics=STUDY.surface.report_table(TABLE.HEAD_DIAGNOSTICS),
        sink_rates=STUDY.surface.report_table(TABLE.SINK_RATES),
        halves=STUDY.surface.report_table(TABLE.HEAD_DIAGNOSTICS_HALVES),
    log:
        STUDY.paths.log("surface", "head_diagnostics_table"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


# The in-context learning score (Olsson et al. 2022) of each revision of a model studied at several revisions: its
# causal LM's loss late in the surface corpus's text minus early (workflow_scripts/surface/icl_score.py), drawn beside
# the induction heads in the head-development figure (rules/report.smk).
rule icl_score_part:
    input:
        checkpoint=STUDY.surface.checkpoint_manifest,
        tokens=STUDY.surface.token_table,
    output:
        STUDY.surface.table_part("{model}", "{checkpoint}", TABLE.ICL_SCORE),
    log:
        STUDY.paths.log("surface", "{model}_{checkpoint}_icl_score"),
    conda:
        "../envs/surface.yaml"
    threads: SURFACE["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        point=STUDY.surface.icl_point,
        max_length=STUDY.surface.max_length,
        contexts=SURFACE["diagnostics"]["sequences"],
        batch_size=SURFACE["diagnostics"]["batch_size"],
        prepend_bos=SURFACE["diagnostics"]["prepend_bos"],
        dtype=STUDY.surface.dtype,
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule surface_figures:
    input:
        STUDY.paths.table(TABLE.SURFACE_HEADS),
    output:
        special_png=STUDY.surface.report_figure(SPECIAL_TOKENS_FIGURE),
        special_pdf=STUDY.surface.figure_file(SPECIAL_TOKENS_FIGURE, "pdf"),
        positional_png=STUDY.surface.report_figure(POSITIONAL_FIGURE),
        positional_pdf=STUDY.surface.figure_file(POSITIONAL_FIGURE, "pdf"),
        entropy_png=STUDY.surface.report_figure(ENTROPY_FIGURE),
        entropy_pdf=STUDY.surface.figure_file(ENTROPY_FIGURE, "pdf"),
    log:
        STUDY.paths.log("surface", "surface_figures"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule sep_gradient_figure:
    input:
        STUDY.paths.table(TABLE.SEP_GRADIENT),
    output:
        png=STUDY.surface.report_figure(TABLE.SEP_GRADIENT),
        pdf=STUDY.surface.figure_file(TABLE.SEP_GRADIENT, "pdf"),
    log:
        STUDY.paths.log("surface", "sep_gradient_figure"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule head_clusters_figure:
    input:
        STUDY.paths.table(TABLE.HEAD_CLUSTERS),
    output:
        png=STUDY.surface.report_figure(TABLE.HEAD_CLUSTERS),
        pdf=STUDY.surface.figure_file(TABLE.HEAD_CLUSTERS, "pdf"),
    log:
        STUDY.paths.log("surface", "head_clusters_figure"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
