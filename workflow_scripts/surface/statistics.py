"""Surface patterns of every head (METHODS 7.1, [C] §3), token level.

For every head, averaged over all tokens (attention rows) of all examples of a dump:

- ``prev`` / ``self`` / ``next``: attention to the previous, same and next token (the first
  token has no previous one and the last no next one: they add 0, but count as tokens);
- ``cls``: attention to the first special token of the example;
- ``sep``: attention to the separators (the other special tokens; with the tokenizer's
  ``sep_token_id`` known, only the special tokens with that id);
- ``period`` / ``comma``: attention to non-special tokens whose text, stripped of word
  markers (``Ġ``, ``▁``, ``##``), is exactly ``.`` / ``,``;
- ``entropy``: mean entropy (nats) of the attention rows; ``cls_entropy``: the entropy of the
  first special token's row alone, averaged over examples.

Special tokens come from the token table's ``special`` flag (the tokenizer's
``special_tokens_mask``), never from the strings ``[CLS]``/``[SEP]``. Every value is a ratio of
per-example sums (numerator: the example's summed attention share or entropy; denominator:
its number of tokens, or 1 for ``cls_entropy``), so its 95% interval resamples examples
(METHODS 10, :func:`workflow_scripts.stats.ratio_bootstrap_ci`). The dump is streamed one row
group at a time; every statistic is computed for all heads of an example at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import read_csv, write_csv
from ..core.stats import ratio_bootstrap_ci

log = logging.getLogger(__name__)

# Shares of attention (each a mean over attention rows of the weight on some target tokens).
SHARES = ("prev", "self", "next", "cls", "sep", "period", "comma")
# Every per-head statistic, in output order.
STATISTICS = (*SHARES, "entropy", "cls_entropy")
WORD_MARKERS = ("Ġ", "▁", "##")
TINY = np.float32(1e-30)


def _plogp_of_every_float16() -> np.ndarray:
    """p log p (float32, 0 log 0 = 0) for each of the 65536 float16 bit patterns.

    The maps are stored as float16, so looking p log p up by bit pattern gives exactly what
    computing it in float32 gives, at half the cost of a logarithm per value.
    """
    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf patterns never occur in maps
        return values * np.log(np.maximum(values, TINY))


PLOGP_FLOAT16 = _plogp_of_every_float16()


def token_text(token: str) -> str:
    """A token's text without a leading word marker (``Ġ,`` -> ``,``, ``##s`` -> ``s``)."""
    for marker in WORD_MARKERS:
        if token.startswith(marker) and len(token) > len(marker):
            return token[len(marker):]
    return token


@dataclass
class TokenRoles:
    """Which tokens of one example are the first special token, separators, periods, commas."""

    n_tokens: int
    cls: int  # position of the first special token, -1 if the example has none
    sep: np.ndarray  # bool (T,)
    period: np.ndarray  # bool (T,)
    comma: np.ndarray  # bool (T,)


def token_roles(tokens: Iterable[str], special: np.ndarray, input_ids: np.ndarray | None = None,
                sep_token_id: int | None = None) -> TokenRoles:
    """Roles of the tokens of one example, from the special-token flag (and the tokenizer's ids)."""
    special = np.asarray(special, dtype=bool)
    text = np.array([token_text(str(t)) for t in tokens], dtype=object)
    positions = np.flatnonzero(special)
    cls = int(positions[0]) if len(positions) else -1
    sep = special.copy()
    if cls >= 0:
        sep[cls] = False
    if sep_token_id is not None and input_ids is not None:
        sep &= np.asarray(input_ids) == sep_token_id
    ordinary = ~special
    return TokenRoles(len(special), cls, sep, ordinary & (text == "."), ordinary & (text == ","))


