"""Running the real workflow on a study folder of the tests (tests/workflow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .paths import REPO


def snakemake(work: Path, *args: str, configfile: str = "tiny.yaml") -> subprocess.CompletedProcess:
    """``snakemake`` on the study in ``work`` (its config file ``configfile``), 2 cores, offline."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
               str(work), "--configfile", str(work / configfile), "--cores", "2", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(command, cwd=work, capture_output=True, text=True, env=env, timeout=3600)
