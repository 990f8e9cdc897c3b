"""Studies built from config.yaml with overrides, resolved as rules/common.smk does (the study model tests)."""

from __future__ import annotations

import copy

import yaml
from snakemake.utils import update_config

from support.paths import REPO
from workflow_scripts.study.build import build_study
from workflow_scripts.study.checks import check_config

MODEL = "bert-base-uncased"


def study_of(overrides: dict | None = None, *, results: str = "R"):
    """The study of config.yaml with ``overrides`` on top, resolved as rules/common.smk does."""
    config = yaml.safe_load((REPO / "config.yaml").read_text()) or {}
    update_config(config, {"results": results, **copy.deepcopy(overrides or {})})
    return build_study(check_config(config))


def one_model(**study) -> dict:
    return {"study": {"models": [MODEL], **study}}
