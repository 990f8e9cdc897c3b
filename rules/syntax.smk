# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/syntax.py.
# Syntax and coreference analyses of "What Does BERT Look At?" (METHODS 7.3, 7.4, 7.5, 10).
# Per (model, checkpoint[, treebank, split]) jobs write parts under {results}/analysis/syntax/; study-wide rules
# combine them into {results}/tables/ (the tables of the syntax plan's analyses) and draw the figures under
# {results}/figures/syntax/. See docs/syntax.md.
from workflow_scripts.study.plans.syntax import BEST_HEAD_MAPS_FIGURE, DEPENDENCY_HEADS_FIGURE

SYNTAX = STUDY.config["syntax"]
COREF_CORPUS = STUDY.syntax.coref_corpus
SYNTAX_SELECT, SYNTAX_SCORE = SYNTAX["select_split"], SYNTAX["score_split"]


rule coref_windows:
    input:
        sentences=STUDY.syntax.coref_sentences,
        mentions=STUDY.syntax.coref_mentions,
    output:
        data=STUDY.paths.data_table(COREF_CORPUS, "{split}"),
        mentions=STUDY.paths.mentions_table(COREF_CORPUS, "{split}"),
    log:
        STUDY.paths.log("data", f"{COREF_CORPUS}_{{split}}"),
    conda:
        "../envs/data.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        window_words=SYNTAX["coref_window_words"],
        corpus=COREF_CORPUS,
    script:
        "scripts/entry.py"


