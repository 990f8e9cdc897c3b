"""A Snakemake run through SLURM (tests/workflow/test_slurm.py): the command-line options that adapt
profiles/slurm to the cluster at hand, and the jobs a run's log records (job blocks, finished jobs,
sbatch submissions)."""

from __future__ import annotations

import re

# Resources with which the profile asks for GPUs (snakemake-executor-plugin-slurm 2.x).
GPU_RESOURCES = ("gpu", "gpus", "gpu_model", "gres", "cpus_per_gpu", "tasks_per_gpu")


def _cli(value) -> str:
    """A profile's resource value as the profile parser passes it on (expressions stay expressions)."""
    return repr(value) if isinstance(value, str) and re.fullmatch(r"[-+]?[\d.]+", value) else str(value)


def slurm_overrides(profile: dict, cluster: dict) -> list[str]:
    """Command-line options that adapt the profile to this cluster and nothing more: partition,
    no account, no GPU request, memory capped at half a node's, threads at a node's CPUs."""

    def adapt(resources: dict) -> dict:
        out = {}
        for name, value in resources.items():
            if name in GPU_RESOURCES or name == "slurm_account":
                continue
            if name == "slurm_partition":
                value = repr(cluster["partition"])  # quoted: a string, not an expression
            if name == "mem_mb" and isinstance(value, int):  # two jobs side by side, as --cores 2
                value = min(value, cluster["mem_mb"] // 2)
            out[name] = value
        return out

    defaults = adapt(profile.get("default-resources") or {})
    defaults["slurm_partition"] = repr(cluster["partition"])
    options = ["--default-resources", *(f"{k}={_cli(v)}" for k, v in defaults.items())]
    per_rule = []
    for rule, resources in (profile.get("set-resources") or {}).items():
        adapted = adapt(resources)
        if any(name in resources for name in GPU_RESOURCES):
            adapted["gpu"] = 0  # the rules' own 'gpu=' is 0 for device cpu/auto: no GPU here
        per_rule += [f"{rule}:{k}={_cli(v)}" for k, v in adapted.items()]
    if per_rule:
        options += ["--set-resources", *per_rule]
    options += ["--max-threads", str(cluster["cpus"])]
    return options


def jobs_of(log: str) -> dict[int, dict]:
    """Snakemake's job blocks in a run's log: jobid -> {rule, local, has_output}."""
    jobs = {}
    for match in re.finditer(r"^(local)?rule (\S+):\n((?:[ \t]+\S.*\n?)*)", log, re.MULTILINE):
        body = match.group(3)
        jobid = re.search(r"^\s+jobid: (\d+)", body, re.MULTILINE)
        if jobid:
            jobs[int(jobid.group(1))] = {"rule": match.group(2), "local": bool(match.group(1)),
                                         "has_output": bool(re.search(r"^\s+output: ", body, re.MULTILINE))}
    return jobs


def finished_of(log: str) -> set[int]:
    return {int(j) for j in re.findall(r"Finished jobid: (\d+)", log)}


def submissions_of(log: str) -> dict[int, str]:
    """Snakemake job id -> SLURM job id, from 'Job N has been submitted with SLURM jobid M'."""
    pairs = re.findall(r"Job (\d+) has been submitted with SLURM jobid (\S+?) ", log)
    submitted: dict[int, str] = {}
    for job, slurm_id in pairs:
        assert int(job) not in submitted, f"job {job} submitted twice ({submitted[int(job)]}, {slurm_id})"
        submitted[int(job)] = slurm_id
    return submitted
