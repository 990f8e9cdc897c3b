"""One plan per stage: what the stage's analyses are, and what a study builds of them.

Each module is named after its stage (``STAGES`` in core/stages.py) and holds:

- ``ANALYSES``: the stage's analyses as :class:`~.declarations.Analysis` (name, unit of work, sharded or not,
  the tables and figures it writes, their captions, the tables the head explorer reads);
- ``plan(study)``: fills the stage's fields of the Study from the config and from what the plans of the earlier
  stages planned (never a later one), and sets the stage's final outputs (``rule all``).

They live in workflow_scripts/study/ rather than in each stage's folder because a plan reads the Study and the
config, which the stages' science never does (docs/contributing.md, "Which way imports run"): the science stays
plain functions, and only the rules and the entry points import the study. ``build.build_study`` runs the plans
in order (``STAGE_PLANS``).
"""
