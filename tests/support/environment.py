"""The suite's result must not depend on what the user's shell holds: offline compute nodes export
``HF_HUB_OFFLINE=1`` (site modules, job scripts), a user may keep ``ATLAS_WARM_START=off`` or a thread count. The
variables below change what the workflow or its libraries do, so tests/conftest.py removes them for the whole
session before anything is imported (huggingface_hub and torch read theirs when imported), and a test that depends on
one sets it itself (``support.workflow_runs.offline_env`` sets the offline ones for a whole-DAG run).
``tests/core/test_hermetic.py`` runs a sample of the suite with each of them set."""

from __future__ import annotations

import os

# What the user's shell may hold that the suite must not depend on, each with the value the hermetic test gives it.
HERMETIC_VARIABLES = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HOME": "/nonexistent/hf-home",
    "HF_HUB_CACHE": "/nonexistent/hf-hub-cache",
    "HF_ENDPOINT": "http://127.0.0.1:9",  # a hub elsewhere: the hub tests start their own
    "ATLAS_WARM_START": "off",
    "ATLAS_CONSOLE": "full",
    "ATLAS_SCHEDULER_PASSES": "snakemake",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "LC_ALL": "C",
}


def clean_environment() -> list[str]:
    """Remove the hermetic variables from this process's environment (and so from every subprocess the tests
    start); returns the names that were set."""
    found = [name for name in HERMETIC_VARIABLES if name in os.environ]
    for name in found:
        del os.environ[name]
    return found
