"""Config names that become parts of paths: each must stay one plain folder or file name.

A model, corpus, split or checkpoint name is a folder or file name of its outputs
(``results/checkpoints/MODEL/``, ``results/data/CORPUS/SPLIT.parquet``), and a treebank's release tag
and file names are part of where its download is kept under ``downloads``; a hub task's dataset id,
configuration and hub split names are the mirror path the prefetch writes it to and the data jobs read
(``mirror/hub/DATASET/CONFIG/SPLIT.jsonl``, data/registry.py hub_mirror_file). A name that is ``..``,
starts with a dot, holds a path separator or is an absolute path would put outputs outside their
folders (model ``..`` would have its card at ``results/model.json`` and its checkpoints at
``results/pretrained/``) or hide them. :func:`path_name_problems` checks every such name of the
config before the schema's own checks, so the message names the key and the fix (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ..paths import PATH_NAME

# A hub dataset id as the hub writes it: NAME or OWNER/NAME; its one '/' makes two folders of the mirror path.
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


@dataclass(frozen=True)
class NameRule:
    """What the workflow accepts for a kind of name, as the fix says it (the schema's pattern, where it has
    one, is stricter than PATH_NAME), and how a suggestion is made from a refused name."""

    allowed: str
    drop: str              # characters a suggestion replaces with ``joiner``
    joiner: str
    lower: bool = False


ANY_NAME = NameRule("letters, digits, '.', '_', '+' and '-', starting with a letter or digit", r"[^A-Za-z0-9._+-]+",
                    "-")
CORPUS_NAME = NameRule("lower-case letters and digits, starting with a letter", r"[^a-z0-9]+", "", lower=True)
SPLIT_NAME = NameRule("lower-case letters and '_', starting with a letter", r"[^a-z_]+", "_", lower=True)
CHECKPOINT_NAME = NameRule("'pretrained', 'random', or TASK.seedN.stepK / TASK.seedN.final", r"[^a-z0-9.]+", "",
                           lower=True)


@dataclass(frozen=True)
class Named:
    """Where a kind of name sits in the config: ``key`` with ``*`` for any entry, ``how`` it is held there
    ('keys' of a map, 'items' of a list, or the 'value' itself) and the path it becomes part of."""

    key: str
    how: str
    what: str
    becomes: str
    rule: NameRule = ANY_NAME


# The paths each kind of name becomes part of, as the messages show them.
MODEL_PATHS = "results/checkpoints/NAME/, results/attention/NAME/"
CORPUS_PATHS = "results/data/NAME/, results/attention/MODEL/CHECKPOINT/NAME/"
SPLIT_PATHS = "results/data/CORPUS/NAME.parquet"
DOWNLOAD_PATHS = "DOWNLOADS/raw.githubusercontent.com/UniversalDependencies/REPO/NAME/"
HUB_CONFIG_PATHS = "MIRROR/hub/DATASET/NAME/SPLIT.jsonl"
HUB_SPLIT_PATHS = "MIRROR/hub/DATASET/CONFIG/NAME.jsonl"

NAMED = (
    Named("models", "keys", "model name", MODEL_PATHS),
    Named("study.models", "items", "model name", MODEL_PATHS),
    Named("treebanks", "keys", "treebank name", CORPUS_PATHS, CORPUS_NAME),
    Named("tasks", "keys", "task name", CORPUS_PATHS, CORPUS_NAME),
    Named("study.treebanks", "items", "treebank name", CORPUS_PATHS, CORPUS_NAME),
    Named("study.tasks", "items", "task name", CORPUS_PATHS, CORPUS_NAME),
    Named("data.coreference_treebanks", "items", "treebank name", CORPUS_PATHS, CORPUS_NAME),
    Named("syntax.treebanks", "items", "treebank name", CORPUS_PATHS, CORPUS_NAME),
    Named("syntax.coref_treebank", "value", "treebank name", "results/data/NAMEwin/", CORPUS_NAME),
    Named("finetune.tasks", "items", "task name", "results/finetune/MODEL/NAME.seedN.metrics.json", CORPUS_NAME),
    Named("finetune.per_task", "keys", "task name", "results/finetune/MODEL/NAME.seedN.metrics.json", CORPUS_NAME),
    Named("finetune_effects.tasks", "items", "task name", CORPUS_PATHS, CORPUS_NAME),
    Named("explorer.task", "value", "task name", CORPUS_PATHS, CORPUS_NAME),
    Named("attention.corpora", "keys", "corpus name", CORPUS_PATHS, CORPUS_NAME),
    Named("attention.max_examples", "keys", "corpus name", CORPUS_PATHS, CORPUS_NAME),
    Named("surface.corpus", "value", "corpus name", CORPUS_PATHS, CORPUS_NAME),
    Named("attention.checkpoints", "items", "checkpoint name", "results/attention/MODEL/NAME/", CHECKPOINT_NAME),
    Named("treebanks.*.splits", "keys", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("tasks.*.splits", "keys", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("tasks.*.dev_split", "value", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("attention.corpora.*", "items", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("data.treebank_splits", "items", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("surface.split", "value", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("syntax.select_split", "value", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("syntax.score_split", "value", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("syntax.coref_split", "value", "split name", SPLIT_PATHS, SPLIT_NAME),
    Named("data.ud_release", "value", "UD release tag", DOWNLOAD_PATHS),
    Named("treebanks.*.release", "value", "UD release tag", DOWNLOAD_PATHS),
)


@dataclass(frozen=True)
class NameProblem:
    key: str
    name: str
    message: str


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be one folder or file name, or None when it can (or is not text: the schema's)."""
    if not isinstance(name, str):
        return None
    if not name:
        return "it is empty"
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", name):
        return "it is an absolute path"
    if ".." in re.split(r"[\\/]", name):
        return "it leads out of its folder ('..')"
    if "/" in name or "\\" in name:
        return "it holds a path separator"
    if name in (".", ".."):
        return f"{name!r} is a folder itself, not a name in it"
    if name.startswith("."):
        return "it starts with a dot (a hidden name, or a way up with '..')"
    if name.startswith("-"):
        return "it starts with '-' (command-line tools read it as an option)"
    if not PATH_NAME.fullmatch(name):
        others = "".join(sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9._+-]", c)}))
        return f"it holds {others!r}"
    return None


