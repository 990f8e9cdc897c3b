"""Config checking with messages that name the key and the fix, before any job runs.

The JSON schema in ``schemas/config.schema.yaml`` is the single definition of
the config; this module reads ``--config`` text as the types the schema asks for, turns its
validation errors into readable ones and adds the checks a schema cannot express
(paths exist, selected names are defined, max_length fits the model).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..data.registry import corpus_splits, find_in_mirror
from ..core.errors import ConfigError
from ..models.cards import local_position_limit, max_length_problem, model_location

log = logging.getLogger(__name__)


def load_schema(path: str | Path) -> dict[str, Any]:
    # The C loader, where PyYAML has it, parses the schema ten times faster: every dry run pays for it.
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# --- --config text -> schema types -----------------------------------------------------------
# Snakemake parses a nested --config value with YAML's BaseLoader, so every leaf arrives as text
# (attention='{num_shards: 8}' gives {'num_shards': '8'}; a top-level mirror=null gives 'null').


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else type(value).__name__


def _schema_types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if declared is None and "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    return {declared} if isinstance(declared, str) else set(declared or ())


def _fits(value: Any, types: set[str]) -> bool:
    kind = _json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def _from_text(text: str, types: set[str]) -> Any:
    """``text`` read as the YAML value it spells when that has one of ``types``, else ``text`` unchanged."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if "number" in types and isinstance(value, str):
        try:  # 2e-5: YAML 1.1 reads an exponent without a dot as text
            number = float(text)
            value = number if math.isfinite(number) else value
        except ValueError:
            pass
    return value if _fits(value, types) else text


def coerce_to_schema(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with text leaves read as the type the schema asks for, where the text spells one.

    A leaf whose schema allows text stays text (a hub revision '1234' is not a number), except a
    YAML null ('null', '~') where null is allowed too. Text that spells no allowed type ('eight'
    for an integer) is left as it is, for the schema check to report with its key.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Snakemake reads a top-level --config value that looks like a number as one (results=2024).
        types = _schema_types(schema)
        return str(value) if "string" in types and not _fits(value, types) else value
    if isinstance(value, str):
        types = _schema_types(schema)
        if "string" in types:
            return None if "null" in types and value.strip() in ("null", "Null", "NULL", "~") else value
        if types:
            value = _from_text(value, types)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {key: coerce_to_schema(item, properties.get(key, extra if isinstance(extra, dict) else {}))
                for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [coerce_to_schema(item, schema["items"]) for item in value]
    return value


def coerce_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Apply :func:`coerce_to_schema` to Snakemake's config dict in place (its identity is kept)."""
    config.update(coerce_to_schema(dict(config), schema))
    return config


# --- readable schema errors ----------------------------------------------------------------------


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
                        "laid out as docs/data.md describes (--config mirror=PATH) or set it to null to download")
    for name in config["study"]["models"]:
        if name not in config["models"]:
            problems.append(f"config key 'study.models': {name!r} is not defined under 'models' "
                            f"(defined: {', '.join(sorted(config['models']))})")
            continue
        try:
            model_location(name, config["models"][name])
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        problems += _max_length_problems(config, name)
    if config.get("offline") and not problems:
        problems += _offline_problems(config)
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


def _max_length_problems(config: dict[str, Any], name: str) -> list[str]:
    """max_length keys above the model's position limit, read from local files (dry runs too).

    A hub model whose config.json is not in the local cache is checked by its fine-tuning job."""
    entry = config["models"][name]
    limit = local_position_limit(name, entry)
    if limit is None:
        log.info("model %s: no local config.json (hub cache) yet; its max_length is checked when it is loaded", name)
        return []
    finetune = config.get("finetune") or {}
    uses_model = f", or null to use 'models.{name}.max_length'"
    checks = [(f"models.{name}.max_length", entry.get("max_length"), ""),
              ("finetune.max_length", finetune.get("max_length"), uses_model)]
    checks += [(f"finetune.per_task.{task}.max_length", (override or {}).get("max_length"), uses_model)
               for task, override in (finetune.get("per_task") or {}).items()]
    found = (max_length_problem(key, value, name, limit, fix) for key, value, fix in checks)
    return [problem for problem in found if problem]


def _offline_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    mirror = config.get("mirror")
    if not mirror:
        return ["'offline' is true but config key 'mirror' is not set: give the local data mirror with "
                "--config mirror=PATH (a directory laid out as docs/data.md describes)"]
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
