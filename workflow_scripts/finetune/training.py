"""Per-task fine-tuning (METHODS 3): one run per (model, task, seed), a plain PyTorch loop.

A run loads the model's ``pretrained`` checkpoint with the standard sequence-classification
head (``AutoModelForSequenceClassification``; one regression output for STS-B), trains it
with AdamW and a linear warm-up/decay schedule, and saves checkpoints at the configured
steps and at the end. Each checkpoint is a folder of the checkpoint convention
(:mod:`workflow_scripts.checkpoints`): ``weights/`` holds the model and tokenizer, and
``checkpoint.json`` is written last, so an interrupted run leaves no checkpoint a rerun
trusts. ``AutoModel.from_pretrained`` on ``weights/`` loads the fine-tuned encoder, which
is what the attention stage does.

Determinism: the seed fixes the head's initialisation, dropout and the order of the
batches (a seeded generator), deterministic algorithms are requested, and the number
of CPU threads is fixed, so the same seed gives the same metrics on the same hardware.

Inputs per task (data tables of rules/data.smk): ``text_a`` alone for CoLA and SST-2,
the pair ``text_a``/``text_b`` otherwise; for WiC the target word is marked as
``wic_marking`` says (see :func:`mark_wic`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..models.checkpoints import MANIFEST, read_manifest, write_manifest
from ..data.registry import GLUE_TASKS, WIC_LABELS, mirror_candidates
from ..core.errors import AtlasError, ConfigError, InputFormatError
from ..core.io import write_csv, write_json
from .metrics import glue_metrics, main_metric, majority_baseline
from ..models.cards import max_length_problem, position_limit

log = logging.getLogger(__name__)

# Keys of the 'finetune' config that change what one run computes: they are merged per task
# and passed to the rule through params:, so changing one reruns only the runs it touches.
RUN_SETTINGS = ("epochs", "batch_size", "learning_rate", "warmup_ratio", "weight_decay",
                "max_grad_norm", "max_length", "max_train_examples", "max_dev_examples",
                "save_steps", "eval_at_checkpoints", "device", "group_by_length", "wic_marking")
WIC_MARKINGS = ("none", "brackets", "prefix")
SINGLE_SENTENCE_TASKS = ("cola", "sst2")
SUBSET_SEED = 0  # the capped subset of a split is the same for every training seed
MEGABATCH = 50  # group_by_length sorts chunks of this many batches by length (as transformers' Trainer)
PROGRESS_EVERY_S = 30.0


class FinetuneError(AtlasError):
    """A fine-tuning run cannot go on; the message names the setting or file to fix."""


# --- settings -----------------------------------------------------------------------


def task_settings(finetune: dict[str, Any], task: str, model_max_length: int | None = None) -> dict[str, Any]:
    """The settings of ``task``'s runs: the global keys with ``per_task[task]`` on top.

    ``max_length: null`` means the model entry's ``max_length``. Only the keys that change
    a run's result are returned (not ``seeds``, resources or ``per_task`` itself).
    """
    override = (finetune.get("per_task") or {}).get(task) or {}
    settings = {key: override.get(key, finetune.get(key)) for key in RUN_SETTINGS}
    if settings["max_length"] is None:
        settings["max_length"] = model_max_length or 128
    settings["save_steps"] = sorted({int(s) for s in settings["save_steps"] or []})
    if task != "wic":
        settings.pop("wic_marking")
    return settings


def task_seeds(finetune: dict[str, Any], task: str) -> list[int]:
    override = (finetune.get("per_task") or {}).get(task) or {}
    return list(override.get("seeds", finetune.get("seeds", [42])))


def dev_split(task: str) -> str:
    """The split GLUE reports dev scores on (MNLI: the matched one)."""
    return "dev_matched" if task == "mnli" else "dev"


def checkpoint_name(task: str, seed: int, step: int | str) -> str:
    """``{task}.seed{seed}.step{step}``, or ``{task}.seed{seed}.final`` for ``step='final'``."""
    return f"{task}.seed{seed}.final" if step == "final" else f"{task}.seed{seed}.step{int(step)}"


def label_names(task: str) -> tuple[str, ...] | None:
    """Class names by label id, or None for a regression task (STS-B)."""
    if task == "wic":
        return WIC_LABELS
    try:
        return GLUE_TASKS[task].labels
    except KeyError:
        raise ConfigError(f"unknown task {task!r}; known: {', '.join([*GLUE_TASKS, 'wic'])}") from None


# --- data -----------------------------------------------------------------------------


def mirror_files(task: str, split: str, mirror: str | Path | None) -> str:
    """The mirror files that could provide ``task``/``split``, for messages."""
    return " or ".join(str(Path(mirror or ".") / rel) for files in mirror_candidates(task, split) for rel in files)


def missing_split_error(task: str, split: str, path: str | Path, mirror: str | Path | None) -> FinetuneError:
    """The error for a split that is not there, naming the table and the mirror files looked for."""
    message = f"task {task!r}: its {split} split is missing: there is no data table {path}"
    if mirror:
        message += f", and the mirror {mirror} holds no {mirror_files(task, split, mirror)}"
    fix = (f"build the table with the data rules (snakemake {path}), point 'mirror' at a copy that "
           f"holds the split, or leave {task!r} out of 'finetune.tasks'")
    return FinetuneError(f"{message} ({fix})")


def load_split(path: str | Path, task: str, split: str, *, mirror: str | Path | None = None) -> pd.DataFrame:
    """Read a task's data table and check its columns and labels (row numbers on error)."""
    path = Path(path)
    if not path.is_file():
        raise missing_split_error(task, split, path, mirror)
    frame = pd.read_parquet(path)
    needed = ["text_a", "label"] + (["text_b"] if task not in SINGLE_SENTENCE_TASKS else [])
    if task == "wic":
        needed += ["word", "word_index_a", "word_index_b"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"columns {missing} are missing (task {task!r} needs {needed})",
                               "rebuild the table with the data rules")
    check_labels(frame, task, path)
    return frame.reset_index(drop=True)


