"""The plan of a study before it runs: its jobs per stage, the bytes of its attention dumps, the examples it passes
through its models, the time those passes take on this machine, and the GPU memory of its GPU jobs
(study/estimates/memory.py).

    python -m workflow_scripts.study.forecast [--configfile FILE ...] [--config KEY=VALUE ...] [--dumps] [--json]
                                 [--rate forward=S,train=S[,storage=S][,params=N] | --no-timing] [--no-network]

The config is resolved as the workflow resolves it and checked by the same code (rules/common.smk). The jobs come
from Snakemake's own dry run of the study (``--forceall``: every job; and, when the results folder exists, a plain
dry run: the jobs still to run there), each counted under the stage whose rule file defines its rule. The dumps are
the dry run's ``attention_dump_manifest`` jobs (one per dump; its ``extract_attention`` jobs are one per shard), the
study model's ``dumps`` and those the coreference and fine-tuning-effects analyses add. What each number rests on (a
table in the results folder, a release's size, a measured mean, a bound) is printed beside it; nothing unknown is
guessed (docs/configuration.md, "Plan a study"). The time is the examples times seconds per example timed here with
torch or given with --rate; extraction's, per dump, the larger of that and its GB times seconds per GB written and
hashed on the results folder's disk or given (timing.py).

Its parts, each a module of this package: the jobs (dry_run.py), the examples passed through the models
(counts.py), the time (timing.py), the text (text.py); the dumps' sizes and the GPU memory are the estimates the run's
checks read too (study/estimates/: sizes.py, memory.py). This module assembles them and is the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError
from ...core.subjects import base_model
from ..build import build_study
from ..checks import resolve_config
from ..estimates.memory import memory_summary
from ..estimates.sizes import BYTES_PER_VALUE, DumpSize, model_shape, size_dump
from ..model import Study
from .counts import forward_passes
from .dry_run import PlanError, dry_run, jobs_per_stage
from .text import format_plan
from .timing import Rates, estimate, parse_rates, storage_rate, time_models


def make_plan(configfiles: list[str], cli: list[str], *, network: bool = True, timing: bool = True,
              rates: Rates | None = None) -> dict[str, Any]:
    """The plan of the study of ``snakemake --configfile CONFIGFILES --config CLI`` (plain data). Its time
    is estimated from ``rates`` when given, else from rates measured here (``timing``), else not at all."""
    config = resolve_config(configfiles, cli)
    study = build_study(config)
    every = dry_run(configfiles, cli, forceall=True)
    remaining = dry_run(configfiles, cli, forceall=False) if Path(study.results).exists() else None
    shapes = {model: model_shape(study, model, network=network) for model in study.models}
    dumps = sized_dumps(study, every, shapes)
    per_value = BYTES_PER_VALUE[config["attention"]["compression"]]
    sized = [d for d in dumps if d.values is not None]
    bound_only = [d for d in dumps if d.values is None and d.values_max is not None]
    values = sum(d.values for d in sized)
    values_bound_only = sum(d.values_max for d in bound_only)
    values_max = sum(d.values_max or 0 for d in dumps)
    passes, time = forward_passes(study, dumps, shapes), None
    if rates is not None or timing:
        model_rates = time_models(study, network=network, given=rates)
        if rates and rates.storage:
            storage = {"seconds_per_gb": rates.storage, "how": "given with --rate"}
        else:
            storage = storage_rate(study.results)
        # Each dump's bytes as the disk lines count them: sized, else at its bound, else none (unknown).
        stored = [(base_model(d.model), d.examples or 0, per_value * (d.values or d.values_max or 0))
                  for d in dumps]
        time = {"given": rates is not None, "rates": model_rates, "storage": storage,
                **estimate(passes["per_model"], model_rates, stored, storage)}
    roles = roles_added(configfiles, cli, study, every, dumps, passes, shapes, time=time, per_value=per_value)
    models = {model: {**asdict(shape), "layers_heads": shape.layers_heads, "mlm_head": shape.mlm_head,
                      "causal": shape.causal, "dumps": sum(base_model(d.model) == model for d in dumps)}
              for model, shape in shapes.items()}
    return json.loads(json.dumps({  # plain data, as --json prints it
        "results": study.results,
        "notes": list(study.notes),
        "jobs": jobs_per_stage(every),
        "jobs_to_run": jobs_per_stage(remaining) if remaining is not None else None,
        "models": models,
        "compression": config["attention"]["compression"], "bytes_per_value": per_value,
        "dumps": [asdict(d) for d in dumps],
        # Dumps whose values are known (token table) or estimated (measured mean T^2) ...
        "sized": {"dumps": len(sized), "values": values, "bytes": values * per_value},
        # ... those with no measured length, at their bound, and those with nothing known ...
        "bound_only": {"dumps": len(bound_only), "values": values_bound_only,
                       "bytes": values_bound_only * per_value,
                       "splits": sorted({f"{d.corpus}/{d.split}" for d in bound_only})},
        "unknown": {"dumps": len(dumps) - len(sized) - len(bound_only),
                    "splits": sorted({f"{d.model} {d.corpus}/{d.split}" for d in dumps if d.values_max is None})},
        # ... and every dump as if every example reached max_length.
        "at_most": {"values": values_max, "bytes": values_max * per_value},
        "forward_passes": passes, "time": time, "roles": roles, "gpu_memory": memory_summary(config)}))


def sized_dumps(study: Study, every: list, shapes: dict) -> list[DumpSize]:
    """Every dump of the dry run's jobs (one attention_dump_manifest job each), sized (estimates/sizes.py)."""
    keys = [tuple(job.wildcard(w) for w in ("model", "checkpoint", "corpus", "split"))
            for job in every if job.rule == "attention_dump_manifest"]
    return [size_dump(study, key, shapes[base_model(key[0])].layers_heads, causal=shapes[base_model(key[0])].causal)
            for key in keys]


