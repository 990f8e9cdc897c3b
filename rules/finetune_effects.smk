# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/finetune_effects.py.
# Fine-tuning effects (METHODS 8, 9, 10): attention pattern classes of [K] (rule labeller and CNN), the change
# of every head after fine-tuning [K], and the lexical categories of the most-attended words [L], for the
# pretrained checkpoint and every fine-tuned one (intermediate steps too with 'trajectory: true') on each
# task's dev inputs. Per (model, checkpoint, task) jobs write parts under {results}/analysis/finetune_effects/;
# study-wide rules combine them into {results}/tables/ and draw {results}/figures/finetune_effects/.
# Which tasks and checkpoints are analysed is the study model's (STUDY.finetune_effects.tasks and
# .targets).
# The dev inputs are capped by 'attention.max_examples' (token tables and dumps) and, in the analyses,
# by 'finetune_effects.max_dev_examples' (the first N examples). See docs/finetune_effects.md.

from workflow_scripts.study.plans.declarations import stacked_pattern
from workflow_scripts.study.plans.finetune_effects import ANALYSES as FINETUNE_EFFECTS_ANALYSES
from workflow_scripts.study.plans.finetune_effects import TRAJECTORY_FIGURE

FE = STUDY.config["finetune_effects"]
FINETUNED_NAME = r"[a-z0-9]+\.seed\d+\.(step\d+|final)"


