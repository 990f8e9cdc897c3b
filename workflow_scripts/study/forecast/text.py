"""The plan of a study as text (plan.py makes it as plain data): each line says what it counts,
in what unit, and what the number rests on."""

from __future__ import annotations

import json
from typing import Any

from ...core.sizes import BYTES, size_text
from ..estimates.memory import memory_lines
from .timing import duration

# A dump's bytes in GB from 0.1 GB up, else in MB.
DUMP_UNITS = BYTES[:2]

# How a dump's attention values were obtained (DumpSize.values_basis), in words.
VALUE_BASES = {"token table": "exact, from their token tables in the results folder",
               "measured mean T^2": "estimated as examples x the mean T^2 measured on the offline study's token "
                                    "tables (estimates/sizes.py)"}


def dump_bytes(n: float) -> str:
    return size_text(n, DUMP_UNITS, at_least=0.1)


def jobs_lines(plan: dict[str, Any]) -> list[str]:
    to_run = plan["jobs_to_run"]
    lines = ["Snakemake jobs per stage: every job of the study (a dry run with --forceall)"
             + (f"; 'to run': those a plain dry run still finds to do in {plan['results']}" if to_run else ""),
             f"  {'stage':<18}{'jobs':>7}" + (f"{'to run':>9}" if to_run else "")]
    for stage, count in [*plan["jobs"].items(), ("total", sum(plan["jobs"].values()))]:
        left = sum(to_run.values()) if to_run and stage == "total" else (to_run or {}).get(stage, 0)
        lines.append(f"  {stage:<18}{count:>7}" + (f"{left:>9}" if to_run else ""))
    return lines


def dump_lines(plan: dict[str, Any], per_dump: bool) -> list[str]:
    dumps, sized, bound, unknown = plan["dumps"], plan["sized"], plan["bound_only"], plan["unknown"]
    lines = [f"Attention dumps: {len(dumps)}, one per model, checkpoint and corpus split an analysis reads. "
             "A dump holds layers x heads x T^2 float16 values per example (T: its tokens, special tokens "
             "included)."]
    for model, shape in plan["models"].items():
        if shape["layers_heads"]:
            heads = f"{shape['layers_heads'][0]} layers x {shape['layers_heads'][1]} heads"
        else:
            heads = "layers and heads unknown"
        lines.append(f"  {model}: {shape['dumps']} dumps; {heads} (source: {shape['source']})")
    bases: dict[str, int] = {}
    for d in dumps:
        if d["values"] is not None:
            bases[d["values_basis"]] = bases.get(d["values_basis"], 0) + 1
    lines.append(f"  Disk at attention.compression {plan['compression']}, {plan['bytes_per_value']} bytes per "
                 "value (measured, docs/attention.md):")
    if sized["dumps"]:
        how = "; ".join(f"{n} {VALUE_BASES.get(basis, basis)}" for basis, n in sorted(bases.items()))
        lines.append(f"    {'about':<12}{dump_bytes(sized['bytes']):>9}  for {sized['dumps']} dumps "
                     f"({sized['values']:.3g} values): {how}")
    if bound["dumps"]:
        lines.append(f"    {'+ at most':<12}{dump_bytes(bound['bytes']):>9}  for {bound['dumps']} dumps of splits "
                     "with no measured length, as if every example reached max_length "
                     f"({', '.join(bound['splits'])})")
    if unknown["dumps"]:
        lines.append(f"    {'+ unknown':<12}{'':>9}  for {unknown['dumps']} dumps whose examples or layers are "
                     f"unknown ({', '.join(unknown['splits'])})")
    if plan["at_most"]["values"]:
        lines.append(f"    {'upper bound':<12}{dump_bytes(plan['at_most']['bytes']):>9}  for every dump"
                     + (" of known size" if unknown["dumps"] else "") + " if every example reached max_length "
                     f"({plan['at_most']['values']:.3g} values)")
    for d in dumps if per_dump else []:
        value = f"{d['values']:.4g}" if d["values"] is not None else "-"
        lines.append(f"    {d['model']} {d['checkpoint']} {d['corpus']}/{d['split']}: {d['examples']} examples "
                     f"({d['examples_basis']}); values {value} ({d['values_basis']}), at most {d['values_max']}")
    return lines


def pass_lines(passes: dict[str, Any]) -> list[str]:
    gradient_bound = "at most: " if passes["gradient_is_bound"] else ""
    lines = ["Examples passed through the study's models (counts of examples, every model and run together; "
             "the jobs batch them):",
             f"  extraction         {passes['extraction']:>11,}  forward passes with attention maps: each "
             "dumped example, once per dump",
             f"  fine-tuning        {passes['finetune_train']:>11,}  training: examples (after "
             "max_train_examples) x epochs, forward + backward",
             f"                     {passes['finetune_dev']:>11,}  dev scoring: dev examples x (saved steps "
             "scored + the end), forward",
             f"  separator gradient {passes['gradient']:>11,}  {gradient_bound}forward + backward, "
             "surface.gradient_examples per checkpoint with a masked-LM head",
             f"  head disabling     {passes['ablation_disabling']:>11,}  forward: each run's first dev examples, "
             "once plainly and once per head and mode",
             f"  found heads        {passes['ablation_found_heads_at_most']:>11,}  at most, forward: score split "
             "and ablated tasks' dev, once plainly and once per found or random head and mode",
             "  No other job runs a study model: the probes and the pattern CNN train on stored maps, the "
             "annotator runs its own tagger."]
    if passes["unknown"]:
        lines.append(f"  Not counted, their size unknown: {', '.join(passes['unknown'])}")
    return lines