# Scoring sums over a dump's sentences: one job per shard group of the dump (attention.analysis_shards_per_job
# shards) writes its sentences' counts under dependency/shards/, and dependency_scores gathers them into the part
# one job over the dump would write.
rule dependency_scores_shard:
    input:
        dump=STUDY.syntax.dump_manifest,
        tokens=STUDY.syntax.token_table,
        annotation=STUDY.paths.annotation("{treebank}", "{split}"),
    output:
        STUDY.paths.shard_partial("syntax", "{model}", "{checkpoint}", "dependency", "{treebank}_{split}"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_dependency_{treebank}_{split}.{shard_group}"),
    conda:
        "../envs/surface.yaml"
    threads: 2  # two windows of sentences scored at once (the conversion and argmaxes leave the GIL)
    resources:
        mem_mb=3000,
        runtime=60,
    params:
        max_offset=SYNTAX["max_offset"],
    script:
        "scripts/entry.py"


rule dependency_scores:
    input:
        dump=STUDY.syntax.dump_manifest,
        partials=expand(
            STUDY.paths.shard_partial("syntax", "{model}", "{checkpoint}", "dependency", "{treebank}_{split}"),
            shard_group=STUDY.shard_groups,
            allow_missing=True,
        ),
    output:
        STUDY.paths.analysis("syntax", "{model}", "{checkpoint}", "dependency", "{treebank}_{split}.parquet"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_dependency_{treebank}_{split}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    script:
        "scripts/entry.py"


rule dependency_tables:
    input:
        parts=[
            STUDY.paths.analysis("syntax", m, c, "dependency", f"{t}_{s}.parquet")
            for m, c, t, s in STUDY.syntax.dependency_parts()
        ],
    output:
        heads=STUDY.syntax.report_table(TABLE.DEPENDENCY_HEADS),
        best=STUDY.syntax.report_table(TABLE.DEPENDENCY_BEST),
        halves=STUDY.syntax.report_table(TABLE.DEPENDENCY_HALVES),
    log:
        STUDY.paths.log("syntax", "dependency_tables"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        part_keys=STUDY.syntax.dependency_parts(),
        labelled={t: STUDY.corpora.treebanks[t].labelled for t in SYNTAX["treebanks"] if t in STUDY.corpora.treebanks},
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule coreference_scores:
    input:
        dump=STUDY.syntax.coref_dump,
        tokens=STUDY.syntax.coref_tokens,
        annotation=STUDY.paths.annotation(COREF_CORPUS, SYNTAX["coref_split"]),
        mentions=STUDY.paths.mentions_table(COREF_CORPUS, SYNTAX["coref_split"]),
    output:
        STUDY.paths.analysis(
            "syntax", "{model}", "{checkpoint}", "coreference", f"{COREF_CORPUS}_{SYNTAX['coref_split']}.parquet"
        ),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_coreference"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    script:
        "scripts/entry.py"


rule coreference_tables:
    input:
        parts=[
            STUDY.paths.analysis("syntax", m, c, "coreference", f"{COREF_CORPUS}_{SYNTAX['coref_split']}.parquet")
            for m, c in STUDY.syntax.coref_pairs
        ],
    output:
        heads=STUDY.syntax.report_table(TABLE.COREF_HEADS),
        best=STUDY.syntax.report_table(TABLE.COREF_BEST),
    log:
        STUDY.paths.log("syntax", "coreference_tables"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        part_keys=STUDY.syntax.coref_pairs,
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule probe_features:
    input:
        dump=STUDY.syntax.dump_manifest,
        tokens=STUDY.syntax.token_table,
        annotation=STUDY.paths.annotation("{treebank}", "{split}"),
    output:
        maps=STUDY.paths.analysis("syntax", "{model}", "{checkpoint}", "probe_features", "{treebank}_{split}.maps.npy"),
        index=STUDY.paths.analysis(
            "syntax", "{model}", "{checkpoint}", "probe_features", "{treebank}_{split}.index.npz"
        ),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_probe_features_{treebank}_{split}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
    params:
        # Only the training split is capped (a fixed random subset, the same for every checkpoint).
        max_sentences=STUDY.syntax.probe_max_sentences,
        seed=SYNTAX["probe_seed"],
    script:
        "scripts/entry.py"


rule probe_attention:
    input:
        unpack(STUDY.syntax.probe_attention),
    output:
        STUDY.paths.analysis("syntax", "{model}", "{checkpoint}", TABLE.PROBES, "{treebank}", "{probe}.parquet"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_probe_{treebank}_{probe}"),
    wildcard_constraints:
        probe="attn|attn_glove",
    conda:
        "../envs/surface.yaml"
    threads: SYNTAX["threads"]
    resources:
        mem_mb=6000,
        runtime=120,
    params:
        epochs=SYNTAX["probe_epochs"],
        lr=SYNTAX["probe_lr"],
        seed=SYNTAX["probe_seed"],
        batch_sentences=SYNTAX["probe_batch_sentences"],
        exclude_punct=SYNTAX["exclude_punct"],
    script:
        "scripts/entry.py"


rule probe_baseline:
    input:
        unpack(STUDY.syntax.probe_baseline),
    output:
        STUDY.paths.analysis("syntax", "{model}", "baselines", "{treebank}", "{probe}.parquet"),
    log:
        STUDY.paths.log("syntax", "{model}_baseline_{treebank}_{probe}"),
    wildcard_constraints:
        probe="right_branching|distance_glove",
    conda:
        "../envs/surface.yaml"
    threads: SYNTAX["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        epochs=SYNTAX["probe_epochs"],
        lr=SYNTAX["probe_lr"],
        seed=SYNTAX["probe_seed"],
        batch_sentences=SYNTAX["probe_batch_sentences"],
        max_train_sentences=SYNTAX["probe_max_train_sentences"],
        exclude_punct=SYNTAX["exclude_punct"],
    script:
        "scripts/entry.py"


rule probe_mst:
    input:
        test_maps=STUDY.paths.analysis(
            "syntax", "{model}", "{checkpoint}", "probe_features", f"{{treebank}}_{SYNTAX_SCORE}.maps.npy"
        ),
        test_index=STUDY.paths.analysis(
            "syntax", "{model}", "{checkpoint}", "probe_features", f"{{treebank}}_{SYNTAX_SCORE}.index.npz"
        ),
        test_annotation=STUDY.paths.annotation("{treebank}", SYNTAX_SCORE),
        # The head is the best `all` (dependent -> head) head on the selection split.
        selection=STUDY.paths.analysis(
            "syntax", "{model}", "{checkpoint}", "dependency", f"{{treebank}}_{SYNTAX_SELECT}.parquet"
        ),
    output:
        STUDY.paths.analysis("syntax", "{model}", "{checkpoint}", TABLE.PROBES, "{treebank}", "mst_best_head.parquet"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_probe_mst_{treebank}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        exclude_punct=SYNTAX["exclude_punct"],
    script:
        "scripts/entry.py"


rule probes_table:
    input:
        parts=[path for *_, path in STUDY.syntax.probe_parts()],
    output:
        STUDY.syntax.report_table(TABLE.PROBES),
    log:
        STUDY.paths.log("syntax", "probes_table"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        part_keys=[tuple(key) for *key, _ in STUDY.syntax.probe_parts()],
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    script:
        "scripts/entry.py"


rule dependency_heatmaps:
    input:
        heads=STUDY.paths.table(TABLE.DEPENDENCY_HEADS),
        best=STUDY.paths.table(TABLE.DEPENDENCY_BEST),
    output:
        png=STUDY.syntax.report_figure(DEPENDENCY_HEADS_FIGURE),
        pdf=STUDY.syntax.figure_file(DEPENDENCY_HEADS_FIGURE, "pdf"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_dependency_heatmaps_{treebank}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
    script:
        "scripts/entry.py"


rule best_head_maps:
    input:
        dump=STUDY.syntax.score_dump,
        tokens=STUDY.syntax.score_tokens,
        annotation=STUDY.paths.annotation("{treebank}", SYNTAX_SCORE),
        best=STUDY.paths.table(TABLE.DEPENDENCY_BEST),
    output:
        png=STUDY.syntax.report_figure(BEST_HEAD_MAPS_FIGURE),
        pdf=STUDY.syntax.figure_file(BEST_HEAD_MAPS_FIGURE, "pdf"),
    log:
        STUDY.paths.log("syntax", "{model}_{checkpoint}_best_head_maps_{treebank}"),
    conda:
        "../envs/surface.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
        example_id=SYNTAX["figure_example_id"],
    script:
        "scripts/entry.py"
