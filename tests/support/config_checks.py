"""The config checks as the config tests call them: the schema's defaults filled in as Snakemake
fills them, the message of the ConfigError a check raises, and a tiny mirror the offline checks look at."""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.utils import validate

from support.paths import SCHEMA_PATH
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.config import check_schema, check_semantics


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
    (root / "glue" / "CoLA").mkdir(parents=True)
    (root / "glue" / "CoLA" / "dev.tsv").write_text("gj04\t1\t\tOk.\n", encoding="utf-8")
    if ewt:
        (root / "ud" / "UD_English-EWT").mkdir(parents=True)
        (root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").write_text(
            "# text = Ok\n1\tOk\t_\t_\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    return root
