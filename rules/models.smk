# Models: resolve every selected model (hub id, local path or package folder) and record what it is.


rule model_card:
    output:
        f"{RESULTS}/models/{{model}}/model.json",
    params:
        entry=lambda wc: model_source(wc.model),
        offline=OFFLINE,
    log:
        f"{RESULTS}/logs/models/{{model}}_card.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/models.yaml"
    script:
        "scripts/entry.py"


rule models_table:
    input:
        expand(f"{RESULTS}/models/{{model}}/model.json", model=STUDY["models"]),
    output:
        report(
            f"{RESULTS}/tables/models.csv",
            caption="../report/models.rst",
            category="Models",
        ),
    log:
        f"{RESULTS}/logs/models/models_table.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/models.yaml"
    script:
        "scripts/entry.py"
