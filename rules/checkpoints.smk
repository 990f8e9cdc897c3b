# Checkpoints (METHODS 3): every checkpoint of a model is a folder with checkpoint.json;
# downstream rules take checkpoint_manifest(model, checkpoint) as input, whatever its kind.


rule pretrained_checkpoint:
    input:
        f"{RESULTS}/models/{{model}}/model.json",
    output:
        f"{RESULTS}/checkpoints/{{model}}/pretrained/checkpoint.json",
    params:
        entry=lambda wc: model_source(wc.model),
    log:
        f"{RESULTS}/logs/checkpoints/{{model}}_pretrained.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/models.yaml"
    script:
        "scripts/entry.py"


rule random_checkpoint:
    input:
        f"{RESULTS}/models/{{model}}/model.json",
    output:
        f"{RESULTS}/checkpoints/{{model}}/random/checkpoint.json",
    params:
        entry=lambda wc: model_source(wc.model),
        seed=config["checkpoints"]["random_seed"],
        offline=OFFLINE,
    log:
        f"{RESULTS}/logs/checkpoints/{{model}}_random.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/models.yaml"
    script:
        "scripts/entry.py"
