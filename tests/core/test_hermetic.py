"""The suite passes whatever the user's shell exports (tests/support/environment.py): a sample of it -- a hub test, a
warm-start test and a run of the real workflow -- run by pytest in a shell that exports every variable the suite must
not depend on, each set to the value that changed a result before (HF_HUB_OFFLINE=1 failed four hub tests)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.environment import HERMETIC_VARIABLES
from support.paths import REPO

SAMPLE = (
    "tests/models/test_hub_fetch.py::test_a_changed_file_in_a_prefetch_folder_is_refused_and_fetched_again",
    "tests/runtime/test_warm_start.py::test_a_warm_job_has_the_status_streams_environment_and_folder_of_its_own_process",
    "tests/workflow/test_run_messages.py::test_the_real_workflow_ends_a_project_error_with_its_block",
)


@pytest.mark.e2e
def test_a_sample_of_the_suite_passes_in_a_shell_that_exports_every_variable(tmp_path):
    # All at once, one pytest run: a variable the suite depended on fails its test whatever else is set, and one
    # run costs a tenth of one per variable. The whole suite was run so too (docs/contributing.md).
    environment = {**os.environ, **HERMETIC_VARIABLES}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *SAMPLE],
                            cwd=REPO, capture_output=True, text=True, env=environment, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{len(SAMPLE)} passed" in result.stdout, result.stdout[-2000:]
