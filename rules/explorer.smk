# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/explorer.py.
# The head explorer: one self-contained HTML page per model (no server, no external URL; it opens from a file
# and inside `snakemake --report`), built from the study's per-head tables, the pattern features of each
# analysed task and the maps of a few example inputs before and after fine-tuning. What a page reads is the
# study model's (STUDY.explorer, workflow_scripts/study/plans/explorer.py). See docs/explorer.md.

EXPLORER = STUDY.config["explorer"]


rule head_explorer:
    input:
        unpack(STUDY.explorer.page),
    output:
        STUDY.explorer.report_page("{model}"),
    log:
        STUDY.paths.log("explorer", "{model}_head_explorer"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=10,
    params:
        layout=STUDY.explorer.layout,
        relations=STUDY.config["syntax"]["relations"],
        select_split=STUDY.config["syntax"]["select_split"],
        examples=EXPLORER["examples"],
        max_tokens=EXPLORER["max_tokens"],
        example_ids=EXPLORER["example_ids"],
        max_megabytes=EXPLORER["max_megabytes"],
    script:
        "scripts/entry.py"


# The index, the study's atlas page: every model's heads in each role of tables/atlas.csv by relative depth, the role
# agreement of related models where the study has it, and every model linked to its page
# (workflow_scripts/explorer/index.py). The pages are linked by name, so a page made again does not make the index
# again.
rule explorer_index:
    input:
        unpack(STUDY.explorer.index),
    output:
        STUDY.explorer.report_page("_index"),
    log:
        STUDY.paths.log("explorer", "explorer_index"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=5,
    params:
        models=STUDY.models,
        pages=[STUDY.paths.page("explorer", model) for model in STUDY.models],
        treebank=STUDY.syntax_treebank,
    script:
        "scripts/entry.py"
