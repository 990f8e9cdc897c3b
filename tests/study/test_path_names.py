"""Config names that become parts of paths (workflow_scripts/study/checks/path_names.py) are refused at validation,
before any job, with the key and the fix, when they would lead out of their folder or hide a file.

The cases go through check_schema and build_study only, so that they run (and fail) on code without the check;
the tests of the module's own tables import it inside."""

from __future__ import annotations

import pytest

from support.config_checks import schema_error, with_defaults
from support.study_configs import study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.build import build_study
from workflow_scripts.study.checks import check_schema

HOSTILE = ["..", "../x", ".hidden", "a/b", "/abs", "a\\b", "C:\\x", ""]
REFUSED = "cannot be a folder or file name"


def _table_task(tmp_path, **extra) -> dict:
    (tmp_path / "train.csv").write_text("s,l\nok,0\n")
    return {"path": str(tmp_path), "text": ["s"], "label": "l", "kind": "classification", "labels": [0, 1],
            "splits": {"train": "train.csv"}, **extra}


# Every place a name becomes a path component: (the key the message names, how a hostile name gets there).
PLACES = {
    "models": lambda c, bad, tmp: c["models"].update({bad: {"hub": "org/model"}}),
    "study.models": lambda c, bad, tmp: c["study"].update(models=[bad]),
    "treebanks": lambda c, bad, tmp: c["treebanks"].update({bad: {"ud": "UD_English-EWT"}}),
    "study.treebanks": lambda c, bad, tmp: c["study"].update(treebanks=[bad]),
    "tasks": lambda c, bad, tmp: c["tasks"].update({bad: {"glue": "cola"}}),
    "study.tasks": lambda c, bad, tmp: c["study"]["tasks"].append(bad),
    "data.coreference_treebanks": lambda c, bad, tmp: c.setdefault("data", {}).update(coreference_treebanks=[bad]),
    "syntax.treebanks": lambda c, bad, tmp: c.setdefault("syntax", {}).update(treebanks=[bad]),
    "syntax.coref_treebank": lambda c, bad, tmp: c.setdefault("syntax", {}).update(coref_treebank=bad),
    "syntax.select_split": lambda c, bad, tmp: c.setdefault("syntax", {}).update(select_split=bad),
    "syntax.score_split": lambda c, bad, tmp: c.setdefault("syntax", {}).update(score_split=bad),
    "syntax.coref_split": lambda c, bad, tmp: c.setdefault("syntax", {}).update(coref_split=bad),
    "finetune.tasks": lambda c, bad, tmp: c.setdefault("finetune", {}).update(tasks=[bad]),
    "finetune.per_task": lambda c, bad, tmp: c.setdefault("finetune", {}).update(per_task={bad: {"epochs": 1}}),
    "finetune_effects.tasks": lambda c, bad, tmp: c.setdefault("finetune_effects", {}).update(tasks=[bad]),
    "attention.corpora": lambda c, bad, tmp: c["attention"].update(corpora={bad: ["dev"]}),
    "attention.corpora.ewt": lambda c, bad, tmp: c["attention"].update(corpora={"ewt": [bad]}),
    "attention.max_examples": lambda c, bad, tmp: c["attention"]["max_examples"].update({bad: 10}),
    "attention.checkpoints": lambda c, bad, tmp: c["attention"].update(checkpoints=["pretrained", bad]),
    "surface.corpus": lambda c, bad, tmp: c.setdefault("surface", {}).update(corpus=bad),
    "surface.split": lambda c, bad, tmp: c.setdefault("surface", {}).update(split=bad),
    "data.treebank_splits": lambda c, bad, tmp: c.setdefault("data", {}).update(treebank_splits=[bad]),
    "treebanks.mine.splits": lambda c, bad, tmp: c["treebanks"].update(
        mine={"path": str(tmp), "splits": {bad: "*.conllu"}}),
    "tasks.mine.splits": lambda c, bad, tmp: c["tasks"].update(mine=_table_task(tmp, splits={bad: "train.csv"})),
    "tasks.cola.dev_split": lambda c, bad, tmp: c["tasks"]["cola"].update(dev_split=bad),
    "data.ud_release": lambda c, bad, tmp: c.setdefault("data", {}).update(ud_release=bad),
    "treebanks.gum.release": lambda c, bad, tmp: c["treebanks"]["gum"].update(release=bad),
    "explorer.task": lambda c, bad, tmp: c.setdefault("explorer", {}).update(task=bad),
}


def _hub_task(**extra) -> dict:
    """A hub task as docs/corpora.md writes one: its splits go to MIRROR/hub/DATASET/CONFIG/SPLIT.jsonl."""
    return {"hub": {"dataset": "org/reviews", "config": "plain_text"}, "splits": {"train": "train", "dev": "test"},
            "text": ["text"], "label": "label", "kind": "classification", "labels": [0, 1], **extra}


