"""``--config`` text read as the types the schema asks for (checks/__init__.py checks the config).

Snakemake parses a nested --config value with YAML's BaseLoader, so every leaf arrives as text
(attention='{num_shards: 8}' gives {'num_shards': '8'}; a top-level mirror=null gives 'null').
"""

from __future__ import annotations

import math
from typing import Any

import yaml


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
