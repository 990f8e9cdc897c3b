"""Per-task fine-tuning (METHODS 3): one run per (model, task, seed), a plain PyTorch loop.

A run loads the model's ``pretrained`` checkpoint with the standard sequence-classification
head (``AutoModelForSequenceClassification``; one regression output for STS-B), trains it
with AdamW and a linear warm-up/decay schedule, and saves checkpoints at the configured
steps and at the end. Each checkpoint is a folder of the checkpoint convention
(:mod:`workflow_scripts.models.checkpoints`): ``weights/`` holds the model and tokenizer, and
``checkpoint.json`` is written last, so an interrupted run leaves no checkpoint a rerun
trusts. The encoder class of the family (models/families.py) loads the fine-tuned encoder from ``weights/``, which
is what the attention stage does.

Determinism: the seed fixes the head's initialisation, dropout and the order of the
batches (a seeded generator), deterministic algorithms are requested, and the number
of CPU threads is fixed, so the same seed gives the same metrics on the same hardware.

The inputs (a task's data tables, tokenized) are :mod:`.task_data`'s; the task's labels and
checkpoint names are :mod:`.tasks`'; the model with its head, the step counts and the optimizer are set up by
:mod:`.run_setup`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.io import write_json
from ..core.precision import autocast, set_matmul_precision
from ..data.entries import TaskSpec
from ..models.checkpoints import MANIFEST, clear_weights, read_manifest, write_manifest
from .lora import merged, trainable_share
from .metrics import majority_baseline, task_scores
from .run_setup import StepPlan, load_model, make_optimizer, plan_steps
from .task_data import FinetuneError, TaskData, epoch_batches, load_split, subset
from .tasks import RunSettings, checkpoint_name

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 30.0


def resolve_device(device: str) -> str:
    """``auto`` (a GPU if torch sees one, else the CPU), ``cpu`` or ``cuda``, as the device to run on."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    # Checked here, not with the config: only the machine a job lands on can tell whether it has a GPU.
    if device == "cuda" and not torch.cuda.is_available():
        raise FinetuneError("device 'cuda' was asked for but torch sees no GPU here "
                            "(torch.cuda.is_available() is False); use device 'auto' or 'cpu'")
    return device


def make_deterministic(seed: int, threads: int) -> None:
    """Seed every generator, request deterministic kernels and fix the CPU thread count."""
    import random

    import torch

    # Needed by cuBLAS for deterministic matrix products; read when CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.set_num_threads(max(1, int(threads)))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def predict(model: Any, data: TaskData, batch_size: int, device: str, precision: str = "fp32") -> np.ndarray:
    """Class ids (argmax), or the score for a regression head, for every example in order.

    The outputs stay on the device until the last batch: one copy to the host, not one wait per batch."""
    import torch

    model.eval()
    outputs = []
    # no_grad, not inference_mode: a prediction in the middle of training must leave no inference tensors behind
    with torch.no_grad(), autocast(precision, device):
        for batch in data.in_order(batch_size, device):
            logits = model(**batch).logits.float()
            outputs.append(logits[:, 0] if logits.shape[1] == 1 else logits.argmax(dim=1))
        predictions = torch.cat(outputs).cpu().numpy()
    model.train()
    return predictions


def evaluate(model: Any, data: TaskData, batch_size: int, device: str, precision: str = "fp32") -> dict[str, float]:
    return task_scores(data.spec.metrics, predict(model, data, batch_size, device, precision), data.labels)


def save_checkpoint(model: Any, tokenizer: Any, directory: Path, *, model_name: str, name: str,
                    **extra: Any) -> Path:
    """Weights and tokenizer into ``directory/weights``, then ``checkpoint.json`` (last)."""
    directory = Path(directory)
    stale = directory / MANIFEST
    if stale.exists():
        stale.unlink()  # a manifest from an earlier run must not vouch for half-written weights
    weights = clear_weights(directory)
    model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    return write_manifest(directory, model=model_name, name=name, load_from=weights, **extra)