# A hub task's names that are parts of its mirror path (data/registry.py hub_mirror_file).
HUB_PLACES = {
    "tasks.reviews.hub.dataset": lambda bad: _hub_task(hub={"dataset": bad}),
    "tasks.reviews.hub.config": lambda bad: _hub_task(hub={"dataset": "org/reviews", "config": bad}),
    "tasks.reviews.splits": lambda bad: _hub_task(splits={"train": "train", "dev": bad}),
    "tasks.reviews.dev_split": lambda bad: _hub_task(splits={"train": "train", bad: "test"}, dev_split=bad),
}


def _in_schema(schema: dict, dotted: str) -> bool:
    """Whether the schema defines the config key ``dotted`` (``*``: any entry of a map)."""
    node = schema
    for part in dotted.split("."):
        node = node.get("additionalProperties") if part == "*" else node.get("properties", {}).get(part)
        if not isinstance(node, dict):
            return False
    return True


@pytest.mark.parametrize("bad", HOSTILE)
@pytest.mark.parametrize("key", ["models", "study.models", "treebanks", "tasks", "study.tasks"])
def test_a_hostile_model_treebank_or_task_name_is_refused_with_its_key(config, schema, tmp_path, key, bad):
    PLACES[key](config, bad, tmp_path)
    message = schema_error(config, schema)
    assert f"config key '{key}': " in message and f"{bad!r} {REFUSED}" in message
    assert "Use " in message  # the fix: what a name may hold


@pytest.mark.parametrize("key", sorted(PLACES))
def test_every_name_that_becomes_a_path_component_is_checked(config, schema, tmp_path, key):
    if not _in_schema(schema, key.replace(".mine.", ".*.").replace(".cola.", ".*.").replace(".gum.", ".*.")
                      .replace("corpora.ewt", "corpora.*")):
        pytest.skip(f"the schema has no key {key}")
    PLACES[key](config, "../x", tmp_path)
    message = schema_error(config, schema)
    assert f"config key '{key}': " in message and f"'../x' {REFUSED}: it leads out of its folder" in message
    # One message per name: the schema's own pattern error for the same name is left out.
    assert "does not match" not in message and "is not one of" not in message


@pytest.mark.parametrize("bad", ["../x", "..", "a/../../b"])
@pytest.mark.parametrize("key", sorted(HUB_PLACES))
def test_a_hub_tasks_mirror_path_names_are_checked(config, schema, key, bad):
    config["tasks"]["reviews"] = HUB_PLACES[key](bad)
    message = schema_error(config, schema)
    assert f"config key '{key}': " in message and f"{bad!r} " in message
    assert "it leads out of its folder ('..')" in message and "Use " in message
    assert "does not match" not in message  # one message per name


@pytest.mark.parametrize(("dataset", "reason"), [
    ("org/team/reviews", "more than one '/'"), ("/org/reviews", "absolute path"), ("org\\reviews", "backslash"),
    ("org/.reviews", "its part '.reviews': it starts with a dot"), ("org/", "its part '': it is empty"),
    ("org/re views", "its part 're views': it holds ' '"), ("org+1/reviews", "it holds '+'"),
])
def test_a_hub_dataset_id_is_the_hubs_own_form(config, schema, dataset, reason):
    config["tasks"]["reviews"] = _hub_task(hub={"dataset": dataset})
    message = schema_error(config, schema)
    assert f"config key 'tasks.reviews.hub.dataset': hub dataset id {dataset!r} cannot be" in message
    assert reason in message and "NAME or OWNER/NAME" in message


@pytest.mark.parametrize("dataset", ["imdb", "stanfordnlp/imdb", "Salesforce/wikitext", "nyu-mll/glue", "a.b_c-1/x.y"])
def test_hub_dataset_ids_as_the_hub_gives_them_pass(config, schema, dataset):
    from workflow_scripts.study.checks.path_names import hub_id_problem

    config["tasks"]["reviews"] = _hub_task(hub={"dataset": dataset, "config": None})
    check_schema(config, schema)
    assert hub_id_problem(dataset) is None


def test_a_schema_error_at_another_key_with_the_same_value_as_a_refused_name_is_kept(config, schema):
    """Only the schema's error about the refused name itself (same key, same name) is left out."""
    config["study"]["tasks"].append("../x")             # a refused name: path_names' message
    config["treebanks"]["ewt"]["ud"] = "../x"           # not a name of path_names: the schema's pattern error
    message = schema_error(config, schema)
    assert "config key 'study.tasks': task name '../x' " + REFUSED in message
    assert "config key 'treebanks.ewt.ud': '../x' does not match" in message
    assert "config key 'study.tasks[" not in message     # the schema's own error for the refused name: left out


