"""Tiny attention dumps for tests: a few sentences, whitespace words, a tiny model's maps."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from transformers import AutoTokenizer

from support.tiny_models import write_manifest
from workflow_scripts.attention.annotate import ANNOTATION_SCHEMA
from workflow_scripts.attention.extract import extract_attention
from workflow_scripts.attention.texts import TEXT
from workflow_scripts.attention.tokens import build_token_table
from workflow_scripts.data.tables import text_task_schema

SENTENCES = ["The cat sat on the mat.", "Don't walk!", "the big red dog walked quickly on the mat .",
             "They can't see the house.", "a café", "New York is big , is it not ?", "i sat", "We ran."]


def tiny_data(tmp_path, pairs: bool):
    texts_b = list(reversed(SENTENCES)) if pairs else [None] * len(SENTENCES)
    table = pa.Table.from_pydict({"example_id": list(range(len(SENTENCES))),
                                  "source_id": [str(i) for i in range(len(SENTENCES))],
                                  "text_a": SENTENCES, "text_b": texts_b, "label": [None] * len(SENTENCES)},
                                 schema=text_task_schema(False))
    path = tmp_path / ("pairs.parquet" if pairs else "single.parquet")
    pq.write_table(table, path)
    return path


def whitespace_annotation(data_path, output):
    """Words = whitespace-separated strings, enough to exercise alignment without an annotator."""
    table = pq.read_table(data_path).to_pylist()
    rows = {name: [] for name in ANNOTATION_SCHEMA.names}
    for row in table:
        words, segments, starts, ends = [], [], [], []
        for segment, text in enumerate([row["text_a"], row["text_b"]]):
            if text is None:
                continue
            cursor = 0
            for word in text.split():
                start = text.index(word, cursor)
                cursor = start + len(word)
                words.append(word)
                segments.append(segment)
                starts.append(start)
                ends.append(cursor)
        rows["example_id"].append(row["example_id"])
        rows["annotator"].append("whitespace")
        rows["words"].append(words)
        rows["lemmas"].append(words)
        rows["upos"].append(["X"] * len(words))
        rows["head"].append(None)
        rows["deprel"].append(None)
        rows["segment"].append(segments)
        rows["char_start"].append(starts)
        rows["char_end"].append(ends)
    pq.write_table(pa.Table.from_pydict(rows, schema=ANNOTATION_SCHEMA), output)
    return output


def tiny_dump(tmp_path, model_dir, pairs, n_shards=3, max_length=64, batch_size=3, compression="lz4",
          implementation="eager", signal="attention", threads=1, dtype="float32"):
    data = tiny_data(tmp_path, pairs)
    annotation = whitespace_annotation(data, tmp_path / "annotation.parquet")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # A text corpus: fed as written, as the token_table rule does.
    tokens, stats = build_token_table(tokenizer, data, annotation, max_length, max_examples=None,
                                      input_protocol=TEXT)
    token_path = tmp_path / "tokens.parquet"
    pq.write_table(tokens, token_path)
    manifest = write_manifest(tmp_path / "ckpt", model_dir)
    out = tmp_path / "dump"
    summary = extract_attention(manifest, token_path, out, n_shards=n_shards, batch_size=batch_size,
                                max_batch_tokens=10_000, device="cpu", threads=threads, offline=False,
                                compression=compression, implementation=implementation, signal=signal,
                                dtype=dtype)
    return data, token_path, out, summary, stats


