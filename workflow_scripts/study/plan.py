"""The plan of a study before it runs: its jobs per stage, the bytes of its attention dumps, the examples it passes
through its models, the time those passes take on this machine, and the GPU memory of its GPU jobs (plan_memory.py).

    python -m workflow_scripts.study.plan [--configfile FILE ...] [--config KEY=VALUE ...] [--dumps] [--json]
                                 [--rate forward=S,train=S[,storage=S][,params=N] | --no-timing] [--no-network]

The config is resolved as the workflow resolves it and checked by the same code (rules/common.smk). The jobs come
from Snakemake's own dry run of the study (``--forceall``: every job; and, when the results folder exists, a plain
dry run: the jobs still to run there), each counted under the stage whose rule file defines its rule. The dumps are
the dry run's ``attention_dump_manifest`` jobs (one per dump; its ``extract_attention`` jobs are one per shard), the
study model's ``dumps`` and those the coreference and fine-tuning-effects analyses add. What each number rests on (a
table in the results folder, a release's size, a measured mean, a bound) is printed beside it; nothing unknown is
guessed (docs/configuration.md, "Plan a study"). The time is the examples times seconds per example timed here with
torch or given with --rate; extraction's, per dump, the larger of that and its GB times seconds per GB written and
hashed on the results folder's disk or given (plan_timing.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError, ConfigError
from ..core.stages import STAGES
from ..core.subjects import base_model
from ..models.checkpoints import parse_checkpoint_name
from .build import build_study
from .config import resolve_config
from .model import Study
from .plan_memory import memory_lines, memory_summary
from .plan_sizes import BYTES_PER_VALUE, DumpSize, ModelShape, model_shape, size_dump, split_size
from .plan_timing import Rates, duration, estimate, parse_rates, storage_rate, time_models

REPO = Path(__file__).resolve().parents[2]


class PlanError(AtlasError):
    """The dry run failed; the message holds Snakemake's own explanation."""


# --- jobs: Snakemake's dry run, grouped by the stage whose rule file defines each rule ---------------------


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
    if len(jobs) != (int(total.group(1)) if total else 0):
        raise PlanError(f"read {len(jobs)} jobs from a dry run that counts {total and total.group(1)}:\n{text[-2000:]}")
    return jobs


def jobs_per_stage(jobs: list[Job]) -> dict[str, int]:
    stages = rule_stages()
    counts = {stage: 0 for stage in (*STAGES, "all")}
    for job in jobs:
        stage = stage_of(job.rule, stages)
        counts[stage] = counts.get(stage, 0) + 1
    return counts


# --- the plan -------------------------------------------------------------------------------------------


# What forward_passes counts per model; plan_timing.ESTIMATE_LINES multiplies each by a rate.
PASS_COUNTS = ("extraction", "finetune_train", "finetune_dev", "gradient", "ablation_disabling",
               "ablation_found_heads_at_most")


