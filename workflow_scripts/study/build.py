"""The study of a config: every stage's plan run in order on one :class:`~.model.Study`.

Apart from model.py so that the modules that read the Study (the plans of the later stages: ablation_plan,
report_plan, explorer_plan; the rules' input functions: inputs.py) are imported here only: model.py imports
none of them, and no module imports itself back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .ablation_plan import plan_ablation
from .explorer_plan import plan_explorer
from .inputs import RuleInputs
from .model import ANALYSIS_PLANS, Study, new_study
from .report_plan import plan_report


def build_study(config: Mapping[str, Any]) -> Study:
    """The study of a validated config (raises ConfigError naming the key and the fix)."""
    study = new_study(config)
    for plan in (*ANALYSIS_PLANS, plan_ablation, plan_report, plan_explorer):
        plan(study)
    study.inputs = RuleInputs(study)
    return study
