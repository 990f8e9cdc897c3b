"""Defaults in the schema only: no key of config.yaml restates its schema default, every key of the
schema has a default or is required and is described (the profiles' configfiles: test_profile_paths.py)."""

from __future__ import annotations

from typing import Any

import yaml

from support.paths import REPO, SCHEMA_PATH
from support.resolved_config import typed
from workflow_scripts.study.checks import load_schema

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
    finetune.per_task.TASK) are alternatives (hub, path or package) or inherit, and are exempt, like the
    files of an optional map whose default is null (annotation.stanza_models)."""
    missing = []

    def walk(node: dict[str, Any], path: str) -> None:
        required = set(node.get("required", []))
        for key, sub in node.get("properties", {}).items():
            if "default" not in sub and key not in required:
                missing.append(f"{path}{key}")
            if "properties" in sub and sub.get("default", {}) is not None:
                walk(sub, f"{path}{key}.")

    walk(load_schema(SCHEMA_PATH), "")
    assert missing == []


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