def forward_passes(study: Study, dumps: list[DumpSize], shapes: dict[str, ModelShape]) -> dict[str, Any]:
    """Examples passed through the study's models, in all and per model (``per_model``): extraction,
    fine-tuning (training and dev scoring), the separator gradient and the causal head checks, the only jobs
    that run a study model (probes and the pattern CNN train on stored maps, annotation runs its own tagger)."""
    per_model = {model: dict.fromkeys(PASS_COUNTS, 0) for model in study.models}
    unknown: list[str] = [f"{d.corpus}/{d.split}" for d in dumps if d.examples is None]
    for d in dumps:
        per_model[base_model(d.model)]["extraction"] += d.examples or 0
    for model, task, _seed in study.finetune_runs:
        settings = study.finetune_settings(task, model)
        n_train, n_dev = split_size(study, task, "train")[0], split_size(study, task, study.dev_split(task))[0]
        if n_train is None or n_dev is None:
            unknown.append(task)
            continue
        counts = per_model[model]
        counts["finetune_train"] += min(n_train, settings["max_train_examples"] or n_train) * settings["epochs"]
        scorings = 1 + (len(settings["save_steps"]) if settings["eval_at_checkpoints"] else 0)
        counts["finetune_dev"] += min(n_dev, settings["max_dev_examples"] or n_dev) * scorings
    surface, bound = study.config["surface"], False
    for model, checkpoint in study.gradient_pairs:
        info = parse_checkpoint_name(checkpoint)
        # Skipped without a loss: the random-init control never has a masked-LM head, a pretrained model
        # saved without one (a sentence encoder) neither; a fine-tuned one scores its task's dev examples.
        if info["kind"] == "random" or (info["kind"] == "pretrained" and shapes[model].mlm_head is False):
            continue
        bound |= info["kind"] == "pretrained" and shapes[model].mlm_head is None
        corpus, split = ((info["task"], study.dev_split(info["task"])) if info["kind"] == "finetuned"
                         else (surface["corpus"], surface["split"]))
        n = next((d.examples for d in dumps if (d.model, d.corpus, d.split) == (model, corpus, split)), None)
        n = n if n is not None else (split_size(study, corpus, split)[0] or 0)
        per_model[base_model(model)]["gradient"] += min(n, surface["gradient_examples"] or n)
    ablation_passes(study, shapes, unknown, per_model)
    totals = {count: sum(counts[count] for counts in per_model.values()) for count in PASS_COUNTS}
    return {**totals, "gradient_is_bound": bound, "unknown": sorted(set(unknown)), "per_model": per_model}


def ablation_passes(study: Study, shapes: dict[str, ModelShape], unknown: list[str],
                    per_model: dict[str, dict[str, int]]) -> None:
    """Adds to ``per_model`` the examples the causal head checks pass through fine-tuned and pretrained models
    (docs/ablation.md): head disabling scores each run's first dev examples once plainly and once per head and
    mode; the found heads (at most two per relation of syntax.relations, and two for coreference) are each
    ablated per mode over the score split (the probe) and the ablated tasks' dev examples. Unknown sizes go to
    ``unknown``."""
    ablation, syntax = study.config["ablation"], study.config["syntax"]
    modes = len(ablation["modes"])
    for model, task, _seed in study.disabling_runs:
        n_dev, shape = split_size(study, task, study.dev_split(task))[0], shapes[model].layers_heads
        if n_dev is None or shape is None:
            unknown.append(f"ablation of {task}")
            continue
        capped = min(n_dev, study.finetune_settings(task, model)["max_dev_examples"] or n_dev, ablation["max_examples"])
        per_model[model]["ablation_disabling"] += capped * (1 + shape[0] * shape[1] * modes)
    heads = 2 * (len(syntax["relations"]) + (1 if study.coref_pairs else 0))
    for model in study.found_heads_models:
        n_score = split_size(study, study.syntax_treebank, syntax["score_split"])[0]
        if n_score is None:
            unknown.append(f"found heads on {study.syntax_treebank}/{syntax['score_split']}")
            continue
        found = n_score * (1 + heads * modes)
        for task, _seed in [(t, s) for m, t, s in study.disabling_runs if m == model]:
            n_dev = split_size(study, task, study.dev_split(task))[0] or 0
            found += min(n_dev, ablation["max_examples"]) * (1 + heads * modes)
        per_model[model]["ablation_found_heads_at_most"] += found


