# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/ablation.py.
# Causal head checks (docs/ablation.md): heads disabled through transformers' attention-function
# interface. Which runs and models are ablated is the study model's (STUDY.ablation.disabling_runs,
# STUDY.ablation.found_heads_models; workflow_scripts/study/plans/ablation.py).

from workflow_scripts.study.plans.ablation import ANALYSES as ABLATION_ANALYSES
from workflow_scripts.study.plans.ablation import DISABLING_FIGURE
from workflow_scripts.study.plans.declarations import stacked_pattern

ABLATION = STUDY.config["ablation"]


# Each head of a fine-tuned run's final checkpoint disabled alone, in each mode: the change in the task's dev metric.
rule head_disabling:
    input:
        checkpoint=STUDY.paths.checkpoint_manifest("{model}", "{task}.seed{seed}.final"),
        dev=STUDY.ablation.dev_table,
    output:
        STUDY.ablation.disabling_part("{model}", "{task}", "{seed}"),
    log:
        STUDY.paths.log("ablation", "{model}_{task}.seed{seed}_disabling"),
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../envs/models.yaml"
    threads: ABLATION["threads"]
    resources:
        mem_mb=ABLATION["mem_mb"],
        runtime=ABLATION["runtime"],
        gpu=1 if ABLATION["device"] == "cuda" else 0,
    params:
        task=STUDY.ablation.task_entry,
        settings=STUDY.ablation.run_settings,
        modes=ABLATION["modes"],
        max_examples=ABLATION["max_examples"],
        batch_size=ABLATION["batch_size"],
        device=ABLATION["device"],
        offline=STUDY.offline,
        mirror=STUDY.mirror,
    script:
        "scripts/entry.py"


# Both tables of the stage only stack their jobs' parts, as its plan declares them (ANALYSES' stack_key,
# workflow_scripts/study/plans/ablation.py): every part checked for its stage's columns (ablation/tables.py), the rows
# sorted by the declared key, the caption the analysis's own (the stage's table caption shows params.caption).
rule ablation_table:
    input:
        STUDY.ablation.stacked_parts,
    output:
        STUDY.ablation.report_stacked(),
    log:
        STUDY.paths.log("ablation", "{table}_table"),
    wildcard_constraints:
        table=stacked_pattern(ABLATION_ANALYSES),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        key=STUDY.ablation.stack_key,
        caption=STUDY.ablation.table_caption,
    script:
        "scripts/entry.py"


rule head_disabling_figure:
    input:
        table=STUDY.paths.table(TABLE.HEAD_DISABLING),
    output:
        png=STUDY.ablation.report_figure(DISABLING_FIGURE),
        pdf=STUDY.ablation.figure_file(DISABLING_FIGURE, "pdf"),
    log:
        STUDY.paths.log("ablation", "head_disabling_figure_{model}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


# The best head of each dependency relation and the best coreference head (pretrained), and a random head of
# the same layer, ablated: the change in the ablated tasks' dev metrics and in the attention-only probe's UAS.
rule found_heads:
    input:
        unpack(STUDY.ablation.found_heads),
    output:
        STUDY.ablation.found_heads_part("{model}"),
    log:
        STUDY.paths.log("ablation", "{model}_found_heads"),
    conda:
        "../envs/models.yaml"
    threads: ABLATION["threads"]
    resources:
        # It trains the attention-only probe as rule probe_attention does, with all training features in memory.
        mem_mb=max(ABLATION["mem_mb"], 6000),
        runtime=ABLATION["runtime"],
        gpu=1 if ABLATION["device"] == "cuda" else 0,
    params:
        tasks=STUDY.ablation.found_heads_tasks,
        settings=STUDY.ablation.found_heads_settings,
        treebank=STUDY.syntax_treebank,
        relations=STUDY.config["syntax"]["relations"],
        select_split=STUDY.config["syntax"]["select_split"],
        score_split=STUDY.config["syntax"]["score_split"],
        modes=ABLATION["modes"],
        max_examples=ABLATION["max_examples"],
        batch_size=ABLATION["batch_size"],
        device=ABLATION["device"],
        random_seed=ABLATION["random_seed"],
        probe={
            "epochs": STUDY.config["syntax"]["probe_epochs"],
            "lr": STUDY.config["syntax"]["probe_lr"],
            "seed": STUDY.config["syntax"]["probe_seed"],
            "batch_sentences": STUDY.config["syntax"]["probe_batch_sentences"],
            "exclude_punct": STUDY.config["syntax"]["exclude_punct"],
        },
        offline=STUDY.offline,
        mirror=STUDY.mirror,
    script:
        "scripts/entry.py"
