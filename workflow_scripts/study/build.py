"""The study of a config: every stage's plan (workflow_scripts/study/plans/) run in order on one
:class:`~.model.Study`.

Apart from model.py so that the modules that read the Study (the stage plans; the rules' input functions:
inputs.py) are imported here only: model.py imports none of them, and no module imports itself back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .inputs import rule_inputs
from .model import Study, new_study
from .plans import stage_plans

# One plan per stage, in the order of core/stages.py's STAGES, found by the stage's name (plans/__init__.py).
STAGE_PLANS = stage_plans()


def build_study(config: Mapping[str, Any]) -> Study:
    """The study of a validated config (raises ConfigError naming the key and the fix)."""
    study = new_study(config)
    for stage_plan in STAGE_PLANS:
        stage_plan.plan(study)
    study.inputs = rule_inputs(study)
    return study
