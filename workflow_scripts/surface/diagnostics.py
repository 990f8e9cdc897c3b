"""Head diagnostics on synthetic token sequences: attention sinks, previous-token, induction and duplicate-token heads.

The model reads ``sequences`` rows of token ids drawn (seeded) from the configured id range, special tokens left
out, each of ``2 * length`` ids, in three kinds:

- ``random``: 2L random ids (Gu et al. 2025's "random tokens"; its induction and duplicate scores are chance);
- ``random_repeated``: L random ids, then the same L again (Olsson et al. 2022's repeated random tokens);
- ``one_token``: one random id repeated 2L times (Gu et al.'s "repeated tokens").

Each row gets the special tokens ``prepend_bos`` says: null as the model's tokenizer adds them to a sequence
(its template: [CLS] ... [SEP] for BERT, nothing for GPT-2, BOS for Llama), true one BOS
(or [CLS]) token first, false none. With ``o`` the position of the first drawn id, per head and row:

- ``first_token``: the mean over queries i >= 1 of A[i, 0] (alpha_1; a head with alpha_1 above the sink threshold,
  0.3 in Gu et al., is a sink head);
- ``previous_token``: the mean over queries i >= 1 of A[i, i - 1];
- ``induction``: the mean over the second copy's positions i of A[i, i - L + 1] (the token after the current
  token's earlier occurrence: prefix matching);
- ``duplicate``: the same of A[i, i - L] (the earlier occurrence itself).

Every score is a mean over rows with its 95% bootstrap interval over rows. ``sink_rates`` counts the sink heads per
layer and model, for each input kind and, from ``first_token.csv``, for natural text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.stats import ratio_bootstrap_ci

log = logging.getLogger(__name__)

KINDS = ("random", "random_repeated", "one_token")
SCORES = ("first_token", "previous_token", "induction", "duplicate")
NATURAL = "natural"


@dataclass(frozen=True)
class Settings:
    sequences: int
    length: int
    seed: int
    token_range: tuple[int, int] | None  # [low, high) of the ids drawn; None: the tokenizer's whole vocabulary
    prepend_bos: bool | None
    batch_size: int


def candidate_ids(tokenizer: Any, token_range: tuple[int, int] | None) -> np.ndarray:
    """The ids a row is drawn from: ``token_range`` (default the whole vocabulary) without the special tokens."""
    size = len(tokenizer)
    low, high = token_range if token_range is not None else (0, size)
    if not 0 <= low < high <= size:
        raise AtlasError(f"token id range [{low}, {high}) is not inside the tokenizer's vocabulary of {size} ids; "
                         "set surface.diagnostics.token_range to [LOW, HIGH) with 0 <= LOW < HIGH <= the size")
    ids = np.setdiff1d(np.arange(low, high), np.asarray(tokenizer.all_special_ids, dtype=int))
    if len(ids) == 0:
        raise AtlasError(f"token id range [{low}, {high}) holds special tokens only; widen "
                         "surface.diagnostics.token_range")
    return ids


def token_rows(kind: str, candidates: np.ndarray, sequences: int, length: int,
               rng: np.random.Generator) -> np.ndarray:
    """(sequences, 2 * length) drawn ids of one input kind."""
    if kind == "random":
        return rng.choice(candidates, size=(sequences, 2 * length))
    if kind == "random_repeated":
        first = rng.choice(candidates, size=(sequences, length))
        return np.concatenate([first, first], axis=1)
    if kind == "one_token":
        return np.repeat(rng.choice(candidates, size=(sequences, 1)), 2 * length, axis=1)
    raise ValueError(f"unknown input kind {kind!r} (one of {', '.join(KINDS)})")


def with_special_tokens(tokenizer: Any, rows: np.ndarray, prepend_bos: bool | None) -> tuple[np.ndarray, int]:
    """The model's input ids of every row, and the position of the first drawn id in them."""
    if prepend_bos is False:
        return rows.astype(np.int64), 0
    if prepend_bos is True:
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        if bos is None:
            raise AtlasError("the tokenizer has neither a BOS nor a [CLS] token to put first; set "
                             "surface.diagnostics.prepend_bos to false or null")
        return np.concatenate([np.full((len(rows), 1), bos), rows], axis=1).astype(np.int64), 1
    prefix, suffix = special_template(tokenizer)
    return np.concatenate([np.tile(prefix, (len(rows), 1)), rows, np.tile(suffix, (len(rows), 1))],
                          axis=1).astype(np.int64), len(prefix)


def special_template(tokenizer: Any) -> tuple[np.ndarray, np.ndarray]:
    """The special tokens the tokenizer puts before and after a single text (its post-processor's template), read
    from the special-tokens mask of a one-word text."""
    encoded = tokenizer("a", return_special_tokens_mask=True)
    ids, special = np.asarray(encoded["input_ids"]), np.asarray(encoded["special_tokens_mask"], dtype=bool)
    ordinary = np.flatnonzero(~special)
    if len(ordinary) == 0:
        raise AtlasError("the tokenizer marks every token of a text as special; set surface.diagnostics.prepend_bos "
                         "to true or false")
    return ids[:ordinary[0]], ids[ordinary[-1] + 1:]


