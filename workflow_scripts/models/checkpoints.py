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
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from ..core.io import write_json

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


def write_manifest(directory: str | Path, *, model: str, name: str, load_from: str,
                   **extra: Any) -> Path:
    """Write ``checkpoint.json``; ``load_from`` is what ``from_pretrained`` should load."""
    manifest = {"model": model, "checkpoint": name, "load_from": str(load_from),
                **parse_checkpoint_name(name), **extra}
    path = Path(directory) / MANIFEST
    write_json(manifest, path)
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise AtlasError(f"{path}: unreadable checkpoint manifest ({exc}); delete it and rerun "
                         "snakemake to rebuild the checkpoint") from exc


def weights_options(manifest: dict[str, Any]) -> dict[str, Any]:
    """``from_pretrained`` options for a checkpoint's weights.

    The workflow's own checkpoints (random, fine-tuned) are saved as safetensors, so they are read as
    safetensors only: a pickle (``pytorch_model.bin``) left beside or instead of them in a shared results
    folder is never read. A pretrained model is read as its source ships it (transformers reads a ``.bin``
    with ``torch.load(weights_only=True)``, which builds tensors only). docs/security.md.
    """
    return {"use_safetensors": True} if manifest.get("kind") in ("random", "finetuned") else {}


def load_checkpoint(manifest_path: str | Path, *, with_attentions: bool = True, offline: bool,
                    attn_implementation: str = "eager"):
    """Load (tokenizer, model) of a checkpoint, with an attention implementation that returns maps: eager,
    or one registered for it (workflow_scripts/attention/capture.py)."""
    from transformers import AutoModel, AutoTokenizer

    manifest = read_manifest(manifest_path)
    kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        kwargs["revision"] = manifest["revision"]
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **kwargs)
    # Fused (SDPA/flash) kernels return no attention weights: eager, or the capture function (METHODS 1).
    model = AutoModel.from_pretrained(manifest["load_from"], attn_implementation=attn_implementation, **kwargs,
                                      **weights_options(manifest))
    model.eval()
    return tokenizer, model


def make_pretrained(model: str, location: str, directory: str | Path, revision: str | None = None) -> Path:
    """The pretrained checkpoint is the configured model itself; only its manifest is written."""
    return write_manifest(directory, model=model, name="pretrained", load_from=location, revision=revision)


def make_random(model: str, location: str, directory: str | Path, seed: int, *,
                revision: str | None = None, offline: bool) -> Path:
    """Save the model's architecture with weights re-initialised from ``seed``, and its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": offline}
    if revision:
        kwargs["revision"] = revision
    config = AutoConfig.from_pretrained(location, **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
    torch.manual_seed(seed)
    random_model = AutoModel.from_config(config, attn_implementation="eager")
    directory = Path(directory)
    weights = directory / "weights"
    # The manifest is written last, so an interrupted save leaves no checkpoint a rerun trusts.
    random_model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    log.info("random-init %s (seed %d) saved to %s", model, seed, weights)
    return write_manifest(directory, model=model, name="random", load_from=str(weights.resolve()),
                          init_seed=seed)
