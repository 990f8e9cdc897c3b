"""Checkpoints as one concept (METHODS 3): pretrained, random-init and fine-tuned alike.

Every checkpoint of a model lives at ``{results}/checkpoints/{model}/{checkpoint}/`` and
is described by ``checkpoint.json`` there; downstream rules depend on that file only
and load the model through :func:`load_checkpoint`, whatever kind it is.

Checkpoint names:
  - ``pretrained``: the model as configured (hub id, local path or package folder);
  - ``random``: same config, weights re-initialised with a fixed seed (the control of [C] §5);
  - ``{task}.seed{seed}.step{step}`` and ``{task}.seed{seed}.final``: fine-tuned (rules/finetune.smk).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from ..core.file_records import file_entry, file_problem, mark_damaged, seal_problem, write_sealed_json
from .families import from_config, load_pretrained

log = logging.getLogger(__name__)

MANIFEST = "checkpoint.json"
FINETUNED = re.compile(r"^(?P<task>[a-z0-9]+)\.seed(?P<seed>\d+)\.(?:step(?P<step>\d+)|final)$")


def parse_checkpoint_name(name: str) -> dict[str, Any]:
    """Split a checkpoint name into its kind, task, seed and step."""
    if name in ("pretrained", "random"):
        return {"kind": name, "task": None, "seed": None, "step": None}
    match = FINETUNED.match(name)
    if not match:
        raise AtlasError(f"checkpoint name {name!r} is not 'pretrained', 'random' or "
                         "'{task}.seed{N}.step{K}' / '{task}.seed{N}.final'")
    step = match.group("step")
    return {"kind": "finetuned", "task": match.group("task"), "seed": int(match.group("seed")),
            "step": int(step) if step is not None else "final"}


# Kinds whose weights the workflow wrote itself, into the checkpoint's folder (``weights/``).
OWN_KINDS = ("random", "finetuned")
WEIGHTS = "weights"


class CheckpointError(AtlasError):
    """A checkpoint whose record or weights are not as the workflow wrote them."""


def write_manifest(directory: str | Path, *, model: str, name: str, load_from: str | Path,
                   **extra: Any) -> Path:
    """Write ``checkpoint.json``; ``load_from`` is what ``from_pretrained`` should load.

    A random or fine-tuned checkpoint's weights are in ``weights/`` beside it: its record says so by a relative
    path (a copied or moved results folder reads its own weights) and lists every file there with its size
    and sha256 (what :func:`read_manifest` checks before a load). The record is sealed (core/file_records.py).
    """
    directory = Path(directory)
    manifest = {"model": model, "checkpoint": name, "load_from": str(load_from), **parse_checkpoint_name(name),
                **extra}
    if manifest["kind"] in OWN_KINDS:
        weights = directory / WEIGHTS
        if Path(load_from).resolve() != weights.resolve():
            raise AtlasError(f"{directory}: a {manifest['kind']} checkpoint's weights are saved in its {WEIGHTS}/ "
                             f"folder, not {load_from}")
        manifest["load_from"] = WEIGHTS
        manifest["files"] = {path.relative_to(weights).as_posix(): file_entry(path)
                             for path in sorted(weights.rglob("*")) if path.is_file()}
    path = directory / MANIFEST
    write_sealed_json(manifest, path)
    return path


def read_manifest(path: str | Path, *, verify: bool = True) -> dict[str, Any]:
    """A checkpoint's record, checked, with ``load_from`` resolved to what a load reads.

    The kind comes from the checkpoint's name, whatever the record's ``kind`` says. A random or fine-tuned
    checkpoint loads its own ``weights/`` (the record's path is relative to it), and ``verify`` checks every
    file there against the record first: the sha256 of each, and no file the workflow did not write. A
    record or weights that fail are refused: the record is removed and the next plain run re-creates the
    checkpoint.
    """
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise AtlasError(f"{path}: unreadable checkpoint manifest ({exc}); delete it and rerun "
                         "snakemake to rebuild the checkpoint") from exc
    if problem := seal_problem(record):
        _refuse(path, problem)
    try:
        manifest = {**record, **parse_checkpoint_name(str(record.get("checkpoint")))}
    except AtlasError as exc:
        _refuse(path, str(exc))
    if manifest["kind"] in OWN_KINDS:
        weights = path.parent / WEIGHTS
        manifest["load_from"] = str(weights.resolve())
        if verify and "files" in record:  # records written before file entries have none to check
            _verify_weights(path, weights, record["files"])
    elif _inside(manifest.get("load_from"), _results_folder(path)):
        manifest["safetensors_only"] = True  # a pretrained record that points into the results folder
    return manifest


def _results_folder(record_path: Path) -> Path | None:
    """RESULTS of RESULTS/checkpoints/MODEL/CHECKPOINT/checkpoint.json (None for a record elsewhere)."""
    parents = record_path.resolve().parents
    return parents[3] if len(parents) > 3 and parents[2].name == "checkpoints" else None


def _inside(location: Any, folder: Path | None) -> bool:
    try:
        return folder is not None and location is not None and Path(str(location)).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def weights_problem(weights: Path, files: dict[str, Any], *, always_hash: bool) -> str | None:
    """What differs between a checkpoint's ``weights/`` folder and its record's file entries: a file that differs
    (core/file_records.file_problem), or one the record does not list; None if nothing does."""
    for name, entry in files.items():
        if problem := file_problem(weights / name, entry, always_hash=always_hash):
            return f"{WEIGHTS}/{name}: {problem}"
    for path in sorted(weights.rglob("*")) if weights.is_dir() else ():
        if path.is_file() and path.relative_to(weights).as_posix() not in files:
            return (f"{WEIGHTS}/{path.relative_to(weights).as_posix()} was not written by the workflow (its record "
                    "lists no such file)")
    return None


def _verify_weights(record_path: Path, weights: Path, files: dict[str, Any]) -> None:
    if problem := weights_problem(weights, files, always_hash=True):
        _refuse(record_path, problem)


def _refuse(record_path: Path, problem: str) -> None:
    mark_damaged(record_path, problem)
    raise CheckpointError(f"checkpoint {record_path.parent}: {problem}. Its {MANIFEST} was removed, so nothing "
                          "reads it: run snakemake again (no options needed) and it re-creates the checkpoint")


def clear_weights(directory: str | Path) -> Path:
    """The empty ``weights/`` folder of a checkpoint about to be saved: its record lists what is saved there, and
    nothing an earlier run or a person left."""
    weights = Path(directory) / WEIGHTS
    if weights.exists():
        shutil.rmtree(weights)
    weights.mkdir(parents=True)
    return weights


def weights_options(manifest: dict[str, Any]) -> dict[str, Any]:
    """``from_pretrained`` options for a checkpoint's weights.

    The workflow's own checkpoints (random, fine-tuned) are saved as safetensors, so they are read as
    safetensors only: a pickle (``pytorch_model.bin``) left beside or instead of them in a shared results
    folder is never read, whatever a record says (the kind comes from the checkpoint's name, and their files are
    checked against the record). A pretrained model is read as its source ships it (transformers reads a
    ``.bin`` with ``torch.load(weights_only=True)``, which builds tensors only), unless its record points into
    the results folder. docs/security.md.
    """
    own = manifest.get("kind") in OWN_KINDS or manifest.get("safetensors_only")
    return {"use_safetensors": True} if own else {}


def load_checkpoint(manifest_path: str | Path, *, with_attentions: bool = True, offline: bool,
                    attn_implementation: str = "eager", dtype: str = "float32"):
    """Load (tokenizer, model) of a checkpoint, with an attention implementation that returns maps: eager,
    or one registered for it (workflow_scripts/attention/capture.py), its weights as ``dtype`` (the model entry's
    ``dtype``: float32, bfloat16 or float16)."""
    import torch
    from transformers import AutoTokenizer

    manifest = read_manifest(manifest_path)
    kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        kwargs["revision"] = manifest["revision"]
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **kwargs)
    # Fused (SDPA/flash) kernels return no attention weights: eager, or the capture function (METHODS 1).
    model = load_pretrained("base", manifest["load_from"], attn_implementation=attn_implementation, **kwargs,
                            dtype=getattr(torch, dtype), **weights_options(manifest))
    model.eval()
    return tokenizer, model


def make_pretrained(model: str, location: str, directory: str | Path, revision: str | None = None) -> Path:
    """The pretrained checkpoint is the configured model itself; only its manifest is written."""
    return write_manifest(directory, model=model, name="pretrained", load_from=location, revision=revision)


def make_random(model: str, location: str, directory: str | Path, seed: int, *,
                revision: str | None = None, offline: bool) -> Path:
    """Save the model's architecture with weights re-initialised from ``seed``, and its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": offline}
    if revision:
        kwargs["revision"] = revision
    config = AutoConfig.from_pretrained(location, **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
    torch.manual_seed(seed)
    random_model = from_config("base", config, attn_implementation="eager", dtype=torch.float32)
    weights = clear_weights(directory)
    # The manifest is written last, so an interrupted save leaves no checkpoint a rerun trusts.
    random_model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    log.info("random-init %s (seed %d) saved to %s", model, seed, weights)
    return write_manifest(directory, model=model, name="random", load_from=weights, init_seed=seed)
