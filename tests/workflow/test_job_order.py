"""The long pole first, as Snakemake sees it: a dry run of the shared tiny study gives its fine-tuning run, what the
run waits for and what waits for it the run's priority, and everything else priority 0 (the ranking itself:
tests/study/test_priorities.py)."""

from __future__ import annotations

import re

import pytest

from support.workflow_runs import snakemake

pytestmark = pytest.mark.e2e


def job_priorities(output: str) -> list[tuple[str, dict[str, str], int]]:
    """(rule, wildcards, priority) of every job a dry run lists (Snakemake prints a priority other than 0 only)."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \S+:)", output):
        rule = re.match(r"(?:local)?rule (\S+):", block)
        if rule:
            priority = re.search(r"^\s+priority: (\d+)", block, re.MULTILINE)
            found = re.search(r"^\s+wildcards: (.*)$", block, re.MULTILINE)
            wildcards = dict(pair.split("=", 1) for pair in found.group(1).split(", ")) if found else {}
            jobs.append((rule.group(1), wildcards, int(priority.group(1)) if priority else 0))
    return jobs


def test_the_fine_tuning_run_and_its_chain_are_scheduled_first(tiny_study):
    result = snakemake(tiny_study, "--dry-run", "--forceall")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = job_priorities(result.stdout + result.stderr)
    # finetune_{task}: one job per model and seed (the fine-tuning effects' rules name a checkpoint instead).
    finetuning = [p for rule, wc, p in jobs if rule.startswith("finetune_") and "seed" in wc and "checkpoint" not in wc]
    assert finetuning and min(finetuning) > 0
    top = max(finetuning)
    on_finetuned = [p for _, wc, p in jobs if ".seed" in wc.get("checkpoint", "")]
    on_pretrained = [p for _, wc, p in jobs if wc.get("checkpoint") in ("pretrained", "random")]
    assert on_finetuned and set(on_finetuned) <= set(finetuning)  # dumps and analyses of its checkpoints
    assert on_pretrained and set(on_pretrained) == {0}
    assert {p for rule, _, p in jobs if rule == "pretrained_checkpoint"} == {top}  # what the run waits for
