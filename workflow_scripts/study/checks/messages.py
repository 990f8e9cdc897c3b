"""The schema's validation errors as readable ones, naming the key and the fix (checks/__init__.py checks
the config; ``schemas/config.schema.yaml`` is its single definition)."""

from __future__ import annotations

from typing import Any

import jsonschema

from ...core.errors import ConfigError
from .path_names import path_name_problems


def _key(error: jsonschema.ValidationError) -> str:
    parts = ""
    for part in error.absolute_path:
        parts += f"[{part}]" if isinstance(part, int) else (f".{part}" if parts else str(part))
    return parts or "(top level)"


def _map_key(error: jsonschema.ValidationError) -> str:
    """The error's dotted key without list positions, as checks/path_names.py names where a name sits (an item of
    'study.models' is at 'study.models'; an entry name of 'models' is at 'models', as the schema's propertyNames)."""
    return ".".join(str(part) for part in error.absolute_path if not isinstance(part, int))


def _describe(error: jsonschema.ValidationError) -> str:
    key = _key(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = "the config" if key == "(top level)" else f"config key '{key}'"
        return (f"{where}: unknown key(s) {', '.join(repr(u) for u in unknown)}; allowed here: "
                f"{', '.join(allowed)} (check the spelling; see docs/configuration.md)")
    if "propertyNames" in error.schema_path:  # about an entry's name, not its value: say so, and the rule
        rule = f"names here match {error.schema['pattern']}" if error.validator == "pattern" else error.message
        return f"config key '{key}': the entry name {error.instance!r} is not allowed ({rule}); rename the entry"
    hint = error.schema.get("description", "")
    message = f"config key '{key}': {error.message}"
    if _bool_for_string(error):
        message += f"; {YAML_BOOLEAN_FIX}"
    return f"{message} ({hint})" if hint else message


YAML_BOOLEAN_FIX = "YAML reads unquoted yes/no/on/off/true/false as true/false: quote it ('yes')"


def _bool_for_string(error: jsonschema.ValidationError) -> bool:
    """A bool where a string was wanted: most likely an unquoted yes/no (labels: [yes, no]) that YAML 1.1
    turned into true/false, which the schema's own message (True is not of type 'string') does not explain."""
    if not isinstance(error.instance, bool):
        return False
    wanted = error.validator_value
    if error.validator == "type":
        return "string" in ([wanted] if isinstance(wanted, str) else wanted)
    if error.validator in ("enum", "const"):
        return any(isinstance(v, str) for v in (wanted if error.validator == "enum" else [wanted]))
    return False


def check_schema(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """The schema's checks, after the names that become paths (checks/path_names.py), whose messages say more than
    the schema's pattern for the same name would: that one is left out (the error at the same key, about the same
    name; an error at another key is kept, whatever its value)."""
    names = path_name_problems(config)
    told = {(problem.key, problem.name) for problem in names}
    validator_class = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_class(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    errors = [e for e in errors if not (isinstance(e.instance, str) and (_map_key(e), e.instance) in told)]
    problems = [problem.message for problem in names] + [_describe(e) for e in errors]
    if problems:
        raise ConfigError("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))
