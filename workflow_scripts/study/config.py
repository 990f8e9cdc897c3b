"""The config in one place: its checks, with messages that name the key and the fix, before any job.

``schemas/config.schema.yaml`` is the single definition of the config: every key, its type and its
default (``config.yaml`` holds only what is not a default). :func:`resolve_config` resolves a study's config as
the workflow does (rules/common.smk), in steps that each have a module:

- ``config_coercion.py``: ``--config`` text read as the types the schema asks for (:func:`coerce_config`);
- ``config_messages.py``: the schema's validation errors as readable ones (:func:`check_schema`);
- ``config_semantics.py``: every check a schema cannot express (:func:`check_semantics`: paths exist, a model
  folder is what it claims (models/folder_check.py), names that key a map are defined (config_names.py),
  max_length fits the model, the annotator can run);
- ``config_selections.py``: the corpora and splits a study selects.

The rules, the entry points and the tests import those names from here. Science and data code never names a config
key: it raises plain errors about the values it got. docs/configuration.md describes the whole resolution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.schema import SCHEMA_PATH, load_schema
from .config_coercion import coerce_config, coerce_to_schema
from .config_messages import YAML_BOOLEAN_FIX, check_schema
from .config_selections import selected_corpora, selected_splits
from .config_semantics import check_semantics, max_length_problem
from .revisions import expand_revisions

__all__ = ["YAML_BOOLEAN_FIX", "check_schema", "check_semantics", "coerce_config", "coerce_to_schema",
           "load_schema", "max_length_problem", "resolve_config", "selected_corpora", "selected_splits"]

REPO = Path(__file__).resolve().parents[2]


def resolve_config(configfiles: list[str | Path] | tuple[str | Path, ...], cli: list[str] | tuple[str, ...], *,
                   semantics: bool = True) -> dict[str, Any]:
    """The config of ``snakemake --configfile FILES --config CLI``, checked as rules/common.smk checks it.

    Snakemake merges the --configfile files in order and the --config values on top into one overwrite
    config (update_config: maps merge, anything else is replaced), merges the Snakefile's config.yaml
    under it and the overwrite config again on top; rules/common.smk then reads --config text as the
    schema's types, checks the schema, fills in the defaults (validate) and runs the semantic checks
    (``semantics=False`` leaves those to the caller, e.g. the prefetch, which first sets 'offline').
    """
    import copy

    from snakemake.cli import parse_config
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config, validate

    overwrite: dict[str, Any] = {}
    for path in configfiles:
        update_config(overwrite, load_configfile(str(path)))
    update_config(overwrite, parse_config(list(cli)))
    config = copy.deepcopy(overwrite)
    update_config(config, load_configfile(str(REPO / "config.yaml")))
    update_config(config, overwrite)
    schema = load_schema(SCHEMA_PATH)
    coerce_config(config, schema)
    check_schema(config, schema)
    expand_revisions(config)  # before validate's defaults: a revision's own entry refines only the keys it gives
    validate(config, str(SCHEMA_PATH))
    if semantics:
        check_semantics(config)
    return config