rule pattern_features:
    input:
        unpack(STUDY.finetune_effects.dump),
    output:
        STUDY.finetune_effects.part("{model}", "{checkpoint}", "{corpus}", "pattern_features.parquet"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_{checkpoint}_{corpus}_pattern_features"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        thresholds=FE["thresholds"],
        max_examples=FE["max_dev_examples"],
    script:
        "scripts/entry.py"


rule pattern_label_seed:
    input:
        features=STUDY.finetune_effects.pattern_label_features,
    output:
        STUDY.finetune_effects.model_file("{model}", "pattern_labels_seed.csv"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_pattern_label_seed"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=10,
    params:
        pairs=STUDY.finetune_effects.model_pairs,
        n=FE["label_sample"],
        seed=FE["label_seed"],
        balanced=FE["label_balanced"],
    script:
        "scripts/entry.py"


rule pattern_cnn:
    input:
        unpack(STUDY.finetune_effects.pattern_cnn),
    output:
        model=STUDY.finetune_effects.model_file("{model}", "pattern_cnn.safetensors"),
        model_info=STUDY.finetune_effects.model_file("{model}", "pattern_cnn.json"),
        labels=STUDY.finetune_effects.model_file("{model}", "pattern_labels.csv"),
        metrics=STUDY.finetune_effects.model_file("{model}", f"{TABLE.PATTERN_CLASSIFIER}.csv"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_pattern_cnn"),
    conda:
        "../envs/surface.yaml"
    threads: FE["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        pairs=STUDY.finetune_effects.model_pairs,
        cnn=FE["cnn"],
        thresholds=FE["thresholds"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule pattern_classes_part:
    input:
        unpack(STUDY.finetune_effects.pattern_classes),
    output:
        STUDY.finetune_effects.part("{model}", "{checkpoint}", "{corpus}", f"{TABLE.PATTERN_CLASSES}.csv"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_{checkpoint}_{corpus}_pattern_classes"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        classifier=FE["classifier"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule finetune_change_part:
    input:
        unpack(STUDY.finetune_effects.dump),
        pretrained=STUDY.finetune_effects.pretrained_dump,
    output:
        STUDY.finetune_effects.part("{model}", "{checkpoint}", "{corpus}", f"{TABLE.FINETUNE_CHANGE}.csv"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_{checkpoint}_{corpus}_finetune_change"),
    wildcard_constraints:
        checkpoint=FINETUNED_NAME,
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        max_examples=FE["max_dev_examples"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule lexical_counts:
    input:
        unpack(STUDY.finetune_effects.dump),
        annotation=STUDY.finetune_effects.dev_annotation,
    output:
        counts=STUDY.finetune_effects.part("{model}", "{checkpoint}", "{corpus}", "lexical_counts.npz"),
        summary=STUDY.finetune_effects.part("{model}", "{checkpoint}", "{corpus}", "lexical_counts.json"),
    log:
        STUDY.paths.log("finetune_effects", "{model}_{checkpoint}_{corpus}_lexical_counts"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        categories=FE["categories"],
        exclude_self=FE["exclude_self"],
        max_examples=FE["max_dev_examples"],
    script:
        "scripts/entry.py"


# Every table of the stage that only stacks its jobs' parts (pattern classes, the pattern CNN's scores, the change
# after fine-tuning), as its plan declares it (ANALYSES' stack_key, workflow_scripts/study/plans/finetune_effects.py):
# the rows sorted by the declared key, the caption the analysis's own (the stage's table caption shows
# params.caption).
rule finetune_effects_table:
    input:
        STUDY.finetune_effects.stacked_parts,
    output:
        STUDY.finetune_effects.report_stacked(),
    log:
        STUDY.paths.log("finetune_effects", "{table}_table"),
    wildcard_constraints:
        table=stacked_pattern(FINETUNE_EFFECTS_ANALYSES),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        key=STUDY.finetune_effects.stack_key,
        caption=STUDY.finetune_effects.table_caption,
        pretrained_only=STUDY.finetune_effects.pretrained_only,
    script:
        "scripts/entry.py"


rule lexical_tables:
    input:
        counts=[
            STUDY.finetune_effects.part(m, c, t, "lexical_counts.npz") for m, c, t in STUDY.finetune_effects.targets
        ],
        checkpoints=[STUDY.paths.checkpoint_manifest(m, c) for m, c, t in STUDY.finetune_effects.targets],
    output:
        layers=STUDY.finetune_effects.report_table(TABLE.LEXICAL_LAYERS),
        heads=STUDY.finetune_effects.report_table(TABLE.LEXICAL_HEADS),
        change=STUDY.finetune_effects.report_table(TABLE.LEXICAL_CHANGE),
        last_layer=STUDY.finetune_effects.report_table(TABLE.LEXICAL_LAST_LAYER),
        top=STUDY.finetune_effects.report_table(TABLE.LEXICAL_TOP_LAYERS),
    log:
        STUDY.paths.log("finetune_effects", "lexical_tables"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        targets=[list(t) for t in STUDY.finetune_effects.targets],
        predictions=FE["predictions"],
        pretrained_only=STUDY.finetune_effects.pretrained_only,
        top_k=FE["top_layers"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule finetune_effects_figures:
    input:
        classes=STUDY.paths.table(TABLE.PATTERN_CLASSES),
        change=STUDY.paths.table(TABLE.FINETUNE_CHANGE),
        lexical=STUDY.paths.table(TABLE.LEXICAL_LAYERS),
    output:
        classes_png=STUDY.finetune_effects.report_figure(TABLE.PATTERN_CLASSES),
        classes_pdf=STUDY.finetune_effects.figure_file(TABLE.PATTERN_CLASSES, "pdf"),
        change_png=STUDY.finetune_effects.report_figure(TABLE.FINETUNE_CHANGE),
        change_pdf=STUDY.finetune_effects.figure_file(TABLE.FINETUNE_CHANGE, "pdf"),
        lexical_png=STUDY.finetune_effects.report_figure(TABLE.LEXICAL_LAYERS),
        lexical_pdf=STUDY.finetune_effects.figure_file(TABLE.LEXICAL_LAYERS, "pdf"),
        trajectory_png=STUDY.finetune_effects.report_figure(TRAJECTORY_FIGURE),
        trajectory_pdf=STUDY.finetune_effects.figure_file(TRAJECTORY_FIGURE, "pdf"),
    log:
        STUDY.paths.log("finetune_effects", "figures"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        pretrained_only=STUDY.finetune_effects.pretrained_only,
    script:
        "scripts/entry.py"
