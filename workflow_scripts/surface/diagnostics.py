"""Head diagnostics on synthetic token sequences: attention sinks, previous-token, induction and duplicate-token heads.

The model reads ``sequences`` rows of ``2 * length`` token ids in four kinds:

- ``natural``: the first 2L tokens of the surface corpus's examples that have as many (Gu et al. 2025's natural
  text, cut to the same length as the others);
- ``random``: 2L random ids (Gu et al.'s "random tokens"; its induction and duplicate scores are chance);
- ``random_repeated``: L random ids, then the same L again (Olsson et al. 2022's repeated random tokens);
- ``one_token``: one random id repeated 2L times (Gu et al.'s "repeated tokens").

The drawn ids (seeded) come from the configured id range, special tokens left out. Each row gets the special
tokens ``prepend_bos`` says: null as the model's tokenizer adds them to a sequence
(its template: [CLS] ... [SEP] for BERT, nothing for GPT-2, BOS for Llama), true one BOS
(or [CLS]) token first, false none. With ``o`` the position of the first drawn id, per head and row:

- ``first_token``: the mean over queries i >= 1 of A[i, 0] (alpha_1; a head with alpha_1 above the sink threshold,
  0.3 in Gu et al., is a sink head);
- ``previous_token``: the mean over queries i >= 1 of A[i, i - 1];
- ``induction``: the mean over the second copy's positions i of A[i, i - L + 1] (the token after the current
  token's earlier occurrence: prefix matching);
- ``duplicate``: the same of A[i, i - L] (the earlier occurrence itself).

Every score is a mean over rows with its 95% bootstrap interval over rows, and the mean over each half of the rows
(``{score}_half_a``: rows 0, 2, 4 ...; ``_half_b``: rows 1, 3, 5 ...), which head_diagnostics_halves.csv keeps for the
split-half floor of tables/role_agreement.csv (docs/roles.md).

The sink rate follows Gu et al.'s released code (``eval_sink_open_source.py``, ``compute_attention_sink``), the only
way to compare with their Table 1: per row and head, alpha is the mean over *every* query i >= 0 of A[i, 0] (query 0,
which a causal model can only send to itself, included), and the rate is the percentage of (row, layer, head)
triples whose alpha exceeds the threshold: ``sink_share`` per head, ``sink_rate`` per layer and model. The paper's text
and the issue define alpha_1 over queries i >= 1 and count heads; ``sink_rate_mean_alpha`` is that: the percentage of
heads whose mean ``first_token`` exceeds the threshold.
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
from .statistics import read_example_columns

log = logging.getLogger(__name__)

NATURAL = "natural"
KINDS = (NATURAL, "random", "random_repeated", "one_token")
SCORES = ("first_token", "previous_token", "induction", "duplicate")
HALVES = (("a", 0), ("b", 1))  # the rows of each half: every other row, from the first and from the second
HALF_KEY = ["model", "checkpoint", "input", "layer", "head"]


@dataclass(frozen=True)
class Settings:
    sequences: int
    length: int
    seed: int
    token_range: tuple[int, int] | None  # [low, high) of the ids drawn; None: the tokenizer's whole vocabulary
    prepend_bos: bool | None
    batch_size: int
    sink_threshold: float = 0.3


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


def natural_rows(token_table: str | Path, tokenizer: Any, sequences: int, length: int,
                 prepend_bos: bool | None) -> tuple[np.ndarray, int]:
    """The first ``2 * length`` tokens (after the special tokens the others get in front) of the first ``sequences``
    examples of a token table that have as many, as the model's input ids; and the position of the first text token.
    """
    rows = []
    for columns in read_example_columns(token_table, ["input_id", "special"]).values():
        text = columns["input_id"][~columns["special"]]  # the text's tokens; special tokens are added as for the others
        if len(text) >= 2 * length:
            rows.append(text[:2 * length])
        if len(rows) == sequences:
            break
    if not rows:
        return np.zeros((0, 2 * length), np.int64), 0
    return with_special_tokens(tokenizer, np.asarray(rows), prepend_bos)


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
        # Gu et al.'s code: every query, the first included (its alpha of the first token).
        "first_token_all_queries": attention[..., :, 0].mean(axis=-1, dtype=np.float64),
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


def diagnose(tokenizer: Any, model: Any, settings: Settings, *, resamples: int, bootstrap_seed: int,
             natural_tokens: str | Path | None = None) -> pd.DataFrame:
    """One row per (input kind, layer, head): every score with its 95% interval over rows, the share of rows in
    which the head is a sink (Gu et al.'s code), and the settings. ``natural_tokens``: the token table of the
    natural text (none: no ``natural`` rows)."""
    rng = np.random.default_rng(settings.seed)
    candidates = candidate_ids(tokenizer, settings.token_range)
    frames = []
    for kind in KINDS:
        if kind == NATURAL:
            if natural_tokens is None:
                continue
            input_ids, offset = natural_rows(natural_tokens, tokenizer, settings.sequences, settings.length,
                                             settings.prepend_bos)
            if len(input_ids) < 2:  # no interval from one sequence
                log.warning("natural text left out: %d example(s) of %s have %d tokens of text; lower "
                            "surface.diagnostics.length or use longer texts", len(input_ids), natural_tokens,
                            2 * settings.length)
                continue
        else:
            input_ids, offset = with_special_tokens(
                tokenizer, token_rows(kind, candidates, settings.sequences, settings.length, rng),
                settings.prepend_bos)
        parts = [sequence_scores(maps, offset, settings.length)
                 for maps in attention_batches(model, input_ids, settings.batch_size)]
        scores = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
        scores["sink_share"] = (scores.pop("first_token_all_queries") > settings.sink_threshold).astype(np.float64)
        layers, heads = scores["first_token"].shape[1:]
        layer, head = np.divmod(np.arange(layers * heads), heads)
        frame = pd.DataFrame({"input": kind, "layer": layer, "head": head})
        ones = np.ones(len(input_ids))
        for name in (*SCORES, "sink_share"):
            estimate, low, high = ratio_bootstrap_ci(scores[name].reshape(len(input_ids), -1), ones,
                                                     resamples=resamples, seed=bootstrap_seed)
            frame[name], frame[f"{name}_low"], frame[f"{name}_high"] = estimate, low, high
        frame["n_sequences"], frame["tokens_per_sequence"] = len(input_ids), input_ids.shape[1]
        for half, start in HALVES:
            rows = scores["first_token"][start::2]
            for name in SCORES:
                frame[f"{name}_half_{half}"] = scores[name][start::2].reshape(len(rows), -1).mean(axis=0)
            frame[f"n_sequences_half_{half}"] = len(rows)
        frames.append(frame)
        log.info("%s: %d sequences of %d tokens", kind, len(input_ids), input_ids.shape[1])
    out = pd.concat(frames, ignore_index=True)
    low, high = settings.token_range or (0, len(tokenizer))
    prepend = "tokenizer" if settings.prepend_bos is None else str(settings.prepend_bos).lower()
    out = out.assign(sequences=settings.sequences, length=settings.length, seed=settings.seed, token_low=low,
                     token_high=high, candidate_ids=len(candidates), prepend_bos=prepend,
                     sink_threshold=settings.sink_threshold, bootstrap_resamples=resamples,
                     bootstrap_seed=bootstrap_seed)
    return out


def half_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of the half scores (``{score}_half_a`` ...): head_diagnostics_halves.csv's, not the main table's."""
    return [column for column in frame.columns if "_half_" in column]


def write_diagnostics_part(checkpoint_manifest: str | Path, output: str | Path, *, model: str, checkpoint: str,
                           settings: Settings, resamples: int, bootstrap_seed: int, threads: int, offline: bool,
                           natural_tokens: str | Path | None = None, dtype: str = "float32",
                           halves_output: str | Path | None = None) -> pd.DataFrame:
    """The (model, checkpoint) part of head_diagnostics.csv (``output``), the model's weights as ``dtype`` (its
    entry's ``dtype``), and of head_diagnostics_halves.csv (``halves_output``)."""
    import torch

    from ..core.io import write_csv
    from ..models.checkpoints import load_checkpoint

    torch.set_num_threads(max(1, int(threads)))
    tokenizer, network = load_checkpoint(checkpoint_manifest, offline=offline, dtype=dtype)
    frame = diagnose(tokenizer, network, settings, resamples=resamples, bootstrap_seed=bootstrap_seed,
                     natural_tokens=natural_tokens)
    frame.insert(0, "checkpoint", checkpoint)
    frame.insert(0, "model", model)
    halves = half_columns(frame)
    write_csv(frame.drop(columns=halves), output)
    if halves_output is not None:
        write_csv(frame[HALF_KEY + halves], halves_output)
    return frame


def sink_rates(diagnostics: pd.DataFrame) -> pd.DataFrame:
    """Per (model, checkpoint, input) and layer ('all': the model): ``sink_rate``, Gu et al.'s code's percentage of
    (sequence, head) pairs whose first-token alpha over every query exceeds the threshold, and
    ``sink_rate_mean_alpha``, the percentage of heads whose mean alpha over queries i >= 1 does."""
    rows = []
    for (model, checkpoint, kind), group in diagnostics.groupby(["model", "checkpoint", "input"], sort=False):
        threshold = float(group["sink_threshold"].iloc[0])
        for layer, of_layer in [*group.groupby("layer"), ("all", group)]:
            rows.append({"model": model, "checkpoint": checkpoint, "input": kind, "layer": layer,
                         "heads": len(of_layer), "sink_rate": 100.0 * of_layer["sink_share"].mean(),
                         "sink_rate_mean_alpha": 100.0 * (of_layer["first_token"] > threshold).mean(),
                         "threshold": threshold, "n_sequences": int(of_layer["n_sequences"].iloc[0])})
    return pd.DataFrame(rows)
