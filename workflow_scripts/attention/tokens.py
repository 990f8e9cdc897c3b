"""Token tables (METHODS 4): the model's tokens of every example, aligned to words.

One row per token: example_id, token_index, token, input_id, token_type_id,
char_start/char_end (in the string fed: text_a or text_b, see texts.py), segment
(0 first text, 1 second, -1 special token), special, word_index (index into
the annotation table's words of that example; -1 none). Extraction reads its
input ids from this table, so dumps and token tables cannot disagree.

The input protocol of treebank sentences (texts.py: gold words joined by
spaces, or the text as written) is recorded in the table's metadata
(``input_protocol``), and from there in every dump and table resting on it.

A model entry's ``prepend_bos`` (null: as its tokenizer does) puts a BOS token first (GPT-2 and Pythia's
tokenizers add none; TransformerLens and Gu et al. prepend one) or takes the tokenizer's away (Llama's); the BOS is a
special token like [CLS]: no word, left out of word-level maps, the sink role of the surface statistics.

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

from ..core.errors import AtlasError
from ..core.io import read_rows, write_table
from ..models.cards import length_excess, position_limit
from .align import align_tokens_to_words
from .texts import model_inputs

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


def checked_max_length(tokenizer: Any, model_config: dict[str, Any], max_length: int, model: str) -> int:
    """``max_length``, refused when the model accepts fewer tokens.

    The config check refuses it before any job where the model's files are on disk; a hub model
    that was not cached then is checked here, before any token is written.
    """
    limit = position_limit(model_config, getattr(tokenizer, "model_max_length", None))
    excess = length_excess(max_length, model, limit)
    if excess and limit:
        raise AtlasError(f"max_length: {excess}; give at most {limit[0]}")
    return max_length


def encode_example(tokenizer: Any, text_a: str, text_b: str | None, max_length: int) -> tuple[Any, int]:
    """Encode one example, truncated to ``max_length``; also return its untruncated length."""
    full = tokenizer(text_a, text_b, add_special_tokens=True, truncation=False)
    encoding = tokenizer(text_a, text_b, add_special_tokens=True, truncation="longest_first",
                         max_length=max_length, return_offsets_mapping=True,
                         return_special_tokens_mask=True, return_token_type_ids=True)
    return encoding, len(full["input_ids"])


def bos_edit(tokenizer: Any, prepend_bos: bool | None, model: str = "the model") -> str | None:
    """What ``prepend_bos`` changes in the tokenizer's encodings: 'prepend' a BOS, 'drop' the one it adds, or None."""
    if prepend_bos is None:
        return None
    bos = tokenizer.bos_token_id
    if bos is None:
        if prepend_bos:
            raise AtlasError(f"config key 'models.{model}.prepend_bos': its tokenizer has no BOS token to put "
                             "first; set it to null or false")
        return None
    first = tokenizer("a", add_special_tokens=True)["input_ids"][:1]
    adds_bos = first == [bos]
    if prepend_bos and not adds_bos:
        return "prepend"
    return "drop" if not prepend_bos and adds_bos else None


def _edit_bos(encoding: Any, edit: str | None, bos: int | None) -> dict[str, list]:
    """The encoding's per-token lists, with a BOS put first ('prepend') or every BOS the tokenizer added taken away
    ('drop': Llama's tokenizer puts one before each text of a pair)."""
    fields = {"input_ids": list(encoding["input_ids"]), "special": list(encoding["special_tokens_mask"]),
              "sequence": list(encoding.sequence_ids()), "offsets": [tuple(o) for o in encoding["offset_mapping"]],
              "token_types": list(encoding.get("token_type_ids") or [0] * len(encoding["input_ids"]))}
    if edit == "prepend":
        for name, value in (("input_ids", bos), ("special", 1), ("sequence", None), ("offsets", (0, 0)),
                            ("token_types", 0)):
            fields[name].insert(0, value)
    elif edit == "drop":
        kept = [i for i, (token, special) in enumerate(zip(fields["input_ids"], fields["special"], strict=True))
                if not (special and token == bos)]
        fields = {name: [values[i] for i in kept] for name, values in fields.items()}
    return fields