def check_labels(frame: pd.DataFrame, task: str, path: str | Path = "<table>") -> None:
    """Reject NaN labels and labels outside the task's label set, naming the first bad row."""
    names = label_names(task)
    values = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=np.float64)
    if names is None:  # STS-B: similarity scores in [0, 5]
        bad = ~np.isfinite(values) | (values < 0) | (values > 5)
        allowed = "a similarity score in [0, 5]"
    else:
        bad = ~np.isfinite(values) | (values != np.round(values)) | (values < 0) | (values >= len(names))
        allowed = "one of " + ", ".join(f"{i} ({n})" for i, n in enumerate(names))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        example = frame["example_id"].iloc[row] if "example_id" in frame.columns else row
        value = frame["label"].iloc[row]
        value = value.item() if hasattr(value, "item") else value
        raise InputFormatError(
            path, None,
            f"row {row} (counting from 0; example_id {example}): label {value!r} is not "
            f"{allowed} for task {task!r} ({int(bad.sum())} bad row(s) in all)",
            "fix or rebuild the data table; labels must be the task's label ids")


def subset(frame: pd.DataFrame, cap: int | None) -> pd.DataFrame:
    """At most ``cap`` rows, a random subset fixed by SUBSET_SEED (kept in table order)."""
    if cap is None or cap >= len(frame):
        return frame
    keep = np.sort(np.random.default_rng(SUBSET_SEED).permutation(len(frame))[:cap])
    return frame.iloc[keep].reset_index(drop=True)


def mark_wic(text: str, index: int, marking: str, *, row: int, column: str, path: Any = "<table>") -> str:
    """Mark word ``index`` (of the space-separated words) of a WiC sentence.

    ``brackets``: wrap it as ``[ word ]`` (spaces keep ``[`` and ``]`` from forming a
    special token such as ``[SEP]``); ``none`` and ``prefix`` leave the sentence as is.
    """
    if marking != "brackets":
        return text
    words = text.split(" ")
    if not 0 <= index < len(words):
        raise InputFormatError(path, None, f"row {row} (counting from 0): {column}={index} is not a word "
                               f"index of {text!r} ({len(words)} words)", "rebuild the WiC table")
    words[index] = f"[ {words[index]} ]"
    return " ".join(words)


