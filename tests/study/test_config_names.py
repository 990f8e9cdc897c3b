"""Maps keyed by corpus or task name (and surface.corpus) name corpora the config defines, with the closest
name suggested (workflow_scripts/study/checks/names.py); a defined name the study does not select is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.profiles import ProfileConfigFileParser

from support.config_checks import semantic_error, with_defaults
from support.paths import REPO
from support.resolved_config import resolve
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.checks import check_semantics, resolve_config
from workflow_scripts.study.checks.names import NAME_KEYS, keyed_name_problems

GLUE = "the tasks (cola, mnli, mrpc, qnli, qqp, rte, sst2, stsb, wic, wnli)"


def _set(config: dict, key: str, name: str, value=None) -> None:
    section, field = key.split(".")
    if dict(config.get(section) or {}).get(field) is None:
        config.setdefault(section, {})[field] = {}
    if isinstance(config[section][field], dict):
        config[section][field][name] = value
    else:
        config[section][field] = name


@pytest.mark.parametrize(("key", "value", "misspelt", "meant"), [
    ("attention.max_examples", 200, "wikki", "wiki"),
    ("attention.corpora", ["segments"], "wikki", "wiki"),
    ("attention.corpora", ["dev"], "colla", "cola"),
    ("finetune.per_task", {"epochs": 2}, "colla", "cola"),
    ("finetune.per_task", {"epochs": 2}, "sst", "sst2"),
    ("surface.corpus", None, "wikki", "wiki"),
])
def test_a_misspelt_name_is_an_error_with_the_closest_name(config, key, value, misspelt, meant):
    _set(with_defaults(config), key, misspelt, value)
    message = semantic_error(config)
    where = key if key == "surface.corpus" else f"{key}.{misspelt}"
    assert f"config key '{where}': {misspelt!r} is not a " in message
    assert f"did you mean {meant!r}?" in message
    assert f"Allowed here: {GLUE}" in message
    assert message.count(f"{misspelt!r}") == 1, message  # once, not again by the entry checks


# Maps of the schema keyed by a name that is not a corpus or task of the study: the entries that define those
# names, and maps keyed by a split or file name of one entry (checked with the entry, checks/entries.py).
NOT_KEYED_BY_STUDY_NAMES = {"models", "treebanks", "tasks", "treebanks.*.splits", "tasks.*.splits",
                            "treebanks.*.sha256"}


def _maps(node: dict, path: str = "") -> list[str]:
    """Every map of the schema whose keys are names (an object with a schema for additionalProperties)."""
    found = []
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        found += [path, *_maps(extra, f"{path}.*")]
    for key, sub in node.get("properties", {}).items():
        found += _maps(sub, f"{path}.{key}" if path else key)
    return found


def test_every_keyed_map_is_checked(schema):
    """A map keyed by name added to the schema must join NAME_KEYS (or say why not, above); the checked keys are
    listed in docs/configuration.md."""
    maps = set(_maps(schema))
    assert maps - NOT_KEYED_BY_STUDY_NAMES == {spec.key for spec in NAME_KEYS if spec.how == "keys"}
    docs = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    for spec in NAME_KEYS:
        assert f"`{spec.key}`" in docs, spec.key


def test_the_allowed_names_of_each_map(config):
    with_defaults(config)
    config["attention"]["max_examples"] = {"wikki": 5}
    message = semantic_error(config)
    assert f"Allowed here: {GLUE}, the treebanks (ewt, gum), their coreference windows (ewtwin, gumwin) and wiki. " \
           "Fix the name, or add an entry under 'tasks' or 'treebanks' (docs/corpora.md)" in message
    config["attention"]["max_examples"] = {}
    config["finetune"]["per_task"] = {"colla": {}}
    message = semantic_error(config)
    assert f"Allowed here: {GLUE}. Fix the name, or add an entry 'tasks.colla' (docs/corpora.md)" in message


def test_no_suggestion_when_no_name_is_close(config):
    _set(with_defaults(config), "attention.max_examples", "reviews", 10)
    message = semantic_error(config)
    assert "config key 'attention.max_examples.reviews': 'reviews' is not a corpus the config defines. Allowed" \
           in message
    assert "did you mean" not in message


def test_a_defined_name_the_study_does_not_select_is_allowed(config):
    """config.yaml caps every GLUE task while a study (the offline profile) selects fewer."""
    config["study"]["tasks"] = ["cola"]
    config["study"]["treebanks"] = ["ewt"]
    config["study"]["wiki"] = False
    with_defaults(config)
    config["attention"]["max_examples"].update(qqp=10, gum=10, gumwin=10, wiki=10)
    config["attention"]["corpora"].update(mnli=["dev_matched"], gum=["dev"])
    config["finetune"]["per_task"] = {"rte": {"epochs": 1}}
    assert keyed_name_problems(config) == []
    check_semantics(config)


def test_a_task_of_your_own_is_a_name_too(config):
    config["tasks"]["reviews"] = {"path": "reviews.csv", "text": ["text"], "label": "label", "kind": "regression"}
    with_defaults(config)
    config["attention"]["max_examples"]["reviews"] = 100
    config["finetune"]["per_task"] = {"reviews": {"epochs": 1}}
    assert keyed_name_problems(config) == []


@pytest.mark.parametrize(("key", "name", "why"), [
    ("attention.corpora", "glove", "'glove' is the GloVe word vectors, not text a model reads"),
    ("attention.max_examples", "glove", "'glove' is the GloVe word vectors, not text a model reads"),
    ("attention.corpora", "gumwin", "'gumwin' is a treebank's coreference windows, which the syntax stage dumps"),
    ("finetune.per_task", "ewt", "'ewt' is a treebank, not a task"),
    ("finetune.per_task", "wiki", "'wiki' is the Wikipedia segments, not a task"),
])
def test_a_defined_name_its_map_cannot_use(config, key, name, why):
    _set(with_defaults(config), key, name, {"epochs": 1} if key == "finetune.per_task" else ["dev"])
    message = semantic_error(config)
    assert f"config key '{key}.{name}': {why}" in message
    assert "; remove it or fix the name" in message


def test_a_misspelt_name_given_with_config_stops_the_run():
    """The case of the docs' promise: --config attention='{max_examples: {wikki: 200}}' is an error, not ignored."""
    with pytest.raises(ConfigError) as info:
        resolve_config([], ["attention={max_examples: {wikki: 200}}"])
    assert "config key 'attention.max_examples.wikki'" in str(info.value)
    assert "did you mean 'wiki'?" in str(info.value)


def _profile_study_configs() -> list[tuple[str, list[Path]]]:
    found = []
    for folder in sorted(p for p in (REPO / "profiles").iterdir() if (p / "config.yaml").is_file()):
        with open(folder / "config.yaml", encoding="utf-8") as stream:
            files = ProfileConfigFileParser().parse(stream).get("configfile") or []
        found.append((folder.name, [REPO / f for f in ([files] if isinstance(files, str) else files)]))
    return found


@pytest.mark.parametrize(("profile", "configfiles"), _profile_study_configs())
def test_config_yaml_and_every_profile_name_defined_corpora(profile, configfiles):
    assert keyed_name_problems(resolve(*configfiles, semantics=False)) == [], profile
