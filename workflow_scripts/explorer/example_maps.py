"""A few example inputs' token-level maps for the explorer: every head, before and after fine-tuning.

The maps are quantised to one byte per weight (round(255 * weight)): the page draws them as shades, where
1/255 is below what an eye tells apart, and a 12 x 12 model's maps of three 40-token inputs at two checkpoints
take 1.4 MB (1.8 MB as base64) instead of several times that as decimal text. :func:`maps_bytes` gives the
size from the shape alone, so that the page's budget is checked before any map is read.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ..attention.reader import AttentionDump
from ..core.errors import AtlasError
from ..core.io import read_metadata

log = logging.getLogger(__name__)

LEVELS = 255
MIN_TOKENS = 5  # shorter inputs ([CLS] w1 w2 [SEP]) show no pattern worth looking at


def maps_bytes(layers: int, heads: int, token_counts: Sequence[int], checkpoints: int) -> int:
    """Bytes the maps take in the page (base64 of one byte per weight) for inputs of ``token_counts``."""
    raw = sum(layers * heads * n * n for n in token_counts)
    return checkpoints * 4 * ((raw + 2) // 3)


def quantise(maps: np.ndarray) -> bytes:
    """(layers, heads, T, T) weights in [0, 1] as bytes, 0..255, layer-major then row-major."""
    clipped = np.clip(np.nan_to_num(np.asarray(maps, dtype=np.float32)), 0.0, 1.0)
    return np.rint(clipped * LEVELS).astype(np.uint8).tobytes()


def read_tokens(token_table: str | Path) -> dict[int, list[str]]:
    """The token strings of every example of a token table, in order."""
    table = pq.read_table(token_table, columns=["example_id", "token_index", "token"]).to_pandas()
    table = table.sort_values(["example_id", "token_index"], kind="stable")
    return {int(example_id): [str(t) for t in group["token"]]
            for example_id, group in table.groupby("example_id", sort=True)}


def choose_examples(tokens: dict[int, list[str]], count: int, max_tokens: int,
                    example_ids: Sequence[int] | None = None) -> list[int]:
    """``example_ids`` when given (each must exist), else the first ``count`` examples (by id) with
    MIN_TOKENS..``max_tokens`` tokens."""
    if example_ids:
        missing = [i for i in example_ids if i not in tokens]
        if missing:
            raise AtlasError(f"example ids {missing} are not in the token table (it has ids {min(tokens)}.."
                             f"{max(tokens)})" if tokens else f"example ids {missing}: the token table is empty")
        return list(example_ids)
    chosen = [i for i in sorted(tokens) if MIN_TOKENS <= len(tokens[i]) <= max_tokens]
    return chosen[:count]


def held_tokens(tokens: dict[int, list[str]], dumps: Sequence[AttentionDump]) -> dict[int, list[str]]:
    """The token strings of the examples that every dump holds (their id columns alone are read)."""
    held = set(tokens)
    for dump in dumps:
        held &= set(dump.shard_example_ids(dump.shard_files))
    return {i: strings for i, strings in tokens.items() if i in held}


def examples_to_draw(tokens: dict[int, list[str]], count: int, max_tokens: int, example_ids: Sequence[int] | None,
                     limit: int | None) -> tuple[list[int], str]:
    """The examples to draw and the page's note on them.

    ``limit``: the token table's ``attention.max_examples`` (None: it holds the whole split). Under a limit,
    configured ``example_ids`` beyond the kept examples are left out, and where none is left the examples are
    chosen as without ids; the note (and the log) says so. Without a limit a missing id is refused.
    """
    if example_ids and limit is not None:
        missing = [i for i in example_ids if i not in tokens]
        if missing:
            kept = [i for i in example_ids if i in tokens]
            chosen = kept or choose_examples(tokens, count, max_tokens)
            note = (f"Example ids {missing} (explorer.example_ids) are not among the {len(tokens)} examples that "
                    f"attention.max_examples ({limit}) keeps: left out"
                    + ("" if kept else f", examples {chosen} drawn instead" if chosen else ", no example drawn") + ".")
            log.warning("%s", note)
            return chosen, note
    return choose_examples(tokens, count, max_tokens, example_ids), ""


def example_maps(dumps: Sequence[tuple[str, str, str | Path]], token_table: str | Path, *, count: int,
                 max_tokens: int, example_ids: Sequence[int] | None, budget_bytes: int,
                 corpus: str, split: str) -> dict[str, Any]:
    """The chosen examples' tokens and quantised maps at each checkpoint.

    ``dumps``: (checkpoint, label, dump directory) in display order, e.g. pretrained then fine-tuned.
    Raises AtlasError when the maps would exceed ``budget_bytes``.
    """
    result: dict[str, Any] = {"corpus": corpus, "split": split, "levels": LEVELS,
                              "checkpoints": [{"name": name, "label": label} for name, label, _ in dumps],
                              "sentences": []}
    if not dumps or (count <= 0 and not example_ids):
        return result
    opened = [(name, AttentionDump(directory)) for name, _, directory in dumps]
    # The examples the token table and every dump hold: with attention.max_examples only the first N of the split.
    tokens = held_tokens(read_tokens(token_table), [dump for _, dump in opened])
    chosen, note = examples_to_draw(tokens, count, max_tokens, example_ids,
                                    read_metadata(token_table).get("max_examples"))
    if note:
        result["note"] = note
    layers, heads = opened[0][1].num_layers, opened[0][1].num_heads
    size = maps_bytes(layers, heads, [len(tokens[i]) for i in chosen], len(opened))
    if size > budget_bytes:
        raise AtlasError(f"the maps of {len(chosen)} examples ({[len(tokens[i]) for i in chosen]} tokens) of a "
                         f"{layers} x {heads} model at {len(opened)} checkpoints would take {size / 1e6:.1f} MB, "
                         f"above the page's budget of {budget_bytes / 1e6:.1f} MB; choose fewer or shorter examples")
    for example_id in chosen:
        maps = {}
        for name, dump in opened:
            if (dump.num_layers, dump.num_heads) != (layers, heads):
                raise AtlasError(f"the dump {dump.directory} has {dump.num_layers} x {dump.num_heads} heads, "
                                 f"the others {layers} x {heads}")
            example = dump.get(example_id)
            if example.n_tokens != len(tokens[example_id]):
                raise AtlasError(f"example {example_id}: the dump {dump.directory} has {example.n_tokens} tokens, "
                                 f"the token table {token_table} {len(tokens[example_id])}; rerun snakemake")
            maps[name] = base64.b64encode(quantise(example.attention)).decode("ascii")
        result["sentences"].append({"example_id": example_id, "tokens": tokens[example_id], "maps": maps})
    return result
