"""The study's stages, in the order the DAG runs them.

One name per stage, the same everywhere: ``rules/<stage>.smk``, ``workflow_scripts/<stage>/``,
``workflow_scripts/entrypoints/<stage>.py``, ``docs/``, ``report/`` and ``tests/<stage>/``.
A stage that publishes tables, paper comparisons or summary panels declares them in its own
``workflow_scripts/<stage>/report.py`` (the types are in :mod:`workflow_scripts.report.items`);
the report finds those declarations through this list and never imports a stage by name.
"""

from __future__ import annotations

STAGES: tuple[str, ...] = ("data", "models", "finetune", "attention", "surface", "syntax", "finetune_effects",
                           "ablation", "report", "explorer")


def entry_name_matches(registered: str, rule: str) -> bool:
    """Whether a rule runs the entry point registered as ``registered``: its name exactly, or a pattern its name
    matches whole (``finetune_{task}``: ``finetune_`` then one field of letters, digits, ``_`` and ``-``). Shared by
    ``entrypoints.find_entry_point`` and the code digests (``runtime/code_digest.py``)."""
    import re

    if registered == rule:
        return True
    return "{" in registered and re.fullmatch(
        re.sub(r"\\{\w+\\}", "[A-Za-z0-9_-]+", re.escape(registered)), rule) is not None