def _oom_error(exc: BaseException, task: str, settings: RunSettings) -> FinetuneError:
    return FinetuneError(
        f"task {task!r}: the GPU ran out of memory with batch_size={settings['batch_size']} and "
        f"max_length={settings['max_length']} ({exc}); lower batch_size first, then max_length, "
        "or run on a GPU with more memory")


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc))


def finetune(*, model_name: str, task: TaskSpec, seed: int, pretrained: str | Path, train_path: str | Path,
             dev_path: str | Path, checkpoint_root: str | Path, metrics_path: str | Path,
             settings: Mapping[str, Any], threads: int, offline: bool, mirror: str | Path | None) -> dict[str, Any]:
    """Fine-tune ``model_name`` on ``task`` (its entry, :class:`TaskSpec`) with ``seed``; save checkpoints and
    the metrics JSON.

    ``pretrained`` is the model's pretrained ``checkpoint.json``; checkpoints go to
    ``checkpoint_root/{task}.seed{seed}.step{K}`` and ``.../{task}.seed{seed}.final``.
    Returns the metrics record (also written to ``metrics_path``). ``settings``: the run settings
    (:class:`RunSettings`, or a mapping it is made from, e.g. a rule's params).
    """
    started, cpu_started = time.time(), time.process_time()
    try:
        settings = RunSettings(settings)
    except ValueError as exc:
        raise FinetuneError(f"task {task.name!r}: {exc}") from None
    device = resolve_device(settings.device)
    make_deterministic(seed, threads)
    set_matmul_precision(settings.precision, device)
    try:
        return _finetune(model_name=model_name, task=task, seed=seed, pretrained=pretrained,
                         train_path=train_path, dev_path=dev_path, checkpoint_root=Path(checkpoint_root),
                         metrics_path=metrics_path, settings=settings, threads=threads, offline=offline,
                         mirror=mirror, device=device, started=(started, cpu_started))
    except Exception as exc:
        if device == "cuda" and _is_oom(exc):
            raise _oom_error(exc, task.name, settings) from exc
        raise


def _finetune(*, model_name, task, seed, pretrained, train_path, dev_path, checkpoint_root, metrics_path,
              settings, threads, offline, mirror, device, started) -> dict[str, Any]:
    """The run once :func:`finetune` has checked its settings and seeded it: set up (run_setup.py), train, save
    the final checkpoint and write the metrics."""
    import torch
    import transformers

    spec, task = task, task.name
    train_frame = load_split(train_path, spec, "train", mirror=mirror)
    dev_frame = load_split(dev_path, spec, spec.dev_split, mirror=mirror)
    n_train_available, n_dev_available = len(train_frame), len(dev_frame)
    train_frame = subset(train_frame, settings["max_train_examples"])
    dev_frame = subset(dev_frame, settings["max_dev_examples"])

    manifest = read_manifest(pretrained)
    model, tokenizer = load_model(model_name, spec, manifest, settings, offline)
    trained, total = trainable_share(model)
    log.info("%s fine-tuning: %d of %d parameters trained", settings.method, trained, total)
    model.to(device)
    model.train()

    train = TaskData(train_frame, spec, tokenizer, settings, train_path)
    dev = TaskData(dev_frame, spec, tokenizer, settings, dev_path)
    steps = plan_steps(task, len(train), settings)
    log.info("fine-tuning %s on %s (seed %d) on %s, %d thread(s): %d of %d train examples, %d of %d dev; "
             "%d epochs x %d steps = %d steps (%d warm-up); settings %s", model_name, task, seed, device,
             threads, len(train), n_train_available, len(dev), n_dev_available, settings["epochs"],
             steps.steps_per_epoch, steps.total_steps, steps.warmup_steps, settings.params())
    if train.n_truncated or dev.n_truncated:
        log.warning("%d train and %d dev inputs are longer than max_length=%d tokens and were truncated",
                    train.n_truncated, dev.n_truncated, settings["max_length"])

    optimizer, scheduler = make_optimizer(model, settings, device, steps)
    generator = torch.Generator().manual_seed(seed)

    majority = majority_baseline(spec.metrics, spec.is_regression, dev.labels)
    record: dict[str, Any] = {
        "model": model_name, "task": task, "seed": seed, "settings": settings.params(), "device": device,
        "threads": threads, "torch": torch.__version__, "transformers": transformers.__version__,
        "pretrained": str(manifest["load_from"]),
        "trained_parameters": trained, "parameters": total,
        "n_train": len(train), "n_train_available": n_train_available, "n_dev": len(dev),
        "n_dev_available": n_dev_available, "n_truncated_train": train.n_truncated,
        "n_truncated_dev": dev.n_truncated, "steps_per_epoch": steps.steps_per_epoch,
        "total_steps": steps.total_steps, "warmup_steps": steps.warmup_steps, "main_metric": spec.main_metric,
        "majority_baseline": majority, "evaluations": [], "epoch_loss": [],
    }
    run = _Run(model_name=model_name, task=task, seed=seed, pretrained=pretrained, checkpoint_root=checkpoint_root,
               settings=settings, device=device, model=model, tokenizer=tokenizer, train=train, dev=dev,
               steps=steps, record=record)
    step = _train_epochs(run, optimizer, scheduler, generator)
    return _finish(run, step, metrics_path, started)


