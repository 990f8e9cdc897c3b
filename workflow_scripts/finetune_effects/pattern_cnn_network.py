"""The pattern CNN's network and its files: weights in safetensors, what they are in JSON beside them.

A trained CNN is two files: ``pattern_cnn.safetensors`` (the state dict, tensors only) and
``pattern_cnn.json`` (the class names, the input channels and size, the training settings). Neither
format can run code when read, so a file planted in a shared results folder can at worst give wrong
weights, never run in the job that loads it (docs/security.md). The CNN was a ``torch.save`` pickle
(``pattern_cnn.pt``) before; such a file, under any name, is refused with its name and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from ..core.io import atomic_path, write_json
from .pattern_rules import CLASSES

CHANNELS = 3
FILE_FORMAT = "attention-atlas pattern CNN"
FILE_VERSION = 1


def build_cnn(n_classes: int = len(CLASSES), channels: int = CHANNELS, width: int = 16):
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2 * width, 4 * width, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, n_classes),
    )


def info_path(weights_path: str | Path) -> Path:
    """The JSON file that describes the weights at ``weights_path`` (same name, suffix .json)."""
    return Path(weights_path).with_suffix(".json")


def save_cnn(network, weights_path: str | Path, **info: Any) -> None:
    """Write the weights (safetensors) and, beside them, the classes and ``info`` (JSON: plain values only)."""
    from safetensors.torch import save_file

    weights_path = Path(weights_path)
    if weights_path.suffix == ".json":
        raise AtlasError(f"{weights_path}: the CNN's weights need a name of their own, its JSON goes beside them")
    tensors = {name: tensor.detach().contiguous() for name, tensor in network.state_dict().items()}
    with atomic_path(weights_path) as tmp:
        save_file(tensors, str(tmp))
    write_json({"format": FILE_FORMAT, "version": FILE_VERSION, "classes": list(CLASSES), **info},
               info_path(weights_path))


def _refuse(path: Path, problem: str) -> AtlasError:
    return AtlasError(f"{path}: {problem}; the pattern CNN is read only as safetensors weights with a JSON "
                      "description beside them (a pickle, such as an older pattern_cnn.pt, is never loaded: it "
                      "can run code); delete the file and rerun snakemake to retrain the CNN")


def read_info(weights_path: str | Path) -> dict[str, Any]:
    """The JSON description of a saved CNN, checked: its format, class names, channels and input size."""
    path = info_path(weights_path)
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _refuse(path, f"unreadable pattern CNN description ({exc})") from exc
    if not isinstance(info, dict) or info.get("format") != FILE_FORMAT:
        raise _refuse(path, f"not a pattern CNN description (no \"format\": \"{FILE_FORMAT}\")")
    classes = info.get("classes")
    if not (isinstance(classes, list) and classes and all(isinstance(c, str) for c in classes)):
        raise _refuse(path, f"'classes' must be a list of class names, got {classes!r}")
    for key in ("channels", "size"):
        value = info.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _refuse(path, f"{key!r} must be a positive integer, got {value!r}")
    return info


def load_cnn(weights_path: str | Path):
    """(network in eval mode, its JSON description) of a CNN written by :func:`save_cnn`.

    The weights are parsed by safetensors (tensors only) and must fit the network the description
    names exactly; anything else (a pickle, a truncated file, other shapes) raises AtlasError.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights_path = Path(weights_path)
    try:
        tensors = load_file(str(weights_path), device="cpu")
    except (OSError, SafetensorError) as exc:
        raise _refuse(weights_path, f"not a pattern CNN in safetensors format ({exc})") from exc
    info = read_info(weights_path)
    network = build_cnn(len(info["classes"]), info["channels"])
    try:
        network.load_state_dict(tensors, strict=True)
    except RuntimeError as exc:
        raise _refuse(weights_path, f"weights that do not fit the network its description names ({exc})") from exc
    network.eval()
    return network, info
