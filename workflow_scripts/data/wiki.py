"""Wikipedia segments (METHODS 2): pairs of consecutive paragraphs drawn with a fixed seed.

[C] used 1000 segments ``[CLS] p1 [SEP] p2 [SEP]`` of at most 128 tokens. Token
counts depend on the tokenizer, so this model-independent table cuts each pair
to ``max_words`` whitespace words (p2 is cut first, p1 keeps at least half);
extraction then truncates to the model's token budget and reports what it cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..core.errors import AtlasError, InputFormatError
from .tables import text_task_schema

WIKI_EXTRA = [pa.field("article", pa.string())]
_TITLE = re.compile(r"^ ?= [^=].* = ?$")
_HEADING = re.compile(r"^ ?=( =)* .* =( =)* ?$")
# WikiText writes hyphens, commas and points inside numbers as " @-@ ", " @,@ ", " @.@ ".
_AT_TOKENS = re.compile(r" @([-,.])@ ")


@dataclass(frozen=True)
class Paragraph:
    article: str
    index: int  # position of the paragraph line in the source
    text: str


def read_paragraphs(lines: Iterable[str]) -> list[list[Paragraph]]:
    """Split WikiText lines into runs of consecutive paragraphs (a heading ends a run)."""
    runs: list[list[Paragraph]] = []
    current: list[Paragraph] = []
    article = ""
    for index, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        if _HEADING.match(line):
            if current:
                runs.append(current)
            current = []
            if _TITLE.match(line):
                article = line.strip(" =")
            continue
        current.append(Paragraph(article, index, line.strip()))
    if current:
        runs.append(current)
    return runs


def detokenize(text: str) -> str:
    return _AT_TOKENS.sub(r"\1", text)


def cut_pair(first: str, second: str, max_words: int) -> tuple[str, str]:
    """Cut a paragraph pair to ``max_words`` words in all; p2 gives way first."""
    words_a, words_b = first.split(), second.split()
    keep_a = min(len(words_a), max(max_words - len(words_b), max_words // 2))
    keep_b = max(0, min(len(words_b), max_words - keep_a))
    return " ".join(words_a[:keep_a]), " ".join(words_b[:keep_b])


def sample_segments(lines: Iterable[str], n_segments: int, seed: int, max_words: int,
                    source_name: str) -> pa.Table:
    """Draw ``n_segments`` consecutive-paragraph pairs at random (seeded) from WikiText lines."""
    pairs = [(run[i], run[i + 1]) for run in read_paragraphs(lines) for i in range(len(run) - 1)]
    if not pairs:
        raise InputFormatError(source_name, None, "no two consecutive paragraphs found",
                               "expected WikiText raw text (' = Title = ' headings, one paragraph a line)")
    if n_segments > len(pairs):
        raise AtlasError(
            f"n_segments={n_segments}, but {source_name} holds only {len(pairs)} pairs of consecutive "
            f"paragraphs; ask for at most {len(pairs)} or use a larger WikiText source")
    chosen = np.sort(np.random.default_rng(seed).choice(len(pairs), size=n_segments, replace=False))
    rows: dict[str, list] = {k: [] for k in ("example_id", "source_id", "text_a", "text_b", "label", "article")}
    for example_id, pair_index in enumerate(chosen):
        first, second = pairs[pair_index]
        text_a, text_b = cut_pair(first.text, second.text, max_words)
        rows["example_id"].append(example_id)
        rows["source_id"].append(f"{first.index}+{second.index}")
        rows["text_a"].append(detokenize(text_a))
        rows["text_b"].append(detokenize(text_b))
        rows["label"].append(None)
        rows["article"].append(first.article)
    return pa.Table.from_pydict(rows, schema=text_task_schema(False, WIKI_EXTRA))


def hub_lines(dataset: str, config: str, split: str) -> list[str]:
    import datasets

    return datasets.load_dataset(dataset, config, split=split)["text"]
