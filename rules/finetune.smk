# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/finetune.py;
# the finetune_{task} rules run @entry_point("finetune_{task}"), the pattern their names match.
# Fine-tuning (METHODS 3): one job per (model, task, seed), from the model's pretrained checkpoint.
# Each fine-tuned task gets its own rule, finetune_{task}, because its outputs (the checkpoints
# at its save steps) and its settings (config 'finetune' with 'finetune.per_task.{task}' on top)
# are its own: changing one task's setting reruns only that task's jobs and what depends on them.
# Which tasks and seeds run is the study model's (STUDY.finetune.tasks, STUDY.finetune.runs).
# Checkpoints follow the convention of workflow_scripts/models/checkpoints.py:
#   {results}/checkpoints/{model}/{task}.seed{seed}.step{K}/checkpoint.json  (each configured step)
#   {results}/checkpoints/{model}/{task}.seed{seed}.final/checkpoint.json    (end of training)
FINETUNE = STUDY.config["finetune"]


for _task in STUDY.finetune.tasks:
    _settings = STUDY.finetune_settings(_task)

    rule:
        name:
            f"finetune_{_task}"
        input:
            pretrained=STUDY.paths.checkpoint_manifest("{model}", "pretrained"),
            train=STUDY.paths.data_table(_task, "train"),
            dev=STUDY.paths.data_table(_task, STUDY.dev_split(_task)),
        output:
            steps=[
                STUDY.paths.finetuned_checkpoint("{model}", _task, "{seed}", step) for step in _settings["save_steps"]
            ],
            final=STUDY.paths.finetuned_checkpoint("{model}", _task, "{seed}"),
            metrics=STUDY.paths.finetune_metrics("{model}", _task, "{seed}"),
        log:
            STUDY.paths.log("finetune", f"{{model}}/{_task}.seed{{seed}}"),
        wildcard_constraints:
            seed=r"\d+",
        conda:
            "../envs/finetune.yaml"
        threads: FINETUNE["threads"]
        resources:
            mem_mb=FINETUNE["mem_mb"],
            runtime=FINETUNE["runtime"],
            # A GPU is requested from the scheduler only for device 'cuda'; 'auto' uses one when
            # the node it lands on has one, and the CPU otherwise.
            gpu=1 if _settings["device"] == "cuda" else 0,
        params:
            task=STUDY.task_spec(_task).params(),
            settings=STUDY.finetune.settings(_task),
            offline=STUDY.offline,
            mirror=STUDY.mirror,
        script:
            "scripts/entry.py"


rule finetune_metrics_table:
    input:
        [STUDY.paths.finetune_metrics(model, task, seed) for model, task, seed in STUDY.finetune.runs],
    output:
        STUDY.finetune.report_table(TABLE.FINETUNE_METRICS),
    log:
        STUDY.paths.log("finetune", "finetune_metrics_table"),
    conda:
        "../envs/finetune.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