def time_lines(plan: dict[str, Any]) -> list[str]:
    time = plan["time"]
    if time is None:
        return ["Estimated time: not estimated (--no-timing; --rate estimates it from rates measured elsewhere)"]
    counted = [m for m, r in time["rates"].items() if "not_timed" not in r]
    where = "from the rates given (--rate)" if time["given"] else "on this machine"
    if counted:
        lines = [f"Estimated time {where}: {duration(time['total_s'])}"
                 + (f" for {', '.join(counted)}" if time["not_counted"] else "")
                 + ", one job at a time: examples above x seconds per example of each model (forecast/timing.py)"]
    else:
        lines = ["Estimated time: none (no model could be timed; give --rate forward=S,train=S)"]
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
    if "not_timed" not in storage:
        lines.append(f"  storage: {storage['seconds_per_gb']:.3g} s per GB of dump written and hashed\n"
                     f"    {storage['how']}")
    else:
        lines.append(f"  storage: not timed, {storage['not_timed']}; extraction counts its forward passes only")
    if not counted:
        return lines
    rate_of = {"fine-tuning": "training examples x train rate + dev examples x forward rate",
               "separator gradient": "examples x train rate"}
    if extraction["storage_s"] is not None:
        rate_of["extraction"] = (
            f"per dump the larger of examples x forward rate ({duration(extraction['forward_s'])} in all) and "
            f"GB x storage rate ({duration(extraction['storage_s'])} for {dump_bytes(extraction['bytes'])}), "
            "as the writer thread overlaps the model")
    for name, seconds in time["seconds"].items():
        lines.append(f"  {name:<22}{duration(seconds):>11}  {rate_of.get(name) or 'examples x forward rate'}")
    if time["bound_by"]:
        seconds = time["seconds"][time["bound_by"]]
        lines.append(f"  Bound by {time['bound_by']}: {duration(seconds)} of {duration(time['total_s'])} "
                     f"({seconds / time['total_s']:.0%}), the longest line above")
    if time["given"]:
        lines.append("  The rates are as good as what they were measured on; timed at max_length (as here without "
                     "--rate), they err high: the jobs pad a batch to its longest input only, and shorter inputs "
                     "cost less.")
    else:
        lines.append("  Inputs timed at max_length: the jobs pad a batch to its longest input only, so shorter "
                     "inputs (most task inputs) cost less and the estimate errs high.")
    if "not_timed" not in storage:
        left_out = "extraction's float16 copies to the host and the dumps' compression."
    else:
        left_out = "writing the dumps (extraction took 1.6x its bare forward passes on 2 CPU cores)."
    lines += ["  Left out: the jobs that run no study model (data, tokens, annotation, probes, pattern CNN, the "
              "analyses of the dumps, the report); loading each job's model (seconds); " + left_out,
              "  One job at a time, each with its configured threads: with --cores above a job's threads "
              "Snakemake runs jobs side by side, which shortens this on a machine with more cores than one job "
              "uses."]
    return lines


def role_lines(roles: dict[str, Any] | None) -> list[str]:
    """What roles.finetuned adds (plan.roles_added): none where it names no checkpoint."""
    if not roles:
        return []
    seconds = f", about {duration(roles['seconds'])} more" if roles["seconds"] is not None else ""
    return [f"Head roles of {roles['checkpoints']} fine-tuned checkpoint(s) (roles.finetuned, docs/roles.md): "
            f"{roles['jobs']} of the jobs above, {roles['dumps']} of the dumps ({dump_bytes(roles['bytes'])}), "
            f"{roles['extraction_examples']:,} of the examples extracted{seconds}; 'roles.finetuned: []' leaves "
            "them out.", ""]


def format_plan(plan: dict[str, Any], *, per_dump: bool = False) -> str:
    """The plan as a readable text: jobs per stage, dumps and their bytes, forward passes, time, notes."""
    took = {m: duration(s) for m, s in ((plan["time"] or {}).get("per_model_s") or {}).items()}
    lines = [f"Plan of the study with results folder {plan['results']}: nothing runs; the counts come from the "
             "resolved config and Snakemake's dry run.", "",
             *jobs_lines(plan), "",
             *dump_lines(plan, per_dump), "",
             *pass_lines(plan["forward_passes"]), "",
             *time_lines(plan), "",
             *role_lines(plan.get("roles")),
             *memory_lines(plan["gpu_memory"], took)]
    return "\n".join(lines + [f"note: {note}" for note in plan["notes"]])
