# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/data.py.
# Data stage (METHODS 2, 6): one rule per kind of source, one normalised Parquet table per corpus and split.
# Corpora are config entries (treebanks:, tasks:; docs/corpora.md); each rule is constrained to the
# entries it reads. A rule takes its local files as input (the mirror's, or a local entry's own), so
# touching one reruns its table, and otherwise downloads from the public source inside the job. The
# entry itself is a param, so changing one entry reruns only its branch.

DATA = STUDY.config["data"]

# The rules that may download run on the node Snakemake runs on: under a cluster profile the login node, where
# the internet is (compute nodes often have none). Offline (e.g. after the prefetch, README "Cluster without
# internet on compute nodes") nothing downloads and they are ordinary jobs. On a workstation this changes nothing.
if not STUDY.offline:

    localrules:
        glue_table,
        wic_table,
        task_table,
        treebank_table,
        coreference_mentions,
        wiki_segments,
        glove_vectors,


rule glue_table:
    input:
        mirror=STUDY.data.task_files,
    output:
        STUDY.paths.data_table("{task}", "{split}"),
    log:
        STUDY.paths.log("data", "{task}_{split}"),
    wildcard_constraints:
        task=STUDY.data.entry_pattern("glue"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        glue_task=STUDY.data.glue_task,
        mirror=STUDY.mirror,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule wic_table:
    input:
        mirror=STUDY.data.task_files,
    output:
        STUDY.paths.data_table("{task}", "{split}"),
    log:
        STUDY.paths.log("data", "{task}_{split}"),
    wildcard_constraints:
        task=STUDY.data.entry_pattern("wic"),
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
        release=DATA["wic"],
    script:
        "scripts/entry.py"


rule task_table:
    input:
        files=STUDY.data.task_files,
    output:
        STUDY.paths.data_table("{task}", "{split}"),
    log:
        STUDY.paths.log("data", "{task}_{split}"),
    wildcard_constraints:
        task=STUDY.data.entry_pattern("hub", "table"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        task=STUDY.data.task_entry,
        offline=STUDY.offline,
        max_field_chars=DATA["max_field_chars"],
    script:
        "scripts/entry.py"


rule treebank_table:
    input:
        files=STUDY.data.treebank_files,
    output:
        STUDY.paths.data_table("{treebank}", "{split}"),
    log:
        STUDY.paths.log("data", "{treebank}_{split}"),
    wildcard_constraints:
        treebank=STUDY.data.entry_pattern("treebank"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        treebank=STUDY.data.treebank_entry,
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        downloads=STUDY.config["downloads"],
        ud_release=DATA["ud_release"],
        # Functions: Snakemake would read the templates' {repo}, {tag} and {file} as wildcards.
        ud_url=STUDY.data.ud_url,
        ud_api_url=STUDY.data.ud_api_url,
    script:
        "scripts/entry.py"


rule coreference_mentions:
    input:
        files=STUDY.data.treebank_files,
    output:
        STUDY.paths.mentions_table("{treebank}", "{split}"),
    log:
        STUDY.paths.log("data", "{treebank}_{split}_mentions"),
    wildcard_constraints:
        treebank=STUDY.data.entry_pattern("treebank"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        treebank=STUDY.data.treebank_entry,
        mirror=STUDY.mirror,
        offline=STUDY.offline,
        downloads=STUDY.config["downloads"],
        ud_release=DATA["ud_release"],
        # Functions: Snakemake would read the templates' {repo}, {tag} and {file} as wildcards.
        ud_url=STUDY.data.ud_url,
        ud_api_url=STUDY.data.ud_api_url,
    script:
        "scripts/entry.py"


rule wiki_segments:
    input:
        mirror=STUDY.data.wiki_files,
    output:
        STUDY.paths.data_table("wiki", "segments"),
    log:
        STUDY.paths.log("data", "wiki_segments"),
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
        mirror=STUDY.data.glove_files,
    output:
        STUDY.paths.data_table("glove", "vectors"),
    log:
        STUDY.paths.log("data", "glove_vectors"),
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
        release={k: DATA["glove"][k] for k in ("url", "sha256")},
    script:
        "scripts/entry.py"


rule data_summary:
    input:
        STUDY.data.data_tables(),
    output:
        STUDY.data.report_table(TABLE.DATA_SUMMARY),
    log:
        STUDY.paths.log("data", "summary"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
