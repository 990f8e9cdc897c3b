"""An ablated dev evaluation against a plain one: the same fine-tuned model, the same dev examples, one run.

    python benchmarks/bench_ablation.py [--checkpoint PATH] [--dev PATH] [--examples N] [--batch-size N]
                                        [--threads N] [--repeats N] [--modes zero,uniform,first,mean]

Prints, in one run, the seconds of one dev evaluation (the first N dev examples, as rule head_disabling
scores them: tokenized once, batched by length) of the model
  - as fine-tuning evaluates it (transformers' default attention, SDPA),
  - with eager attention (what the ablation function wraps),
  - through the ablation function with no head disabled,
  - with one head (middle layer, head 1) disabled in each mode,
with each one's ratio to the eager evaluation (target: at most 1.1 for an ablated one); then where the
time goes (loading, tokenizing, the mean-collection pass of mode 'mean', the ablation step inside the
forward pass, padding saved by batching by length) and what a head_disabling job of these settings costs
(layers x heads x modes evaluations). Each time is the fastest (and the median) of --repeats rounds that
run every variant once, after a warm-up round, so that load from other work on the machine weighs on
every variant alike.

Defaults: the offline study's all-MiniLM-L6-v2 CoLA run (its final checkpoint and the CoLA dev table under
/work/study/after) and the ablation settings (examples, batch size, threads, modes) as the config schema
sets them by default (the schema is their one source).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workflow_scripts.ablation.disabling import TaskScorer, dev_examples  # noqa: E402 - the repository is on sys.path only from here
from workflow_scripts.ablation.heads import MODES  # noqa: E402 - as above
from workflow_scripts.core.schema import section_properties  # noqa: E402 - as above
from workflow_scripts.data.entries import task_spec  # noqa: E402 - as above
from workflow_scripts.data.registry import GLUE_TASKS  # noqa: E402 - as above
from workflow_scripts.finetune.task_data import TaskData, load_split, subset  # noqa: E402 - as above
from workflow_scripts.finetune.training import evaluate  # noqa: E402 - as above
from workflow_scripts.models.checkpoints import read_manifest  # noqa: E402 - as above

STUDY = Path("/work/study/after")
DEFAULT_CHECKPOINT = STUDY / "checkpoints" / "all-MiniLM-L6-v2" / "cola.seed42.final" / "checkpoint.json"
DEFAULT_DEV = STUDY / "data" / "cola" / "dev.parquet"


def ablation_defaults() -> dict:
    """The ablation section's defaults as the config schema sets them."""
    fields = section_properties("ablation")
    return {name: field["default"] for name, field in fields.items() if "default" in field}


def interleaved(functions: dict, repeats: int) -> dict:
    """name -> (fastest seconds, median seconds, value of the last call), each function called once per round,
    after one warm-up round: on a shared machine a load that comes and goes then weighs on every variant alike."""
    for function in functions.values():
        function()
    times: dict = {name: [] for name in functions}
    values: dict = {}
    for _ in range(repeats):
        for name, function in functions.items():
            started = time.perf_counter()
            values[name] = function()
            times[name].append(time.perf_counter() - started)
    return {name: (min(times[name]), float(np.median(times[name])), values[name]) for name in functions}


def task_entry(task: str) -> dict:
    """The params of a built-in task's entry (a GLUE task or WiC), as the rules pass them."""
    if task in GLUE_TASKS:
        return task_spec(task, {"glue": task}).params()
    if task == "wic":
        return task_spec(task, {"wic": True}).params()
    sys.exit(f"task {task!r} is no GLUE task or WiC; this benchmark builds only those entries")


