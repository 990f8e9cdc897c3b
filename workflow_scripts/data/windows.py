"""GUM documents cut into windows of consecutive sentences, for coreference (METHODS 7.4).

The study's treebank dumps hold one sentence per example, but a mention's
antecedents are usually in earlier sentences. This module cuts every document
into consecutive, non-overlapping windows of whole sentences whose word count
fits a budget (``syntax.coref_window_words``), so that a window fits the
model's max_length (128 tokens in [C]). The budget is in words, so the
windows are the same for every model; a window that still tokenizes past
max_length is truncated by the token table (counted in its metadata) and the
coreference scoring skips, and counts, the mentions whose words lost their
tokens. A sentence longer than the budget forms a window of its own.

The window table has the treebank columns (words, lemmas, upos, xpos, head,
deprel, char_start, char_end, mwt), renumbered across the window's sentences,
so that gold annotation, token tables and dumps work on it unchanged; ``text``
is the window's sentences joined by single spaces. The window mention table
has GUM's mentions with their spans and head words renumbered into windows.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import write_table
from .tables import TREEBANK_SCHEMA

log = logging.getLogger(__name__)

WINDOW_SCHEMA = pa.schema([
    *TREEBANK_SCHEMA,
    pa.field("window_index", pa.int32(), nullable=False),  # position of the window in its document
    pa.field("sentence_ids", pa.list_(pa.int64())),  # example_id of each sentence in the GUM table
    pa.field("sentence_word_offset", pa.list_(pa.int32())),  # first window word of each sentence
])

WINDOW_MENTION_SCHEMA = pa.schema([
    pa.field("mention_id", pa.int64(), nullable=False),  # id in the GUM mention table
    pa.field("example_id", pa.int64(), nullable=False),  # the window
    pa.field("doc_id", pa.string(), nullable=False),
    pa.field("entity", pa.string(), nullable=False),
    pa.field("sentence_id", pa.int64(), nullable=False),  # example_id of the sentence in the GUM table
    pa.field("start", pa.int32(), nullable=False),  # word span in the window, end exclusive
    pa.field("end", pa.int32(), nullable=False),
    pa.field("head", pa.int32(), nullable=False),  # head word of the mention, window numbering
    pa.field("head_form", pa.string()),
    pa.field("head_upos", pa.string()),
    pa.field("etype", pa.string()),
    pa.field("infstat", pa.string()),
])

_LIST_COLUMNS = ("words", "lemmas", "upos", "xpos", "deprel")


def window_groups(lengths: list[int], max_words: int) -> list[list[int]]:
    """Greedy cut of consecutive sentences (word counts ``lengths``) into windows of <= max_words."""
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for index, length in enumerate(lengths):
        if current and size + length > max_words:
            groups.append(current)
            current, size = [], 0
        current.append(index)
        size += length
    if current:
        groups.append(current)
    return groups


def _join(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One window row from its sentences' rows: words renumbered, offsets shifted."""
    window: dict[str, Any] = {name: [] for name in (*_LIST_COLUMNS, "head", "char_start", "char_end", "mwt",
                                                     "sentence_ids", "sentence_word_offset")}
    texts = []
    char_offset = 0
    mwt_offset = 0
    for row in rows:
        word_offset = len(window["words"])
        window["sentence_ids"].append(int(row["example_id"]))
        window["sentence_word_offset"].append(word_offset)
        for name in _LIST_COLUMNS:
            window[name] += list(row[name])
        window["head"] += [h + word_offset if h >= 0 else -1 for h in row["head"]]
        window["char_start"] += [c + char_offset for c in row["char_start"]]
        window["char_end"] += [c + char_offset for c in row["char_end"]]
        mwt = list(row["mwt"])
        window["mwt"] += [m + mwt_offset if m >= 0 else -1 for m in mwt]
        mwt_offset += max(mwt, default=-1) + 1
        texts.append(row["text"])
        char_offset += len(row["text"]) + 1  # the joining space
    window["text"] = " ".join(texts)
    window["sent_id"] = f"{rows[0]['sent_id']}..{rows[-1]['sent_id']}"
    window["doc_id"] = rows[0]["doc_id"]
    return window


def build_windows(sentences: pd.DataFrame, mentions: pd.DataFrame, max_words: int
                  ) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """Windows of consecutive sentences of every document, and the mentions renumbered into them."""
    missing = {"example_id", "doc_id", "text", "words", "head", "char_start", "char_end"} - set(sentences.columns)
    if missing:
        raise AtlasError(f"the GUM sentence table lacks columns {sorted(missing)}; rebuild it with snakemake")
    sentences = sentences.sort_values("example_id", kind="stable")
    windows: list[dict[str, Any]] = []
    placement: dict[int, tuple[int, int]] = {}  # sentence example_id -> (window id, word offset)
    oversized = 0
    for _doc_id, doc in sentences.groupby("doc_id", sort=False):
        rows = doc.to_dict("records")
        lengths = [len(r["words"]) for r in rows]
        for window_index, group in enumerate(window_groups(lengths, max_words)):
            members = [rows[i] for i in group]
            window = _join(members)
            window["example_id"] = len(windows)
            window["window_index"] = window_index
            if len(window["words"]) > max_words:
                oversized += 1
            for sentence_id, offset in zip(window["sentence_ids"], window["sentence_word_offset"]):
                placement[sentence_id] = (window["example_id"], offset)
            windows.append(window)
    table = pa.Table.from_pylist(windows, schema=WINDOW_SCHEMA)

    mention_rows = []
    for mention in mentions.itertuples(index=False):
        try:
            window_id, offset = placement[int(mention.example_id)]
        except KeyError:
            raise AtlasError(f"mention {mention.mention_id} is in sentence {mention.example_id}, which the "
                             "GUM sentence table does not hold; the mention and sentence tables are out of "
                             "step, rebuild them with snakemake") from None
        mention_rows.append({
            "mention_id": int(mention.mention_id), "example_id": window_id, "doc_id": mention.doc_id,
            "entity": str(mention.entity), "sentence_id": int(mention.example_id),
            "start": int(mention.start) + offset, "end": int(mention.end) + offset,
            "head": int(mention.head) + offset, "head_form": mention.head_form, "head_upos": mention.head_upos,
            "etype": mention.etype, "infstat": mention.infstat,
        })
    mention_table = pa.Table.from_pylist(mention_rows, schema=WINDOW_MENTION_SCHEMA)
    n_words = [len(w) for w in table["words"].to_pylist()]
    stats = {"windows": table.num_rows, "sentences": len(sentences), "documents": int(sentences["doc_id"].nunique()),
             "mentions": mention_table.num_rows, "max_words": max_words, "oversized_windows": oversized,
             "mean_words": float(sum(n_words) / max(len(n_words), 1)), "longest_window": max(n_words, default=0)}
    return table, mention_table, stats


def write_windows(sentences_path: str | Path, mentions_path: str | Path, output: str | Path,
                  mentions_output: str | Path, *, max_words: int, corpus: str = "gumwin") -> dict[str, Any]:
    sentences = pq.read_table(sentences_path).to_pandas()
    mentions = pq.read_table(mentions_path).to_pandas()
    table, mention_table, stats = build_windows(sentences, mentions, max_words)
    log.info("%s windows: %s", corpus, stats)
    if stats["oversized_windows"]:
        log.warning("%d sentences are longer than %d words and form oversized windows of their own",
                    stats["oversized_windows"], max_words)
    write_table(table, output, {"corpus": corpus, "source": str(sentences_path), **stats})
    write_table(mention_table, mentions_output, {"corpus": corpus, "source": str(mentions_path), **stats})
    return stats
