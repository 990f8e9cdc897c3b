"""Running the real workflow on a study folder of the tests, and copying a built study (tests/workflow and the other
end-to-end tests). One runner for every whole-DAG test: the command, its environment and how its output is read."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .paths import REPO


def snakemake_command(work: Path, *args: str, configfile: str | None = "tiny.yaml", cores: int = 2,
                      snakefile: Path = REPO / "Snakefile") -> list[str]:
    """The command line of ``snakemake`` on the study in ``work`` (its config file ``configfile``, relative to
    ``work``; None: none, e.g. with a profile in ``args``). Targets go first in ``args``, before any option."""
    config = ["--configfile", str(work / configfile)] if configfile else []
    return [sys.executable, "-m", "snakemake", *args, "--snakefile", str(snakefile), "--directory", str(work),
            *config, "--cores", str(cores)]


def offline_env(**extra: str) -> dict[str, str]:
    """The environment of an offline run: the hub's clients fail at once instead of trying the network."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **extra}


def snakemake(work: Path, *args: str, configfile: str | None = "tiny.yaml", cores: int = 2,
              env: dict[str, str] | None = None, timeout: int = 3600,
              snakefile: Path = REPO / "Snakefile") -> subprocess.CompletedProcess:
    """``snakemake`` on the study in ``work``, offline unless ``env`` says otherwise, its output captured."""
    return subprocess.run(snakemake_command(work, *args, configfile=configfile, cores=cores, snakefile=snakefile),
                          cwd=work, capture_output=True, text=True, env=env or offline_env(), timeout=timeout)


# What a copy of the workflow's code needs (copy_workflow): a test may then change its code, never the repository's.
WORKFLOW_FILES = ("Snakefile", "config.yaml", "rules", "workflow_scripts", "schemas", "report", "envs", "profiles")


def copy_workflow(target: Path) -> Path:
    """A copy of the workflow's code at ``target``; returns its Snakefile."""
    target.mkdir(parents=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    return target / "Snakefile"


def with_config(work: Path, config: dict, *args: str, name: str = "changed.yaml",
                **options) -> subprocess.CompletedProcess:
    """``snakemake`` on ``work`` with ``config`` written as ``work/name``."""
    (work / name).write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return snakemake(work, *args, configfile=name, **options)


def config_of(work: Path, name: str = "tiny.yaml") -> dict:
    return yaml.safe_load((work / name).read_text(encoding="utf-8"))


def console(result: subprocess.CompletedProcess) -> str:
    return result.stdout + result.stderr


def planned_outputs(result: subprocess.CompletedProcess) -> set[str]:
    """The outputs of the jobs a dry run lists."""
    return {p.strip() for line in re.findall(r"^\s+output: (.*)$", console(result), re.MULTILINE)
            for p in line.split(",")}


def finished_rules(result: subprocess.CompletedProcess) -> set[str]:
    """The rules of the jobs a real run finished, from Snakemake's progress lines (a real run's console leaves out
    the job blocks)."""
    return set(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)", console(result), re.MULTILINE))


def copy_study(source: Path, target: Path) -> Path:
    """A copy of the built study in ``source`` at ``target`` (a new folder), file times kept (``cp -a``): Snakemake
    finds it as up to date as the original, and a test may damage, rerun or extend it without touching the original.
    The study's own relative paths (its mirror, its results) then name the copy's files."""
    shutil.copytree(source, target, symlinks=True)
    return target