def make_plan(configfiles: list[str], cli: list[str], *, network: bool = True, timing: bool = True,
              rates: Rates | None = None) -> dict[str, Any]:
    """The plan of the study of ``snakemake --configfile CONFIGFILES --config CLI`` (plain data). Its time
    is estimated from ``rates`` when given, else from rates measured here (``timing``), else not at all."""
    config = resolve_config(configfiles, cli)
    study = build_study(config)
    every = dry_run(configfiles, cli, forceall=True)
    remaining = dry_run(configfiles, cli, forceall=False) if Path(study.results).exists() else None
    shapes = {model: model_shape(study, model, network=network) for model in study.models}
    dumps = [size_dump(study, key, shapes[base_model(key[0])].layers_heads, causal=shapes[base_model(key[0])].causal)
             for key in (tuple(j.wildcard(w) for w in ("model", "checkpoint", "corpus", "split"))
                         for j in every if j.rule == "attention_dump_manifest")]
    per_value = BYTES_PER_VALUE[config["attention"]["compression"]]
    sized = [d for d in dumps if d.values is not None]
    bound_only = [d for d in dumps if d.values is None and d.values_max is not None]
    values = sum(d.values for d in sized)
    values_bound_only = sum(d.values_max for d in bound_only)
    values_max = sum(d.values_max or 0 for d in dumps)
    passes, time = forward_passes(study, dumps, shapes), None
    if rates is not None or timing:
        model_rates = time_models(study, network=network, given=rates)
        storage = ({"seconds_per_gb": rates.storage, "how": "given with --rate"} if rates and rates.storage
                   else storage_rate(study.results))
        # Each dump's bytes as the disk lines count them: sized, else at its bound, else none (unknown).
        stored = [(base_model(d.model), d.examples or 0, per_value * (d.values or d.values_max or 0)) for d in dumps]
        time = {"given": rates is not None, "rates": model_rates, "storage": storage,
                **estimate(passes["per_model"], model_rates, stored, storage)}
    return json.loads(json.dumps({  # plain data, as --json prints it
        "results": study.results,
        "notes": list(study.notes),
        "jobs": jobs_per_stage(every),
        "jobs_to_run": jobs_per_stage(remaining) if remaining is not None else None,
        "models": {m: {**asdict(s), "dumps": sum(base_model(d.model) == m for d in dumps)} for m, s in shapes.items()},
        "compression": config["attention"]["compression"], "bytes_per_value": per_value,
        "dumps": [asdict(d) for d in dumps],
        # Dumps whose values are known (token table) or estimated (measured mean T^2) ...
        "sized": {"dumps": len(sized), "values": values, "bytes": values * per_value},
        # ... those with no measured length, at their bound, and those with nothing known ...
        "bound_only": {"dumps": len(bound_only), "values": values_bound_only, "bytes": values_bound_only * per_value,
                       "splits": sorted({f"{d.corpus}/{d.split}" for d in bound_only})},
        "unknown": {"dumps": len(dumps) - len(sized) - len(bound_only),
                    "splits": sorted({f"{d.model} {d.corpus}/{d.split}" for d in dumps if d.values_max is None})},
        # ... and every dump as if every example reached max_length.
        "at_most": {"values": values_max, "bytes": values_max * per_value},
        "forward_passes": passes, "time": time, "gpu_memory": memory_summary(config)}))


# --- the plan as text: each line says what it counts, in what unit, and what the number rests on --------


