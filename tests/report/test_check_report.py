"""tools/check_report.py, the headless-browser check of a Snakemake report, on the tiny study's report.

The tool drives the system's Chromium (/usr/bin/chromium, Debian's package) through playwright, the ``browser``
extra; either missing, the test skips and says which. CI installs only ``.[dev]``, so there it skips unless
playwright is installed too. It reads the shared tiny study, built with the whole DAG, hence e2e.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO
from support.workflow_runs import snakemake

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.e2e,
    # skipif, not a skip inside the test: the marks are read before the (minutes long) study is built.
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason='playwright is not installed (pip install -e ".[browser]")'),
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no system Chromium at {CHROMIUM} (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory, tiny_study) -> Path:
    """The report of the shared tiny study (tests/conftest.py), written outside the study's folder."""
    report = tmp_path_factory.mktemp("report") / "report.html"
    written = snakemake(tiny_study, "--report", str(report))
    assert written.returncode == 0, written.stderr[-3000:]
    return report


def test_every_result_of_the_tiny_report_opens_in_the_browser(report, tmp_path):
    shots = tmp_path / "shots"
    result = subprocess.run([sys.executable, str(REPO / "tools" / "check_report.py"), str(report),
                             "--screenshots", str(shots), "--chromium", str(CHROMIUM)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    ok, total = result.stdout.strip().splitlines()[-1].split(" results ok")[0].split(" of ")
    assert ok == total and int(total) > 10, result.stdout[-3000:]
    # The tiny study's summary page of each subject (its one: tiny) is screenshot, besides the landing page.
    assert {"landing.png", "tiny.png"} <= {p.name for p in shots.iterdir()}