def task_texts(frame: pd.DataFrame, task: str, wic_marking: str = "brackets",
               path: Any = "<table>") -> tuple[list[str], list[str] | None]:
    """The model inputs of a table: sentences, or sentence pairs (WiC: target word marked)."""
    texts_a = frame["text_a"].astype(str).tolist()
    if task in SINGLE_SENTENCE_TASKS:
        return texts_a, None
    texts_b = frame["text_b"].astype(str).tolist()
    if task == "wic":
        if wic_marking not in WIC_MARKINGS:
            raise ConfigError(f"config key 'finetune.wic_marking': {wic_marking!r} is not one of {WIC_MARKINGS}")
        ia, ib = frame["word_index_a"].tolist(), frame["word_index_b"].tolist()
        texts_a = [mark_wic(t, int(i), wic_marking, row=r, column="word_index_a", path=path)
                   for r, (t, i) in enumerate(zip(texts_a, ia))]
        texts_b = [mark_wic(t, int(i), wic_marking, row=r, column="word_index_b", path=path)
                   for r, (t, i) in enumerate(zip(texts_b, ib))]
        if wic_marking == "prefix":
            texts_a = [f"{w}: {t}" for w, t in zip(frame["word"].astype(str), texts_a)]
    return texts_a, texts_b


def encode(tokenizer: Any, texts_a: list[str], texts_b: list[str] | None, max_length: int) -> tuple[list[list[int]], list[list[int]], int]:
    """Token ids and token type ids (truncated to ``max_length``), and how many were truncated."""
    full = tokenizer(texts_a, texts_b, truncation=False, add_special_tokens=True, verbose=False)["input_ids"]
    n_truncated = sum(len(ids) > max_length for ids in full)
    encoded = tokenizer(texts_a, texts_b, truncation=True, max_length=max_length)
    type_ids = encoded.get("token_type_ids") or [[0] * len(ids) for ids in encoded["input_ids"]]
    return encoded["input_ids"], type_ids, n_truncated


def collate(input_ids: list[list[int]], type_ids: list[list[int]], indices: Any, pad_id: int) -> dict[str, Any]:
    """Pad the examples at ``indices`` to the longest of them (dynamic padding)."""
    import torch

    rows = [int(i) for i in indices]
    width = max(len(input_ids[i]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for j, i in enumerate(rows):
        n = len(input_ids[i])
        ids[j, :n] = torch.tensor(input_ids[i])
        types[j, :n] = torch.tensor(type_ids[i])
        mask[j, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def epoch_batches(lengths: np.ndarray, batch_size: int, generator: Any, group_by_length: bool) -> list[np.ndarray]:
    """The batches of one epoch: a seeded shuffle, cut into batches of ``batch_size``.

    With ``group_by_length`` (transformers' ``group_by_length``), each chunk of MEGABATCH
    batches of the shuffle is sorted by length before it is cut, and the batches are then
    shuffled, so that a batch holds inputs of similar length and little padding. The number
    of batches is the same either way.
    """
    import torch

    order = torch.randperm(len(lengths), generator=generator).numpy()
    if not group_by_length:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    batches = []
    for start in range(0, len(order), batch_size * MEGABATCH):
        chunk = order[start:start + batch_size * MEGABATCH]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).numpy()]


class TaskData:
    """One split of a task, tokenized: token ids, labels and the count of truncated inputs."""

    def __init__(self, frame: pd.DataFrame, task: str, tokenizer: Any, settings: dict[str, Any], path: Any):
        self.task = task
        texts_a, texts_b = task_texts(frame, task, settings.get("wic_marking", "none"), path)
        self.input_ids, self.type_ids, self.n_truncated = encode(tokenizer, texts_a, texts_b,
                                                                 settings["max_length"])
        dtype = np.float32 if label_names(task) is None else np.int64
        self.labels = frame["label"].to_numpy().astype(dtype)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        # Models without segment embeddings (RoBERTa, DistilBERT) take no token_type_ids.
        self.with_types = "token_type_ids" in tokenizer.model_input_names

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(ids) for ids in self.input_ids])

    def batch(self, indices: Any, device: str, with_labels: bool = True) -> dict[str, Any]:
        import torch

        batch = collate(self.input_ids, self.type_ids, indices, self.pad_id)
        if not self.with_types:
            del batch["token_type_ids"]
        if with_labels:
            batch["labels"] = torch.from_numpy(self.labels[np.asarray(indices, dtype=np.int64)])
        return {k: v.to(device) for k, v in batch.items()}


