# Surface, gradient and clustering analyses of "What Does BERT Look At?" (METHODS 7.1, 7.2, 7.6, 10).
# One job per (model, checkpoint) and analysis writes a part under {RESULTS}/analysis/surface/; study-wide
# rules combine the parts into {RESULTS}/tables/{surface_heads,sep_gradient,head_clusters}.csv and draw
# the figures under {RESULTS}/figures/surface/. See docs/surface.md.
from workflow_scripts.models.checkpoints import parse_checkpoint_name
from workflow_scripts.finetune.training import dev_split

SURFACE = config["surface"]
SURFACE_PART = f"{RESULTS}/analysis/surface/{{model}}/{{checkpoint}}"
SURFACE_FIGURES = f"{RESULTS}/figures/surface"
SURFACE_FIGURE_NAMES = ["special_tokens", "positional", "entropy", "sep_gradient", "head_clusters"]


def surface_pairs():
    """(model, checkpoint) of every dump of the surface corpus and split."""
    return [(m, c) for m, c, corpus, split in attention_targets()
            if corpus == SURFACE["corpus"] and split == SURFACE["split"]]


def surface_outputs():
    """The tables and figures rule all asks for (none when the study dumps no surface corpus)."""
    if not surface_pairs():
        return []
    tables = [f"{RESULTS}/tables/{name}.csv" for name in ("surface_heads", "sep_gradient", "head_clusters")]
    figures = [f"{SURFACE_FIGURES}/{name}.{ext}" for name in SURFACE_FIGURE_NAMES for ext in ("png", "pdf")]
    return tables + figures


def _surface_inputs(wc):
    return {
        "checkpoint": checkpoint_manifest(wc.model, wc.checkpoint),
        "dump": dump_manifest(wc.model, wc.checkpoint, SURFACE["corpus"], SURFACE["split"]),
        "tokens": token_table_path(wc.model, SURFACE["corpus"], SURFACE["split"]),
    }


def _gradient_inputs(wc):
    inputs = {
        "checkpoint": checkpoint_manifest(wc.model, wc.checkpoint),
        "tokens": token_table_path(wc.model, SURFACE["corpus"], SURFACE["split"]),
    }
    info = parse_checkpoint_name(wc.checkpoint)
    if info["kind"] == "finetuned":  # its own task loss, on that task's dev examples
        inputs["task_data"] = data_table(info["task"], dev_split(info["task"]))
    return inputs


rule surface_heads_part:
    input:
        unpack(_surface_inputs),
    output:
        f"{SURFACE_PART}/surface_heads.csv",
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=OFFLINE,
    log:
        f"{RESULTS}/logs/surface/{{model}}_{{checkpoint}}_surface_heads.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule sep_gradient_part:
    input:
        unpack(_gradient_inputs),
    output:
        f"{SURFACE_PART}/sep_gradient.csv",
    params:
        corpus=SURFACE["corpus"],
        split=SURFACE["split"],
        examples=SURFACE["gradient_examples"],
        mask_prob=SURFACE["gradient_mask_prob"],
        seed=SURFACE["gradient_seed"],
        resamples=SURFACE["bootstrap_resamples"],
        bootstrap_seed=SURFACE["bootstrap_seed"],
        offline=OFFLINE,
    log:
        f"{RESULTS}/logs/surface/{{model}}_{{checkpoint}}_sep_gradient.log",
    threads: SURFACE["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule head_clusters_part:
    input:
        unpack(_surface_inputs),
        surface=f"{SURFACE_PART}/surface_heads.csv",
    output:
        clusters=f"{SURFACE_PART}/head_clusters.csv",
        distances=f"{SURFACE_PART}/head_distances.csv",
    params:
        examples=SURFACE["cluster_examples"],
        seed=SURFACE["cluster_seed"],
        distance=SURFACE["cluster_distance"],
        threshold=SURFACE["behaviour_threshold"],
        broad_entropy=SURFACE["broad_entropy"],
    log:
        f"{RESULTS}/logs/surface/{{model}}_{{checkpoint}}_head_clusters.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule surface_heads_table:
    input:
        [f"{RESULTS}/analysis/surface/{m}/{c}/surface_heads.csv" for m, c in surface_pairs()],
    output:
        report(
            f"{RESULTS}/tables/surface_heads.csv",
            caption="../report/surface_heads.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{RESULTS}/logs/surface/surface_heads_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule sep_gradient_table:
    input:
        [f"{RESULTS}/analysis/surface/{m}/{c}/sep_gradient.csv" for m, c in surface_pairs()],
    output:
        report(
            f"{RESULTS}/tables/sep_gradient.csv",
            caption="../report/surface_sep_gradient.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{RESULTS}/logs/surface/sep_gradient_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule head_clusters_table:
    input:
        [f"{RESULTS}/analysis/surface/{m}/{c}/head_clusters.csv" for m, c in surface_pairs()],
    output:
        report(
            f"{RESULTS}/tables/head_clusters.csv",
            caption="../report/surface_head_clusters.rst",
            category="What does BERT look at?",
        ),
    log:
        f"{RESULTS}/logs/surface/head_clusters_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule surface_figures:
    input:
        f"{RESULTS}/tables/surface_heads.csv",
    output:
        special_png=report(f"{SURFACE_FIGURES}/special_tokens.png", caption="../report/surface_special_tokens.rst",
                           category="What does BERT look at?"),
        special_pdf=f"{SURFACE_FIGURES}/special_tokens.pdf",
        positional_png=report(f"{SURFACE_FIGURES}/positional.png", caption="../report/surface_positional.rst",
                              category="What does BERT look at?"),
        positional_pdf=f"{SURFACE_FIGURES}/positional.pdf",
        entropy_png=report(f"{SURFACE_FIGURES}/entropy.png", caption="../report/surface_entropy.rst",
                           category="What does BERT look at?"),
        entropy_pdf=f"{SURFACE_FIGURES}/entropy.pdf",
    log:
        f"{RESULTS}/logs/surface/surface_figures.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule sep_gradient_figure:
    input:
        f"{RESULTS}/tables/sep_gradient.csv",
    output:
        png=report(f"{SURFACE_FIGURES}/sep_gradient.png", caption="../report/surface_sep_gradient_figure.rst",
                   category="What does BERT look at?"),
        pdf=f"{SURFACE_FIGURES}/sep_gradient.pdf",
    log:
        f"{RESULTS}/logs/surface/sep_gradient_figure.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule head_clusters_figure:
    input:
        f"{RESULTS}/tables/head_clusters.csv",
    output:
        png=report(f"{SURFACE_FIGURES}/head_clusters.png", caption="../report/surface_head_clusters_figure.rst",
                   category="What does BERT look at?"),
        pdf=f"{SURFACE_FIGURES}/head_clusters.pdf",
    log:
        f"{RESULTS}/logs/surface/head_clusters_figure.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"
