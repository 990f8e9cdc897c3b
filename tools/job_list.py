"""Every job a study plans, as Snakemake builds them, to show that a change of the code leaves them as they were.

    python tools/job_list.py write JOBS.json [--profile profiles/NAME] [--configfile FILE] [--config KEY=VALUE ...]
                                             [--snakefile SNAKEFILE --directory DIR]
    python tools/job_list.py compare BEFORE.json AFTER.json

``write`` builds the study's DAG as ``snakemake --dry-run --forceall`` does (Snakemake's own API, the profile's
``configfile`` and the ``--config`` values on top) and writes every job: its rule, wildcards, input, output and log
files (in order, and by name where the rule names them: entry points read them by name and in order), params (the
code digest apart: it changes with the code by design, docs/contributing.md), resources, threads (as declared: the
DAG is built for more cores than any rule asks, so that none is scaled down), priority and the report entries of
its outputs (caption file, category, subcategory, evaluated as ``snakemake --report`` does), the workflow's own
folder written ``<workflow>`` so that two checkouts compare. ``compare`` says which jobs
only one list has and, for the others, the first field that differs; it exits 1 if any job differs. The profiles'
studies need what their configs name to exist (the offline profile: a ``mirror``); no job runs and nothing is written
but JOBS.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DIGEST = "code_digest"
# More cores than any rule asks for: Snakemake scales a job's threads (and the resources computed from them) down to
# the cores it is given, which would hide a change above that.
CORES = 1024


def plain(value: Any) -> Any:
    """A job's field as JSON: Snakemake's containers as lists and dicts, paths and flags as text."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    if isinstance(value, int | float | bool) or value is None:
        return value
    return str(value)


def files(named_list: Any) -> dict[str, Any]:
    """A job's input, output or log files: every file in order, and the named ones by name."""
    return {"files": plain(list(named_list)), "named": plain(dict(named_list.items()))}


def report_flags(job: Any) -> dict[str, list[Any]]:
    """The outputs a job files in the report: path -> [caption file, category, subcategory], the category and
    subcategory expanded as ``snakemake --report`` expands them (a function called, wildcards filled in)."""
    from snakemake.io import is_flagged
    from snakemake.report import expand_report_argument

    def of_job(value: Any) -> Any:
        return plain(asyncio.run(expand_report_argument(value, job.wildcards, job)) if value is not None else None)

    flags = {}
    for path in job.output:
        if is_flagged(path, "report"):
            entry = path.flags["report"]
            caption = os.path.normpath(str(entry.caption)) if entry.caption else None
            flags[str(path)] = [caption, of_job(entry.category), of_job(entry.subcategory)]
    return flags


def profile_configfiles(profile: Path | None) -> list[str]:
    """The ``configfile`` of a profile's config.yaml, resolved from the profile's folder."""
    if profile is None:
        return []
    from snakemake.profiles import ProfileConfigFileParser

    with open(profile / "config.yaml", encoding="utf-8") as stream:
        files = ProfileConfigFileParser().parse(stream).get("configfile") or []
    return [str(profile / f) for f in ([files] if isinstance(files, str) else files)]


def job_list(profile: Path | None, config: list[str], *, configfiles: list[Path] = (),
             snakefile: Path = REPO / "Snakefile", workdir: Path = REPO) -> dict[str, dict[str, Any]]:
    """Every job of the study, keyed by its rule and wildcards (``snakefile`` run in ``workdir``: a copy of the
    workflow, as the tests make, and its study folder)."""
    from snakemake.api import SnakemakeApi
    from snakemake.cli import parse_config
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
        StorageSettings,
        WorkflowSettings,
    )

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a DAG reads no model; the hub's libraries ask no network
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=CORES),
            config_settings=ConfigSettings(configfiles=[*map(Path, profile_configfiles(profile)), *configfiles],
                                           config=parse_config(config)),
            storage_settings=StorageSettings(), workflow_settings=WorkflowSettings(),
            snakefile=snakefile, workdir=workdir)
        dag_api = workflow_api.dag(DAGSettings(forceall=True))
        dag_api.execute_workflow(executor="dryrun")
        workflow = workflow_api._workflow
        jobs = {}
        for job in workflow.dag.jobs:
            params = dict(job.params.items())
            digest = params.pop(DIGEST, None)
            key = job.rule.name + "".join(f" {k}={v}" for k, v in sorted(job.wildcards_dict.items()))
            jobs[key] = {"input": files(job.input), "output": files(job.output), "log": files(job.log),
                         "params": plain(params), "code_digest": plain(digest),
                         "resources": plain({k: v for k, v in job.resources.items() if not k.startswith("_")}),
                         "threads": job.threads, "priority": job.priority, "report": report_flags(job)}
        # The workflow's own folder as <workflow>: two copies of the workflow (two commits) plan comparable jobs. Only
        # the folder itself or a path in it is replaced, not a longer name it begins.
        root = re.escape(json.dumps(str(snakefile.parent), ensure_ascii=False)[1:-1])
        text = re.sub(root + r"(?![\w.-])", "<workflow>", json.dumps(jobs, ensure_ascii=False))
        return json.loads(text)


def compare(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    """Lines saying what differs (none: the same jobs, field for field, the code digests apart)."""
    lines = [f"only before: {key}" for key in sorted(set(before) - set(after))]
    lines += [f"only after: {key}" for key in sorted(set(after) - set(before))]
    for key in sorted(set(before) & set(after)):
        for field in ("input", "output", "log", "params", "resources", "threads", "priority", "report"):
            if before[key].get(field) != after[key].get(field):
                lines.append(f"{key}: {field} differs: {before[key].get(field)!r} -> {after[key].get(field)!r}")
                break
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    write = commands.add_parser("write", help="write every job of a study")
    write.add_argument("output", type=Path)
    write.add_argument("--profile", type=Path, help="a profile folder, e.g. profiles/offline")
    write.add_argument("--configfile", type=Path, action="append", default=[], help="a study config, after the "
                       "profile's")
    write.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE")
    write.add_argument("--snakefile", type=Path, default=REPO / "Snakefile", help="another copy of the workflow")
    write.add_argument("--directory", type=Path, default=REPO, help="the folder the study is run in")
    both = commands.add_parser("compare", help="compare two job lists")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        jobs = job_list(args.profile.resolve() if args.profile else None, args.config,
                        configfiles=[path.resolve() for path in args.configfile], snakefile=args.snakefile.resolve(),
                        workdir=args.directory.resolve())
        args.output.write_text(json.dumps(jobs, indent=1, sort_keys=True))
        print(f"{len(jobs)} jobs written to {args.output}")
        return 0
    before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    lines = compare(before, after)
    digests = sum(before[k]["code_digest"] != after[k]["code_digest"] for k in set(before) & set(after))
    print("\n".join(lines) or f"the same {len(before)} jobs, field for field")
    print(f"({digests} of them with another code digest: they run code that changed)")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