# --- training -----------------------------------------------------------------------


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("config key 'finetune.device' is 'cuda' but torch sees no GPU here "
                          "(torch.cuda.is_available() is False); set it to 'auto' or 'cpu'")
    if device not in ("cpu", "cuda"):
        raise ConfigError(f"config key 'finetune.device': {device!r} is not one of auto, cpu, cuda")
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


def predict(model: Any, data: TaskData, batch_size: int, device: str) -> np.ndarray:
    """Class ids (argmax), or the score for a regression head, for every example in order."""
    import torch

    model.eval()
    outputs = []
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = data.batch(np.arange(start, min(start + batch_size, len(data))), device, with_labels=False)
            logits = model(**batch).logits.float().cpu().numpy()
            outputs.append(logits[:, 0] if logits.shape[1] == 1 else logits.argmax(axis=1))
    model.train()
    return np.concatenate(outputs)


def evaluate(model: Any, data: TaskData, batch_size: int, device: str) -> dict[str, float]:
    return glue_metrics(data.task, predict(model, data, batch_size, device), data.labels)


def save_checkpoint(model: Any, tokenizer: Any, directory: Path, *, model_name: str, name: str,
                    **extra: Any) -> Path:
    """Weights and tokenizer into ``directory/weights``, then ``checkpoint.json`` (last)."""
    directory = Path(directory)
    stale = directory / MANIFEST
    if stale.exists():
        stale.unlink()  # a manifest from an earlier run must not vouch for half-written weights
    weights = directory / "weights"
    model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    return write_manifest(directory, model=model_name, name=name, load_from=str(weights.resolve()), **extra)


def _oom_error(exc: BaseException, task: str, settings: dict[str, Any]) -> FinetuneError:
    return FinetuneError(
        f"task {task!r}: the GPU ran out of memory with batch_size={settings['batch_size']} and "
        f"max_length={settings['max_length']} ({exc}); lower config key 'finetune.batch_size' "
        f"(or 'finetune.per_task.{task}.batch_size') first, then 'finetune.max_length', "
        "or run on a GPU with more memory")


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc))


def finetune(*, model_name: str, task: str, seed: int, pretrained: str | Path, train_path: str | Path,
             dev_path: str | Path, checkpoint_root: str | Path, metrics_path: str | Path,
             settings: dict[str, Any], threads: int = 1, offline: bool = False,
             mirror: str | Path | None = None) -> dict[str, Any]:
    """Fine-tune ``model_name`` on ``task`` with ``seed``; save checkpoints and the metrics JSON.

    ``pretrained`` is the model's pretrained ``checkpoint.json``; checkpoints go to
    ``checkpoint_root/{task}.seed{seed}.step{K}`` and ``.../{task}.seed{seed}.final``.
    Returns the metrics record (also written to ``metrics_path``).
    """
    started, cpu_started = time.time(), time.process_time()
    device = resolve_device(settings["device"])
    make_deterministic(seed, threads)
    try:
        return _finetune(model_name=model_name, task=task, seed=seed, pretrained=pretrained,
                         train_path=train_path, dev_path=dev_path, checkpoint_root=Path(checkpoint_root),
                         metrics_path=metrics_path, settings=settings, threads=threads, offline=offline,
                         mirror=mirror, device=device, started=(started, cpu_started))
    except Exception as exc:
        if device == "cuda" and _is_oom(exc):
            raise _oom_error(exc, task, settings) from exc
        raise


