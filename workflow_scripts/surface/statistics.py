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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ..attention.partials import read_partials, write_partial
from ..attention.reader import AttentionDump
from ..attention.shards import shard_group_files
from ..core.errors import AtlasError
from ..core.io import read_metadata, read_rows, stack_csv_parts, write_csv
from ..core.stats import plogp, ratio_bootstrap_ci

log = logging.getLogger(__name__)

# Shares of attention (each a mean over attention rows of the weight on some target tokens).
SHARES = ("prev", "self", "next", "cls", "sep", "period", "comma")
# Every per-head statistic, in output order.
STATISTICS = (*SHARES, "entropy", "cls_entropy")
WORD_MARKERS = ("Ġ", "▁", "##")


def _plogp_of_every_float16() -> np.ndarray:
    """p log p (float32, 0 log 0 = 0) for each of the 65536 float16 bit patterns.

    The maps are stored as float16, so looking p log p up by bit pattern gives exactly what
    computing it in float32 gives, at half the cost of a logarithm per value.
    """
    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf patterns never occur in maps
        return plogp(values)


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


def read_example_columns(token_table: str | Path, columns: Sequence[str],
                         example_ids: Iterable[int] | None = None) -> dict[int, dict[str, np.ndarray]]:
    """``columns`` of every example of a token table, each example's tokens in order 0..T-1 (of ``example_ids``
    only: only their rows are read)."""
    wanted = ["example_id", "token_index", *[c for c in columns if c not in ("example_id", "token_index")]]
    example_ids = None if example_ids is None else [int(i) for i in example_ids]
    try:
        table = read_rows(token_table, wanted, example_ids)
    except (OSError, KeyError, ValueError) as exc:
        raise AtlasError(f"{token_table}: cannot read token table columns {wanted} ({exc}); rerun snakemake "
                         "to rebuild it") from exc
    example = table["example_id"].to_numpy()
    if len(example) == 0:
        return {}
    index = table["token_index"].to_numpy()
    values = {c: (np.asarray(table[c].to_pylist(), dtype=object) if c == "token"
                  else table[c].to_numpy(zero_copy_only=False)) for c in columns}
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(example)) + 1, [len(example)]])
    out = {}
    for start, end in zip(bounds[:-1], bounds[1:]):  # the read filter kept only example_ids' rows
        example_id = int(example[start])
        if not np.array_equal(index[start:end], np.arange(end - start)):
            raise AtlasError(f"{token_table}: the tokens of example {example_id} are not stored in order "
                             "0..T-1; rebuild the token table")
        out[example_id] = {c: v[start:end] for c, v in values.items()}
    return out


def read_token_roles(token_table: str | Path, sep_token_id: int | None = None,
                     example_ids: Iterable[int] | None = None) -> dict[int, TokenRoles]:
    """Token roles of every example of a token table (or of ``example_ids`` only: only their rows are read)."""
    examples = read_example_columns(token_table, ["token", "input_id", "special"], example_ids)
    return {example_id: token_roles(c["token"], c["special"], c["input_id"], sep_token_id)
            for example_id, c in examples.items()}


def _column_sums(maps: np.ndarray, columns: np.ndarray) -> np.ndarray | float:
    """Attention that each head sends to some columns (token positions), summed over all rows: (L, H)."""
    positions = np.flatnonzero(columns)
    if not len(positions):
        return 0.0
    return maps[..., positions].sum(axis=(2, 3), dtype=np.float32)


def _plogp_sums(attention: np.ndarray) -> np.ndarray:
    """sum over rows and columns of p log p for every head: (L, H), float32 sums."""
    if attention.dtype != np.float16:
        maps = attention.astype(np.float32, copy=False)
        return plogp(maps).sum(axis=(2, 3))
    # The stored maps: p log p looked up by bit pattern (bit for bit the float32 values), one layer at a
    # time into a buffer that stays in cache; neither the maps nor p log p are converted whole.
    bits = np.ascontiguousarray(attention).view(np.uint16)
    buffer = np.empty(bits.shape[1:], dtype=np.float32)
    sums = np.empty(bits.shape[:2], dtype=np.float32)
    for layer in range(bits.shape[0]):
        np.take(PLOGP_FLOAT16, bits[layer], out=buffer)
        sums[layer] = buffer.sum(axis=(1, 2))
    return sums


