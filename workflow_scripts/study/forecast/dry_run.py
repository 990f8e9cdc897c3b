"""The jobs of a study's plan (plan.py): Snakemake's own dry run, each job counted under the
stage whose rule file defines its rule."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import AtlasError
from ...core.stages import STAGES

REPO = Path(__file__).resolve().parents[3]


class PlanError(AtlasError):
    """The dry run failed; the message holds Snakemake's own explanation."""


@dataclass(frozen=True)
class Job:
    rule: str
    wildcards: tuple[tuple[str, str], ...]

    def wildcard(self, name: str) -> str:
        return dict(self.wildcards)[name]


def rule_stages() -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(rule name -> stage, [(name prefix, stage)] of rules named by an f-string, e.g. finetune_{task})."""
    names, prefixes = {"all": "all"}, []
    for stage in STAGES:
        text = (REPO / "rules" / f"{stage}.smk").read_text(encoding="utf-8")
        for plain, used in re.findall(r"^\s*(?:local)?rule (\w+)\s*:|^\s*use rule \w+ as (\w+)", text, re.M):
            names[plain or used] = stage
        prefixes += [(prefix, stage) for prefix in re.findall(r'^\s*name:\s*\n\s*f?"([^"{]*)\{', text, re.M)]
    return names, prefixes


def stage_of(rule: str, stages: tuple[dict[str, str], list[tuple[str, str]]]) -> str:
    names, prefixes = stages
    return names.get(rule) or next((stage for prefix, stage in prefixes if rule.startswith(prefix)), "other")


def dry_run(configfiles: list[str], cli: list[str], *, forceall: bool) -> list[Job]:
    """The jobs of ``snakemake --dry-run`` (every job of the study with ``forceall``)."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "1",
               "--dry-run", *(["--forceall"] if forceall else []),
               *(["--configfile", *configfiles] if configfiles else []), *(["--config", *cli] if cli else [])]
    # A dry run reads no model and no data; HF_HUB_OFFLINE keeps the hub's libraries from asking the network.
    result = subprocess.run(command, capture_output=True, text=True, check=False,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    text = result.stdout + result.stderr
    if result.returncode != 0:
        raise PlanError(f"the dry run failed (snakemake {' '.join(command[3:])}):\n{text[-4000:]}")
    jobs = []
    for block in re.split(r"\n(?=(?:local)?(?:rule|checkpoint) \S+:\n)", text):
        head = re.match(r"(?:local)?(?:rule|checkpoint) (\S+):\n", block)
        if head:
            found = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            pairs = re.findall(r"(\w+)=([^,]*)(?:, |$)", found.group(1)) if found else []
            jobs.append(Job(head.group(1), tuple(pairs)))
    total = re.search(r"^total\s+(\d+)\s*$", text, re.M)
    counted = int(total.group(1)) if total else 0
    if len(jobs) != counted:
        raise PlanError(f"read {len(jobs)} jobs from a dry run that counts {total and total.group(1)}:\n"
                        f"{text[-2000:]}")
    return jobs


def jobs_per_stage(jobs: list[Job]) -> dict[str, int]:
    stages = rule_stages()
    counts = {stage: 0 for stage in (*STAGES, "all")}
    for job in jobs:
        stage = stage_of(job.rule, stages)
        counts[stage] = counts.get(stage, 0) + 1
    return counts