def _finetune(*, model_name, task, seed, pretrained, train_path, dev_path, checkpoint_root, metrics_path,
              settings, threads, offline, mirror, device, started) -> dict[str, Any]:
    import torch
    import transformers
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    train_frame = load_split(train_path, task, "train", mirror=mirror)
    dev_frame = load_split(dev_path, task, dev_split(task), mirror=mirror)
    n_train_available, n_dev_available = len(train_frame), len(dev_frame)
    train_frame = subset(train_frame, settings["max_train_examples"])
    dev_frame = subset(dev_frame, settings["max_dev_examples"])

    manifest = read_manifest(pretrained)
    load_kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        load_kwargs["revision"] = manifest["revision"]
    names = label_names(task)
    head: dict[str, Any] = ({"num_labels": 1, "problem_type": "regression"} if names is None else
                            {"num_labels": len(names), "problem_type": "single_label_classification",
                             "id2label": dict(enumerate(names)),
                             "label2id": {n: i for i, n in enumerate(names)}})
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **load_kwargs)
    # The head is initialised from the seed (make_deterministic seeded the global generator).
    model = AutoModelForSequenceClassification.from_pretrained(manifest["load_from"], **head, **load_kwargs)
    # Before training, not a tensor-size error mid-epoch (a hub model not in the cache is not checked earlier).
    limit = position_limit(model.config.to_dict(), tokenizer.model_max_length)
    too_long = max_length_problem("finetune.max_length", settings["max_length"], model_name, limit,
                                  f" (null there means 'models.{model_name}.max_length'; "
                                  f"'finetune.per_task.{task}.max_length' overrides it)")
    if too_long:
        raise ConfigError(too_long)
    model.to(device)
    model.train()

    train = TaskData(train_frame, task, tokenizer, settings, train_path)
    dev = TaskData(dev_frame, task, tokenizer, settings, dev_path)
    batch_size = int(settings["batch_size"])
    steps_per_epoch = math.ceil(len(train) / batch_size)
    total_steps = steps_per_epoch * int(settings["epochs"])
    warmup_steps = math.ceil(settings["warmup_ratio"] * total_steps)
    save_steps = [int(s) for s in settings["save_steps"]]
    too_late = [s for s in save_steps if s > total_steps]
    if too_late:
        raise ConfigError(
            f"task {task!r}: save step(s) {too_late} come after the last step ({total_steps} = {steps_per_epoch} "
            f"steps/epoch x {settings['epochs']} epochs on {len(train)} examples); lower "
            f"'finetune.save_steps' or set 'finetune.per_task.{task}.save_steps'")
    log.info("fine-tuning %s on %s (seed %d) on %s, %d thread(s): %d of %d train examples, %d of %d dev; "
             "%d epochs x %d steps = %d steps (%d warm-up); settings %s", model_name, task, seed, device,
             threads, len(train), n_train_available, len(dev), n_dev_available, settings["epochs"],
             steps_per_epoch, total_steps, warmup_steps, settings)
    if train.n_truncated or dev.n_truncated:
        log.warning("%d train and %d dev inputs are longer than max_length=%d tokens and were truncated",
                    train.n_truncated, dev.n_truncated, settings["max_length"])

    no_decay = ("bias", "LayerNorm.weight", "layernorm.weight", "norm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
         "weight_decay": settings["weight_decay"]},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=settings["learning_rate"])
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    generator = torch.Generator().manual_seed(seed)

    majority = majority_baseline(task, dev.labels)
    record: dict[str, Any] = {
        "model": model_name, "task": task, "seed": seed, "settings": settings, "device": device,
        "threads": threads, "torch": torch.__version__, "transformers": transformers.__version__,
        "pretrained": str(manifest["load_from"]),
        "n_train": len(train), "n_train_available": n_train_available, "n_dev": len(dev),
        "n_dev_available": n_dev_available, "n_truncated_train": train.n_truncated,
        "n_truncated_dev": dev.n_truncated, "steps_per_epoch": steps_per_epoch, "total_steps": total_steps,
        "warmup_steps": warmup_steps, "main_metric": main_metric(task), "majority_baseline": majority,
        "evaluations": [], "epoch_loss": [],
    }

    def checkpoint(step_label: int | str, global_step: int, epoch: float, recent_loss: float | None) -> None:
        name = checkpoint_name(task, seed, step_label)
        metrics = None
        if step_label == "final" or settings["eval_at_checkpoints"]:
            metrics = evaluate(model, dev, 2 * batch_size, device)
            record["evaluations"].append({"checkpoint": name, "step": step_label, "global_step": global_step,
                                          "epoch": round(epoch, 4), "train_loss": recent_loss,
                                          "metrics": metrics})
            log.info("step %d (%s): dev %s (majority baseline %s)", global_step, name, _fmt(metrics),
                     _fmt(majority))
        save_checkpoint(model, tokenizer, checkpoint_root / name, model_name=model_name, name=name,
                        global_step=global_step, epoch=round(epoch, 4), base=str(pretrained),
                        finetune=settings, dev_metrics=metrics, n_train=len(train))
        log.info("saved checkpoint %s", checkpoint_root / name)

    step, last_log, seen_since_log, train_started = 0, time.time(), 0, time.time()
    window: list[float] = []
    for epoch in range(int(settings["epochs"])):
        epoch_losses = []
        for indices in epoch_batches(train.lengths, batch_size, generator, settings["group_by_length"]):
            loss = model(**train.batch(indices, device)).loss
            loss.backward()
            if settings["max_grad_norm"]:
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings["max_grad_norm"])
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            value = float(loss.detach())
            if not math.isfinite(value):
                raise FinetuneError(f"task {task!r}: the training loss became {value} at step {step}; lower "
                                    f"'finetune.learning_rate' (now {settings['learning_rate']})")
            epoch_losses.append(value)
            window.append(value)
            seen_since_log += len(indices)
            now = time.time()
            if step == 1 or now - last_log >= PROGRESS_EVERY_S or step == total_steps:
                elapsed = now - train_started
                log.info("epoch %d/%d step %d/%d: loss %.4f, lr %.2e, %.1f examples/s, %.0f s elapsed, "
                         "~%.0f s left", epoch + 1, settings["epochs"], step, total_steps, float(np.mean(window)),
                         scheduler.get_last_lr()[0], seen_since_log / max(now - last_log, 1e-9), elapsed,
                         elapsed / step * (total_steps - step))
                last_log, seen_since_log, window = now, 0, []
            if step in save_steps:
                checkpoint(step, step, step / steps_per_epoch, float(np.mean(epoch_losses)))
        record["epoch_loss"].append(float(np.mean(epoch_losses)))
        log.info("epoch %d/%d done: mean training loss %.4f", epoch + 1, settings["epochs"], record["epoch_loss"][-1])
    record["train_time_s"] = round(time.time() - train_started, 1)
    checkpoint("final", step, float(settings["epochs"]), record["epoch_loss"][-1] if record["epoch_loss"] else None)
    record["final"] = record["evaluations"][-1]["metrics"]
    record["wall_time_s"] = round(time.time() - started[0], 1)
    record["cpu_time_s"] = round(time.process_time() - started[1], 1)  # all threads; robust to a busy machine
    write_json(record, metrics_path)
    log.info("%s/%s seed %d: final dev %s vs majority baseline %s; %.0f s in all", model_name, task, seed,
             _fmt(record["final"]), _fmt(majority), record["wall_time_s"])
    return record


