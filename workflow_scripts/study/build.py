"""The study of a config: every stage's plan (workflow_scripts/study/plans/) made in order on one
:class:`~.model.Study`.

Apart from model.py so that the stage plans, which read the Study, are imported here only: model.py imports none of
them, and no module imports itself back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.stages import STAGES
from .model import Study, new_study
from .plans import stage_plan


def build_study(config: Mapping[str, Any]) -> Study:
    """The study of a validated config (raises ConfigError naming the key and the fix)."""
    study = new_study(config)
    for stage in STAGES:
        study.add_plan(stage, stage_plan(stage).plan(study))
    return study
