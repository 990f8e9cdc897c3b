"""Column layouts of the normalised tables, shared by every builder and reader."""

from __future__ import annotations

import pyarrow as pa

# One row per example for every text task (GLUE, WiC, wiki segments).
TEXT_SCHEMA_BASE = [
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("source_id", pa.string()),
    pa.field("text_a", pa.string(), nullable=False),
    pa.field("text_b", pa.string()),
]


def text_task_schema(regression: bool, extra: list[pa.Field] | None = None) -> pa.Schema:
    label = pa.field("label", pa.float64() if regression else pa.int64())
    return pa.schema([*TEXT_SCHEMA_BASE, label, *(extra or [])])


# One row per sentence for the treebanks; list columns hold one value per word.
TREEBANK_SCHEMA = pa.schema([
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("sent_id", pa.string(), nullable=False),
    pa.field("doc_id", pa.string()),
    pa.field("text", pa.string(), nullable=False),
    pa.field("words", pa.list_(pa.string())),
    pa.field("lemmas", pa.list_(pa.string())),
    pa.field("upos", pa.list_(pa.string())),
    pa.field("xpos", pa.list_(pa.string())),
    # 0-based index of each word's syntactic head; -1 for the root.
    pa.field("head", pa.list_(pa.int32())),
    pa.field("deprel", pa.list_(pa.string())),
    # Character span of each word in ``text``; the words of a multi-word token
    # share its span unless they spell it out exactly (wo + n't = won't).
    pa.field("char_start", pa.list_(pa.int32())),
    pa.field("char_end", pa.list_(pa.int32())),
    # Index of the multi-word token a word belongs to (-1: none).
    pa.field("mwt", pa.list_(pa.int32())),
])

MENTION_SCHEMA = pa.schema([
    pa.field("mention_id", pa.int64(), nullable=False),
    pa.field("doc_id", pa.string(), nullable=False),
    pa.field("entity", pa.string(), nullable=False),
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("sent_id", pa.string(), nullable=False),
    # Word span in the sentence, 0-based, end exclusive.
    pa.field("start", pa.int32(), nullable=False),
    pa.field("end", pa.int32(), nullable=False),
    # The span's syntactic head word: the word whose own head lies outside the span.
    pa.field("head", pa.int32(), nullable=False),
    pa.field("head_form", pa.string()),
    pa.field("head_upos", pa.string()),
    pa.field("text", pa.string()),
    pa.field("etype", pa.string()),
    pa.field("infstat", pa.string()),
    pa.field("link", pa.string()),
    pa.field("identity", pa.string()),
    # Order of the mention in its chain (0 = first mention), the chain's size, and the
    # previous mention of the same entity (-1: none).
    pa.field("chain_position", pa.int32(), nullable=False),
    pa.field("chain_size", pa.int32(), nullable=False),
    pa.field("antecedent", pa.int64(), nullable=False),
    pa.field("line", pa.int64(), nullable=False),
])

GLOVE_DIM = 50