def read_token_roles(token_table: str | Path, sep_token_id: int | None = None,
                     example_ids: Iterable[int] | None = None) -> dict[int, TokenRoles]:
    """Token roles of every example of a token table (or of ``example_ids`` only)."""
    columns = ["example_id", "token_index", "token", "input_id", "special"]
    try:
        table = pq.read_table(token_table, columns=columns)
    except (OSError, KeyError, ValueError) as exc:
        raise AtlasError(f"{token_table}: cannot read token table columns {columns} ({exc}); rerun snakemake "
                         "to rebuild it") from exc
    example = table["example_id"].to_numpy()
    if len(example) == 0:
        return {}
    index = table["token_index"].to_numpy()
    tokens = np.asarray(table["token"].to_pylist(), dtype=object)
    input_ids = table["input_id"].to_numpy()
    special = table["special"].to_numpy(zero_copy_only=False)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(example)) + 1, [len(example)]])
    wanted = None if example_ids is None else {int(i) for i in example_ids}
    roles = {}
    for start, end in zip(bounds[:-1], bounds[1:]):
        example_id = int(example[start])
        if wanted is not None and example_id not in wanted:
            continue
        if not np.array_equal(index[start:end], np.arange(end - start)):
            raise AtlasError(f"{token_table}: the tokens of example {example_id} are not stored in order "
                             "0..T-1; rebuild the token table")
        roles[example_id] = token_roles(tokens[start:end], special[start:end], input_ids[start:end],
                                        sep_token_id)
    return roles


def example_statistics(attention: np.ndarray, roles: TokenRoles) -> np.ndarray:
    """Per-head sums over the rows of one example: (len(STATISTICS), layers, heads), float64.

    Shares and ``entropy`` are summed over the example's T rows (divide by T for its mean);
    ``cls_entropy`` is the entropy of the first special token's row (0 if it has none).
    """
    maps = np.asarray(attention, dtype=np.float32)  # (L, H, T, T)
    if maps.shape[-1] != roles.n_tokens or maps.shape[-2] != roles.n_tokens:
        raise AtlasError(f"attention maps of shape {maps.shape} do not match the {roles.n_tokens} tokens of the "
                         "token table; the token table and the dump are out of step, rerun snakemake")
    received = maps.sum(axis=2)  # (L, H, T): attention each token receives, summed over rows
    if attention.dtype == np.float16:  # the stored maps: a table lookup, bit for bit the same values
        plogp = PLOGP_FLOAT16[np.ascontiguousarray(attention).view(np.uint16)]
    else:
        plogp = maps * np.log(np.maximum(maps, TINY))  # 0 log 0 = 0
    out = np.empty((len(STATISTICS), *maps.shape[:2]), dtype=np.float64)
    out[0] = np.diagonal(maps, offset=-1, axis1=2, axis2=3).sum(-1)
    out[1] = np.diagonal(maps, offset=0, axis1=2, axis2=3).sum(-1)
    out[2] = np.diagonal(maps, offset=1, axis1=2, axis2=3).sum(-1)
    out[3] = received[..., roles.cls] if roles.cls >= 0 else 0.0
    out[4] = received @ roles.sep.astype(np.float32)
    out[5] = received @ roles.period.astype(np.float32)
    out[6] = received @ roles.comma.astype(np.float32)
    out[7] = -plogp.sum(axis=(2, 3))
    out[8] = -plogp[..., roles.cls, :].sum(-1) if roles.cls >= 0 else 0.0
    return out


