# Data stage (METHODS 2, 6): one rule per source, one normalised Parquet table per corpus and split.
# Each rule takes its mirror files as input when the mirror holds them (so touching one reruns
# its table) and otherwise downloads from the public source inside the job.


rule glue_table:
    input:
        mirror=lambda wc: mirror_input(wc.task, wc.split),
    output:
        f"{RESULTS}/data/{{task}}/{{split}}.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
    log:
        f"{RESULTS}/logs/data/{{task}}_{{split}}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule wic_table:
    input:
        mirror=lambda wc: mirror_input("wic", wc.split),
    output:
        f"{RESULTS}/data/wic/{{split}}.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
        downloads=config["downloads"],
    log:
        f"{RESULTS}/logs/data/wic_{{split}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule treebank_table:
    input:
        mirror=lambda wc: mirror_input(wc.treebank, wc.split),
    output:
        f"{RESULTS}/data/{{treebank}}/{{split}}.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
        downloads=config["downloads"],
        ud_release=config["data"]["ud_release"],
    log:
        f"{RESULTS}/logs/data/{{treebank}}_{{split}}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule coreference_mentions:
    input:
        mirror=lambda wc: mirror_input(wc.treebank, wc.split),
    output:
        f"{RESULTS}/data/{{treebank}}/{{split}}.mentions.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
        downloads=config["downloads"],
        ud_release=config["data"]["ud_release"],
    log:
        f"{RESULTS}/logs/data/{{treebank}}_{{split}}_mentions.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule wiki_segments:
    input:
        mirror=lambda wc: mirror_input("wiki", "segments"),
    output:
        f"{RESULTS}/data/wiki/segments.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
        n_segments=config["data"]["wiki"]["n_segments"],
        seed=config["data"]["wiki"]["seed"],
        max_words=config["data"]["wiki"]["max_words"],
        hub=config["data"]["wiki"]["hub"],
    log:
        f"{RESULTS}/logs/data/wiki_segments.log",
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule glove_vectors:
    input:
        mirror=lambda wc: mirror_input("glove", "vectors"),
    output:
        f"{RESULTS}/data/glove/vectors.parquet",
    params:
        mirror=MIRROR,
        offline=OFFLINE,
        max_words=config["data"]["glove"]["max_words"],
        downloads=config["downloads"],
    log:
        f"{RESULTS}/logs/data/glove_vectors.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule data_summary:
    input:
        data_tables(),
    output:
        report(
            f"{RESULTS}/tables/data_summary.csv",
            caption="../report/data_summary.rst",
            category="Data",
        ),
    log:
        f"{RESULTS}/logs/data/summary.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"
