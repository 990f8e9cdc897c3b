"""Hand-built files in the attention stage's formats: attention dumps, token tables, annotation tables.

One dump writer, :func:`write_dump` (shards as extract_attention names them, in a given storage order, with their
manifest; every test that needs a dump of known maps writes it with this one), and three token-table writers, each
written for the tests of one analysis:

* :func:`write_token_table`: a complete token table with the token strings (the surface statistics and the head
  clustering);
* :func:`write_word_index_tokens` / :func:`write_annotation`: a token table given by each token's word index, and a
  gold annotation table (dependency, coreference and probes);
* :func:`write_token_roles`: a token table of the role columns only (special, segment, word index) (the fine-tuning
  effects: patterns, pattern CNN, change, lexical categories).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.attention.annotate import ANNOTATION_SCHEMA
from workflow_scripts.attention.extract import DUMP_SCHEMA
from workflow_scripts.attention.shards import shard_names
from workflow_scripts.attention.tokens import TOKEN_SCHEMA

# --- dumps -----------------------------------------------------------------------------------------


def write_dump(directory: Path, maps: dict[int, np.ndarray], *, n_shards: int = 2,
               order: list[int] | None = None) -> Path:
    """A dump laid out like extract_attention's: the (layers, heads, T, T) maps as float16 shards, stored in
    ``order`` (default: the dict's) and split evenly over ``n_shards``, one example to a row group, plus manifest.json
    (returned)."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = list(maps) if order is None else list(order)
    layers, heads = next(iter(maps.values())).shape[:2]
    bounds = np.linspace(0, len(ids), n_shards + 1).round().astype(int)
    shards = []
    for index, name in enumerate(shard_names(n_shards)):
        chunk = ids[bounds[index]:bounds[index + 1]]
        table = pa.Table.from_pydict({
            "example_id": chunk, "n_tokens": [maps[i].shape[-1] for i in chunk],
            "attention": [np.ascontiguousarray(maps[i], dtype="<f2").tobytes() for i in chunk]}, schema=DUMP_SCHEMA)
        pq.write_table(table, directory / name, row_group_size=1, write_page_checksum=True)
        shards.append({"file": name, "rows": len(chunk)})
    manifest = {"num_layers": int(layers), "num_heads": int(heads), "examples": len(ids),
                "tokens": int(sum(maps[i].shape[-1] for i in ids)), "shards": shards}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory / "manifest.json"


def write_token_table(path: Path, tokens: dict[int, list[str]], special: dict[int, list[bool]],
                      input_ids: dict[int, list[int]] | None = None) -> Path:
    """A complete token table: per example the token strings and their special flags."""
    columns: dict[str, list] = {name: [] for name in TOKEN_SCHEMA.names}
    for example_id, strings in tokens.items():
        n = len(strings)
        columns["example_id"] += [example_id] * n
        columns["token_index"] += list(range(n))
        columns["token"] += strings
        columns["input_id"] += (input_ids or {}).get(example_id, [7] * n)
        columns["token_type_id"] += [0] * n
        columns["char_start"] += [0] * n
        columns["char_end"] += [0] * n
        columns["segment"] += [-1 if s else 0 for s in special[example_id]]
        columns["special"] += special[example_id]
        columns["word_index"] += [-1 if s else i for i, s in enumerate(special[example_id])]
    pq.write_table(pa.Table.from_pydict(columns, schema=TOKEN_SCHEMA), path)
    return path


# --- token and annotation tables --------------------------------------------------------------------


def write_word_index_tokens(path: Path, examples: dict[int, list[int]]) -> Path:
    """A token table: per example, the word index of every token (-1: special token)."""
    rows = {name: [] for name in TOKEN_SCHEMA.names}
    for example_id, words in examples.items():
        for index, word in enumerate(words):
            rows["example_id"].append(example_id)
            rows["token_index"].append(index)
            rows["token"].append("[CLS]" if word < 0 and index == 0 else ("[SEP]" if word < 0 else f"w{word}"))
            rows["input_id"].append(0)
            rows["token_type_id"].append(0)
            rows["char_start"].append(0)
            rows["char_end"].append(0)
            rows["segment"].append(-1 if word < 0 else 0)
            rows["special"].append(word < 0)
            rows["word_index"].append(word)
    pq.write_table(pa.Table.from_pydict(rows, schema=TOKEN_SCHEMA), path)
    return path


def write_annotation(path: Path, sentences: dict[int, tuple[list[str], list[str], list[int], list[str]]]) -> Path:
    """A gold annotation table: per example (words, upos, head, deprel)."""
    rows = {name: [] for name in ANNOTATION_SCHEMA.names}
    for example_id, (words, upos, head, deprel) in sentences.items():
        rows["example_id"].append(example_id)
        rows["annotator"].append("gold")
        rows["words"].append(words)
        rows["lemmas"].append(words)
        rows["upos"].append(upos)
        rows["head"].append(head)
        rows["deprel"].append(deprel)
        rows["segment"].append([0] * len(words))
        rows["char_start"].append(list(range(len(words))))
        rows["char_end"].append(list(range(1, len(words) + 1)))
    pq.write_table(pa.Table.from_pydict(rows, schema=ANNOTATION_SCHEMA), path)
    return path


def write_token_roles(path: Path, examples: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Path:
    """A token table of the role columns only: example id -> (special, segment, word_index) per token."""
    rows = {"example_id": [], "token_index": [], "special": [], "segment": [], "word_index": []}
    for example_id, (special, segment, word) in examples.items():
        n = len(special)
        rows["example_id"] += [example_id] * n
        rows["token_index"] += list(range(n))
        rows["special"] += [bool(s) for s in special]
        rows["segment"] += [int(s) for s in segment]
        rows["word_index"] += [int(w) for w in word]
    table = pa.table({"example_id": pa.array(rows["example_id"], pa.int64()),
                      "token_index": pa.array(rows["token_index"], pa.int32()),
                      "special": pa.array(rows["special"], pa.bool_()),
                      "segment": pa.array(rows["segment"], pa.int8()),
                      "word_index": pa.array(rows["word_index"], pa.int32())})
    pq.write_table(table, path)
    return path
