"""The built-in treebank and task entries (config.yaml's), as the data jobs receive them."""

from __future__ import annotations

from pathlib import Path

import yaml

from support.paths import REPO
from workflow_scripts.data.entries import TaskSpec, TreebankEntry, task_spec, treebank_entry

_CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SPLITS = ["train", "dev", "test"]

UD: dict[str, TreebankEntry] = {name: treebank_entry(name, entry, treebank_splits=SPLITS)
                                for name, entry in _CONFIG["treebanks"].items()}
TASKS: dict[str, TaskSpec] = {name: task_spec(name, entry) for name, entry in _CONFIG["tasks"].items()}


def local_treebank(name: str, folder: Path, splits: dict[str, str | list[str]], **fields) -> TreebankEntry:
    """A 'path' treebank entry over ``folder`` (fields: format, language, tagset, labelled, name)."""
    return treebank_entry(name, {"path": str(folder), "splits": splits, **fields}, treebank_splits=SPLITS)
