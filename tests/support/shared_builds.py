"""What a test session builds once for all its tests, however many pytest-xdist workers run them: the tiny models and
the whole-DAG studies of tests/conftest.py.

The suite runs on two workers (pyproject.toml's ``addopts``: ``-n 2 --dist loadfile``), each a pytest session of its
own. The first worker to ask for a shared thing builds it, under a file lock, in the folder all workers of the run share
(``shared_root``); a worker that asks meanwhile waits for the lock, then reads what was built. A build that failed is
not tried again: every test that asks for it fails with its message. Without xdist (``-p no:xdist``, ``-n 0``) the
session's own temporary folder holds them, built the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from .workflow_runs import console, snakemake


def shared_root(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the workers of this run share (each worker's base temporary folder is one below it). A worker is
    told by its config (what xdist's ``worker_id`` fixture reads), not by the environment, which a pytest run inside
    a test inherits."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


def build_once(root: Path, name: str, build: Callable[[Path], Any]) -> Any:
    """What ``build(root / name)`` returned (a path, or JSON-able data with paths as strings), built by the first
    worker that asked for ``name``."""
    record = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not record.exists():
            try:
                outcome = {"result": _as_json(build(root / name))}
            except Exception as error:
                record.write_text(json.dumps({"error": f"{type(error).__name__}: {error}"}), encoding="utf-8")
                raise
            record.write_text(json.dumps(outcome), encoding="utf-8")
        outcome = json.loads(record.read_text(encoding="utf-8"))
    if "error" in outcome:
        pytest.fail(f"the shared {name} could not be built (the test that built it shows why): {outcome['error']}",
                    pytrace=False)
    return outcome["result"]


def _as_json(result: Any) -> Any:
    return str(result) if isinstance(result, Path) else result


def run_study(work: Path, *args: str, configfile: str = "tiny.yaml") -> Path:
    """The real ``snakemake`` run that builds a shared study in ``work`` (offline; targets in ``args``); ``work``
    once it succeeded. Its console is kept beside the folder (never in it: the tests copy the folder)."""
    result = snakemake(work, *args, configfile=configfile)
    work.with_name(work.name + ".console").write_text(console(result), encoding="utf-8")
    if result.returncode != 0:
        raise AssertionError(f"snakemake failed on {work}:\n{console(result)[-6000:]}")
    return work