class SurfaceAccumulator:
    """Per-example sums of every statistic, collected while a dump streams by."""

    def __init__(self, num_layers: int, num_heads: int) -> None:
        self.num_layers, self.num_heads = num_layers, num_heads
        self.ids: list[int] = []
        self.sums: list[np.ndarray] = []  # one (STATISTICS, L*H) array per example
        self.tokens: list[int] = []
        self.has_cls: list[bool] = []
        self.log_tokens = 0.0  # sum over rows of log(T): the entropy of uniform attention
        self.log_tokens_cls = 0.0  # sum over examples with a first special token of log(T)

    def add(self, example_id: int, attention: np.ndarray, roles: TokenRoles) -> None:
        if attention.shape[:2] != (self.num_layers, self.num_heads):
            raise AtlasError(f"example {example_id}: maps of shape {attention.shape}, expected "
                             f"{self.num_layers} layers x {self.num_heads} heads")
        self.ids.append(int(example_id))
        self.sums.append(example_statistics(attention, roles).reshape(len(STATISTICS), -1))
        self.tokens.append(roles.n_tokens)
        self.has_cls.append(roles.cls >= 0)
        self.log_tokens += roles.n_tokens * float(np.log(max(roles.n_tokens, 1)))
        self.log_tokens_cls += float(np.log(max(roles.n_tokens, 1))) if roles.cls >= 0 else 0.0

    def __len__(self) -> int:
        return len(self.ids)

    def frame(self, *, resamples: int, seed: int) -> pd.DataFrame:
        """One row per head: estimates, 95% intervals over examples, counts."""
        if not self.ids:
            raise AtlasError("no example was analysed: the dump is empty")
        order = np.argsort(self.ids, kind="stable")  # resampling is independent of storage order
        sums = np.stack(self.sums)[order]  # (examples, STATISTICS, K)
        tokens = np.asarray(self.tokens, dtype=np.float64)[order]
        has_cls = np.asarray(self.has_cls, dtype=np.float64)[order]
        layer, head = np.divmod(np.arange(self.num_layers * self.num_heads), self.num_heads)
        frame = pd.DataFrame({"layer": layer, "head": head})
        # Two bootstrap calls (one per denominator), every statistic and head at once; the same seed
        # draws the same resamples of examples for all of them.
        per_token = STATISTICS.index("cls_entropy")
        k = sums.shape[2]
        results = [ratio_bootstrap_ci(sums[:, :per_token].reshape(len(sums), -1), tokens, resamples=resamples,
                                      seed=seed),
                   ratio_bootstrap_ci(sums[:, per_token], has_cls, resamples=resamples, seed=seed)]
        estimate, low, high = (np.concatenate([np.reshape(r[i], (-1, k)) for r in results]) for i in range(3))
        intervals = {}
        for s, name in enumerate(STATISTICS):
            frame[name] = estimate[s]
            intervals[f"{name}_low"], intervals[f"{name}_high"] = low[s], high[s]
        frame["n_tokens"] = int(tokens.sum())
        frame["n_examples"] = len(tokens)
        frame["uniform_entropy"] = self.log_tokens / tokens.sum()
        frame["uniform_cls_entropy"] = self.log_tokens_cls / has_cls.sum() if has_cls.sum() else np.nan
        for name, values in intervals.items():
            frame[name] = values
        frame["bootstrap_resamples"] = resamples
        frame["bootstrap_seed"] = seed
        return frame


def surface_statistics(dump_dir: str | Path, roles: Mapping[int, TokenRoles], *, resamples: int, seed: int,
                       limit: int | None = None) -> pd.DataFrame:
    """Surface statistics of every head of one dump (streamed), one row per (layer, head)."""
    from ..attention.reader import AttentionDump

    dump = AttentionDump(dump_dir)
    accumulator = SurfaceAccumulator(dump.num_layers, dump.num_heads)
    for example in dump.iter_examples():
        try:
            example_roles = roles[example.example_id]
        except KeyError:
            raise AtlasError(f"example {example.example_id} of the dump {dump_dir} is not in the token table; "
                             "the token table and the dump are out of step, rerun snakemake") from None
        accumulator.add(example.example_id, example.attention, example_roles)
        if limit is not None and len(accumulator) >= limit:
            break
    log.info("surface statistics of %s: %d examples, %d tokens", dump_dir, len(accumulator),
             sum(accumulator.tokens))
    return accumulator.frame(resamples=resamples, seed=seed)


def surface_heads(dump_manifest: str | Path, token_table: str | Path, output: str | Path, *, model: str,
                  checkpoint: str, corpus: str, split: str, sep_token_id: int | None = None,
                  resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``surface_heads.csv``."""
    roles = read_token_roles(token_table, sep_token_id)
    frame = surface_statistics(Path(dump_manifest).parent, roles, resamples=resamples, seed=seed)
    frame.insert(0, "checkpoint", checkpoint)
    frame.insert(0, "model", model)
    frame["corpus"], frame["split"] = corpus, split
    write_csv(frame, output)
    return frame


def separator_token_id(checkpoint_manifest: str | Path, offline: bool) -> int | None:
    """The tokenizer's ``sep_token_id`` of a checkpoint (None if it defines none)."""
    from transformers import AutoTokenizer

    from ..models.checkpoints import read_manifest

    manifest = read_manifest(checkpoint_manifest)
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], local_files_only=offline)
    return tokenizer.sep_token_id


def concat_parts(parts: Iterable[str | Path], output: str | Path, sort: list[str]) -> pd.DataFrame:
    """Concatenate per-checkpoint CSV parts into one study table."""
    frames = [read_csv(path) for path in parts]
    if not frames:
        raise AtlasError(f"{output}: no part tables to combine (no model and checkpoint was analysed)")
    frame = pd.concat(frames, ignore_index=True).sort_values(sort, kind="stable").reset_index(drop=True)
    write_csv(frame, output)
    return frame