@dataclass
class _Run:
    """What a run's training loop, its checkpoints and its metrics share (set up by _finetune)."""

    model_name: str
    task: str
    seed: int
    pretrained: str | Path
    checkpoint_root: Path
    settings: RunSettings
    device: str
    model: Any
    tokenizer: Any
    train: TaskData
    dev: TaskData
    steps: StepPlan
    record: dict[str, Any]  # the metrics record: the epochs' losses and the checkpoints' evaluations are added to it


def _train_epochs(run: _Run, optimizer: Any, scheduler: Any, generator: Any) -> int:
    """The run's epochs of optimizer steps, with a progress line at the first step, every PROGRESS_EVERY_S and at
    the last, and a checkpoint at each save step; returns the number of steps taken. The batches' order is drawn
    from ``generator``."""
    import torch

    model, train, settings, task, record = run.model, run.train, run.settings, run.task, run.record
    device, batch_size = run.device, run.steps.batch_size
    steps_per_epoch, total_steps = run.steps.steps_per_epoch, run.steps.total_steps
    step, train_started = 0, time.time()
    last_log, logged_step, seen_since_log = train_started, 0, 0
    for epoch in range(settings.epochs):
        # Each step's loss stays on the device until a log line, a checkpoint or the epoch's end reads it: reading
        # it at every step made the host wait for the GPU at every step.
        losses = torch.zeros(steps_per_epoch, dtype=torch.float64, device=device)
        batches = epoch_batches(train.lengths, batch_size, generator, settings.group_by_length)
        for position, batch in enumerate(train.batches(batches, device)):
            with autocast(settings.precision, device):
                loss = model(**batch).loss
            loss.backward()
            if settings.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses[position] = loss.detach()
            step += 1
            seen_since_log += len(batches[position])
            now = time.time()
            if step == 1 or now - last_log >= PROGRESS_EVERY_S or step == total_steps:
                so_far = _finite_losses(losses, position + 1, epoch * steps_per_epoch, task, settings)
                now = time.time()  # after the losses' read, which waits for the device: the rate is the GPU's
                window = so_far[max(0, position + 1 - (step - logged_step)):]
                elapsed = now - train_started
                log.info("epoch %d/%d step %d/%d: loss %.4f, lr %.2e, %.1f examples/s, %.0f s elapsed, "
                         "~%.0f s left", epoch + 1, settings.epochs, step, total_steps, float(np.mean(window)),
                         scheduler.get_last_lr()[0], seen_since_log / max(now - last_log, 1e-9), elapsed,
                         elapsed / step * (total_steps - step))
                last_log, logged_step, seen_since_log = now, step, 0
            if step in run.steps.save_steps:
                so_far = _finite_losses(losses, position + 1, epoch * steps_per_epoch, task, settings)
                _checkpoint(run, step, step, step / steps_per_epoch, float(np.mean(so_far)))
        epoch_losses = _finite_losses(losses, len(batches), epoch * steps_per_epoch, task, settings)
        record["epoch_loss"].append(float(np.mean(epoch_losses)))
        log.info("epoch %d/%d done: mean training loss %.4f", epoch + 1, settings.epochs, record["epoch_loss"][-1])
    record["train_time_s"] = round(time.time() - train_started, 1)
    return step