def _fmt(metrics: dict[str, float] | None) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in (metrics or {}).items())


# --- study table --------------------------------------------------------------------

TABLE_COLUMNS = ["model", "task", "seed", "step", "metric", "value", "n_dev", "majority_baseline",
                 "main_metric", "checkpoint", "global_step", "n_train", "wall_time_s"]


def metrics_table(paths: list[str | Path], output: str | Path) -> pd.DataFrame:
    """One row per (run, evaluated checkpoint, metric) from every run's metrics JSON."""
    import json

    rows = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        for evaluation in record["evaluations"]:
            for metric, value in evaluation["metrics"].items():
                rows.append({"model": record["model"], "task": record["task"], "seed": record["seed"],
                             "step": evaluation["step"], "metric": metric, "value": value,
                             "n_dev": record["n_dev"], "majority_baseline": record["majority_baseline"].get(metric),
                             "main_metric": metric == record["main_metric"], "checkpoint": evaluation["checkpoint"],
                             "global_step": evaluation["global_step"], "n_train": record["n_train"],
                             "wall_time_s": record.get("wall_time_s")})
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    frame = frame.sort_values(["model", "task", "seed", "global_step", "checkpoint", "metric"], kind="stable")
    write_csv(frame, output)
    log.info("%d runs, %d rows", len(paths), len(frame))
    return frame