def example_statistics(attention: np.ndarray, roles: TokenRoles) -> np.ndarray:
    """Per-head sums over the rows of one example: (len(STATISTICS), layers, heads), float64.

    Shares and ``entropy`` are summed over the example's T rows (divide by T for its mean);
    ``cls_entropy`` is the entropy of the first special token's row (0 if it has none). Only the
    entropy reads every value of the maps; the shares read the diagonals and the columns of the
    tokens they count, so float16 maps are never converted whole (float32 sums throughout).
    """
    maps = np.asarray(attention)  # (L, H, T, T)
    if maps.shape[-1] != roles.n_tokens or maps.shape[-2] != roles.n_tokens:
        raise AtlasError(f"attention maps of shape {maps.shape} do not match the {roles.n_tokens} tokens of the "
                         "token table; the token table and the dump are out of step, rerun snakemake")
    out = np.empty((len(STATISTICS), *maps.shape[:2]), dtype=np.float64)
    for index, offset in enumerate((-1, 0, 1)):  # prev, self, next
        out[index] = np.diagonal(maps, offset=offset, axis1=2, axis2=3).sum(-1, dtype=np.float32)
    out[3] = maps[..., roles.cls].sum(-1, dtype=np.float32) if roles.cls >= 0 else 0.0
    out[4] = _column_sums(maps, roles.sep)
    out[5] = _column_sums(maps, roles.period)
    out[6] = _column_sums(maps, roles.comma)
    out[7] = -_plogp_sums(maps)
    out[8] = -_plogp_sums(maps[..., roles.cls:roles.cls + 1, :]) if roles.cls >= 0 else 0.0
    return out


class SurfaceAccumulator:
    """Per-example sums of every statistic, collected while a dump streams by."""

    def __init__(self, num_layers: int, num_heads: int) -> None:
        self.num_layers, self.num_heads = num_layers, num_heads
        self.ids: list[int] = []
        self.sums: list[np.ndarray] = []  # one (STATISTICS, L*H) array per example
        self.tokens: list[int] = []
        self.has_cls: list[bool] = []

    def add(self, example_id: int, attention: np.ndarray, roles: TokenRoles) -> None:
        if attention.shape[:2] != (self.num_layers, self.num_heads):
            raise AtlasError(f"example {example_id}: maps of shape {attention.shape}, expected "
                             f"{self.num_layers} layers x {self.num_heads} heads")
        self.ids.append(int(example_id))
        self.sums.append(example_statistics(attention, roles).reshape(len(STATISTICS), -1))
        self.tokens.append(roles.n_tokens)
        self.has_cls.append(roles.cls >= 0)

    def __len__(self) -> int:
        return len(self.ids)

    def table(self) -> pa.Table:
        """The per-example sums (a per-shard job's partial): one row per example, in reading order."""
        width = len(STATISTICS) * self.num_layers * self.num_heads
        sums = np.stack(self.sums).reshape(-1) if self.sums else np.zeros(0)
        return pa.table({"example_id": pa.array(self.ids, pa.int64()), "n_tokens": pa.array(self.tokens, pa.int64()),
                         "has_cls": pa.array(self.has_cls, pa.bool_()),
                         "sums": pa.FixedSizeListArray.from_arrays(pa.array(sums, pa.float64()), width)})

    def extend(self, table: pa.Table) -> None:
        """Add the examples of a partial written by :meth:`table` (the gather of per-shard jobs)."""
        width = self.num_layers * self.num_heads
        sums = table["sums"].combine_chunks().flatten().to_numpy()
        if sums.size != table.num_rows * len(STATISTICS) * width:
            raise AtlasError(f"a surface partial holds {sums.size} sums, expected {table.num_rows} examples x "
                             f"{len(STATISTICS)} statistics x {width} heads")
        self.ids.extend(table["example_id"].to_pylist())
        self.tokens.extend(table["n_tokens"].to_pylist())
        self.has_cls.extend(table["has_cls"].to_pylist())
        self.sums.extend(sums.reshape(table.num_rows, len(STATISTICS), width))

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
        # The entropy of uniform attention: log T per row (per first special token's row for cls_entropy).
        log_tokens = np.log(np.maximum(tokens, 1))
        frame["uniform_entropy"] = float((tokens * log_tokens).sum()) / tokens.sum()
        frame["uniform_cls_entropy"] = float((has_cls * log_tokens).sum()) / has_cls.sum() if has_cls.sum() else np.nan
        for name, values in intervals.items():
            frame[name] = values
        frame["bootstrap_resamples"] = resamples
        frame["bootstrap_seed"] = seed
        return frame


