"""The config checks as the config tests call them: the schema's defaults filled in as Snakemake
fills them, the message of the ConfigError a check raises, and a tiny mirror the offline checks look at."""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.utils import validate

from support.mirror import write_in_mirror
from support.paths import SCHEMA_PATH
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.checks import check_schema, check_semantics

# The keys of 'finetune' that a 'finetune.per_task' entry does not take: stated here, not imported from
# core/schema.py, so that the tests hold the schema's per-task entries to an independent statement.
NOT_PER_TASK = ("tasks", "per_task", "threads", "mem_mb", "runtime")


def with_defaults(config: dict) -> dict:
    """Fill in the schema's defaults as Snakemake does before the semantic checks."""
    validate(config, str(SCHEMA_PATH))
    return config


def schema_error(config: dict, schema: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_schema(config, schema)
    return str(info.value)


def semantic_error(config: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_semantics(config)
    return str(info.value)


def tiny_mirror(root: Path, *, ewt: bool = True) -> Path:
    """A mirror of CoLA's dev split and (``ewt``) EWT's, one line each, where the workflow looks for them."""
    write_in_mirror(root, "cola", "dev", "gj04\t1\t\tOk.\n")
    if ewt:
        write_in_mirror(root, "ewt", "dev", "# text = Ok\n1\tOk\t_\t_\t_\t_\t0\troot\t_\t_\n")
    return root
