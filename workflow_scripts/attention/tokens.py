"""Token tables (METHODS 4): the model's tokens of every example, aligned to words.

One row per token: example_id, token_index, token, input_id, token_type_id,
char_start/char_end (in the example's own text: text_a or text_b), segment
(0 first text, 1 second, -1 special token), special, word_index (index into
the annotation table's words of that example; -1 none). Extraction reads its
input ids from this table, so dumps and token tables cannot disagree.

Inputs longer than the model's max_length are truncated with the tokenizer's
``longest_first`` rule (tokens are dropped from the end of the longer text,
one at a time); every truncated example is counted and listed in the table's
metadata and the log, and its cut-off words are left without tokens.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import AtlasError
from ..io import write_table
from .align import align_tokens_to_words
from .texts import example_texts

log = logging.getLogger(__name__)

TOKEN_SCHEMA = pa.schema([
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("token_index", pa.int32(), nullable=False),
    pa.field("token", pa.string()),
    pa.field("input_id", pa.int32(), nullable=False),
    pa.field("token_type_id", pa.int8(), nullable=False),
    pa.field("char_start", pa.int32()),
    pa.field("char_end", pa.int32()),
    pa.field("segment", pa.int8(), nullable=False),
    pa.field("special", pa.bool_(), nullable=False),
    pa.field("word_index", pa.int32(), nullable=False),
])


def effective_max_length(tokenizer: Any, configured: int, max_positions: int | None) -> int:
    """The configured max_length, capped by what the tokenizer and the position table allow."""
    limits = [configured]
    if 0 < getattr(tokenizer, "model_max_length", 0) < 1_000_000:
        limits.append(tokenizer.model_max_length)
    elif max_positions:
        limits.append(max_positions)
    return min(limits)


def encode_example(tokenizer: Any, text_a: str, text_b: str | None, max_length: int) -> tuple[Any, int]:
    """Encode one example, truncated to ``max_length``; also return its untruncated length."""
    full = tokenizer(text_a, text_b, add_special_tokens=True, truncation=False)
    encoding = tokenizer(text_a, text_b, add_special_tokens=True, truncation="longest_first",
                         max_length=max_length, return_offsets_mapping=True,
                         return_special_tokens_mask=True, return_token_type_ids=True)
    return encoding, len(full["input_ids"])


def build_token_table(tokenizer: Any, data_path: str | Path, annotation_path: str | Path,
                      max_length: int, max_examples: int | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """Tokenize the examples of a data table (the first ``max_examples``, or all) and align them to words."""
    if not tokenizer.is_fast:
        raise AtlasError("word alignment needs a fast tokenizer (character offsets); this one is slow")
    ids, texts_a, texts_b = example_texts(data_path)
    if max_examples is not None:
        ids, texts_a, texts_b = ids[:max_examples], texts_a[:max_examples], texts_b[:max_examples]
    annotation = pq.read_table(annotation_path, columns=["example_id", "segment", "char_start", "char_end"])
    words_of = {eid: i for i, eid in enumerate(annotation["example_id"].to_pylist())}
    segments = annotation["segment"].to_pylist()
    starts = annotation["char_start"].to_pylist()
    ends = annotation["char_end"].to_pylist()
    columns: dict[str, list] = {name: [] for name in TOKEN_SCHEMA.names}
    truncated: list[int] = []
    unaligned_words = 0
    for example_id, text_a, text_b in zip(ids, texts_a, texts_b):
        encoding, full_length = encode_example(tokenizer, text_a, text_b, max_length)
        input_ids = encoding["input_ids"]
        n = len(input_ids)
        if full_length > n:
            truncated.append(example_id)
        special = np.asarray(encoding["special_tokens_mask"], dtype=bool)
        sequence = encoding.sequence_ids()
        segment = np.array([-1 if (s is None or sp) else s for s, sp in zip(sequence, special)], dtype=np.int8)
        offsets = np.asarray(encoding["offset_mapping"], dtype=np.int32).reshape(n, 2)
        row = words_of.get(example_id)
        if row is None:
            raise AtlasError(f"{annotation_path}: no annotation for example {example_id} of {data_path}; "
                             "the annotation table is stale, rerun snakemake to rebuild it")
        token_word = align_tokens_to_words(offsets[:, 0], offsets[:, 1], segment, np.asarray(starts[row]),
                                           np.asarray(ends[row]), np.asarray(segments[row]))
        unaligned_words += len(starts[row]) - len(np.unique(token_word[token_word >= 0]))
        columns["example_id"] += [example_id] * n
        columns["token_index"] += list(range(n))
        columns["token"] += tokenizer.convert_ids_to_tokens(input_ids)
        columns["input_id"] += input_ids
        columns["token_type_id"] += encoding.get("token_type_ids") or [0] * n
        columns["char_start"] += offsets[:, 0].tolist()
        columns["char_end"] += offsets[:, 1].tolist()
        columns["segment"] += segment.tolist()
        columns["special"] += special.tolist()
        columns["word_index"] += token_word.tolist()
    stats = {"examples": len(ids), "max_examples": max_examples, "tokens": len(columns["example_id"]), "max_length": max_length,
             "truncated_examples": len(truncated), "truncated_ids": truncated[:1000],
             "words_without_tokens": int(unaligned_words)}
    if truncated:
        log.warning("%d of %d examples were longer than %d tokens and were truncated (longest_first); "
                    "first ids: %s", len(truncated), len(ids), max_length, truncated[:20])
    if unaligned_words:
        log.warning("%d words map to no model token (cut off by truncation, or characters the "
                    "tokenizer drops); they have no unit in word-level maps", unaligned_words)
    return pa.Table.from_pydict(columns, schema=TOKEN_SCHEMA), stats


def write_token_table(checkpoint_manifest: str | Path, data_path: str | Path, annotation_path: str | Path,
                      output: str | Path, *, max_length: int, max_examples: int | None = None,
                      offline: bool = False) -> dict[str, Any]:
    from transformers import AutoConfig, AutoTokenizer

    from ..checkpoints import read_manifest

    manifest = read_manifest(checkpoint_manifest)
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], local_files_only=offline)
    config = AutoConfig.from_pretrained(manifest["load_from"], local_files_only=offline)
    limit = effective_max_length(tokenizer, max_length, getattr(config, "max_position_embeddings", None))
    table, stats = build_token_table(tokenizer, data_path, annotation_path, limit, max_examples)
    log.info("token table: %s", {k: v for k, v in stats.items() if k != "truncated_ids"})
    write_table(table, output, {"tokenizer": manifest["load_from"], "model": manifest["model"], **stats})
    return stats


def token_words(token_table_path: str | Path) -> dict[int, np.ndarray]:
    """word_index of every token, per example: what word-level conversion needs."""
    table = pq.read_table(token_table_path, columns=["example_id", "word_index"])
    example = table["example_id"].to_numpy()
    word = table["word_index"].to_numpy()
    bounds = np.flatnonzero(np.diff(example)) + 1
    return {int(ids[0]): words for ids, words in zip(np.split(example, bounds), np.split(word, bounds))}