def sequence_scores(attention: np.ndarray, offset: int, length: int) -> dict[str, np.ndarray]:
    """Every score of every row and head: attention (rows, layers, heads, T, T) -> score -> (rows, layers, heads)."""
    n = attention.shape[-1]
    queries = np.arange(1, n)
    second = np.arange(offset + length, offset + 2 * length)
    return {
        "first_token": attention[..., 1:, 0].mean(axis=-1, dtype=np.float64),
        "previous_token": attention[..., queries, queries - 1].mean(axis=-1, dtype=np.float64),
        "induction": attention[..., second, second - length + 1].mean(axis=-1, dtype=np.float64),
        "duplicate": attention[..., second, second - length].mean(axis=-1, dtype=np.float64),
    }


def attention_batches(model: Any, input_ids: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """The model's attention maps (rows, layers, heads, T, T), float32, ``batch_size`` rows at a time."""
    import torch

    with torch.inference_mode():
        for start in range(0, len(input_ids), batch_size):
            ids = torch.as_tensor(input_ids[start:start + batch_size])
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
            if not out.attentions or out.attentions[0] is None:
                raise AtlasError("the model returned no attention maps; it must be loaded with eager attention")
            yield torch.stack(out.attentions, dim=1).float().numpy()


def diagnose(tokenizer: Any, model: Any, settings: Settings, *, resamples: int, bootstrap_seed: int) -> pd.DataFrame:
    """One row per (input kind, layer, head): every score with its 95% interval over rows, and the settings."""
    rng = np.random.default_rng(settings.seed)
    candidates = candidate_ids(tokenizer, settings.token_range)
    frames = []
    for kind in KINDS:
        input_ids, offset = with_special_tokens(
            tokenizer, token_rows(kind, candidates, settings.sequences, settings.length, rng), settings.prepend_bos)
        parts = [sequence_scores(maps, offset, settings.length)
                 for maps in attention_batches(model, input_ids, settings.batch_size)]
        scores = {name: np.concatenate([part[name] for part in parts]) for name in SCORES}
        layers, heads = scores["first_token"].shape[1:]
        layer, head = np.divmod(np.arange(layers * heads), heads)
        frame = pd.DataFrame({"input": kind, "layer": layer, "head": head})
        ones = np.ones(len(input_ids))
        for name in SCORES:
            estimate, low, high = ratio_bootstrap_ci(scores[name].reshape(len(input_ids), -1), ones,
                                                     resamples=resamples, seed=bootstrap_seed)
            frame[name], frame[f"{name}_low"], frame[f"{name}_high"] = estimate, low, high
        frame["tokens_per_sequence"] = input_ids.shape[1]
        frames.append(frame)
        log.info("%s: %d sequences of %d tokens", kind, len(input_ids), input_ids.shape[1])
    out = pd.concat(frames, ignore_index=True)
    low, high = settings.token_range or (0, len(tokenizer))
    prepend = "tokenizer" if settings.prepend_bos is None else str(settings.prepend_bos).lower()
    out = out.assign(sequences=settings.sequences, length=settings.length, seed=settings.seed, token_low=low,
                     token_high=high, candidate_ids=len(candidates), prepend_bos=prepend,
                     bootstrap_resamples=resamples, bootstrap_seed=bootstrap_seed)
    return out


def head_diagnostics(checkpoint_manifest: str | Path, output: str | Path, *, model: str, checkpoint: str,
                     settings: Settings, resamples: int, bootstrap_seed: int, threads: int,
                     offline: bool) -> pd.DataFrame:
    """The (model, checkpoint) part of ``tables/head_diagnostics.csv`` (rule head_diagnostics_part)."""
    import torch

    from ..core.io import write_csv
    from ..models.checkpoints import load_checkpoint

    torch.set_num_threads(max(1, int(threads)))
    tokenizer, network = load_checkpoint(checkpoint_manifest, offline=offline)
    frame = diagnose(tokenizer, network, settings, resamples=resamples, bootstrap_seed=bootstrap_seed)
    frame.insert(0, "checkpoint", checkpoint)
    frame.insert(0, "model", model)
    write_csv(frame, output)
    return frame


def sink_rates(diagnostics: pd.DataFrame, natural: pd.DataFrame | None, threshold: float) -> pd.DataFrame:
    """The share of heads whose first-token attention exceeds ``threshold``, per (model, checkpoint, input) and
    layer ('all': the model), from the diagnostics and from first_token.csv (input 'natural')."""
    frames = [diagnostics[["model", "checkpoint", "input", "layer", "head", "first_token"]]]
    if natural is not None and len(natural):
        frames.append(natural[["model", "checkpoint", "layer", "head", "first_token"]].assign(input=NATURAL))
    heads = pd.concat(frames, ignore_index=True)
    heads["sink"] = heads["first_token"] > threshold
    rows = []
    for (model, checkpoint, kind), group in heads.groupby(["model", "checkpoint", "input"], sort=False):
        for layer, of_layer in [*group.groupby("layer"), ("all", group)]:
            rows.append({"model": model, "checkpoint": checkpoint, "input": kind, "layer": layer,
                         "heads": len(of_layer), "sink_heads": int(of_layer["sink"].sum()),
                         "sink_rate": 100.0 * of_layer["sink"].mean(), "threshold": threshold})
    return pd.DataFrame(rows)
