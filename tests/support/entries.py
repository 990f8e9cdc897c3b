"""The built-in treebank and task entries (config.yaml's), as the data jobs receive them."""

from __future__ import annotations

from pathlib import Path

import yaml

from support.paths import REPO, SCHEMA_PATH
from workflow_scripts.data.entries import TaskSpec, TreebankEntry, task_spec, treebank_entry

_CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SPLITS = ["train", "dev", "test"]

UD: dict[str, TreebankEntry] = {name: treebank_entry(name, entry, treebank_splits=SPLITS)
                                for name, entry in _CONFIG["treebanks"].items()}
TASKS: dict[str, TaskSpec] = {name: task_spec(name, entry) for name, entry in _CONFIG["tasks"].items()}


def local_treebank(name: str, folder: Path, splits: dict[str, str | list[str]], **fields) -> TreebankEntry:
    """A 'path' treebank entry over ``folder`` (fields: format, language, tagset, labelled, name)."""
    return treebank_entry(name, {"path": str(folder), "splits": splits, **fields}, treebank_splits=SPLITS)


# The release settings of the data section as the schema defaults them, passed to the builders as the rules pass
# their params: a 'ud' treebank's URL templates (data.ud_url, data.ud_api_url), WiC's and GloVe's archive.
_DATA = yaml.safe_load(SCHEMA_PATH.read_text())["properties"]["data"]["properties"]
UD_SOURCE = {"ud_url": _DATA["ud_url"]["default"], "ud_api_url": _DATA["ud_api_url"]["default"]}
WIC_RELEASE = {key: _DATA["wic"]["properties"][key]["default"] for key in ("url", "sha256")}
GLOVE_RELEASE = {key: _DATA["glove"]["properties"][key]["default"] for key in ("url", "sha256")}
