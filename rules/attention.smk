# Each rule runs the function registered as @entry_point("<rule name>") in workflow_scripts/entrypoints/attention.py.
# Attention stage (METHODS 4-6): word annotation, token tables aligned to words, attention dumps.
import re

from workflow_scripts.study.annotation import stanza_downloads_pending

ATTENTION = STUDY.config["attention"]

# Online, an annotation job whose stanza model folder (annotation.stanza_dir) lacks its language downloads the
# models: then the annotation jobs run on the node Snakemake runs on (under a cluster profile the login node, where
# the internet is), as the data rules do. Offline, or with every model there (e.g. after the prefetch), they are
# ordinary jobs.
if stanza_downloads_pending(STUDY.config, STUDY.corpora):

    localrules:
        annotation,


rule annotation:
    input:
        data=STUDY.attention.data_table,
    output:
        STUDY.paths.annotation("{corpus}", "{split}"),
    log:
        STUDY.paths.log("annotation", "{corpus}_{split}"),
    conda:
        "../envs/annotation.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        # A task entry may name its own annotator and language (tasks.NAME.annotator, .language).
        annotator=STUDY.attention.annotator,
        spacy_model=STUDY.attention.spacy_model,
        stanza_dir=STUDY.attention.stanza_dir,
        stanza_models=STUDY.attention.stanza_models,
        pretokenized=STUDY.attention.pretokenized,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


rule token_table:
    input:
        checkpoint=STUDY.attention.pretrained_checkpoint,
        data=STUDY.attention.data_table,
        annotation=STUDY.paths.annotation("{corpus}", "{split}"),
    output:
        STUDY.paths.token_table("{model}", "{corpus}", "{split}"),
    log:
        STUDY.paths.log("tokens", "{model}_{corpus}_{split}"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        max_length=STUDY.attention.max_length,
        max_examples=STUDY.attention.max_examples,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


# Treebank sentences are fed under attention.input_protocol (workflow_scripts/attention/texts.py).
# Only this rule has the key among its params, so changing it reruns the treebank branch alone,
# and every other corpus, always fed as written, keeps its token tables and dumps.
use rule token_table as treebank_token_table with:
    wildcard_constraints:
        corpus="|".join(STUDY.treebank_corpora),
    params:
        max_length=STUDY.attention.max_length,
        max_examples=STUDY.attention.max_examples,
        input_protocol=ATTENTION["input_protocol"],
        offline=STUDY.offline,


ruleorder: treebank_token_table > token_table


# A model entry that sets prepend_bos (true: a BOS first; false: none, even where its tokenizer adds one) has its
# token tables made by these two rules, which pass it: only they have the key among their params, so setting it
# rebuilds that model's branch alone, and a study that sets it for no model has neither rule.
if STUDY.attention.bos_models:

    use rule token_table as bos_token_table with:
        wildcard_constraints:
            model="|".join(re.escape(model) for model in STUDY.attention.bos_models),
        params:
            max_length=STUDY.attention.max_length,
            max_examples=STUDY.attention.max_examples,
            offline=STUDY.offline,
            prepend_bos=STUDY.attention.prepend_bos,

    use rule treebank_token_table as bos_treebank_token_table with:
        wildcard_constraints:
            corpus="|".join(STUDY.treebank_corpora),
            model="|".join(re.escape(model) for model in STUDY.attention.bos_models),
        params:
            max_length=STUDY.attention.max_length,
            max_examples=STUDY.attention.max_examples,
            input_protocol=ATTENTION["input_protocol"],
            offline=STUDY.offline,
            prepend_bos=STUDY.attention.prepend_bos,

    ruleorder: bos_treebank_token_table > bos_token_table > treebank_token_table > token_table


# One job per shard: `--cores N` and the SLURM profile run N shards of a dump at once. Each job
# loads the checkpoint, extracts its range of the token table (extract.shard_bounds) and leaves its
# shard and a record of it (parts/); attention_dump_manifest gathers the records into manifest.json,
# which every analysis reads. Keep the name: profiles/slurm's set-resources send these jobs to GPUs.
rule extract_attention:
    input:
        checkpoint=STUDY.attention.checkpoint_manifest,
        tokens=STUDY.attention.token_table,
    output:
        shard=STUDY.paths.dump_shard("{model}", "{checkpoint}", "{corpus}", "{split}", "{shard}"),
        record=STUDY.paths.dump_record("{model}", "{checkpoint}", "{corpus}", "{split}", "{shard}"),
    log:
        STUDY.paths.log("attention", "{model}_{checkpoint}_{corpus}_{split}.{shard}"),
    wildcard_constraints:
        shard="|".join(STUDY.attention.shard_stems),
    conda:
        "../envs/models.yaml"
    threads: ATTENTION["threads"]
    resources:
        mem_mb=ATTENTION["mem_mb"],
        runtime=ATTENTION["runtime"],
        gpu=1 if ATTENTION["device"] == "cuda" else 0,
    params:
        shard_index=STUDY.attention.shard_index,
        num_shards=ATTENTION["num_shards"],
        compression=ATTENTION["compression"],
        implementation=ATTENTION["implementation"],
        # The subject's signal (MODEL@SIGNAL; docs/signals.md): one dump per signal, from the model's checkpoint.
        signal=STUDY.attention.signal,
        batch_size=ATTENTION["batch_size"],
        max_batch_tokens=ATTENTION["max_batch_tokens"],
        device=ATTENTION["device"],
        dtype=STUDY.attention.dtype,
        offline=STUDY.offline,
    script:
        "scripts/entry.py"


# The gather: reads the shards' records and footers (no maps). An ordinary job: local rules are those that
# download (tests/data/test_local_rules.py).
rule attention_dump_manifest:
    input:
        shards=expand(
            STUDY.paths.dump_shard("{model}", "{checkpoint}", "{corpus}", "{split}", "{shard}"),
            shard=STUDY.attention.shard_stems,
            allow_missing=True,
        ),
        records=expand(
            STUDY.paths.dump_record("{model}", "{checkpoint}", "{corpus}", "{split}", "{shard}"),
            shard=STUDY.attention.shard_stems,
            allow_missing=True,
        ),
    output:
        manifest=STUDY.paths.dump_manifest("{model}", "{checkpoint}", "{corpus}", "{split}"),
    log:
        STUDY.paths.log("attention", "{model}_{checkpoint}_{corpus}_{split}"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        num_shards=ATTENTION["num_shards"],
    script:
        "scripts/entry.py"


rule attention_dumps_table:
    input:
        dumps=[STUDY.paths.dump_manifest(*t) for t in STUDY.attention.dumps],
        tokens=sorted({STUDY.paths.token_table(m, c, s) for m, _, c, s in STUDY.attention.dumps}),
    output:
        STUDY.attention.report_table(TABLE.ATTENTION_DUMPS),
    log:
        STUDY.paths.log("attention", "dumps_table"),
    conda:
        "../envs/models.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "scripts/entry.py"
