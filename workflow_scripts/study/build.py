"""The study of a config: every stage's plan (workflow_scripts/study/plans/) run in order on one
:class:`~.model.Study`.

Apart from model.py so that the modules that read the Study (the stage plans; the rules' input functions:
inputs.py) are imported here only: model.py imports none of them, and no module imports itself back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .inputs import RuleInputs
from .model import Study, new_study
from .plans import ablation, attention, data, explorer, finetune, finetune_effects, models, report, surface, syntax

# One plan per stage, in the order of core/stages.py's STAGES (tests/study/test_stage_plans.py checks it).
STAGE_PLANS = (data, models, finetune, attention, surface, syntax, finetune_effects, ablation, report, explorer)


def build_study(config: Mapping[str, Any]) -> Study:
    """The study of a validated config (raises ConfigError naming the key and the fix)."""
    study = new_study(config)
    for stage_plan in STAGE_PLANS:
        stage_plan.plan(study)
    study.inputs = RuleInputs.of(study)
    return study