def _suggestion(name: str, rule: NameRule) -> str:
    fixed = re.sub(rule.drop, rule.joiner, name.lower() if rule.lower else name).strip("._+-")
    return f" (e.g. {fixed!r})" if fixed and fixed != name and name_problem(fixed) is None else ""


def _found(config: Any, parts: list[str], key: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every place ``parts`` reaches in ``config`` (``*``: every entry of a map)."""
    if not parts:
        yield key, config
        return
    if not isinstance(config, dict):
        return
    head, rest = parts[0], parts[1:]
    entries = config.items() if head == "*" else ([(head, config[head])] if head in config else [])
    for name, value in entries:
        yield from _found(value, rest, f"{key}.{name}" if key else str(name))


def _names(value: Any, how: str) -> list[Any]:
    if how == "keys":
        return list(value) if isinstance(value, dict) else []
    if how == "items":
        return list(value) if isinstance(value, list) else []
    return [value]


# URLs whose host and path are where their download is kept under 'downloads' (data/build.py).
DOWNLOAD_URLS = ("treebanks.*.url", "data.ud_url", "data.wic.url", "data.glove.url")


def hub_id_problem(name: Any) -> str | None:
    """Why ``name`` is not a hub dataset id (NAME or OWNER/NAME, each part a plain name), or None when it is."""
    if not isinstance(name, str) or HUB_ID.fullmatch(name):
        return None
    whole = name_problem(name)
    if whole is not None and "separator" not in whole:  # empty, absolute, '..', a dot or '-' first, odd characters
        return whole
    if "\\" in name:
        return "it holds a backslash"
    parts = name.split("/")
    if len(parts) > 2:
        return "it holds more than one '/'"
    for part in parts:
        reason = name_problem(part)
        if reason is not None:
            return f"its part {part!r}: {reason}"
    return f"it holds {''.join(sorted(set(re.sub(r'[A-Za-z0-9._/-]', '', name))))!r}"  # '+': a path name's only


def _hub_task_problems(config: dict[str, Any]) -> Iterator[NameProblem]:
    """A hub task's dataset id, configuration and hub split names (its 'splits' values) are the mirror path of
    its splits (MIRROR/hub/DATASET/CONFIG/SPLIT.jsonl): the id may hold the hub's one '/', the others none."""
    tasks = config.get("tasks")
    for task, entry in (tasks.items() if isinstance(tasks, dict) else []):
        hub = entry.get("hub") if isinstance(entry, dict) else None
        if not isinstance(hub, dict):
            continue
        key = f"tasks.{task}.hub.dataset"
        reason = hub_id_problem(hub.get("dataset"))
        if reason is not None:
            yield NameProblem(key, hub["dataset"], (
                f"config key '{key}': hub dataset id {hub['dataset']!r} cannot be part of the mirror path "
                f"MIRROR/hub/DATASET/CONFIG/SPLIT.jsonl: {reason}. Use the hub's id, NAME or OWNER/NAME, each of "
                "letters, digits, '.', '_' and '-', starting with a letter or digit"))
        config_name = hub.get("config")
        yield from _problems(f"tasks.{task}.hub.config", [config_name], "hub configuration", HUB_CONFIG_PATHS)
        splits = entry.get("splits")
        yield from _problems(f"tasks.{task}.splits", list(splits.values()) if isinstance(splits, dict) else [],
                             "hub split name", HUB_SPLIT_PATHS)


def _problems(key: str, names: list[Any], what: str, becomes: str, rule: NameRule = ANY_NAME
              ) -> Iterator[NameProblem]:
    for name in names:
        reason = name_problem(name)
        if reason is not None:
            yield NameProblem(key, name, (
                f"config key '{key}': {what} {name!r} cannot be a folder or file name: {reason}; "
                f"it becomes part of paths such as {becomes}. Use {rule.allowed}{_suggestion(name, rule)}"))


def _download_places(config: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key, text) of every URL and downloaded file name of the config: the URLs above, and the file names
    of a 'ud' or 'url' treebank's splits (a file name, a path under its URL, or a URL of its own)."""
    for dotted in DOWNLOAD_URLS:
        yield from _found(config, dotted.split("."), "")
    treebanks = config.get("treebanks")
    for tree, entry in (treebanks.items() if isinstance(treebanks, dict) else []):
        if not isinstance(entry, dict) or not ({"ud", "url"} & set(entry)):
            continue
        splits = entry.get("splits")
        for split, files in (splits.items() if isinstance(splits, dict) else []):
            for file_name in files if isinstance(files, list) else [files]:
                yield f"treebanks.{tree}.splits.{split}", file_name


def _download_problems(config: dict[str, Any]) -> Iterator[NameProblem]:
    """No part of a download's path may be '.' or '..', nor hold a backslash: it would be kept outside
    'downloads' (https://host/a/../../../x is kept at DOWNLOADS/host/a/../../../x)."""
    for key, text in _download_places(config):
        if not isinstance(text, str):
            continue
        parsed = urlparse(text) if "://" in text else None
        parts = [parsed.netloc, *parsed.path.split("/")] if parsed else text.split("/")
        if "\\" in text or any(part in (".", "..") for part in parts):
            yield NameProblem(key, text, (
                f"config key '{key}': {text!r} cannot be part of the path its download is kept at under "
                "'downloads': a part of it is '.' or '..', or it holds a backslash; give the URL or file name "
                "without '.' or '..' parts (as the server names it)"))


def path_name_problems(config: dict[str, Any]) -> list[NameProblem]:
    """Every name of ``config`` (as given: before or after the defaults) that cannot be one path component."""
    problems = []
    for named in NAMED:
        for key, value in _found(config, named.key.split("."), ""):
            problems += _problems(key, _names(value, named.how), named.what, named.becomes, named.rule)
    problems += _hub_task_problems(config)
    problems += _download_problems(config)
    return problems