def dump_bytes_of(dumps: list[DumpSize], per_value: float) -> float:
    """The dumps' bytes as the disk lines count them: sized, else at their bound."""
    return per_value * sum(d.values or d.values_max or 0 for d in dumps)


def roles_added(configfiles: list[str], cli: list[str], study: Study, every: list, dumps: list[DumpSize],
                passes: dict[str, Any], shapes: dict, *, time: dict[str, Any] | None,
                per_value: float) -> dict[str, Any] | None:
    """What roles.finetuned adds to the study (docs/roles.md): the plan's jobs, dump bytes, forward passes and time
    less those of the same study with ``roles.finetuned: []`` (another dry run); None where it names no
    checkpoint."""
    if not study.finetune.role_checkpoints:
        return None
    without_cli = [*cli, "roles={finetuned: []}"]
    bare = build_study(resolve_config(configfiles, without_cli))
    bare_every = dry_run(configfiles, without_cli, forceall=True)
    bare_dumps = sized_dumps(bare, bare_every, shapes)
    bare_passes = forward_passes(bare, bare_dumps, shapes)
    added = {"checkpoints": len(study.finetune.role_checkpoints), "jobs": len(every) - len(bare_every),
             "dumps": len(dumps) - len(bare_dumps),
             "bytes": dump_bytes_of(dumps, per_value) - dump_bytes_of(bare_dumps, per_value),
             "extraction_examples": passes["extraction"] - bare_passes["extraction"], "seconds": None}
    if time is not None:
        stored = [(base_model(d.model), d.examples or 0, per_value * (d.values or d.values_max or 0))
                  for d in bare_dumps]
        bare_time = estimate(bare_passes["per_model"], time["rates"], stored, time["storage"])
        added["seconds"] = time["total_s"] - bare_time["total_s"]
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.study.forecast",
                                     description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--configfile", nargs="+", action="extend", default=[], help="as snakemake")
    parser.add_argument("--config", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="as snakemake")
    parser.add_argument("--dumps", action="store_true", help="list every dump with its size and what it rests on")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--no-network", action="store_true", help="never ask the hub for a model's config")
    parser.add_argument("--rate", metavar="forward=S,train=S[,storage=S][,params=N]",
                        help="seconds per example (forward with maps; a training example) and per GB of dump "
                             "written and hashed (else timed here), measured elsewhere, instead of timing; with "
                             "params=, measured on a model of N parameters and scaled to each model's")
    parser.add_argument("--no-timing", action="store_true",
                        help="estimate no time (timing takes seconds per model)")
    args = parser.parse_args(argv)
    try:
        rates = parse_rates(args.rate) if args.rate else None
    except ValueError as error:
        parser.error(str(error))
    try:
        plan = make_plan(args.configfile, args.config, network=not args.no_network, timing=not args.no_timing,
                         rates=rates)
    except (ConfigError, PlanError) as error:
        print(error, file=sys.stderr)
        return 1
    print(json.dumps(plan, indent=1) if args.json else format_plan(plan, per_dump=args.dumps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
