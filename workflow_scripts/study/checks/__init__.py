"""The config in one place: its checks, with messages that name the key and the fix, before any job.

``schemas/config.schema.yaml`` is the single definition of the config: every key, its type and its
default (``config.yaml`` holds only what is not a default). :func:`check_config` is the check, in its one order;
rules/common.smk, :func:`resolve_config` (a study's config as ``snakemake --configfile --config`` makes it) and the
tests call it. Its steps each have a module:

- ``checks/coercion.py``: ``--config`` text read as the types the schema asks for (:func:`coerce_config`);
- ``checks/messages.py``: the schema's validation errors as readable ones (:func:`check_schema`);
- ``checks/semantics.py``: every check a schema cannot express (:func:`check_semantics`: paths exist, a model
  folder is what it claims (models/folder_check.py), names that key a map are defined (checks/names.py),
  max_length fits the model, the annotator can run);
- ``checks/selections.py``: the corpora and splits a study selects;
- ``checks/path_names.py``: the names that become paths, one plain name each (from :func:`check_schema`);
- ``checks/entries.py``: the treebank and task entries (from :func:`check_semantics`).

The rules, the entry points and the tests import those names from here. Science and data code never names a config
key: it raises plain errors about the values it got. docs/configuration.md describes the whole resolution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.schema import SCHEMA_PATH, config_schema, load_schema
from ..revisions import expand_revisions
from .coercion import coerce_config, coerce_to_schema
from .messages import YAML_BOOLEAN_FIX, check_schema
from .selections import selected_corpora, selected_splits
from .semantics import check_semantics, max_length_problem

__all__ = ["YAML_BOOLEAN_FIX", "check_config", "check_schema", "check_semantics", "coerce_config", "coerce_to_schema",
           "load_schema", "max_length_problem", "resolve_config", "selected_corpora", "selected_splits"]

REPO = SCHEMA_PATH.parents[1]


def check_config(config: dict[str, Any], *, semantics: bool = True, gpu_memory: bool = True) -> dict[str, Any]:
    """Check ``config`` in place, before any job, and fill in the schema's defaults; returns it.

    In order: --config text read as the schema's types (nested values arrive as text: attention='{num_shards: 8}');
    the schema's errors as readable ones (key, problem, fix); a model's ``revisions`` expanded, before the defaults
    are filled in, so that a revision's own entry (the prefetch's) refines only the keys it gives; Snakemake's own
    ``validate()``, which fills in the defaults; then every check the schema cannot express (``semantics=False``
    leaves those to the caller, e.g. the prefetch, which first sets 'offline'; ``gpu_memory=False`` skips the
    estimate of the GPU jobs' memory, which the main Snakemake process makes and a cluster job's need not again).
    """
    from snakemake.utils import validate

    schema = config_schema()
    coerce_config(config, schema)
    check_schema(config, schema)
    expand_revisions(config)
    validate(config, str(SCHEMA_PATH))
    if semantics:
        check_semantics(config, gpu_memory=gpu_memory)
    return config


def resolve_config(configfiles: list[str | Path] | tuple[str | Path, ...], cli: list[str] | tuple[str, ...], *,
                   semantics: bool = True) -> dict[str, Any]:
    """The config of ``snakemake --configfile FILES --config CLI``, checked as rules/common.smk checks it.

    Snakemake merges the --configfile files in order and the --config values on top into one overwrite
    config (update_config: maps merge, anything else is replaced), merges the Snakefile's config.yaml
    under it and the overwrite config again on top; rules/common.smk then runs :func:`check_config`.
    """
    import copy

    from snakemake.cli import parse_config
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config

    overwrite: dict[str, Any] = {}
    for path in configfiles:
        update_config(overwrite, load_configfile(str(path)))
    update_config(overwrite, parse_config(list(cli)))
    config = copy.deepcopy(overwrite)
    update_config(config, load_configfile(str(REPO / "config.yaml")))
    update_config(config, overwrite)
    return check_config(config, semantics=semantics)