def _checkpoint(run: _Run, step_label: int | str, global_step: int, epoch: float, recent_loss: float | None) -> None:
    """Save checkpoint ``step_label`` (a save step, or "final"), scored on the dev split first where the settings
    ask for it at every checkpoint, and always at the final one; the scores go into the run's record."""
    model, settings, record, checkpoint_root = run.model, run.settings, run.record, run.checkpoint_root
    name = checkpoint_name(run.task, run.seed, step_label)
    metrics = None
    if step_label == "final" or settings["eval_at_checkpoints"]:
        metrics = evaluate(model, run.dev, 2 * run.steps.batch_size, run.device, settings.precision)
        record["evaluations"].append({"checkpoint": name, "step": step_label, "global_step": global_step,
                                      "epoch": round(epoch, 4), "train_loss": recent_loss,
                                      "metrics": metrics})
        log.info("step %d (%s): dev %s (majority baseline %s)", global_step, name, _fmt(metrics),
                 _fmt(record["majority_baseline"]))
    # LoRA's updates merged into the weights: an ordinary checkpoint for every later stage (finetune/lora.py).
    with merged(model, last=step_label == "final") as saved:
        save_checkpoint(saved, run.tokenizer, checkpoint_root / name, model_name=run.model_name, name=name,
                        global_step=global_step, epoch=round(epoch, 4), base=str(run.pretrained),
                        finetune=settings.params(), dev_metrics=metrics, n_train=len(run.train))
    log.info("saved checkpoint %s", checkpoint_root / name)


def _finish(run: _Run, step: int, metrics_path: str | Path, started: tuple[float, float]) -> dict[str, Any]:
    """The final checkpoint, then the metrics record with its final dev scores and the run's times, written to
    ``metrics_path`` and returned. ``started``: the run's wall-clock and CPU time at its start."""
    record = run.record
    _checkpoint(run, "final", step, float(run.settings["epochs"]),
                record["epoch_loss"][-1] if record["epoch_loss"] else None)
    record["final"] = record["evaluations"][-1]["metrics"]
    record["wall_time_s"] = round(time.time() - started[0], 1)
    record["cpu_time_s"] = round(time.process_time() - started[1], 1)  # all threads; robust to a busy machine
    write_json(record, metrics_path)
    log.info("%s/%s seed %d: final dev %s vs majority baseline %s; %.0f s in all", run.model_name, run.task,
             run.seed, _fmt(record["final"]), _fmt(record["majority_baseline"]), record["wall_time_s"])
    return record


def _finite_losses(losses: Any, count: int, steps_before: int, task: str, settings: RunSettings) -> np.ndarray:
    """The epoch's first ``count`` step losses, read from the device; a non-finite one stops the run, naming its
    step (``steps_before`` steps came before this epoch)."""
    values = losses[:count].cpu().numpy()
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        key = "lora_learning_rate" if settings.method == "lora" else "learning_rate"
        raise FinetuneError(f"task {task!r}: the training loss became {values[bad[0]]} at step "
                            f"{steps_before + int(bad[0]) + 1}; lower {key} (now {settings.peak_learning_rate})")
    return values


def _fmt(metrics: dict[str, float] | None) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in (metrics or {}).items())
