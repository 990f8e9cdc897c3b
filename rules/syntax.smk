# Syntax and coreference analyses of "What Does BERT Look At?" (METHODS 7.3, 7.4, 7.5, 10).
# Per (model, checkpoint[, split]) jobs write parts under {RESULTS}/analysis/syntax/; study-wide rules
# combine them into {RESULTS}/tables/{dependency_heads,dependency_best,coref_heads,coref_best,probes}.csv
# and draw the figures under {RESULTS}/figures/syntax/. See docs/syntax.md.

SYNTAX = config["syntax"]
SYNTAX_PART = f"{RESULTS}/analysis/syntax/{{model}}/{{checkpoint}}"
SYNTAX_FIGURES = f"{RESULTS}/figures/syntax"
SYNTAX_CATEGORY = "What does BERT look at?"
SYNTAX_SELECT, SYNTAX_SCORE = SYNTAX["select_split"], SYNTAX["score_split"]
SYNTAX_SPLITS = sorted({SYNTAX_SELECT, SYNTAX_SCORE})
COREF_CORPUS = "gumwin"  # GUM documents cut into windows (rule gum_windows)


def syntax_pairs():
    """(model, checkpoint) of every checkpoint whose EWT dumps cover the selection and score splits."""
    dumped = {(m, c, s) for m, c, corpus, s in attention_targets() if corpus == "ewt"}
    pairs = {(m, c) for m, c, _ in dumped}
    return sorted((m, c) for m, c in pairs if all((m, c, s) in dumped for s in SYNTAX_SPLITS))


def coref_pairs():
    """(model, checkpoint) for coreference: the syntax pairs, when the study builds GUM's coreference split."""
    if SYNTAX["coref_split"] not in STUDY_SPLITS.get("gum", []) or "gum" not in config["data"]["coreference_treebanks"]:
        return []
    return syntax_pairs()


def syntax_probes():
    """Trained attention probes of every checkpoint, and the checkpoint-free baselines."""
    with_glove = "glove" in STUDY_SPLITS
    return ["attn", *(["attn_glove"] if with_glove else [])], ["right_branching", *(["distance_glove"] if with_glove else [])]


def syntax_outputs():
    """The tables and figures rule all asks for (none when the study dumps no EWT train and dev)."""
    pairs = syntax_pairs()
    if not pairs:
        return []
    outputs = [f"{RESULTS}/tables/{name}.csv" for name in ("dependency_heads", "dependency_best", "probes")]
    if coref_pairs():
        outputs += [f"{RESULTS}/tables/coref_heads.csv", f"{RESULTS}/tables/coref_best.csv"]
    for model, checkpoint in pairs:
        for figure in ("dependency_heads", "best_head_maps"):
            outputs += [f"{SYNTAX_FIGURES}/{figure}_{model}_{checkpoint}.{ext}" for ext in ("png", "pdf")]
    return outputs


def _probe_parts():
    attention, baselines = syntax_probes()
    parts = []
    for model, checkpoint in syntax_pairs():
        parts += [(model, checkpoint, p, f"{RESULTS}/analysis/syntax/{model}/{checkpoint}/probes/{p}.parquet")
                  for p in (*attention, "mst_best_head")]
    for model in sorted({m for m, _ in syntax_pairs()}):
        parts += [(model, "none", p, f"{RESULTS}/analysis/syntax/{model}/baselines/{p}.parquet") for p in baselines]
    return parts


rule gum_windows:
    input:
        sentences=lambda wc: data_table("gum", wc.split),
        mentions=f"{RESULTS}/data/gum/{{split}}.mentions.parquet",
    output:
        data=f"{RESULTS}/data/{COREF_CORPUS}/{{split}}.parquet",
        mentions=f"{RESULTS}/data/{COREF_CORPUS}/{{split}}.mentions.parquet",
    params:
        window_words=SYNTAX["coref_window_words"],
    log:
        f"{RESULTS}/logs/data/{COREF_CORPUS}_{{split}}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/data.yaml"
    script:
        "scripts/entry.py"


