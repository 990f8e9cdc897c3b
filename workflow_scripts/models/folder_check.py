"""A model folder is what it claims: its tokenizer is there and fits its config, its weights are of its architecture.

Tried on 2026-11-27: a folder with weights and ``config.json`` but no tokenizer files ran the whole study with every
word ``[UNK]`` (transformers builds a tokenizer of five special tokens), and ``model_type: gpt2`` over BERT's weights
ran it as a randomly initialised GPT-2: plausible tables, wrong science. So before any job (the config checks,
``workflow_scripts/study/checks/semantics.py``) a local folder is read for what it claims, without torch or
transformers (files, JSON and safetensors headers only, in milliseconds):

- a tokenizer: ``tokenizer.json``, ``vocab.txt``, ``vocab.json`` with ``merges.txt``, or a SentencePiece model;
- its size against ``config.json``'s ``vocab_size``: no token past the embedding, and not a tokenizer of another
  vocabulary (fewer than half the rows); the special token ids of ``config.json`` inside the vocabulary;
- the weights (``*.safetensors`` headers, read by the safetensors library: names and shapes, no tensor): an
  embedding of ``vocab_size`` rows, and, for a model type of a declared family (``models/families.py``), its first
  and last layer's attention weights where the family's layout puts them (the layers: ``models/shape.py``).

A folder of ``pytorch_model.bin`` weights only is checked for its tokenizer; its weights are checked when the
pretrained checkpoint loads them (``models/checkpoints.py``: a base-model weight missing or newly initialised is
refused there). The model card records what was checked (``folder_check``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .families import family_of
from .shape import ModelShape, weight_shapes

SENTENCEPIECE = ("spiece.model", "sentencepiece.bpe.model", "tokenizer.model")
SPECIAL_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id",
               "decoder_start_token_id")


class FolderCheck:
    """What a model folder was found to hold: ``problems`` (each one line) and ``checked`` (for the card)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.checked: list[str] = []


def check_model_folder(directory: str | Path, *, read_bin: bool = False) -> FolderCheck:
    """``read_bin``: also read the names and shapes of ``pytorch_model*.bin`` weights (torch, memory-mapped: the
    model card's job), where the config checks read safetensors headers only."""
    directory = Path(directory)
    result = FolderCheck()
    config_file = directory / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:  # a damaged or hand-edited file: where, so that it can be mended
        result.problems.append(f"{config_file} is not valid JSON (line {error.lineno}, column {error.colno}: "
                               f"{error.msg}); mend it, or save the config again with "
                               "model.config.save_pretrained(DIR)")
        return result
    except UnicodeDecodeError as error:
        result.problems.append(f"{config_file} is not UTF-8 text ({error.reason} at byte {error.start}); save the "
                               "config again with model.config.save_pretrained(DIR)")
        return result
    if not isinstance(config, dict):
        result.problems.append(f"{config_file} holds a JSON {type(config).__name__}, not the object of a model's "
                               "config; save the config again with model.config.save_pretrained(DIR)")
        return result
    vocab = config.get("vocab_size")
    vocab = vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None
    _check_tokenizer(directory, vocab, result)
    for key in SPECIAL_IDS:
        value = config.get(key)
        ids = value if isinstance(value, list) else [value]
        if vocab and any(isinstance(i, int) and not isinstance(i, bool) and not 0 <= i < vocab for i in ids):
            result.problems.append(f"config.json's {key} {value} is outside its vocabulary (vocab_size {vocab})")
    try:
        shapes = weight_shapes(directory)
        if shapes is None and read_bin:
            shapes = _bin_shapes(directory)
    except Exception as error:  # noqa: BLE001 - a damaged or foreign file, whatever its reader raises
        result.problems.append(f"its safetensors weights cannot be read ({type(error).__name__}: {error})")
        return result
    if shapes is None:
        result.checked.append("weights: not read (no safetensors; the model card's job reads pytorch_model.bin)")
        return result
    if vocab and not any(len(shape) == 2 and shape[0] == vocab for shape in shapes.values()):
        result.problems.append(f"no weight has vocab_size ({vocab}) rows: the weights are not of the model "
                               "config.json describes")
    family = family_of(config.get("model_type"))
    layers = ModelShape.from_config(config).layers
    if family.weight_pattern and layers:
        wanted = [family.weight_pattern.format(layer=layer) for layer in sorted({0, layers - 1})]
        absent = [name for name in wanted if not any(n == name or n.endswith("." + name) for n in shapes)]
        if absent:
            example = next(iter(sorted(shapes)), "none")
            result.problems.append(
                f"config.json declares model_type {config.get('model_type')!r} with {layers} layers, but the "
                f"weights have no {' and no '.join(absent)} (their first weight: {example}): they are of another "
                "architecture, and would be ignored and the model initialised at random")
        else:
            result.checked.append(f"weights: {len(shapes)} tensors, layers 0 and {layers - 1} of the "
                                  f"{family.name} layout")
    else:
        result.checked.append(f"weights: {len(shapes)} tensors")
    return result


