"""Config checking with messages that name the key and the fix, before any job runs.

The JSON schema in ``schemas/config.schema.yaml`` is the single definition of
the config; this module turns its validation errors into readable ones and adds
the checks a schema cannot express (paths exist, selected names are defined).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .data.registry import corpus_splits, find_in_mirror
from .errors import ConfigError
from .models import model_location

log = logging.getLogger(__name__)


def load_schema(path: str | Path) -> dict[str, Any]:
    # The C loader, where PyYAML has it, parses the schema ten times faster: every dry run pays for it.
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _key(error: jsonschema.ValidationError) -> str:
    parts = ""
    for part in error.absolute_path:
        parts += f"[{part}]" if isinstance(part, int) else (f".{part}" if parts else str(part))
    return parts or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    key = _key(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = "the config" if key == "(top level)" else f"config key '{key}'"
        return (f"{where}: unknown key(s) {', '.join(repr(u) for u in unknown)}; allowed here: "
                f"{', '.join(allowed)} (check the spelling; see README 'Configuration')")
    hint = error.schema.get("description", "")
    message = f"config key '{key}': {error.message}"
    return f"{message} ({hint})" if hint else message


def check_schema(config: dict[str, Any], schema: dict[str, Any]) -> None:
    validator_class = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_class(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {_describe(e)}" for e in errors))


def check_semantics(config: dict[str, Any]) -> None:
    """Checks that need more than the schema; run after defaults are filled in."""
    problems: list[str] = []
    mirror = config.get("mirror")
    if mirror and not Path(mirror).is_dir():
        problems.append(f"config key 'mirror': {mirror} is not a directory; point it at a local mirror "
                        "laid out like shared/data (--config mirror=PATH) or set it to null to download")
    for name in config["study"]["models"]:
        if name not in config["models"]:
            problems.append(f"config key 'study.models': {name!r} is not defined under 'models' "
                            f"(defined: {', '.join(sorted(config['models']))})")
            continue
        try:
            model_location(name, config["models"][name])
        except ConfigError as exc:
            problems.append(str(exc))
    if config.get("offline") and not problems:
        problems += _offline_problems(config)
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


def _offline_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    mirror = config.get("mirror")
    if not mirror:
        return ["'offline' is true but config key 'mirror' is not set: give the local data mirror with "
                "--config mirror=PATH (a directory laid out like shared/data)"]
    for corpus in selected_corpora(config):
        if not any(find_in_mirror(mirror, corpus, split) for split in corpus_splits(corpus)):
            problems.append(
                f"corpus {corpus!r} is selected but 'offline' is true and the mirror {mirror} "
                "does not hold it; "
                "set config key 'mirror' to a directory that holds it, remove it from 'study', "
                "or set 'offline: false' to download it")
        for name in config["study"]["models"]:
            entry = config["models"].get(name, {})
            if entry.get("hub"):
                log.warning("offline: model %s is a hub id; it must already be in the local hub cache", name)
    return problems


def selected_corpora(config: dict[str, Any]) -> list[str]:
    study = config["study"]
    corpora = [*study["tasks"], *study["treebanks"]]
    if study.get("wiki", True):
        corpora.append("wiki")
    if study.get("glove", True):
        corpora.append("glove")
    return corpora


def selected_splits(config: dict[str, Any], corpus: str) -> list[str]:
    """The splits of ``corpus`` the study builds; offline, only those the mirror holds."""
    splits = list(corpus_splits(corpus))
    if corpus in ("ewt", "gum"):
        splits = [s for s in splits if s in config["data"]["treebank_splits"]]
    if config.get("offline"):
        kept = [s for s in splits if find_in_mirror(config.get("mirror"), corpus, s)]
        left_out = sorted(set(splits) - set(kept))
        if left_out:
            log.info("offline: %s split(s) %s are not in the mirror and are left out", corpus, left_out)
        splits = kept
    return splits
