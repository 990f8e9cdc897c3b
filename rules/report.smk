# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/report.py.
# The report stage: the study beside the published numbers ([C], [K], [L]; [G], [W] for decoders), and one summary
# page per model.
# paper_comparison reads the published numbers each stage declares (report/paper_values/<stage>.csv) and every
# study table the stages' report declarations name that this config produces; a table the config does not
# produce is left out with the reason (STUDY.report.absent), so that its paper items say why they have no value.
# summary_figure draws one A4 page per model under {results}/figures/summary/. Both are report() outputs:
#   snakemake --report report.html
# See docs/report.md.
from workflow_scripts.report.registry import paper_value_files
from workflow_scripts.core.stages import STAGES
from workflow_scripts.study.plans.report import (
    AGREEMENT_FIGURE,
    ATLAS_FIGURE,
    CHANGE_BY_LAYER_FIGURE,
    DEVELOPMENT_FIGURE,
    SIGNALS_FIGURE,
    SUMMARY_FIGURE,
)

# Inputs (not params): editing the published numbers reruns the comparison and the summary pages.
PAPER_VALUES = [str(path) for path in paper_value_files(STAGES, workflow.basedir)]
# Published role agreements (Wu et al. 2025), drawn beside the study's: the figure's reference, no paper comparison.
ROLE_AGREEMENT_REFERENCE = f"{workflow.basedir}/report/paper_values/role_agreement.csv"


rule paper_comparison:
    input:
        **STUDY.report.tables,
        paper_values=PAPER_VALUES,
    output:
        STUDY.report.report_table(TABLE.PAPER_COMPARISON),
    log:
        STUDY.paths.log("report", "paper_comparison"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        absent=STUDY.report.absent,
        context=STUDY.report.report_context(),
    script:
        "scripts/entry.py"


rule summary_figure:
    input:
        **STUDY.report.tables,
        paper_values=PAPER_VALUES,
    output:
        png=STUDY.report.report_figure(SUMMARY_FIGURE),
        pdf=STUDY.report.figure_file(SUMMARY_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "summary_figure_{model}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        absent=STUDY.report.absent,
        context=STUDY.report.report_context(),
    script:
        "scripts/entry.py"


# With more than one signal (attention.signals): the pretrained model's attention to special tokens per layer
# and its best head per relation under each signal, side by side (docs/signals.md).
rule signal_comparison:
    input:
        **STUDY.report.signal_comparison_inputs,
    output:
        STUDY.report.report_table(TABLE.SIGNAL_COMPARISON),
    log:
        STUDY.paths.log("report", "signal_comparison"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        models=STUDY.models,
        signals=STUDY.config["attention"]["signals"],
        treebank=STUDY.syntax_treebank,
        select_split=STUDY.config["syntax"]["select_split"],
        score_split=STUDY.config["syntax"]["score_split"],
    script:
        "scripts/entry.py"


rule signal_comparison_figure:
    input:
        table=STUDY.paths.table(TABLE.SIGNAL_COMPARISON),
    output:
        png=STUDY.report.report_figure(SIGNALS_FIGURE),
        pdf=STUDY.report.figure_file(SIGNALS_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "signal_comparison_figure_{model}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule head_development:
    input:
        **STUDY.report.development_inputs,
    output:
        STUDY.report.report_table(TABLE.HEAD_DEVELOPMENT),
    log:
        STUDY.paths.log("report", "head_development"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        series=STUDY.report.development_series,
        treebank=STUDY.syntax_treebank,
        select_split=STUDY.config["syntax"]["select_split"],
        score_split=STUDY.config["syntax"]["score_split"],
    script:
        "scripts/entry.py"


rule head_development_figure:
    input:
        **STUDY.report.development_figure_inputs,
        table=STUDY.paths.table(TABLE.HEAD_DEVELOPMENT),
    output:
        png=STUDY.report.report_figure(DEVELOPMENT_FIGURE),
        pdf=STUDY.report.figure_file(DEVELOPMENT_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "head_development_figure_{series}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


# The cross-model atlas: every model's heads per role (sink, previous-token, induction, each relation's best head,
# coreference, [K]'s pattern classes, causal importance) by relative depth, from the tables the study has
# (workflow_scripts/report/atlas.py); the random-init checkpoints give the parameter counts.
rule atlas:
    input:
        **STUDY.report.atlas_inputs,
    output:
        atlas=STUDY.report.report_table(TABLE.ATLAS),
        halves=STUDY.report.report_table(TABLE.ATLAS_HALVES),
    log:
        STUDY.paths.log("report", "atlas"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        patterns=STUDY.report.atlas_params.get("patterns", []),
        random_models=STUDY.report.atlas_params.get("random_models", []),
        revisions=STUDY.report.atlas_params.get("revisions", {}),
        treebank=STUDY.syntax_treebank,
        select_split=STUDY.config["syntax"]["select_split"],
        score_split=STUDY.config["syntax"]["score_split"],
        relations=STUDY.config["syntax"]["relations"],
    script:
        "scripts/entry.py"


rule atlas_figure:
    input:
        table=STUDY.paths.table(TABLE.ATLAS),
    output:
        png=STUDY.report.report_figure(ATLAS_FIGURE),
        pdf=STUDY.report.figure_file(ATLAS_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "atlas_figure"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


# Role agreement: for every pair of related subjects (pretrained vs fine-tuned, seeds of one task, revisions, attention
# vs signals) and every role of the atlas, Spearman's rho of the heads' scores with a bootstrap interval over heads, read
# against the first subject's split-half floor (tables/atlas_halves.csv) and the seed floor, with a verdict, the best
# head's move, and the change per layer (workflow_scripts/report/role_agreement.py, role_change.py; docs/roles.md).
# The checkpoint records of the pairs that may hold the same weights give their weights' digests.
rule role_agreement:
    input:
        atlas=STUDY.paths.table(TABLE.ATLAS),
        halves=STUDY.paths.table(TABLE.ATLAS_HALVES),
        checkpoints=STUDY.report.weight_checkpoints(),
    output:
        agreement=STUDY.report.report_table(TABLE.ROLE_AGREEMENT),
        by_layer=STUDY.report.report_table(TABLE.ROLE_CHANGE_BY_LAYER),
    log:
        STUDY.paths.log("report", "role_agreement"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        pairs=STUDY.report.role_agreement_pairs,
        weight_subjects=STUDY.report.weight_subjects,
        thresholds={"sink": STUDY.config["surface"]["diagnostics"]["sink_threshold"]},
        noisy_below=STUDY.config["roles"]["noisy_below"],
        resamples=STUDY.config["surface"]["bootstrap_resamples"],
        bootstrap_seed=STUDY.config["surface"]["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule role_agreement_figure:
    input:
        table=STUDY.paths.table(TABLE.ROLE_AGREEMENT),
        reference=ROLE_AGREEMENT_REFERENCE,
    output:
        png=STUDY.report.report_figure(AGREEMENT_FIGURE),
        pdf=STUDY.report.figure_file(AGREEMENT_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "role_agreement_figure"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


rule role_change_figure:
    input:
        table=STUDY.paths.table(TABLE.ROLE_CHANGE_BY_LAYER),
    output:
        png=STUDY.report.report_figure(CHANGE_BY_LAYER_FIGURE),
        pdf=STUDY.report.figure_file(CHANGE_BY_LAYER_FIGURE, "pdf"),
    log:
        STUDY.paths.log("report", "role_change_figure"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
