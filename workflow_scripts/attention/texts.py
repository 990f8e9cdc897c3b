"""What the model is fed for every example of a normalised data table (METHODS 6).

Text corpora (GLUE, WiC, wiki) are fed as written. A treebank sentence (any data
table with gold ``words``: ewt, gum, the gumwin windows) is fed under one of two
input protocols:

- ``words``: its gold words joined by single spaces, as [C] and every replication
  did (the PTB is pre-tokenised), so ``don't`` (UD words ``do`` + ``n't``) reaches
  the model as ``do n't``. The one to use when comparing with [C].
- ``text``: the sentence as written (the ``# text`` comment), so the model sees
  ``don't`` and tokenises it its own way.

Word alignment (``align.align_tokens_to_words``) always works on character
offsets in the string actually fed, which is why this module returns the word
spans in that string along with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

WORDS = "words"
TEXT = "text"
INPUT_PROTOCOLS = (WORDS, TEXT)


@dataclass
class ModelInput:
    """One example as fed to the model, with its words' character spans in the fed text(s)."""

    example_id: int
    text_a: str
    text_b: str | None
    word_start: np.ndarray  # (n_words,) in text_a or text_b, by word_segment
    word_end: np.ndarray
    word_segment: np.ndarray  # 0: text_a, 1: text_b


def example_texts(data_path: str | Path) -> tuple[list[int], list[str], list[str | None]]:
    """(example ids, first texts, second texts or None) of a data table of any corpus, as written."""
    schema = pq.read_schema(data_path)
    if "text_a" in schema.names:
        table = pq.read_table(data_path, columns=["example_id", "text_a", "text_b"])
        return (table["example_id"].to_pylist(), table["text_a"].to_pylist(), table["text_b"].to_pylist())
    table = pq.read_table(data_path, columns=["example_id", "text"])
    ids = table["example_id"].to_pylist()
    return ids, table["text"].to_pylist(), [None] * len(ids)


def has_gold_words(data_path: str | Path) -> bool:
    """Whether a data table is a treebank (gold words), to which the input protocols apply."""
    return "words" in pq.read_schema(data_path).names


def applied_protocol(data_path: str | Path, protocol: str) -> str:
    """The protocol an example of this table is really fed under: text corpora are always fed as written."""
    if protocol not in INPUT_PROTOCOLS:
        raise ValueError(f"unknown input protocol {protocol!r}; expected one of {INPUT_PROTOCOLS}")
    return protocol if has_gold_words(data_path) else TEXT


def joined_words(words: list[str]) -> tuple[str, np.ndarray, np.ndarray]:
    """The words joined by single spaces, and each word's [start, end) in that string."""
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64) if len(words) else lengths
    return " ".join(words), starts, starts + lengths


def model_inputs(data_path: str | Path, annotation_path: str | Path, protocol: str, *,
                 max_examples: int | None) -> tuple[list[ModelInput], str]:
    """Every example (the first ``max_examples``) as fed under ``protocol``, and the protocol applied.

    Word spans come from the annotation table (the gold words of a treebank, or the
    annotator's words of text), so that word indices are the annotation's under both protocols.
    """
    applied = applied_protocol(data_path, protocol)
    ids, texts_a, texts_b = example_texts(data_path)
    if max_examples is not None:
        ids, texts_a, texts_b = ids[:max_examples], texts_a[:max_examples], texts_b[:max_examples]
    columns = ["example_id", "words", "segment", "char_start", "char_end"]
    annotation = pq.read_table(annotation_path, columns=columns).to_pydict()
    row_of = {eid: i for i, eid in enumerate(annotation["example_id"])}
    inputs = []
    for example_id, text_a, text_b in zip(ids, texts_a, texts_b):
        row = row_of.get(example_id)
        if row is None:
            raise KeyError(example_id)
        segment = np.asarray(annotation["segment"][row], dtype=np.int8)
        if applied == WORDS:
            # A treebank example is one text (a sentence, or a window of sentences).
            text_a, start, end = joined_words(annotation["words"][row])
            text_b, segment = None, np.zeros(len(start), dtype=np.int8)
        else:
            start = np.asarray(annotation["char_start"][row], dtype=np.int64)
            end = np.asarray(annotation["char_end"][row], dtype=np.int64)
        inputs.append(ModelInput(int(example_id), text_a, text_b, start, end, segment))
    return inputs, applied