def main() -> None:
    defaults = ablation_defaults()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT, help="a fine-tuned checkpoint.json")
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV, help="the task's dev data table")
    parser.add_argument("--examples", type=int, default=defaults["max_examples"])
    parser.add_argument("--batch-size", type=int, default=defaults["batch_size"])
    parser.add_argument("--threads", type=int, default=defaults["threads"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", type=lambda text: text.split(","), default=list(MODES))
    args = parser.parse_args()
    for path, what in ((args.checkpoint, "--checkpoint"), (args.dev, "--dev")):
        if not path.is_file():
            sys.exit(f"no file at {path}: run the offline study first or pass {what}")
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.set_num_threads(args.threads)
    manifest = read_manifest(args.checkpoint)
    task, settings = task_entry(manifest["task"]), dict(manifest["finetune"])

    started = time.perf_counter()
    scorer = TaskScorer(args.checkpoint, args.dev, task=task, settings=settings, max_examples=args.examples,
                        batch_size=args.batch_size, device="cpu", offline=True, mirror=None)
    setup = time.perf_counter() - started
    started = time.perf_counter()
    dev_examples(args.dev, scorer.spec, settings, scorer.tokenizer, args.examples, None)
    tokenizing = time.perf_counter() - started
    data, metric, ablation = scorer.data, scorer.metric, scorer.ablation
    layer = ablation.num_layers // 2

    def plain(implementation: str, ordered: TaskData = data):
        model = AutoModelForSequenceClassification.from_pretrained(
            manifest["load_from"], attn_implementation=implementation, local_files_only=True, use_safetensors=True)
        model.eval()
        return lambda: evaluate(model, ordered, args.batch_size, "cpu")[metric]

    frame = subset(load_split(args.dev, scorer.spec, scorer.spec.dev_split), settings.get("max_dev_examples"))
    table_order = TaskData(frame.head(args.examples), scorer.spec, scorer.tokenizer, settings, args.dev)
    started = time.perf_counter()
    with ablation.collecting_means():
        scorer.score()
    means_pass = time.perf_counter() - started
    ablated = {f"head {layer + 1}-1 disabled, mode {mode}": (lambda m=mode: scorer.score({(layer, 0)}, m)[0])
               for mode in args.modes}
    results = interleaved({"default (SDPA), as fine-tuning evaluates": plain("sdpa"), "eager": plain("eager"),
                           "eager, dev table order (no length batching)": plain("eager", table_order),
                           "ablation function, no head disabled": lambda: scorer.score()[0], **ablated},
                          args.repeats)
    in_ablation: dict = {}
    apply = ablation.apply

    def timed_apply(*a, **k):  # the attention function calls ablation.apply: time the replacement itself
        began = time.perf_counter()
        try:
            return apply(*a, **k)
        finally:
            in_ablation[ablation.mode] = in_ablation.get(ablation.mode, 0.0) + time.perf_counter() - began

    ablation.apply = timed_apply
    for mode in args.modes:
        scorer.score({(layer, 0)}, mode)
    ablation.apply = apply

    eager = results["eager"][0]
    print(f"checkpoint: {manifest['model']}/{manifest['checkpoint']} ({ablation.num_layers} layers x "
          f"{ablation.num_heads} heads); task {scorer.spec.name}, metric {metric}")
    print(f"dev examples: {len(data)} of {args.dev}; batch size {args.batch_size}; {args.threads} thread(s); "
          f"{args.repeats} rounds")
    print(f"{'evaluation':<50} {'fastest s':>9} {'median s':>9} {'x eager':>8} {metric:>14}")
    for name, (seconds, median, value) in results.items():
        print(f"{name:<50} {seconds:9.3f} {median:9.3f} {seconds / eager:8.2f} {value:14.4f}")
    print("where the time goes:")
    print(f"  {'loading the checkpoint and tokenizing (once per job)':<60} {setup:7.2f} s")
    print(f"  {'  of which tokenizing the dev examples':<60} {tokenizing:7.2f} s")
    print(f"  {'mode mean: the unablated pass collecting head means (once)':<60} {means_pass:7.2f} s")
    for mode, seconds in in_ablation.items():
        print(f"  {f'mode {mode}: the ablation step inside one evaluation':<60} {seconds:7.3f} s")
    padding = results["eager, dev table order (no length batching)"][0] - eager
    print(f"  {'saved per evaluation by batching by length':<60} {padding:7.2f} s")
    per_evaluation = float(np.mean([results[name][0] for name in ablated]))
    n_evaluations = ablation.num_layers * ablation.num_heads * len(args.modes)
    job = setup + results["ablation function, no head disabled"][0] + n_evaluations * per_evaluation
    job += means_pass if "mean" in args.modes else 0.0
    print(f"head_disabling job, these settings: 1 + {n_evaluations} evaluations (layers x heads x "
          f"{len(args.modes)} mode(s)), about {job / 60:.1f} min")


if __name__ == "__main__":
    main()
