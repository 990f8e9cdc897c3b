"""Seconds per example of a study's models on this machine, and the study's time estimated from them
(workflow_scripts/study/forecast/plan.py prints both; docs/configuration.md, "Plan a study").

Two rates per model, each timed with torch over a few passes after a warm-up pass (on a GPU between
torch.cuda.synchronize() calls, since its work is asynchronous):

- forward: one example through the encoder with its attention maps returned (eager attention), as an
  extraction job runs it (attention.device, .threads, .batch_size, the model's max_length). It stands for
  every forward-only pass (dev scoring, ablation), which returns no maps or fewer, so it errs high there;
- train: one fine-tuning example, forward and backward of the sequence classifier, plus the gradient clip
  and AdamW step shared by finetune.batch_size examples (finetune.device, .threads, .max_length).

Every timed input fills max_length, where the jobs pad a batch only to its longest input: shorter inputs
cost less, so the rates err high. The weights do not change the cost, so a model whose weights are not
here is built from its config with random weights. Or the rates are given (--rate), from another machine.

One rate per machine, storage: seconds per GB of dump written, or hashed (BLAKE3, read back from the page cache),
whichever is slower, on the results folder's disk. Extraction's writer and hashing threads overlap the model
(attention/shard_writer.py), so a dump costs the larger of its forward passes and its storage, not their sum.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...attention.shard_writer import DIGEST as SHARD_DIGEST
from ...core.file_records import file_digest
from ...models.families import from_config, load_pretrained
from ...models.locations import model_location
from ...models.shape import may_ask_hub
from ..estimates.memory import model_config as estimated_model_config
from ..model import Study

# On a CPU the time per example hardly depends on the batch (bert-base, 128 tokens, one thread: 0.27-0.33
# CPU-seconds per example at batches of 1, 4 and 16 on this project's 2-core machine), so a CPU times a few
# examples at once to keep the timing to seconds; a GPU's time per example falls with the batch, so a GPU
# times the configured batch.
CPU_BATCH = 4
PASSES = 3         # timed passes at most, after the warm-up ...
BUDGET_S = 1.0     # ... and no new pass once the timed ones took this long
# The storage timing writes this many bytes in chunks of STORAGE_CHUNK: about a second on a local disk, and
# far below the dumps' sizes (see docs/configuration.md on the page cache).
STORAGE_BYTES, STORAGE_CHUNK = 256 * 2**20, 16 * 2**20

# What counts of plan.forward_passes each rate multiplies, per line of the estimate.
ESTIMATE_LINES = (("fine-tuning", (("finetune_train", "train"), ("finetune_dev", "forward"))),
                  ("extraction", (("extraction", "forward"),)),
                  ("separator gradient", (("gradient", "train"),)),
                  ("head disabling", (("ablation_disabling", "forward"),)),
                  ("found heads (at most)", (("ablation_found_heads_at_most", "forward"),)))


class NotTimed(Exception):
    """A model that cannot be timed here; the message says why."""


@dataclass
class Rates:
    forward: float   # seconds per example
    train: float
    how: str         # how they were obtained, in words
    storage: float | None = None  # seconds per GB written and hashed (given with --rate; else timed per machine)
    params: float | None = None  # the parameters of the model the rates were measured on: scaled per model

    def of_model(self) -> dict[str, Any]:
        """The rates of a model, as the plan lists them per model (storage is the machine's, listed once)."""
        return {"forward": self.forward, "train": self.train, "how": self.how}


def parse_rates(text: str) -> Rates:
    """``forward=0.068,train=0.257[,storage=1.3][,params=1.09e8]`` (seconds per example; per GB; parameters) as
    Rates."""
    try:
        pairs = dict(part.split("=", 1) for part in text.split(","))
        values = {key.strip(): float(value) for key, value in pairs.items()}
    except ValueError as exc:
        raise ValueError(f"--rate {text!r}: write forward=SECONDS,train=SECONDS[,storage=SECONDS_PER_GB]") from exc
    if not {"forward", "train"} <= set(values) <= {"forward", "train", "storage", "params"} \
            or not all(v > 0 and v < float("inf") for v in values.values()):
        raise ValueError(f"--rate {text!r}: give forward= and train=, positive seconds per example, and "
                         "optionally storage=, positive seconds per GB, and params=, the parameters of the model "
                         "they were measured on")
    return Rates(values["forward"], values["train"], "given with --rate", values.get("storage"), values.get("params"))


# --- measuring ----------------------------------------------------------------------------------------------


def pick_device(device: str) -> str:
    """The device the jobs would run on (attention.extract's choice), or NotTimed where it is not here."""
    from ...attention.extract import pick_device as jobs_device
    from ...core.errors import AtlasError

    try:
        return jobs_device(device)
    except AtlasError:
        raise NotTimed("its device is 'cuda' and torch sees no GPU here (give --rate)") from None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()  # GPU work is asynchronous: the clock stops when it is done


def seconds_per_pass(step: Callable[[], Any], device: str, *, passes: int = PASSES,
                     budget_s: float = BUDGET_S) -> float:
    """Median wall time of ``step`` over at most ``passes`` passes, after one untimed warm-up pass (first
    calls allocate memory and pick kernels, which the jobs pay once)."""
    step()
    _sync(device)
    times: list[float] = []
    while len(times) < passes and sum(times) < budget_s:
        start = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """torch's CPU threads set as a job sets them (capped by this machine's cores, as --cores caps a job's)."""
    import torch

    before = torch.get_num_threads()
    used = max(1, min(int(threads), os.cpu_count() or int(threads)))
    torch.set_num_threads(used)
    try:
        yield used
    finally:
        torch.set_num_threads(before)


def _inputs(config: Any, batch: int, length: int, device: str) -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(0)
    # Token ids from the upper half of the vocabulary: real word pieces, none of the special ids at its start.
    ids = torch.randint(config.vocab_size // 2, config.vocab_size, (batch, length), generator=generator)
    return {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device)}


def _how(device: str, threads: int, batch: int, length: int) -> str:
    where = f"cpu, {threads} thread{'s' * (threads > 1)}" if device == "cpu" else device
    return f"{where}, batches of {batch} x {length} tokens"


def forward_rate(classifier: Any, *, batch: int, length: int, device: str, threads: int) -> tuple[float, str]:
    """Seconds per example of an extraction pass: the encoder with its attention maps (eager)."""
    import torch

    timed = batch if device != "cpu" else min(batch, CPU_BATCH)
    encoder = classifier.base_model
    classifier.set_attn_implementation("eager")  # extraction's: fused kernels return no maps
    with torch_threads(threads) as used, torch.inference_mode():
        encoder.to(device).eval()
        inputs = _inputs(classifier.config, timed, length, device)
        seconds = seconds_per_pass(lambda: encoder(**inputs, output_attentions=True), device)
    return seconds / timed, _how(device, used, timed, length)


def train_rate(classifier: Any, *, batch: int, length: int, device: str, threads: int,
               max_grad_norm: float | None) -> tuple[float, str]:
    """Seconds per training example: forward and backward of the classifier, and the clip and AdamW step
    of a batch divided by its ``batch`` examples (timed apart: a CPU times fewer examples than a batch)."""
    import torch

    timed = batch if device != "cpu" else min(batch, CPU_BATCH)
    # Fine-tuning loads the model with transformers' default: the fused kernel where the model has one.
    classifier.set_attn_implementation("sdpa" if getattr(classifier, "_supports_sdpa", False) else "eager")
    with torch_threads(threads) as used:
        classifier.to(device).train()
        inputs = {**_inputs(classifier.config, timed, length, device),
                  "labels": torch.zeros(timed, dtype=torch.long, device=device)}
        optimizer = torch.optim.AdamW(classifier.parameters(), lr=1e-5)

        def backward() -> None:
            classifier(**inputs).loss.backward()  # gradients add up over passes: the same work each time

        def update() -> None:
            if max_grad_norm:
                torch.nn.utils.clip_grad_norm_(classifier.parameters(), max_grad_norm)
            optimizer.step()

        seconds = seconds_per_pass(backward, device) / timed + seconds_per_pass(update, device) / batch
        optimizer.zero_grad(set_to_none=True)
    return seconds, _how(device, used, timed, length) + f", the optimizer step shared by {batch}"


def storage_rate(folder: str | Path, *, size: int = STORAGE_BYTES, chunk: int = STORAGE_CHUNK) -> dict[str, Any]:
    """Seconds per GB (1e9 bytes) of dump storage on the disk of ``folder`` (or its nearest existing parent),
    and how it was measured: ``size`` bytes of float16 values written in chunks to a temporary file there, with
    no fsync (a dump has none), then read back for their digest in the page cache, as extraction hashes its
    shards. Extraction writes and hashes on threads of their own (attention/shard_writer.py), so the slower of the
    two is the rate. Or the reason it has none ({'not_timed': ...}), where the folder cannot be written."""
    import numpy as np

    where = Path(folder).absolute()
    while not where.exists():
        where = where.parent
    # Random float16 values, as attention weights are: no file system compresses or deduplicates them.
    block = np.random.default_rng(0).random(chunk // 2, dtype=np.float32).astype(np.float16).tobytes()
    chunks = max(1, size // chunk)
    try:
        with tempfile.NamedTemporaryFile(dir=where, prefix=".plan-storage-", suffix=".tmp") as handle:
            start = time.perf_counter()
            for _ in range(chunks):
                handle.write(block)
            handle.flush()
            written = time.perf_counter()
            file_digest(handle.name, SHARD_DIGEST)
            hashed = time.perf_counter()
    except OSError as exc:
        return {"not_timed": f"{where} cannot be written here ({exc.strerror or type(exc).__name__})"}
    per_gb = 1e9 / (chunks * len(block))
    return {"seconds_per_gb": max(written - start, hashed - written) * per_gb,
            "how": f"measured here: {chunks * len(block) / 2**20:.0f} MiB written to {where} without fsync "
                   f"({(written - start) * per_gb:.2g} s per GB), read back for their {SHARD_DIGEST} "
                   f"({(hashed - written) * per_gb:.2g} s per GB); the slower, as extraction overlaps them"}


# --- the models ---------------------------------------------------------------------------------------------


def model_config(study: Study, model: str, *, network: bool) -> tuple[Any, str]:
    """A model's transformers config and where it comes from (models/model_config.py: its local config.json, the
    recorded configs, or the hub where allowed); NotTimed when none has it."""
    config, where = estimated_model_config(model, study.config["models"][model],
                                           hub_allowed=may_ask_hub(network=network, offline=study.offline))
    if config is None:
        raise NotTimed(where)
    return config, where


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' load report and progress bars say nothing the plan needs."""
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        logging.enable_progress_bar()


def load_classifier(study: Study, model: str, *, network: bool) -> tuple[Any, str]:
    """The model as a two-label sequence classifier (its encoder serves the forward rate), and its source:
    its weights where they are here, else random weights on its config (the same cost)."""
    import torch

    entry = study.config["models"][model]
    options = {"revision": entry["revision"]} if entry.get("revision") else {}
    with _quiet_transformers():
        try:
            location = model_location(model, entry)
            loaded = load_pretrained("classifier", location, num_labels=2, local_files_only=True, **options)
            return loaded, "its weights" + (" in the hub cache" if entry.get("hub") else "")
        except (OSError, ValueError):
            pass  # no weights here: a config is enough
        config, where = model_config(study, model, network=network)
        config.num_labels = 2
        torch.manual_seed(0)
        return from_config("classifier", config), f"random weights on {where}"


def time_model(study: Study, model: str, *, network: bool) -> Rates:
    """Both rates of a study model on this machine, with the settings of the jobs that run it."""
    attention, finetune = study.config["attention"], study.config["finetune"]
    forward_device, train_device = pick_device(attention["device"]), pick_device(finetune["device"])
    classifier, source = load_classifier(study, model, network=network)
    # Other work on the machine's cores slows the passes (and torch's threads wait for each other): the
    # load before the timing says whether the rates are this machine's or a busy machine's.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    length = study.config["models"][model]["max_length"]
    forward, forward_how = forward_rate(
        classifier, batch=min(attention["batch_size"], max(1, attention["max_batch_tokens"] // length)),
        length=length, device=forward_device, threads=attention["threads"])
    train_length = finetune["max_length"] or length
    train, train_how = train_rate(classifier, batch=finetune["batch_size"], length=train_length,
                                  device=train_device, threads=finetune["threads"],
                                  max_grad_norm=finetune["max_grad_norm"])
    how = f"measured here on {source}: forward {forward_how}; train {train_how}"
    cores = os.cpu_count() or 1
    if "cpu" in (forward_device, train_device) and load > 0.75 * cores:
        how += (f". BUSY MACHINE: load average {load:.1f} on {cores} cores before the timing; the rates are"
                " those of a machine shared with that work, too high for an idle one (time again when it is"
                " idle, or give --rate)")
    return Rates(forward, train, how)


def time_models(study: Study, *, network: bool, given: Rates | None = None) -> dict[str, dict[str, Any]]:
    """Rates per study model, or the reason it has none ({'not_timed': ...}). Models of one architecture and
    the same settings are timed once (bert-base-uncased and -cased differ only in their vocabulary)."""
    if given is not None and given.params:
        from ..estimates.memory import scaled_rates

        return {model: scaled_rates(study.config, model, given) for model in study.models}
    if given is not None:
        return {model: given.of_model() for model in study.models}
    found: dict[str, dict[str, Any]] = {}
    timed: dict[str, dict[str, Any]] = {}
    for model in study.models:
        try:
            key = _cost_key(study, model, network=network)
            if key not in timed:
                print(f"plan: timing {model} on this machine (seconds)", file=sys.stderr, flush=True)
                timed[key] = time_model(study, model, network=network).of_model()
            found[model] = timed[key]
        except NotTimed as exc:
            found[model] = {"not_timed": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a model that cannot be built here is not timed, the plan goes on
            found[model] = {"not_timed": f"{type(exc).__name__}: {exc}"[:300]}
    return found


def _cost_key(study: Study, model: str, *, network: bool) -> str:
    """What decides a model's cost: its config but the vocabulary (a table lookup), and its max_length."""
    config = model_config(study, model, network=network)[0].to_dict()
    ignored = {"vocab_size", "_name_or_path", "architectures", "transformers_version", "dtype", "torch_dtype",
               "id2label", "label2id"}
    shape = {k: v for k, v in sorted(config.items()) if k not in ignored}
    return repr((shape, study.config["models"][model]["max_length"]))


# --- the estimate -------------------------------------------------------------------------------------------


def estimate(per_model: dict[str, dict[str, int]], rates: dict[str, dict[str, Any]],
             dumps: list[tuple[str, int, float]] = (), storage: dict[str, Any] | None = None) -> dict[str, Any]:
    """Seconds per line of ESTIMATE_LINES: each model's examples times its rate, summed over the timed
    models; the models with no rate are named, not counted. With a storage rate, extraction is per dump
    (``dumps``: model, examples, bytes) the larger of its forward passes and its storage: the writer thread
    overlaps the model. ``bound_by``: the largest line, the stage that bounds the study."""
    timed = [m for m in per_model if "not_timed" not in rates[m]]
    lines = {name: sum(per_model[m][count] * rates[m][rate] for m in timed for count, rate in parts)
             for name, parts in ESTIMATE_LINES}
    extraction = {"forward_s": lines["extraction"], "storage_s": None, "bytes": None, "bound_by": "forward"}
    if storage and "seconds_per_gb" in storage:
        costs = [(examples * rates[m]["forward"], size / 1e9 * storage["seconds_per_gb"], size)
                 for m, examples, size in dumps if m in timed]
        lines["extraction"] = sum(max(forward, stored) for forward, stored, _ in costs)
        forward_s, storage_s = sum(c[0] for c in costs), sum(c[1] for c in costs)
        extraction = {"forward_s": forward_s, "storage_s": storage_s, "bytes": sum(c[2] for c in costs),
                      "bound_by": "storage" if storage_s > forward_s else "forward"}
    total = sum(lines.values())
    each = {m: sum(per_model[m][count] * rates[m][rate] for _, parts in ESTIMATE_LINES for count, rate in parts)
            for m in timed}  # each model's passes (extraction's forward passes; its storage is the disk's)
    return {"seconds": lines, "total_s": total, "extraction": extraction, "per_model_s": each,
            "bound_by": max(lines, key=lambda name: lines[name]) if total > 0 else None,
            "not_counted": sorted(m for m in per_model if m not in timed)}


def duration(seconds: float) -> str:
    """Seconds in the unit a reader plans with."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size or (unit == "min" and seconds >= size):
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"
