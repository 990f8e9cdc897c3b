"""The config schema (``schemas/config.schema.yaml``): the one definition of every config key, its type and its
default. The config checks read it whole (workflow_scripts/study/checks/); a stage reads the entries of its own
section, so that a setting's type is checked where the setting is used, against the same definition.

The file states each fine-tuning setting once, under 'finetune'. An entry of 'finetune.per_task' takes the same
keys, checked the same way: :func:`load_schema` makes that entry's schema from 'finetune' (:func:`per_task_entry`),
so that a new option is one schema entry, accepted per task with no copy to keep equal."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"

# Keys of 'finetune' that a 'finetune.per_task' entry does not take: which tasks run, the per-task entries
# themselves, and what a job may use (resources). Every other key of the section can be set for one task: the run
# settings (finetune/tasks.py RunSettings) and 'seeds'.
NOT_PER_TASK = ("tasks", "per_task", "threads", "mem_mb", "runtime")


def per_task_entry(finetune: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The schema of one 'finetune.per_task' entry: the file's ``entry`` (its type and description) taking exactly
    the keys of the 'finetune' section's schema ``finetune`` but NOT_PER_TASK, each checked as there, without its
    default: a key an entry leaves out takes the global value, so nothing may ever be filled in here."""
    properties = {}
    for key, setting in finetune["properties"].items():
        if key not in NOT_PER_TASK:
            checks = {name: copy.deepcopy(value) for name, value in setting.items()
                      if name not in ("default", "description")}
            properties[key] = {**checks, "description": f"see finetune.{key}"}
    return {**entry, "type": "object", "additionalProperties": False, "properties": properties}


def load_schema(path: str | Path) -> dict[str, Any]:
    """The schema at ``path``, with the 'finetune.per_task' entries' keys made from 'finetune' (:func:`per_task_entry`;
    Snakemake's own validate(), which reads the file, sees those entries as plain objects and fills nothing in)."""
    # The C loader, where PyYAML has it, parses the schema ten times faster: every dry run pays for it.
    with open(path, encoding="utf-8") as handle:
        schema = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    finetune = schema.get("properties", {}).get("finetune", {})
    per_task = finetune.get("properties", {}).get("per_task")
    if per_task is not None:
        per_task["additionalProperties"] = per_task_entry(finetune, per_task.get("additionalProperties") or {})
    return schema


@functools.cache
def config_schema() -> dict[str, Any]:
    """The project's schema (:data:`SCHEMA_PATH`, as :func:`load_schema` makes it), parsed once per process: the
    config checks and every stage read this one copy, and none changes it."""
    return load_schema(SCHEMA_PATH)


def section_properties(section: str) -> dict[str, Any]:
    """The schema entries of the keys of config section ``section`` (e.g. 'finetune')."""
    return config_schema()["properties"][section]["properties"]
