# Fine-tuning effects (METHODS 8, 9, 10): attention pattern classes of [K] (rule labeller and CNN), the change
# of every head after fine-tuning [K], and the lexical categories of the most-attended words [L], for the
# pretrained checkpoint and every fine-tuned one (intermediate steps too with 'trajectory: true') on each
# task's dev inputs. Per (model, checkpoint, task) jobs write parts under {RESULTS}/analysis/finetune_effects/;
# study-wide rules combine them into {RESULTS}/tables/ and draw {RESULTS}/figures/finetune_effects/.
# The dev inputs are capped by 'attention.max_examples' (token tables and dumps) and, in the analyses,
# by 'finetune_effects.max_dev_examples' (the first N examples). See docs/finetune_effects.md.
from snakemake.logging import logger

from workflow_scripts.finetune.training import dev_split

FE = config["finetune_effects"]
FE_DIR = f"{RESULTS}/analysis/finetune_effects"
FE_PART = f"{FE_DIR}/{{model}}/{{checkpoint}}/{{corpus}}"
FE_FIGURES = f"{RESULTS}/figures/finetune_effects"
FE_CATEGORY = "Fine-tuning effects"
FE_FIGURE_NAMES = ["pattern_classes", "finetune_change", "lexical_layers", "trajectory"]
FE_TABLES = ["pattern_classes", "pattern_classifier", "finetune_change", "lexical_layers", "lexical_heads",
             "lexical_change", "lexical_last_layer", "lexical_top_layers"]
FINETUNED_NAME = r"[a-z0-9]+\.seed\d+\.(step\d+|final)"


def _finetune_effects_tasks():
    """Study tasks with a dev split the study builds ('finetune_effects.tasks: null'), or the listed ones."""
    requested = FE["tasks"]
    chosen = []
    for task in STUDY["tasks"] if requested is None else requested:
        if task not in STUDY["tasks"]:
            raise WorkflowError(f"config key 'finetune_effects.tasks': {task!r} is not one of 'study.tasks' "
                                f"({', '.join(STUDY['tasks'])})")
        if dev_split(task) in STUDY_SPLITS.get(task, []):
            chosen.append(task)
            continue
        why = f"the study builds no {dev_split(task)} split for it"
        if requested is not None:
            raise WorkflowError(f"config key 'finetune_effects.tasks': task {task!r} cannot be analysed: {why}")
        logger.warning(f"fine-tuning effects: task {task!r} is left out: {why}")
    return chosen


FE_TASKS = _finetune_effects_tasks()
# Tasks analysed with the pretrained checkpoint only: the study fine-tunes nothing on them (no train split).
FE_PRETRAINED_ONLY = [t for t in FE_TASKS if t not in FINETUNE_TASKS]


def finetune_effects_checkpoints(model, task):
    """pretrained, then the task's fine-tuned checkpoints in training order (final only without trajectory)."""
    names = ["pretrained"]
    if task in FINETUNE_TASKS:
        names += finetuned_checkpoints(model, [task], final_only=not FE["trajectory"])
    return names


def finetune_effects_targets(finetuned_only=False):
    """(model, checkpoint, task) of every part."""
    return [(m, c, t) for m in STUDY["models"] for t in FE_TASKS for c in finetune_effects_checkpoints(m, t)
            if not (finetuned_only and c == "pretrained")]


def finetune_effects_outputs():
    """The tables and figures rule all asks for (none when the study has no task with a dev split)."""
    if not FE_TASKS:
        return []
    return ([f"{RESULTS}/tables/{name}.csv" for name in FE_TABLES]
            + [f"{FE_FIGURES}/{name}.{ext}" for name in FE_FIGURE_NAMES for ext in ("png", "pdf")])


def _fe_part(model, checkpoint, task, name):
    return f"{FE_DIR}/{model}/{checkpoint}/{task}/{name}"


def _fe_dump_inputs(wc):
    split = dev_split(wc.corpus)
    return {
        "checkpoint": checkpoint_manifest(wc.model, wc.checkpoint),
        "dump": dump_manifest(wc.model, wc.checkpoint, wc.corpus, split),
        "tokens": token_table_path(wc.model, wc.corpus, split),
    }


