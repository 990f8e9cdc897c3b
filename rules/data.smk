# Data stage (METHODS 2, 6): one rule per source, one normalised Parquet table per corpus and split.
# Each rule takes its mirror files as input when the mirror holds them (so touching one reruns
# its table) and otherwise downloads from the public source inside the job.

DATA = STUDY.config["data"]


rule glue_table:
    input:
        mirror=lambda wc: STUDY.inputs.mirror(wc.task, wc.split),
    output:
        f"{STUDY.results}/data/{{task}}/{{split}}.parquet",
    log:
        f"{STUDY.results}/logs/data/{{task}}_{{split}}.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule wic_table:
    input:
        mirror=lambda wc: STUDY.inputs.mirror("wic", wc.split),
    output:
        f"{STUDY.results}/data/wic/{{split}}.parquet",
    log:
        f"{STUDY.results}/logs/data/wic_{{split}}.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        downloads=STUDY.config["downloads"],
    script:
        "scripts/entry.py"


rule treebank_table:
    input:
        mirror=lambda wc: STUDY.inputs.mirror(wc.treebank, wc.split),
    output:
        f"{STUDY.results}/data/{{treebank}}/{{split}}.parquet",
    log:
        f"{STUDY.results}/logs/data/{{treebank}}_{{split}}.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        downloads=STUDY.config["downloads"],
        ud_release=DATA["ud_release"],
    script:
        "scripts/entry.py"


rule coreference_mentions:
    input:
        mirror=lambda wc: STUDY.inputs.mirror(wc.treebank, wc.split),
    output:
        f"{STUDY.results}/data/{{treebank}}/{{split}}.mentions.parquet",
    log:
        f"{STUDY.results}/logs/data/{{treebank}}_{{split}}_mentions.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        downloads=STUDY.config["downloads"],
        ud_release=DATA["ud_release"],
    script:
        "scripts/entry.py"


rule wiki_segments:
    input:
        mirror=lambda wc: STUDY.inputs.mirror("wiki", "segments"),
    output:
        f"{STUDY.results}/data/wiki/segments.parquet",
    log:
        f"{STUDY.results}/logs/data/wiki_segments.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        n_segments=DATA["wiki"]["n_segments"],
        seed=DATA["wiki"]["seed"],
        max_words=DATA["wiki"]["max_words"],
        hub=DATA["wiki"]["hub"],
    script:
        "scripts/entry.py"


rule glove_vectors:
    input:
        mirror=lambda wc: STUDY.inputs.mirror("glove", "vectors"),
    output:
        f"{STUDY.results}/data/glove/vectors.parquet",
    log:
        f"{STUDY.results}/logs/data/glove_vectors.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        max_words=DATA["glove"]["max_words"],
        downloads=STUDY.config["downloads"],
    script:
        "scripts/entry.py"


rule data_summary:
    input:
        STUDY.data_tables(),
    output:
        report(
            f"{STUDY.results}/tables/data_summary.csv",
            caption="../report/data_summary.rst",
            category="Data",
        ),
    log:
        f"{STUDY.results}/logs/data/summary.log",
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
