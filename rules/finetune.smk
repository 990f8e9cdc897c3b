# Fine-tuning (METHODS 3): one job per (model, task, seed), from the model's pretrained checkpoint.
# Each fine-tuned task gets its own rule, finetune_{task}, because its outputs (the checkpoints
# at its save steps) and its settings (config 'finetune' with 'finetune.per_task.{task}' on top)
# are its own: changing one task's setting reruns only that task's jobs and what depends on them.
# Checkpoints follow the convention of workflow_scripts/checkpoints.py:
#   {RESULTS}/checkpoints/{model}/{task}.seed{seed}.step{K}/checkpoint.json  (each configured step)
#   {RESULTS}/checkpoints/{model}/{task}.seed{seed}.final/checkpoint.json    (end of training)
from snakemake.logging import logger

from workflow_scripts.finetune.training import checkpoint_name, dev_split, mirror_files, task_seeds, task_settings

FINETUNE = config["finetune"]


def _finetune_tasks():
    """Study tasks to fine-tune: those with a train split ('finetune.tasks: null'), or the listed ones."""
    requested = FINETUNE["tasks"]
    chosen = []
    for task in STUDY["tasks"] if requested is None else requested:
        if task not in STUDY["tasks"]:
            raise WorkflowError(f"config key 'finetune.tasks': {task!r} is not one of 'study.tasks' "
                                f"({', '.join(STUDY['tasks'])}); add it there or remove it here")
        splits = STUDY_SPLITS.get(task, [])
        missing = [s for s in ("train", dev_split(task)) if s not in splits]
        if not missing:
            chosen.append(task)
            continue
        split = missing[0]
        why = (f"the study builds no {split} split for it: offline, the mirror {MIRROR} holds no "
               f"{mirror_files(task, split, MIRROR)}")
        if requested is not None:
            raise WorkflowError(f"config key 'finetune.tasks': task {task!r} cannot be fine-tuned: {why}; "
                                "remove it from 'finetune.tasks', point 'mirror' at a copy that holds "
                                "that file, or set 'offline: false' to download it")
        logger.warning(f"fine-tuning: task {task!r} is left out: {why} (list it in 'finetune.tasks' "
                       "to make this an error)")
    return chosen


FINETUNE_TASKS = _finetune_tasks()
FINETUNE_RUNS = [(model, task, seed) for model in STUDY["models"] for task in FINETUNE_TASKS
                 for seed in task_seeds(FINETUNE, task)]


def finetune_metrics_json(model, task, seed):
    return f"{RESULTS}/finetune/{model}/{task}.seed{seed}.metrics.json"


def finetuned_checkpoints(model, tasks=None, final_only=False):
    """Names of the fine-tuned checkpoints of ``model`` in this study (for downstream rules),
    in training order per run: each configured step, then final."""
    names = []
    for m, task, seed in FINETUNE_RUNS:
        if m != model or (tasks is not None and task not in tasks):
            continue
        steps = [] if final_only else task_settings(FINETUNE, task)["save_steps"]
        names += [checkpoint_name(task, seed, step) for step in [*steps, "final"]]
    return names


def _settings_of(task):
    # max_length: null in 'finetune' means the model entry's max_length.
    return lambda wc: task_settings(FINETUNE, task, config["models"][wc.model].get("max_length"))


for _task in FINETUNE_TASKS:
    _settings = task_settings(FINETUNE, _task)

    rule:
        name:
            f"finetune_{_task}"
        input:
            pretrained=checkpoint_manifest("{model}", "pretrained"),
            train=data_table(_task, "train"),
            dev=data_table(_task, dev_split(_task)),
        output:
            steps=[f"{RESULTS}/checkpoints/{{model}}/{_task}.seed{{seed}}.step{step}/checkpoint.json"
                   for step in _settings["save_steps"]],
            final=f"{RESULTS}/checkpoints/{{model}}/{_task}.seed{{seed}}.final/checkpoint.json",
            metrics=f"{RESULTS}/finetune/{{model}}/{_task}.seed{{seed}}.metrics.json",
        params:
            task=_task,
            settings=_settings_of(_task),
            offline=OFFLINE,
            mirror=MIRROR,
        log:
            f"{RESULTS}/logs/finetune/{{model}}/{_task}.seed{{seed}}.log",
        wildcard_constraints:
            seed=r"\d+",
        threads: FINETUNE["threads"]
        resources:
            mem_mb=FINETUNE["mem_mb"],
            runtime=FINETUNE["runtime"],
            # A GPU is requested from the scheduler only for device 'cuda'; 'auto' uses one when
            # the node it lands on has one, and the CPU otherwise.
            gpu=1 if _settings["device"] == "cuda" else 0,
        conda:
            "../envs/finetune.yaml"
        script:
            "scripts/entry.py"


rule finetune_metrics_table:
    input:
        [finetune_metrics_json(model, task, seed) for model, task, seed in FINETUNE_RUNS],
    output:
        report(
            f"{RESULTS}/tables/finetune_metrics.csv",
            caption="../report/finetune_metrics.rst",
            category="Fine-tuning",
        ),
    log:
        f"{RESULTS}/logs/finetune/finetune_metrics_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/finetune.yaml"
    script:
        "scripts/entry.py"
