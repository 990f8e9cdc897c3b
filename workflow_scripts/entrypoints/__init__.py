"""Thin entry points between Snakemake rules and the science functions.

Each rule runs ``rules/scripts/entry.py``, which calls :func:`run`; it looks up
the function registered (with ``@entry_point("rule_name")``, one module per stage in
this package) under the rule's name, sets up logging to the rule's
log file and hands over plain values (paths and params). Nothing below this
module knows about Snakemake.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..core.io import setup_logging

ENTRY_POINTS: dict[str, Callable[[Any], None]] = {}
# Rules made one per config entry (finetune_{task}): their names are known only from the config.
PREFIX_ENTRY_POINTS: dict[str, Callable[[Any], None]] = {}


def entry_point(rule: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
        ENTRY_POINTS[rule] = function
        return function
    return register


def entry_point_prefix(prefix: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register a function for every rule whose name starts with ``prefix`` (and has no exact entry point)."""
    def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
        PREFIX_ENTRY_POINTS[prefix] = function
        return function
    return register


def find_entry_point(rule: str) -> Callable[[Any], None]:
    if rule in ENTRY_POINTS:
        return ENTRY_POINTS[rule]
    for prefix, function in PREFIX_ENTRY_POINTS.items():
        if rule.startswith(prefix):
            return function
    raise KeyError(f"rule {rule!r} has no entry point in workflow_scripts.entrypoints")


def run(smk: Any) -> None:
    """Run the entry point of ``smk.rule`` (the ``snakemake`` object of a script)."""
    log = setup_logging(smk.log[0] if smk.log else None)
    if smk.params.get("offline", False):
        # Make every Hugging Face library fail fast instead of trying the network.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    _import_all()
    function = find_entry_point(smk.rule)
    log.info("rule %s: start (threads=%s)", smk.rule, smk.threads)
    try:
        function(smk)
    except Exception:
        log.exception("rule %s failed", smk.rule)
        raise
    log.info("rule %s: done", smk.rule)


def _import_all() -> None:
    """Import every stage module of this package so that its entry points register."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
