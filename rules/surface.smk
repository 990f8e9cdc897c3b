# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/surface.py.
# Surface, gradient and clustering analyses of "What Does BERT Look At?" (METHODS 7.1, 7.2, 7.6, 10).
# One job per (model, checkpoint) and analysis writes a part under {results}/analysis/surface/; study-wide
# rules combine the parts into {results}/tables/{surface_heads,sep_gradient,head_clusters}.csv and draw
# the figures under {results}/figures/surface/. See docs/surface.md.

SURFACE = STUDY.config["surface"]
SURFACE_PART = STUDY.paths.analysis("surface", "{model}", "{checkpoint}")
SURFACE_FIGURES = f"{STUDY.results}/figures/surface"


# The surface statistics and attention distance sum over a dump's examples: one job per shard group of the dump
# (attention.analysis_shards_per_job shards, by default one; `--cores N` and the SLURM profile run N jobs at once)
# writes its examples' sums under shards/, and the part's job gathers them into the table one job over the whole
# dump would write (workflow_scripts/attention/partials.py).
rule surface_heads_shard:
    input:
        unpack(STUDY.inputs.surface),
    output:
        f"{SURFACE_PART}/shards/surface_heads.{{shard_group}}.parquet",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_surface_heads.{{shard_group}}.log",
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
        dump=lambda wc: STUDY.inputs.surface(wc)["dump"],
        partials=expand(
            f"{SURFACE_PART}/shards/surface_heads.{{shard_group}}.parquet",
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        f"{SURFACE_PART}/surface_heads.csv",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_surface_heads.log",
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
        unpack(STUDY.inputs.sep_gradient),
    output:
        f"{SURFACE_PART}/sep_gradient.csv",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_sep_gradient.log",
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
        task=STUDY.inputs.checkpoint_task,
        mask_prob=SURFACE["gradient_mask_prob"],
        seed=SURFACE["gradient_seed"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule head_clusters_part:
    input:
        unpack(STUDY.inputs.surface),
        surface=f"{SURFACE_PART}/surface_heads.csv",
    output:
        clusters=f"{SURFACE_PART}/head_clusters.csv",
        distances=f"{SURFACE_PART}/head_distances.csv",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_head_clusters.log",
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
        dump=lambda wc: STUDY.inputs.surface(wc)["dump"],
    output:
        f"{SURFACE_PART}/shards/attention_distance.{{shard_group}}.parquet",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_attention_distance.{{shard_group}}.log",
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
        dump=lambda wc: STUDY.inputs.surface(wc)["dump"],
        partials=expand(
            f"{SURFACE_PART}/shards/attention_distance.{{shard_group}}.parquet",
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        f"{SURFACE_PART}/attention_distance.csv",
    log:
        f"{STUDY.results}/logs/surface/{{model}}_{{checkpoint}}_attention_distance.log",
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


rule attention_distance_table:
    input:
        [f"{STUDY.results}/analysis/surface/{m}/{c}/attention_distance.csv" for m, c in STUDY.surface_pairs],
    output:
        report(
            f"{STUDY.results}/tables/attention_distance.csv",
            caption="../report/surface_attention_distance.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{STUDY.results}/logs/surface/attention_distance_table.log",
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule surface_heads_table:
    input:
        [f"{STUDY.results}/analysis/surface/{m}/{c}/surface_heads.csv" for m, c in STUDY.surface_pairs],
    output:
        report(
            f"{STUDY.results}/tables/surface_heads.csv",
            caption="../report/surface_heads.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{STUDY.results}/logs/surface/surface_heads_table.log",
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule sep_gradient_table:
    input:
        [f"{STUDY.results}/analysis/surface/{m}/{c}/sep_gradient.csv" for m, c in STUDY.gradient_pairs],
    output:
        report(
            f"{STUDY.results}/tables/sep_gradient.csv",
            caption="../report/surface_sep_gradient.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{STUDY.results}/logs/surface/sep_gradient_table.log",
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule head_clusters_table:
    input:
        [f"{STUDY.results}/analysis/surface/{m}/{c}/head_clusters.csv" for m, c in STUDY.surface_pairs],
    output:
        report(
            f"{STUDY.results}/tables/head_clusters.csv",
            caption="../report/surface_head_clusters.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{STUDY.results}/logs/surface/head_clusters_table.log",
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule surface_figures:
    input:
        f"{STUDY.results}/tables/surface_heads.csv",
    output:
        special_png=report(
            f"{SURFACE_FIGURES}/special_tokens.png",
            caption="../report/surface_special_tokens.rst",
            category="What does BERT look at?",
        ),
        special_pdf=f"{SURFACE_FIGURES}/special_tokens.pdf",
        positional_png=report(
            f"{SURFACE_FIGURES}/positional.png",
            caption="../report/surface_positional.rst",
            category="What does BERT look at?",
        ),
        positional_pdf=f"{SURFACE_FIGURES}/positional.pdf",
        entropy_png=report(
            f"{SURFACE_FIGURES}/entropy.png",
            caption="../report/surface_entropy.rst",
            category="What does BERT look at?",
        ),
        entropy_pdf=f"{SURFACE_FIGURES}/entropy.pdf",
    log:
        f"{STUDY.results}/logs/surface/surface_figures.log",
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
        f"{STUDY.results}/tables/sep_gradient.csv",
    output:
        png=report(
            f"{SURFACE_FIGURES}/sep_gradient.png",
            caption="../report/surface_sep_gradient_figure.rst",
            category="What does BERT look at?",
        ),
        pdf=f"{SURFACE_FIGURES}/sep_gradient.pdf",
    log:
        f"{STUDY.results}/logs/surface/sep_gradient_figure.log",
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
        f"{STUDY.results}/tables/head_clusters.csv",
    output:
        png=report(
            f"{SURFACE_FIGURES}/head_clusters.png",
            caption="../report/surface_head_clusters_figure.rst",
            category="What does BERT look at?",
        ),
        pdf=f"{SURFACE_FIGURES}/head_clusters.pdf",
    log:
        f"{STUDY.results}/logs/surface/head_clusters_figure.log",
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
