"""One plan per stage: what the stage's analyses are, and what a study builds of them.

Each module is named after its stage (``STAGES`` in core/stages.py) and holds:

- ``ANALYSES``: the stage's analyses as :class:`~.declarations.Analysis` (name, unit of work, sharded or not,
  the tables, figures and pages it writes, their captions and report subcategory, why a table may be absent, the
  tables the head explorer reads);
- ``STAGE`` and ``REPORT_CATEGORY``: the stage's name and the report's category of its outputs, and a constant for
  each figure not named after its table (e.g. ``SPECIAL_TOKENS_FIGURE``), which the stage's rule file imports;
- ``plan(study)``: returns the stage's frozen ``Plan`` (a :class:`~.declarations.StagePlan`: its planned work, its
  final outputs for ``rule all``, and the input and params functions its rules call, e.g. ``STUDY.surface.dump``),
  made from the config and from the plans of the earlier stages (``study.stage(NAME)`` refuses a later one).

They live in workflow_scripts/study/ rather than in each stage's folder because a plan reads the Study and the
config, which the stages' science never does (docs/contributing.md, "Which way imports run"): the science stays
plain functions, and only the rules and the entry points import the study. ``build.build_study`` runs the plans
in order (:func:`stage_plans`).

The plans are found by their stage's name (:func:`stage_plan`), so that the list of stages is spelled once, as
``STAGES``: the build, the explorer's earlier plans and the rules' input functions (each plan's methods) follow from
it, and a new stage is a new module here, registered nowhere.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ...core.stages import STAGES


def stage_plan(stage: str) -> ModuleType:
    """The plan of ``stage``: the module ``plans/<stage>.py``."""
    return importlib.import_module(f"{__name__}.{stage}")


def stage_plans(before: str | None = None) -> tuple[ModuleType, ...]:
    """Every stage's plan in the order of ``STAGES``; with ``before``, those of the stages before that one."""
    stages = STAGES if before is None else STAGES[:STAGES.index(before)]
    return tuple(stage_plan(stage) for stage in stages)