def build_token_table(tokenizer: Any, data_path: str | Path, annotation_path: str | Path,
                      max_length: int, *, max_examples: int | None,
                      input_protocol: str, prepend_bos: bool | None = None,
                      model: str = "the model") -> tuple[pa.Table, dict[str, Any]]:
    """Tokenize the examples of a data table (the first ``max_examples``, or all) and align them to words.

    Treebank sentences are fed under ``input_protocol`` (``texts.INPUT_PROTOCOLS``); character
    offsets and word alignment are in the string actually fed.
    """
    if not tokenizer.is_fast:
        raise AtlasError("word alignment needs a fast tokenizer (character offsets); this one is slow")
    try:
        inputs, applied = model_inputs(data_path, annotation_path, input_protocol, max_examples=max_examples)
    except KeyError as missing:
        raise AtlasError(f"{annotation_path}: no annotation for example {missing} of {data_path}; "
                         "the annotation table is stale, rerun snakemake to rebuild it") from None
    columns: dict[str, list] = {name: [] for name in TOKEN_SCHEMA.names}
    truncated: list[int] = []
    unaligned_words = 0
    edit = bos_edit(tokenizer, prepend_bos, model)
    room = {"prepend": -1, "drop": 1}.get(edit, 0)  # the tokenizer's budget, so that the edited input fits max_length
    for example in inputs:
        encoding, full_length = encode_example(tokenizer, example.text_a, example.text_b, max_length + room)
        fields = _edit_bos(encoding, edit, tokenizer.bos_token_id)
        input_ids = fields["input_ids"]
        n = len(input_ids)
        # the whole input's length as edited: one BOS more, or every BOS fewer (the untruncated input has as many)
        if full_length + len(input_ids) - len(encoding["input_ids"]) > n:
            truncated.append(example.example_id)
        special = np.asarray(fields["special"], dtype=bool)
        segment = np.array([-1 if (s is None or sp) else s for s, sp in zip(fields["sequence"], special)],
                           dtype=np.int8)
        offsets = np.asarray(fields["offsets"], dtype=np.int32).reshape(n, 2)
        token_word = align_tokens_to_words(offsets[:, 0], offsets[:, 1], segment, example.word_start,
                                           example.word_end, example.word_segment)
        unaligned_words += len(example.word_start) - len(np.unique(token_word[token_word >= 0]))
        columns["example_id"] += [example.example_id] * n
        columns["token_index"] += list(range(n))
        columns["token"] += tokenizer.convert_ids_to_tokens(input_ids)
        columns["input_id"] += input_ids
        columns["token_type_id"] += fields["token_types"]
        columns["char_start"] += offsets[:, 0].tolist()
        columns["char_end"] += offsets[:, 1].tolist()
        columns["segment"] += segment.tolist()
        columns["special"] += special.tolist()
        columns["word_index"] += token_word.tolist()
    stats = {"examples": len(inputs), "max_examples": max_examples, "tokens": len(columns["example_id"]),
             "max_length": max_length, "input_protocol": applied, "prepend_bos": prepend_bos, "bos_edit": edit,
             "truncated_examples": len(truncated), "truncated_ids": truncated[:1000],
             "words_without_tokens": int(unaligned_words)}
    if truncated:
        log.warning("%d of %d examples were longer than %d tokens and were truncated (longest_first); "
                    "first ids: %s", len(truncated), len(inputs), max_length, truncated[:20])
    if unaligned_words:
        log.warning("%d words map to no model token (cut off by truncation, or characters the "
                    "tokenizer drops); they have no unit in word-level maps", unaligned_words)
    return pa.Table.from_pydict(columns, schema=TOKEN_SCHEMA), stats


def write_token_table(checkpoint_manifest: str | Path, data_path: str | Path, annotation_path: str | Path,
                      output: str | Path, *, max_length: int, max_examples: int | None,
                      input_protocol: str, offline: bool, prepend_bos: bool | None = None) -> dict[str, Any]:
    from transformers import AutoConfig, AutoTokenizer

    from ..models.checkpoints import read_manifest

    manifest = read_manifest(checkpoint_manifest)
    # The pinned revision of a hub model (None for a folder): without it the hub's main would be loaded.
    options = {"revision": manifest.get("revision"), "local_files_only": offline}
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **options)
    config = AutoConfig.from_pretrained(manifest["load_from"], **options)
    limit = checked_max_length(tokenizer, config.to_dict(), max_length, manifest["model"])
    table, stats = build_token_table(tokenizer, data_path, annotation_path, limit, max_examples=max_examples,
                                     input_protocol=input_protocol, prepend_bos=prepend_bos, model=manifest["model"])
    log.info("token table: %s", {k: v for k, v in stats.items() if k != "truncated_ids"})
    # sep_token_id: the surface statistics' separators, read from here by their per-shard jobs (no tokenizer to load).
    write_table(table, output, {"tokenizer": manifest["load_from"], "model": manifest["model"],
                                "sep_token_id": tokenizer.sep_token_id, **stats})
    return stats


def token_words(token_table_path: str | Path, example_ids: list[int] | None = None) -> dict[int, np.ndarray]:
    """word_index of every token, per example (of ``example_ids`` only, e.g. a shard's): what word-level
    conversion needs."""
    table = read_rows(token_table_path, ["example_id", "word_index"], example_ids)
    example = table["example_id"].to_numpy()
    word = table["word_index"].to_numpy()
    bounds = np.flatnonzero(np.diff(example)) + 1
    return {int(ids[0]): words for ids, words in zip(np.split(example, bounds), np.split(word, bounds))}
