"""The config schema (``schemas/config.schema.yaml``): the one definition of every config key, its type and its
default. The config checks read it whole (workflow_scripts/study/checks/); a stage reads the entries of its own
section, so that a setting's type is checked where the setting is used, against the same definition."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


def load_schema(path: str | Path) -> dict[str, Any]:
    # The C loader, where PyYAML has it, parses the schema ten times faster: every dry run pays for it.
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def section_properties(section: str) -> dict[str, Any]:
    """The schema entries of the keys of config section ``section`` (e.g. 'finetune'), read once per process."""
    return load_schema(SCHEMA_PATH)["properties"][section]["properties"]
