"""A task's data table read, checked and tokenized for a model (METHODS 3).

Inputs per task (data tables of rules/data.smk): ``text_a`` alone for CoLA and SST-2, the
pair ``text_a``/``text_b`` otherwise; for WiC the target word is marked as ``wic_marking``
says (see :func:`mark_wic`). The fine-tuning loop reads its train and dev splits through
:class:`TaskData`, and the surface stage its dev examples, so that both feed a model exactly
the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError, InputFormatError
from ..data.entries import TaskSpec
from .tasks import WIC_MARKINGS

SUBSET_SEED = 0  # the capped subset of a split is the same for every training seed
MEGABATCH = 50  # group_by_length sorts chunks of this many batches by length (as transformers' Trainer)


class FinetuneError(AtlasError):
    """A fine-tuning run cannot go on; the message names the setting or file to fix."""


def missing_split_error(task: str, split: str, path: str | Path, mirror: str | Path | None) -> FinetuneError:
    """The error for a split that is not there, naming the table and the mirror looked in."""
    message = f"task {task!r}: its {split} split is missing: there is no data table {path}"
    if mirror:
        message += f" (mirror: {mirror})"
    fix = f"build the table with the data rules (snakemake {path}) or from a mirror that holds the split"
    return FinetuneError(f"{message} ({fix})")


def load_split(path: str | Path, spec: TaskSpec, split: str, *, mirror: str | Path | None = None) -> pd.DataFrame:
    """Read a task's data table and check its columns and labels (row numbers on error)."""
    path = Path(path)
    task = spec.name
    if not path.is_file():
        raise missing_split_error(task, split, path, mirror)
    frame = pd.read_parquet(path)
    needed = ["text_a", "label"] + (["text_b"] if spec.is_pair else [])
    if spec.reader == "wic":
        needed += ["word", "word_index_a", "word_index_b"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputFormatError(path, None, f"columns {missing} are missing (task {task!r} needs {needed})",
                               "rebuild the table with the data rules")
    check_labels(frame, spec, path)
    return frame.reset_index(drop=True)


def check_labels(frame: pd.DataFrame, spec: TaskSpec, path: str | Path = "<table>") -> None:
    """Reject NaN labels and labels outside the task's label set, naming the first bad row."""
    task, names = spec.name, spec.labels
    values = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=np.float64)
    if names is None and spec.reader == "glue":  # STS-B: similarity scores in [0, 5]
        bad = ~np.isfinite(values) | (values < 0) | (values > 5)
        allowed = "a similarity score in [0, 5]"
    elif names is None:
        bad = ~np.isfinite(values)
        allowed = "a finite number"
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


def task_texts(frame: pd.DataFrame, spec: TaskSpec, wic_marking: str | None = None,
               path: Any = "<table>") -> tuple[list[str], list[str] | None]:
    """The model inputs of a table: sentences, or sentence pairs (WiC: target word marked).

    ``wic_marking`` (one of WIC_MARKINGS) is needed for WiC only; other tasks ignore it.
    """
    texts_a = frame["text_a"].astype(str).tolist()
    if not spec.is_pair:
        return texts_a, None
    texts_b = frame["text_b"].astype(str).tolist()
    if spec.reader == "wic":
        # Checked here although the config schema allows only these: any other value would
        # silently leave the target word unmarked.
        if wic_marking not in WIC_MARKINGS:
            raise AtlasError(f"task 'wic': wic_marking {wic_marking!r} is not one of {', '.join(WIC_MARKINGS)}")
        ia, ib = frame["word_index_a"].tolist(), frame["word_index_b"].tolist()
        texts_a = [mark_wic(t, int(i), wic_marking, row=r, column="word_index_a", path=path)
                   for r, (t, i) in enumerate(zip(texts_a, ia))]
        texts_b = [mark_wic(t, int(i), wic_marking, row=r, column="word_index_b", path=path)
                   for r, (t, i) in enumerate(zip(texts_b, ib))]
        if wic_marking == "prefix":
            texts_a = [f"{w}: {t}" for w, t in zip(frame["word"].astype(str), texts_a)]
    return texts_a, texts_b


def encode(tokenizer: Any, texts_a: list[str], texts_b: list[str] | None,
           max_length: int) -> tuple[list[list[int]], list[list[int]], int]:
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

    def __init__(self, frame: pd.DataFrame, spec: TaskSpec, tokenizer: Any, settings: dict[str, Any], path: Any):
        self.spec = spec
        # Settings of a task other than WiC carry no wic_marking (tasks.task_settings drops it).
        texts_a, texts_b = task_texts(frame, spec, settings.get("wic_marking"), path)
        self.input_ids, self.type_ids, self.n_truncated = encode(tokenizer, texts_a, texts_b,
                                                                 settings["max_length"])
        dtype = np.float32 if spec.is_regression else np.int64
        self.labels = frame["label"].to_numpy().astype(dtype)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        # Models without segment embeddings (RoBERTa, DistilBERT) take no token_type_ids.
        self.with_types = "token_type_ids" in tokenizer.model_input_names
        self._in_order: dict[tuple[int, str], list[dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(ids) for ids in self.input_ids])

    def sort_by_length(self) -> TaskData:
        """Put the examples in ascending length (stable), so that consecutive batches pad little; returns self."""
        order = np.argsort(self.lengths, kind="stable")
        self.input_ids = [self.input_ids[i] for i in order]
        self.type_ids = [self.type_ids[i] for i in order]
        self.labels = self.labels[order]
        self._in_order.clear()
        return self

    def in_order(self, batch_size: int, device: str) -> list[dict[str, Any]]:
        """Every example in order, in batches of ``batch_size`` on ``device`` without labels: built once and kept,
        since dev scoring passes over the same batches again and again (at each checkpoint, and once per disabled
        head and mode in head disabling)."""
        key = (int(batch_size), str(device))
        if key not in self._in_order:
            self._in_order[key] = [self.batch(np.arange(start, min(start + batch_size, len(self))), device,
                                              with_labels=False) for start in range(0, len(self), batch_size)]
        return self._in_order[key]

    def batch(self, indices: Any, device: str, with_labels: bool = True) -> dict[str, Any]:
        import torch

        batch = collate(self.input_ids, self.type_ids, indices, self.pad_id)
        if not self.with_types:
            del batch["token_type_ids"]
        if with_labels:
            batch["labels"] = torch.from_numpy(self.labels[np.asarray(indices, dtype=np.int64)])
        return {k: v.to(device) for k, v in batch.items()}

    def batches(self, batches: list[np.ndarray], device: str) -> Iterator[dict[str, Any]]:
        """Each of ``batches`` (index arrays) on ``device``, in order. The next batch is padded on a thread while
        the model runs, and on a GPU it is pinned and copied asynchronously: built on the training's critical
        path, a batch kept the GPU waiting at every step."""
        pin = device.startswith("cuda")

        def build(indices: np.ndarray) -> dict[str, Any]:
            batch = self.batch(indices, "cpu")
            return {k: v.pin_memory() for k, v in batch.items()} if pin else batch

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="batches") as builder:
            upcoming = builder.submit(build, batches[0]) if batches else None
            for position in range(len(batches)):
                batch = upcoming.result()
                if position + 1 < len(batches):
                    upcoming = builder.submit(build, batches[position + 1])
                yield {k: v.to(device, non_blocking=pin) for k, v in batch.items()}