rule dependency_scores:
    input:
        dump=lambda wc: dump_manifest(wc.model, wc.checkpoint, "ewt", wc.split),
        tokens=lambda wc: token_table_path(wc.model, "ewt", wc.split),
        annotation=f"{RESULTS}/annotation/ewt/{{split}}.parquet",
    output:
        f"{SYNTAX_PART}/dependency/ewt_{{split}}.parquet",
    params:
        max_offset=SYNTAX["max_offset"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_dependency_{{split}}.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule dependency_tables:
    input:
        parts=[f"{RESULTS}/analysis/syntax/{m}/{c}/dependency/ewt_{s}.parquet"
               for m, c in syntax_pairs() for s in SYNTAX_SPLITS],
    output:
        heads=report(f"{RESULTS}/tables/dependency_heads.csv", caption="../report/syntax_dependency_heads.rst",
                     category=SYNTAX_CATEGORY),
        best=report(f"{RESULTS}/tables/dependency_best.csv", caption="../report/syntax_dependency_best.rst",
                    category=SYNTAX_CATEGORY),
    params:
        part_keys=[(m, c, s) for m, c in syntax_pairs() for s in SYNTAX_SPLITS],
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    log:
        f"{RESULTS}/logs/syntax/dependency_tables.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule coreference_scores:
    input:
        dump=lambda wc: dump_manifest(wc.model, wc.checkpoint, COREF_CORPUS, SYNTAX["coref_split"]),
        tokens=lambda wc: token_table_path(wc.model, COREF_CORPUS, SYNTAX["coref_split"]),
        annotation=f"{RESULTS}/annotation/{COREF_CORPUS}/{SYNTAX['coref_split']}.parquet",
        mentions=f"{RESULTS}/data/{COREF_CORPUS}/{SYNTAX['coref_split']}.mentions.parquet",
    output:
        f"{SYNTAX_PART}/coreference/{COREF_CORPUS}_{SYNTAX['coref_split']}.parquet",
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_coreference.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule coreference_tables:
    input:
        parts=[f"{RESULTS}/analysis/syntax/{m}/{c}/coreference/{COREF_CORPUS}_{SYNTAX['coref_split']}.parquet"
               for m, c in coref_pairs()],
    output:
        heads=report(f"{RESULTS}/tables/coref_heads.csv", caption="../report/syntax_coref_heads.rst",
                     category=SYNTAX_CATEGORY),
        best=report(f"{RESULTS}/tables/coref_best.csv", caption="../report/syntax_coref_best.rst",
                    category=SYNTAX_CATEGORY),
    params:
        part_keys=coref_pairs(),
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    log:
        f"{RESULTS}/logs/syntax/coreference_tables.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule probe_features:
    input:
        dump=lambda wc: dump_manifest(wc.model, wc.checkpoint, "ewt", wc.split),
        tokens=lambda wc: token_table_path(wc.model, "ewt", wc.split),
        annotation=f"{RESULTS}/annotation/ewt/{{split}}.parquet",
    output:
        maps=f"{SYNTAX_PART}/probe_features/ewt_{{split}}.maps.npy",
        index=f"{SYNTAX_PART}/probe_features/ewt_{{split}}.index.npz",
    params:
        # Only the training split is capped (a fixed random subset, the same for every checkpoint).
        max_sentences=lambda wc: SYNTAX["probe_max_train_sentences"] if wc.split == SYNTAX_SELECT else None,
        seed=SYNTAX["probe_seed"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_probe_features_{{split}}.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


def _probe_attention_inputs(wc):
    features = f"{RESULTS}/analysis/syntax/{wc.model}/{wc.checkpoint}/probe_features"
    inputs = {
        "train_maps": f"{features}/ewt_{SYNTAX_SELECT}.maps.npy",
        "train_index": f"{features}/ewt_{SYNTAX_SELECT}.index.npz",
        "test_maps": f"{features}/ewt_{SYNTAX_SCORE}.maps.npy",
        "test_index": f"{features}/ewt_{SYNTAX_SCORE}.index.npz",
        "train_annotation": f"{RESULTS}/annotation/ewt/{SYNTAX_SELECT}.parquet",
        "test_annotation": f"{RESULTS}/annotation/ewt/{SYNTAX_SCORE}.parquet",
    }
    if wc.probe == "attn_glove":
        inputs["glove"] = data_table("glove", "vectors")
    return inputs


rule probe_attention:
    input:
        unpack(_probe_attention_inputs),
    output:
        f"{SYNTAX_PART}/probes/{{probe}}.parquet",
    wildcard_constraints:
        probe="attn|attn_glove",
    params:
        epochs=SYNTAX["probe_epochs"],
        lr=SYNTAX["probe_lr"],
        seed=SYNTAX["probe_seed"],
        batch_sentences=SYNTAX["probe_batch_sentences"],
        exclude_punct=SYNTAX["exclude_punct"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_probe_{{probe}}.log",
    threads: SYNTAX["threads"]
    resources:
        mem_mb=6000,
        runtime=120,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


def _probe_baseline_inputs(wc):
    inputs = {
        "train_tokens": token_table_path(wc.model, "ewt", SYNTAX_SELECT),
        "test_tokens": token_table_path(wc.model, "ewt", SYNTAX_SCORE),
        "train_annotation": f"{RESULTS}/annotation/ewt/{SYNTAX_SELECT}.parquet",
        "test_annotation": f"{RESULTS}/annotation/ewt/{SYNTAX_SCORE}.parquet",
    }
    if wc.probe == "distance_glove":
        inputs["glove"] = data_table("glove", "vectors")
    return inputs


rule probe_baseline:
    input:
        unpack(_probe_baseline_inputs),
    output:
        f"{RESULTS}/analysis/syntax/{{model}}/baselines/{{probe}}.parquet",
    wildcard_constraints:
        probe="right_branching|distance_glove",
    params:
        epochs=SYNTAX["probe_epochs"],
        lr=SYNTAX["probe_lr"],
        seed=SYNTAX["probe_seed"],
        batch_sentences=SYNTAX["probe_batch_sentences"],
        max_train_sentences=SYNTAX["probe_max_train_sentences"],
        exclude_punct=SYNTAX["exclude_punct"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_baseline_{{probe}}.log",
    threads: SYNTAX["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule probe_mst:
    input:
        test_maps=f"{SYNTAX_PART}/probe_features/ewt_{SYNTAX_SCORE}.maps.npy",
        test_index=f"{SYNTAX_PART}/probe_features/ewt_{SYNTAX_SCORE}.index.npz",
        test_annotation=f"{RESULTS}/annotation/ewt/{SYNTAX_SCORE}.parquet",
        # The head is the best `all` (dependent -> head) head on the selection split.
        selection=f"{SYNTAX_PART}/dependency/ewt_{SYNTAX_SELECT}.parquet",
    output:
        f"{SYNTAX_PART}/probes/mst_best_head.parquet",
    params:
        exclude_punct=SYNTAX["exclude_punct"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_probe_mst.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule probes_table:
    input:
        parts=[path for *_, path in _probe_parts()],
    output:
        report(f"{RESULTS}/tables/probes.csv", caption="../report/syntax_probes.rst", category=SYNTAX_CATEGORY),
    params:
        part_keys=[tuple(key) for *key, _ in _probe_parts()],
        resamples=SYNTAX["bootstrap_resamples"],
        seed=SYNTAX["bootstrap_seed"],
    log:
        f"{RESULTS}/logs/syntax/probes_table.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule dependency_heatmaps:
    input:
        heads=f"{RESULTS}/tables/dependency_heads.csv",
        best=f"{RESULTS}/tables/dependency_best.csv",
    output:
        png=report(f"{SYNTAX_FIGURES}/dependency_heads_{{model}}_{{checkpoint}}.png",
                   caption="../report/syntax_dependency_heatmap.rst", category=SYNTAX_CATEGORY),
        pdf=f"{SYNTAX_FIGURES}/dependency_heads_{{model}}_{{checkpoint}}.pdf",
    params:
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_dependency_heatmaps.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule best_head_maps:
    input:
        dump=lambda wc: dump_manifest(wc.model, wc.checkpoint, "ewt", SYNTAX_SCORE),
        tokens=lambda wc: token_table_path(wc.model, "ewt", SYNTAX_SCORE),
        annotation=f"{RESULTS}/annotation/ewt/{SYNTAX_SCORE}.parquet",
        best=f"{RESULTS}/tables/dependency_best.csv",
    output:
        png=report(f"{SYNTAX_FIGURES}/best_head_maps_{{model}}_{{checkpoint}}.png",
                   caption="../report/syntax_best_head_maps.rst", category=SYNTAX_CATEGORY),
        pdf=f"{SYNTAX_FIGURES}/best_head_maps_{{model}}_{{checkpoint}}.pdf",
    params:
        relations=SYNTAX["relations"],
        select_split=SYNTAX_SELECT,
        score_split=SYNTAX_SCORE,
        example_id=SYNTAX["figure_example_id"],
    log:
        f"{RESULTS}/logs/syntax/{{model}}_{{checkpoint}}_best_head_maps.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"