def test_a_model_named_dot_dot_plans_nothing_outside_its_folders():
    """The issue's case: model '..' had its card planned at results/model.json, its checkpoints at
    results/pretrained/."""
    with pytest.raises(ConfigError, match=r"config key 'models': model name '\.\.' " + REFUSED):
        study_of({"models": {"..": {"hub": "org/model"}}, "study": {"models": [".."]}})


def test_the_study_model_refuses_a_hostile_name_even_unchecked(config):
    config["study"]["models"] = ["../x"]  # the schema has no pattern for these: check_schema's own check has
    with pytest.raises(ConfigError, match="config key 'study.models'"):
        build_study(with_defaults(config))


@pytest.mark.parametrize(("key", "value"), [
    ("finetune.seeds", ["../x"]),
    ("finetune.per_task", {"cola": {"seeds": ["../x"]}}),
    ("finetune.seeds", [-1]),
])
def test_seeds_formatted_into_checkpoint_names_are_non_negative_integers(config, schema, key, value):
    section, name = key.split(".")
    config.setdefault(section, {})[name] = value
    message = schema_error(config, schema)
    assert f"config key '{key}" in message


@pytest.mark.parametrize("place", ["url", "split_file", "ud_split_file", "data.ud_url", "data.wic.url",
                                   "data.glove.url"])
def test_a_download_kept_outside_the_downloads_folder_is_refused(config, schema, place):
    key = {"url": "treebanks.mine.url", "split_file": "treebanks.mine.splits.train",
           "ud_split_file": "treebanks.gum.splits.dev"}.get(place, place)
    if place == "url":
        config["treebanks"]["mine"] = {"url": "https://example.org/a/../../..", "splits": {"train": "t.conllu"}}
    elif place == "split_file":
        config["treebanks"]["mine"] = {"url": "https://example.org/tb", "splits": {"train": "x/../../../t.conllu"}}
    elif place == "ud_split_file":
        config["treebanks"]["gum"]["splits"] = {"dev": "../../../en_gum-ud-dev.conllu"}
    else:
        if not _in_schema(schema, place):
            pytest.skip(f"the schema has no key {place}")
        section, *inner, name = place.split(".")
        target = config.setdefault(section, {})
        for part in inner:
            target = target.setdefault(part, {})
        target[name] = "https://example.org/../../../{file}"
    message = schema_error(config, schema)
    assert f"config key '{key}': " in message and "cannot be part of the path its download is kept at" in message


def test_a_download_path_in_a_subfolder_of_its_url_is_fine(config, schema):
    from workflow_scripts.study.checks.path_names import path_name_problems

    config["treebanks"]["mine"] = {"url": "https://example.org/tb/", "splits": {"train": ["en/train.conllu"]}}
    assert path_name_problems(config) == []


def test_the_repository_config_and_every_default_pass(config, schema):
    from workflow_scripts.study.checks.path_names import path_name_problems

    check_schema(config, schema)
    assert path_name_problems(with_defaults(config)) == []


@pytest.mark.parametrize("name", ["bert-base-uncased", "all-MiniLM-L6-v2", "roberta.base+v2", "cola", "dev_matched",
                                  "cola.seed42.step100", "r2.16"])
def test_plain_names_pass(name):
    from workflow_scripts.study.checks.path_names import name_problem

    assert name_problem(name) is None


def test_every_checked_key_is_in_the_schema_and_the_models_pattern_is_the_checks(schema):
    from workflow_scripts.study.checks.path_names import DOWNLOAD_URLS, NAMED
    from workflow_scripts.study.paths import PATH_NAME

    missing = [named.key for named in NAMED if not _in_schema(schema, named.key)]
    assert missing in ([], ["explorer.task"]), missing  # explorer: its own section, where the workflow has it
    assert schema["properties"]["models"]["propertyNames"]["pattern"] == f"^{PATH_NAME.pattern}$"
    assert [key for key in DOWNLOAD_URLS if not _in_schema(schema, key)] == []


def _free_maps(node: dict, key: str = "") -> list[str]:
    """Every map of the schema whose keys the user names (additionalProperties is a schema)."""
    found = []
    if isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
        found.append(key)
    for name, child in node.get("properties", {}).items():
        found += _free_maps(child, f"{key}.{name}" if key else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        found += _free_maps(extra, f"{key}.*")
    return found


def test_every_map_whose_keys_are_named_by_the_user_is_checked_or_is_no_path(schema):
    """A new map in the schema must be added to path_names.NAMED, or here with why its keys are no path."""
    from workflow_scripts.study.checks.path_names import NAMED

    not_paths = {"treebanks.*.sha256": "file name -> its digest: looked up, never a path"}
    checked = {named.key for named in NAMED if named.how == "keys"}
    unchecked = [key for key in _free_maps(schema) if key not in checked and key not in not_paths]
    assert unchecked == []
