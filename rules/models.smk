# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/models.py.
# Models (METHODS 1, 3): resolve every selected model (hub id, local path or package folder), record what it
# is, and make its pretrained and random-init checkpoints.

# The stage's plan, asked by name: STUDY.models is the list of the study's models.
MODELS_PLAN = STUDY.stage("models")

# The rules that may reach the hub (the model card fetches a hub model whole, weights included, into the
# Hugging Face cache) run on the node Snakemake runs on, under a cluster profile the login node, where the
# internet is; later jobs load the weights from the cache. Offline (e.g. after the prefetch) nothing downloads
# and they are ordinary jobs. On a workstation this changes nothing.
if not STUDY.offline:

    localrules:
        model_card,
        pretrained_checkpoint,
        random_checkpoint,


rule model_card:
    output:
        STUDY.paths.model_card("{model}"),
    log:
        STUDY.paths.log("models", "{model}_card"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        entry=MODELS_PLAN.model_source,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule models_table:
    input:
        expand(STUDY.paths.model_card("{model}"), model=STUDY.models),
    output:
        MODELS_PLAN.report_table(TABLE.MODELS),
    log:
        STUDY.paths.log("models", "models_table"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"


# Checkpoints (METHODS 3): every checkpoint of a model is a folder with checkpoint.json;
# downstream rules take STUDY.paths.checkpoint_manifest(model, checkpoint) as input, whatever its kind.


rule pretrained_checkpoint:
    input:
        STUDY.paths.model_card("{model}"),
    output:
        STUDY.paths.checkpoint_manifest("{model}", "pretrained"),
    log:
        STUDY.paths.log("checkpoints", "{model}_pretrained"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        entry=MODELS_PLAN.model_source,
    script:
        "scripts/entry.py"


rule random_checkpoint:
    input:
        STUDY.paths.model_card("{model}"),
    output:
        STUDY.paths.checkpoint_manifest("{model}", "random"),
    log:
        STUDY.paths.log("checkpoints", "{model}_random"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    params:
        entry=MODELS_PLAN.model_source,
        seed=STUDY.config["checkpoints"]["random_seed"],
        offline=STUDY.offline,
    script:
        "scripts/entry.py"
