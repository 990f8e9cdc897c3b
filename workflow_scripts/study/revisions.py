"""Pretraining checkpoints as an axis of the study: a hub model entry that lists ``revisions`` (Pythia's
``step1000`` ... ``step143000``) stands for one model per revision, and every analysis runs on each.

:func:`expand_revisions` runs once on the config that passed the schema, before its defaults are filled in (so that
an entry given for one revision refines only the keys it names) and before the semantic checks: the entry ``NAME`` with
``revisions: [R1, R2]`` gains the entries ``NAME-R1`` and ``NAME-R2`` (the entry's keys, with ``revision: R``),
and ``study.models`` lists them in place of ``NAME``. An entry of that name that a config gives itself refines the
generated one key by key (the prefetch's offline config does this: ``NAME-R1: {hub: null, path: ...}``).

:func:`revision_series` reads the same config back: each model with revisions and its revisions in order, with
the training step each names (``step143000`` -> 143000; the report's head-development figure draws against it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from .paths import PATH_NAME

# 'step143000', 'step-1000', 'step1000-tokens4B' (OLMo): the number after 'step'; otherwise the revision's first
# number ('global_step20', 'ckpt-500'); a revision with no number has no step (the figure then uses its order).
STEP = re.compile(r"step[-_]?(\d+)", re.IGNORECASE)
NUMBER = re.compile(r"(\d+)")


@dataclass(frozen=True)
class RevisionPoint:
    """One revision of a model with revisions: its model entry's name, the hub revision and its training step."""

    model: str
    revision: str
    step: int | None


def revision_step(revision: str) -> int | None:
    """The training step a revision's name gives, or None."""
    found = STEP.search(revision) or NUMBER.search(revision)
    return int(found.group(1)) if found else None


def revision_model_name(name: str, revision: str) -> str:
    """The model entry of ``name`` at ``revision``: ``NAME-REVISION``, with any character a folder name cannot hold
    (a branch's '/') as '-'."""
    return f"{name}-{re.sub(r'[^A-Za-z0-9._+-]+', '-', revision)}"


def revision_series(config: dict[str, Any]) -> dict[str, list[RevisionPoint]]:
    """Every model entry with ``revisions`` (name -> its revisions in the order listed) whose revisions the study
    selects, each with the model entry it became."""
    selected = set(config["study"]["models"])
    series = {}
    for name, entry in config["models"].items():
        points = [RevisionPoint(revision_model_name(name, revision), revision, revision_step(revision))
                  for revision in entry.get("revisions") or []]
        points = [point for point in points if point.model in selected]
        if points:
            series[name] = points
    return series


def expand_revisions(config: dict[str, Any]) -> None:
    """Give each revision of a model entry with ``revisions`` its own entry, and select those in place of the entry
    (in place, on a config that passed the schema); raises ConfigError naming the key and the fix."""
    problems: list[str] = []
    expanded: dict[str, list[str]] = {}
    for name, entry in list(config["models"].items()):
        revisions = entry.get("revisions")
        if not revisions:
            continue
        key = f"models.{name}"
        if entry.get("revision"):
            problems.append(f"config key '{key}': gives both 'revision' ({entry['revision']}) and 'revisions'; keep "
                            "'revisions' to study every listed revision, or 'revision' to pin one")
            continue
        if not entry.get("hub"):
            problems.append(f"config key '{key}.revisions': revisions are hub revisions, and this entry has no "
                            "'hub' id; give it one, or give each local checkpoint folder its own model entry")
            continue
        names = [revision_model_name(name, revision) for revision in revisions]
        if len(set(names)) < len(names):
            problems.append(f"config key '{key}.revisions': two revisions make the same model name "
                            f"({', '.join(names)}); list each revision once")
            continue
        base = {k: v for k, v in entry.items() if k != "revisions"}
        for model, revision in zip(names, revisions, strict=True):
            generated = {**base, "revision": revision}
            given = config["models"].get(model)
            if given is not None and given.get("revisions"):
                problems.append(f"config key 'models.{model}': the name of revision {revision} of '{name}', and "
                                "itself an entry with revisions; rename one of them")
                continue
            generated.update(given or {})
            if not generated.get("hub"):  # a local copy of the revision (the prefetch's): a folder has no revisions
                generated.pop("revision", None)
            if not PATH_NAME.fullmatch(model):
                problems.append(f"config key '{key}.revisions': {revision!r} makes the model name {model!r}, which "
                                "is not a plain folder name; use the revision's commit or a plainer tag")
                continue
            config["models"][model] = generated
        expanded[name] = names
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))
    study_models: list[str] = []
    for name in config["study"]["models"]:
        for model in expanded.get(name, [name]):
            if model not in study_models:
                study_models.append(model)
    config["study"]["models"] = study_models