def _accumulate(dump: AttentionDump, roles: Mapping[int, TokenRoles], *, shards: list[str] | None = None,
                limit: int | None = None) -> SurfaceAccumulator:
    accumulator = SurfaceAccumulator(dump.num_layers, dump.num_heads)
    for example in dump.iter_examples(shards):
        try:
            example_roles = roles[example.example_id]
        except KeyError:
            raise AtlasError(f"example {example.example_id} of the dump {dump.directory} is not in the token table; "
                             "the token table and the dump are out of step, rerun snakemake") from None
        accumulator.add(example.example_id, example.attention, example_roles)
        if limit is not None and len(accumulator) >= limit:
            break
    log.info("surface statistics of %s%s: %d examples, %d tokens", dump.directory,
             f" ({', '.join(shards)})" if shards else "", len(accumulator), sum(accumulator.tokens))
    return accumulator


def surface_statistics(dump_dir: str | Path, roles: Mapping[int, TokenRoles], *, resamples: int, seed: int,
                       limit: int | None = None) -> pd.DataFrame:
    """Surface statistics of every head of one dump (streamed in one process), one row per (layer, head)."""
    return _accumulate(AttentionDump(dump_dir), roles, limit=limit).frame(resamples=resamples, seed=seed)


def write_labelled_part(frame: pd.DataFrame, output: str | Path, *, model: str, checkpoint: str, corpus: str,
                        split: str) -> pd.DataFrame:
    """Write a per-checkpoint part: the table's rows labelled with their model, checkpoint and data."""
    frame.insert(0, "checkpoint", checkpoint)
    frame.insert(0, "model", model)
    frame["corpus"], frame["split"] = corpus, split
    write_csv(frame, output)
    return frame


def surface_heads(dump_manifest: str | Path, token_table: str | Path, output: str | Path, *, model: str,
                  checkpoint: str, corpus: str, split: str, sep_token_id: int | None = None,
                  resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``surface_heads.csv``, in one process (the rules run it per shard)."""
    roles = read_token_roles(token_table, sep_token_id)
    frame = surface_statistics(Path(dump_manifest).parent, roles, resamples=resamples, seed=seed)
    return write_labelled_part(frame, output, model=model, checkpoint=checkpoint, corpus=corpus, split=split)


def surface_heads_shard(dump_manifest: str | Path, token_table: str | Path, output: str | Path, *,
                        shard_group: str, sep_token_id: int | None = None) -> None:
    """One shard group's per-example sums (rule surface_heads_shard; ``shard_group`` is a name of
    shards.shard_groups); :func:`surface_heads_gather` makes the part."""
    dump = AttentionDump(Path(dump_manifest).parent)
    files = shard_group_files(shard_group)
    roles = read_token_roles(token_table, sep_token_id, example_ids=dump.shard_example_ids(files))
    accumulator = _accumulate(dump, roles, shards=files)
    write_partial(accumulator.table(), output, dump=dump, shards=files, analysis="surface_heads",
                  examples=len(accumulator))


def surface_heads_gather(dump_manifest: str | Path, partials: list[str], output: str | Path, *, model: str,
                         checkpoint: str, corpus: str, split: str, resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``surface_heads.csv`` from the shards' partials: the one-process table."""
    dump = AttentionDump(Path(dump_manifest).parent)
    accumulator = SurfaceAccumulator(dump.num_layers, dump.num_heads)
    for table, _ in read_partials(partials, dump, "surface_heads"):
        accumulator.extend(table)
    frame = accumulator.frame(resamples=resamples, seed=seed)
    return write_labelled_part(frame, output, model=model, checkpoint=checkpoint, corpus=corpus, split=split)


def separator_token_id(checkpoint_manifest: str | Path, offline: bool, token_table: str | Path | None = None
                       ) -> int | None:
    """The tokenizer's ``sep_token_id`` of a checkpoint (None if it defines none).

    Read from the token table's metadata where it was recorded (token tables record it); otherwise the
    checkpoint's tokenizer is loaded, which costs every per-shard job seconds of imports.
    """
    if token_table is not None:
        recorded = read_metadata(token_table)
        if "sep_token_id" in recorded:
            return recorded["sep_token_id"]
    from transformers import AutoTokenizer

    from ..models.checkpoints import read_manifest

    manifest = read_manifest(checkpoint_manifest)
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], revision=manifest.get("revision"),
                                              local_files_only=offline)
    return tokenizer.sep_token_id


def concat_parts(parts: Iterable[str | Path], output: str | Path, sort: list[str]) -> pd.DataFrame:
    """Concatenate per-checkpoint CSV parts into one study table."""
    frame = stack_csv_parts(parts, output, sort_by=sort)
    write_csv(frame, output)
    return frame