def _fe_model_pairs(model):
    return [(c, t) for m, c, t in finetune_effects_targets() if m == model]


def _pattern_classes_inputs(wc):
    inputs = {
        "checkpoint": checkpoint_manifest(wc.model, wc.checkpoint),
        "features": _fe_part(wc.model, wc.checkpoint, wc.corpus, "pattern_features.parquet"),
    }
    if FE["classifier"] == "cnn":
        inputs.update(_fe_dump_inputs(wc))
        inputs["cnn"] = f"{FE_DIR}/{wc.model}/pattern_cnn.pt"
    return inputs


def _pattern_cnn_inputs(wc):
    pairs = _fe_model_pairs(wc.model)
    split = {t: dev_split(t) for _, t in pairs}
    inputs = {
        "seeded": f"{FE_DIR}/{wc.model}/pattern_labels_seed.csv",
        "dumps": [dump_manifest(wc.model, c, t, split[t]) for c, t in pairs],
        "tokens": [token_table_path(wc.model, t, split[t]) for c, t in pairs],
    }
    if FE["human_labels"]:
        inputs["human"] = FE["human_labels"]
    return inputs


rule pattern_features:
    input:
        unpack(_fe_dump_inputs),
    output:
        f"{FE_PART}/pattern_features.parquet",
    params:
        thresholds=FE["thresholds"],
        max_examples=FE["max_dev_examples"],
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_{{checkpoint}}_{{corpus}}_pattern_features.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule pattern_label_seed:
    input:
        features=lambda wc: [_fe_part(wc.model, c, t, "pattern_features.parquet") for c, t in _fe_model_pairs(wc.model)],
    output:
        f"{FE_DIR}/{{model}}/pattern_labels_seed.csv",
    params:
        pairs=lambda wc: [list(p) for p in _fe_model_pairs(wc.model)],
        n=FE["label_sample"],
        seed=FE["label_seed"],
        balanced=FE["label_balanced"],
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_pattern_label_seed.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule pattern_cnn:
    input:
        unpack(_pattern_cnn_inputs),
    output:
        model=f"{FE_DIR}/{{model}}/pattern_cnn.pt",
        labels=f"{FE_DIR}/{{model}}/pattern_labels.csv",
        metrics=f"{FE_DIR}/{{model}}/pattern_classifier.csv",
    params:
        pairs=lambda wc: [list(p) for p in _fe_model_pairs(wc.model)],
        cnn=FE["cnn"],
        thresholds=FE["thresholds"],
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_pattern_cnn.log",
    threads: FE["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule pattern_classes_part:
    input:
        unpack(_pattern_classes_inputs),
    output:
        f"{FE_PART}/pattern_classes.csv",
    params:
        classifier=FE["classifier"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_{{checkpoint}}_{{corpus}}_pattern_classes.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule finetune_change_part:
    input:
        unpack(_fe_dump_inputs),
        pretrained=lambda wc: dump_manifest(wc.model, "pretrained", wc.corpus, dev_split(wc.corpus)),
    output:
        f"{FE_PART}/finetune_change.csv",
    params:
        max_examples=FE["max_dev_examples"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    wildcard_constraints:
        checkpoint=FINETUNED_NAME,
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_{{checkpoint}}_{{corpus}}_finetune_change.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule lexical_counts:
    input:
        unpack(_fe_dump_inputs),
        annotation=lambda wc: f"{RESULTS}/annotation/{wc.corpus}/{dev_split(wc.corpus)}.parquet",
    output:
        counts=f"{FE_PART}/lexical_counts.npz",
        summary=f"{FE_PART}/lexical_counts.json",
    params:
        categories=FE["categories"],
        exclude_self=FE["exclude_self"],
        max_examples=FE["max_dev_examples"],
    log:
        f"{RESULTS}/logs/finetune_effects/{{model}}_{{checkpoint}}_{{corpus}}_lexical_counts.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule pattern_classes_table:
    input:
        [_fe_part(m, c, t, "pattern_classes.csv") for m, c, t in finetune_effects_targets()],
    output:
        report(
            f"{RESULTS}/tables/pattern_classes.csv",
            caption="../report/finetune_effects_pattern_classes_table.rst",
            category=FE_CATEGORY,
        ),
    params:
        pretrained_only=FE_PRETRAINED_ONLY,
    log:
        f"{RESULTS}/logs/finetune_effects/pattern_classes_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule pattern_classifier_table:
    input:
        [f"{FE_DIR}/{m}/pattern_classifier.csv" for m in STUDY["models"]],
    output:
        report(
            f"{RESULTS}/tables/pattern_classifier.csv",
            caption="../report/finetune_effects_pattern_classifier.rst",
            category=FE_CATEGORY,
        ),
    log:
        f"{RESULTS}/logs/finetune_effects/pattern_classifier_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule finetune_change_table:
    input:
        [_fe_part(m, c, t, "finetune_change.csv") for m, c, t in finetune_effects_targets(finetuned_only=True)],
    output:
        report(
            f"{RESULTS}/tables/finetune_change.csv",
            caption="../report/finetune_effects_change_table.rst",
            category=FE_CATEGORY,
        ),
    log:
        f"{RESULTS}/logs/finetune_effects/finetune_change_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule lexical_tables:
    input:
        counts=[_fe_part(m, c, t, "lexical_counts.npz") for m, c, t in finetune_effects_targets()],
        checkpoints=[checkpoint_manifest(m, c) for m, c, t in finetune_effects_targets()],
    output:
        layers=report(f"{RESULTS}/tables/lexical_layers.csv", caption="../report/finetune_effects_lexical_layers.rst",
                      category=FE_CATEGORY),
        heads=report(f"{RESULTS}/tables/lexical_heads.csv", caption="../report/finetune_effects_lexical_heads.rst",
                     category=FE_CATEGORY),
        change=report(f"{RESULTS}/tables/lexical_change.csv", caption="../report/finetune_effects_lexical_change.rst",
                      category=FE_CATEGORY),
        last_layer=report(f"{RESULTS}/tables/lexical_last_layer.csv",
                          caption="../report/finetune_effects_lexical_last_layer.rst", category=FE_CATEGORY),
        top=report(f"{RESULTS}/tables/lexical_top_layers.csv",
                   caption="../report/finetune_effects_lexical_top_layers.rst", category=FE_CATEGORY),
    params:
        targets=[list(t) for t in finetune_effects_targets()],
        predictions=FE["predictions"],
        pretrained_only=FE_PRETRAINED_ONLY,
        top_k=FE["top_layers"],
        resamples=FE["bootstrap_resamples"],
        bootstrap_seed=FE["bootstrap_seed"],
    log:
        f"{RESULTS}/logs/finetune_effects/lexical_tables.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule finetune_effects_figures:
    input:
        classes=f"{RESULTS}/tables/pattern_classes.csv",
        change=f"{RESULTS}/tables/finetune_change.csv",
        lexical=f"{RESULTS}/tables/lexical_layers.csv",
    output:
        classes_png=report(f"{FE_FIGURES}/pattern_classes.png", caption="../report/finetune_effects_pattern_classes.rst",
                           category=FE_CATEGORY),
        classes_pdf=f"{FE_FIGURES}/pattern_classes.pdf",
        change_png=report(f"{FE_FIGURES}/finetune_change.png", caption="../report/finetune_effects_change.rst",
                          category=FE_CATEGORY),
        change_pdf=f"{FE_FIGURES}/finetune_change.pdf",
        lexical_png=report(f"{FE_FIGURES}/lexical_layers.png", caption="../report/finetune_effects_lexical.rst",
                           category=FE_CATEGORY),
        lexical_pdf=f"{FE_FIGURES}/lexical_layers.pdf",
        trajectory_png=report(f"{FE_FIGURES}/trajectory.png", caption="../report/finetune_effects_trajectory.rst",
                              category=FE_CATEGORY),
        trajectory_pdf=f"{FE_FIGURES}/trajectory.pdf",
    params:
        pretrained_only=FE_PRETRAINED_ONLY,
    log:
        f"{RESULTS}/logs/finetune_effects/figures.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"