def _size(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e8 else f"{n / 1e6:,.1f} MB"


# How a dump's attention values were obtained (DumpSize.values_basis), in words.
VALUE_BASES = {"token table": "exact, from their token tables in the results folder",
               "measured mean T^2": "estimated as examples x the mean T^2 measured on the offline study's token "
                                    "tables (plan_sizes.py)"}


def _jobs_lines(plan: dict[str, Any]) -> list[str]:
    to_run = plan["jobs_to_run"]
    lines = ["Snakemake jobs per stage: every job of the study (a dry run with --forceall)"
             + (f"; 'to run': those a plain dry run still finds to do in {plan['results']}" if to_run else ""),
             f"  {'stage':<18}{'jobs':>7}" + (f"{'to run':>9}" if to_run else "")]
    for stage, count in [*plan["jobs"].items(), ("total", sum(plan["jobs"].values()))]:
        left = sum(to_run.values()) if to_run and stage == "total" else (to_run or {}).get(stage, 0)
        lines.append(f"  {stage:<18}{count:>7}" + (f"{left:>9}" if to_run else ""))
    return lines


def _dump_lines(plan: dict[str, Any], per_dump: bool) -> list[str]:
    dumps, sized, bound, unknown = plan["dumps"], plan["sized"], plan["bound_only"], plan["unknown"]
    lines = [f"Attention dumps: {len(dumps)}, one per model, checkpoint and corpus split an analysis reads. A dump "
             "holds layers x heads x T^2 float16 values per example (T: its tokens, special tokens included)."]
    for model, shape in plan["models"].items():
        heads = (f"{shape['layers_heads'][0]} layers x {shape['layers_heads'][1]} heads"
                 if shape["layers_heads"] else "layers and heads unknown")
        lines.append(f"  {model}: {shape['dumps']} dumps; {heads} (source: {shape['source']})")
    bases: dict[str, int] = {}
    for d in dumps:
        if d["values"] is not None:
            bases[d["values_basis"]] = bases.get(d["values_basis"], 0) + 1
    lines.append(f"  Disk at attention.compression {plan['compression']}, {plan['bytes_per_value']} bytes per value "
                 "(measured, docs/attention.md):")
    if sized["dumps"]:
        lines.append(f"    {'about':<12}{_size(sized['bytes']):>9}  for {sized['dumps']} dumps ({sized['values']:.3g} "
                     "values): "
                     + "; ".join(f"{n} {VALUE_BASES.get(basis, basis)}" for basis, n in sorted(bases.items())))
    if bound["dumps"]:
        lines.append(f"    {'+ at most':<12}{_size(bound['bytes']):>9}  for {bound['dumps']} dumps of splits with no "
                     f"measured length, as if every example reached max_length ({', '.join(bound['splits'])})")
    if unknown["dumps"]:
        lines.append(f"    {'+ unknown':<12}{'':>9}  for {unknown['dumps']} dumps whose examples or layers are unknown "
                     f"({', '.join(unknown['splits'])})")
    if plan["at_most"]["values"]:
        lines.append(f"    {'upper bound':<12}{_size(plan['at_most']['bytes']):>9}  for every dump"
                     + (" of known size" if unknown["dumps"] else "") + " if every example reached max_length "
                     f"({plan['at_most']['values']:.3g} values)")
    for d in dumps if per_dump else []:
        value = f"{d['values']:.4g}" if d["values"] is not None else "-"
        lines.append(f"    {d['model']} {d['checkpoint']} {d['corpus']}/{d['split']}: {d['examples']} examples "
                     f"({d['examples_basis']}); values {value} ({d['values_basis']}), at most {d['values_max']}")
    return lines


def _pass_lines(passes: dict[str, Any]) -> list[str]:
    lines = ["Examples passed through the study's models (counts of examples, every model and run together; "
             "the jobs batch them):",
             f"  extraction         {passes['extraction']:>11,}  forward passes with attention maps: each dumped "
             "example, once per dump",
             f"  fine-tuning        {passes['finetune_train']:>11,}  training: examples (after max_train_examples) x "
             "epochs, forward + backward",
             f"                     {passes['finetune_dev']:>11,}  dev scoring: dev examples x (saved steps scored + "
             "the end), forward",
             f"  separator gradient {passes['gradient']:>11,}  {'at most: ' if passes['gradient_is_bound'] else ''}"
             "forward + backward, surface.gradient_examples per checkpoint with a masked-LM head",
             f"  head disabling     {passes['ablation_disabling']:>11,}  forward: each run's first dev examples, once "
             "plainly and once per head and mode",
             f"  found heads        {passes['ablation_found_heads_at_most']:>11,}  at most, forward: score split and "
             "ablated tasks' dev, once plainly and once per found or random head and mode",
             "  No other job runs a study model: the probes and the pattern CNN train on stored maps, the annotator "
             "runs its own tagger."]
    if passes["unknown"]:
        lines.append(f"  Not counted, their size unknown: {', '.join(passes['unknown'])}")
    return lines


def _time_lines(plan: dict[str, Any]) -> list[str]:
    time = plan["time"]
    if time is None:
        return ["Estimated time: not estimated (--no-timing; --rate estimates it from rates measured elsewhere)"]
    counted = [m for m, r in time["rates"].items() if "not_timed" not in r]
    where = "from the rates given (--rate)" if time["given"] else "on this machine"
    lines = [f"Estimated time {where}: {duration(time['total_s'])}"
             + (f" for {', '.join(counted)}" if time["not_counted"] else "")
             + ", one job at a time: examples above x seconds per example of each model (plan_timing.py)"
             if counted else "Estimated time: none (no model could be timed; give --rate forward=S,train=S)"]
    groups: dict[str, list[str]] = {}
    for model, rate in time["rates"].items():
        groups.setdefault(json.dumps(rate, sort_keys=True), []).append(model)
    for key, models in groups.items():
        rate = json.loads(key)
        if "not_timed" in rate:
            lines.append(f"  {', '.join(models)}: not timed, {rate['not_timed']}; not in the estimate")
            continue
        lines += [f"  {', '.join(models)}: {rate['forward']:.3g} s per example forward (with maps), "
                  f"{rate['train']:.3g} s per training example", f"    {rate['how']}"]
    storage, extraction = time["storage"], time["extraction"]
    lines += [f"  storage: {storage['seconds_per_gb']:.3g} s per GB of dump written and hashed\n    {storage['how']}"
              if "not_timed" not in storage else
              f"  storage: not timed, {storage['not_timed']}; extraction counts its forward passes only"]
    if not counted:
        return lines
    rate_of = {"fine-tuning": "training examples x train rate + dev examples x forward rate",
               "separator gradient": "examples x train rate", "extraction": (
                   f"per dump the larger of examples x forward rate ({duration(extraction['forward_s'])} in all) and "
                   f"GB x storage rate ({duration(extraction['storage_s'])} for {_size(extraction['bytes'])}), as the "
                   "writer thread overlaps the model" if extraction["storage_s"] is not None else "")}
    for name, seconds in time["seconds"].items():
        lines.append(f"  {name:<22}{duration(seconds):>11}  {rate_of.get(name) or 'examples x forward rate'}")
    if time["bound_by"]:
        seconds = time["seconds"][time["bound_by"]]
        lines.append(f"  Bound by {time['bound_by']}: {duration(seconds)} of {duration(time['total_s'])} "
                     f"({seconds / time['total_s']:.0%}), the longest line above")
    lines += ["  The rates are as good as what they were measured on; timed at max_length (as here without --rate), "
              "they err high: the jobs pad a batch to its longest input only, and shorter inputs cost less."
              if time["given"] else
              "  Inputs timed at max_length: the jobs pad a batch to its longest input only, so shorter inputs (most "
              "task inputs) cost less and the estimate errs high.",
              "  Left out: the jobs that run no study model (data, tokens, annotation, probes, pattern CNN, the "
              "analyses of the dumps, the report); loading each job's model (seconds); " + (
                  "extraction's float16 copies to the host and the dumps' compression." if "not_timed" not in storage
                  else "writing the dumps (extraction took 1.6x its bare forward passes on 2 CPU cores)."),
              "  One job at a time, each with its configured threads: with --cores above a job's threads Snakemake "
              "runs jobs side by side, which shortens this on a machine with more cores than one job uses."]
    return lines


def format_plan(plan: dict[str, Any], *, per_dump: bool = False) -> str:
    """The plan as a readable text: jobs per stage, dumps and their bytes, forward passes, time, notes."""
    took = {m: duration(s) for m, s in ((plan["time"] or {}).get("per_model_s") or {}).items()}
    lines = [f"Plan of the study with results folder {plan['results']}: nothing runs; the counts come from the "
             "resolved config and Snakemake's dry run.", "", *_jobs_lines(plan), "", *_dump_lines(plan, per_dump),
             "", *_pass_lines(plan["forward_passes"]), "", *_time_lines(plan), "",
             *memory_lines(plan["gpu_memory"], took)]
    return "\n".join(lines + [f"note: {note}" for note in plan["notes"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.study.plan",
                                     description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--configfile", nargs="+", action="extend", default=[], help="as snakemake")
    parser.add_argument("--config", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="as snakemake")
    parser.add_argument("--dumps", action="store_true", help="list every dump with its size and what it rests on")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--no-network", action="store_true", help="never ask the hub for a model's config")
    parser.add_argument("--rate", metavar="forward=S,train=S[,storage=S][,params=N]",
                        help="seconds per example (forward with maps; a training example) and per GB of dump written "
                             "and hashed (else timed here), measured elsewhere, instead of timing; with params=, "
                             "measured on a model of N parameters and scaled to each model's")
    parser.add_argument("--no-timing", action="store_true", help="estimate no time (timing takes seconds per model)")
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