def folder_problem(name: str, key: str, directory: str | Path) -> str | None:
    """One message for the config checks, naming the model, its folder, what is wrong and the fix; None if fine."""
    check = check_model_folder(directory)
    if not check.problems:
        return None
    return (f"config key '{key}': model {name!r} in {directory} is not what it claims: "
            + "; ".join(check.problems) + ". Fix: use the folder the model was saved to as a whole "
            "(model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR)), or copy the missing or matching files "
            "into it")


def _check_tokenizer(directory: Path, vocab: int | None, result: FolderCheck) -> None:
    size, source = _tokenizer_size(directory)
    if source is None:
        result.problems.append(
            "it has no tokenizer (none of tokenizer.json, vocab.txt, vocab.json with merges.txt, or a SentencePiece "
            "model): transformers would build one of a few special tokens, and every word would be unknown")
        return
    if size is None or vocab is None:
        result.checked.append(f"tokenizer: {source}")
        return
    if size > vocab:
        result.problems.append(f"its tokenizer ({source}) has {size} tokens, more than config.json's vocab_size "
                               f"{vocab}: ids past {vocab - 1} have no embedding")
    elif size < vocab // 2:
        result.problems.append(f"its tokenizer ({source}) has {size} tokens for config.json's vocab_size {vocab}: "
                               "it is the tokenizer of another vocabulary")
    else:
        result.checked.append(f"tokenizer: {source}, {size} tokens for vocab_size {vocab}")


def _tokenizer_size(directory: Path) -> tuple[int | None, str | None]:
    """(number of tokens or None where it cannot be counted without the tokenizer's library, the file read)."""
    added = _added_tokens(directory)
    if (directory / "tokenizer.json").is_file():
        data = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
        vocab = (data.get("model") or {}).get("vocab")
        ids = set(vocab.values()) if isinstance(vocab, dict) else set(range(len(vocab))) if vocab else set()
        ids |= {t.get("id") for t in data.get("added_tokens") or [] if isinstance(t, dict)}
        return (max(len(ids), max(ids, default=-1) + 1) if ids else None), "tokenizer.json"
    if (directory / "vocab.txt").is_file():
        lines = (directory / "vocab.txt").read_text(encoding="utf-8").splitlines()
        return len(lines) + added, "vocab.txt"
    if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        return len(json.loads((directory / "vocab.json").read_text(encoding="utf-8"))) + added, "vocab.json"
    found = next((name for name in SENTENCEPIECE if (directory / name).is_file()), None)
    return None, found


def _added_tokens(directory: Path) -> int:
    path = directory / "added_tokens.json"
    try:
        return len(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else 0
    except (OSError, ValueError):
        return 0


def _bin_shapes(directory: Path) -> dict[str, list[int]] | None:
    files = sorted(directory.glob("pytorch_model*.bin"))
    if not files:
        return None
    import torch

    shapes: dict[str, list[int]] = {}
    for path in files:
        state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        shapes.update({name: list(tensor.shape) for name, tensor in state.items()})
    return shapes
