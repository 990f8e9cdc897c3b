"""Probe inputs (METHODS 7.5, [C] §5): the words, gold heads and features every probe reads.

Candidate indexing (the one place an off-by-one can hide): the *extended* index e of a
sentence of n words is 0 for ROOT and w + 1 for word w. The feature tensor A (heads, n+1, n+1)
is indexed by extended indices on both axes, and the vector of candidate e is row e of the
extended vector matrix (:func:`extended_vectors`); a gold head h (-1 root) is extended index
h + 1. ROOT is represented by the first special token (``[CLS]``): its word-level row and
column stand in ROOT's place.

Attention features are computed once per checkpoint and split, streaming the dump, and stored
as one float16 array (:func:`build_probe_features`), memory-mapped at training time
(:class:`ProbeFeatures`). Words are GloVe vectors (lowercased lookup; zero for out-of-vocabulary
words and ROOT) extended by an is-ROOT indicator and a constant 1. The distance baseline reads
one-hot buckets of the signed distance instead of attention (:func:`distance_features`).

A word is trained on when it has tokens (words cut by truncation have none) and scored when it
also is not punctuation, where punctuation is excluded (UPOS PUNCT, as [C] did).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ..attention.annotate import read_trees
from ..attention.reader import AttentionDump, to_word_level
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.io import atomic_path
from ..core.score_tables import list_rows

log = logging.getLogger(__name__)

N_DISTANCE_FEATURES = 15  # distance buckets, see distance_bucket


# ---------------------------------------------------------------------------------------------
# Sentences and indexing


def choose_sentences(example_ids: Sequence[int], max_sentences: int | None, seed: int) -> np.ndarray:
    """The sentences a probe uses: all, or a fixed random subset of ``max_sentences`` (sorted ids)."""
    ids = np.sort(np.asarray(list(example_ids), dtype=np.int64))
    if max_sentences is None or max_sentences >= len(ids):
        return ids
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(ids, size=max_sentences, replace=False))


def extended_heads(heads: Sequence[int]) -> np.ndarray:
    """Gold heads as extended indices: ROOT = 0, word w = w + 1."""
    return np.asarray(heads, dtype=np.int64) + 1


def extended_vectors(word_vectors: np.ndarray) -> np.ndarray:
    """(n + 1, d + 2): row 0 is ROOT, row w + 1 is word w; columns: GloVe, is-ROOT, constant 1."""
    n, d = word_vectors.shape
    out = np.zeros((n + 1, d + 2), dtype=np.float32)
    out[1:, :d] = word_vectors
    out[0, d] = 1.0
    out[:, d + 1] = 1.0
    return out


def extended_units(token_unit: np.ndarray, unit_word: np.ndarray, first_special: int | None,
                   n_words: int) -> np.ndarray:
    """The unit of every extended index (0: the first special token's unit; w + 1: word w's), -1 none."""
    units = np.full(n_words + 1, -1, dtype=np.int64)
    word_unit = np.flatnonzero(unit_word >= 0)
    units[unit_word[word_unit] + 1] = word_unit
    if first_special is not None:
        units[0] = token_unit[first_special]
    return units


def sentence_features(word_maps: np.ndarray, units: np.ndarray) -> np.ndarray:
    """(L*H, n+1, n+1) attention between extended indices (from row to column); zero where no unit."""
    layers, n_heads = word_maps.shape[:2]
    n_ext = len(units)
    out = np.zeros((layers * n_heads, n_ext, n_ext), dtype=np.float32)
    valid = np.flatnonzero(units >= 0)
    flat = word_maps.reshape(layers * n_heads, *word_maps.shape[2:])
    out[:, valid[:, None], valid[None, :]] = flat[:, units[valid][:, None], units[valid][None, :]]
    return out


def word_has_unit(token_word: np.ndarray, n_words: int) -> np.ndarray:
    has = np.zeros(n_words, dtype=bool)
    token_word = np.asarray(token_word)
    has[token_word[token_word >= 0]] = True
    return has


def first_special_tokens(token_table: str | Path) -> dict[int, int]:
    """example_id -> index of its first special token (the ROOT stand-in)."""
    table = pq.read_table(token_table, columns=["example_id", "token_index", "special"])
    frame = table.to_pandas()
    special = frame[frame["special"]]
    return special.groupby("example_id")["token_index"].min().astype(int).to_dict()


# ---------------------------------------------------------------------------------------------
# Feature cache


def build_probe_features(dump_dir: str | Path, token_table: str | Path, annotation: str | Path,
                         maps_output: str | Path, index_output: str | Path, *, max_sentences: int | None = None,
                         seed: int) -> dict[str, Any]:
    """Stream a dump; store every chosen sentence's (L*H, n+1, n+1) features as one float16 array.

    Memory stays bounded: the array is a memory-mapped .npy file filled in place.
    """
    start = time.perf_counter()
    dump = AttentionDump(dump_dir)
    trees = read_trees(annotation)
    words_of_tokens = token_words(token_table)
    first_special = first_special_tokens(token_table)
    chosen = choose_sentences(sorted(words_of_tokens), max_sentences, seed)
    lh = dump.num_layers * dump.num_heads
    n_words = np.array([len(trees[int(e)][0]) for e in chosen], dtype=np.int64)
    sizes = lh * (n_words + 1) ** 2
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    position = {int(e): i for i, e in enumerate(chosen)}
    written = np.zeros(len(chosen), dtype=bool)
    has_unit = [None] * len(chosen)
    no_root = 0
    with atomic_path(maps_output) as tmp:
        maps = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float16, shape=(int(offsets[-1]),))
        for example in dump.iter_examples():
            i = position.get(example.example_id)
            if i is None:
                continue
            token_word = words_of_tokens[example.example_id]
            words = to_word_level(example, token_word, int(n_words[i]))
            special = first_special.get(example.example_id)
            no_root += special is None
            units = extended_units(words.token_unit, words.unit_word, special, int(n_words[i]))
            features = sentence_features(words.attention, units)
            maps[offsets[i]:offsets[i + 1]] = features.reshape(-1).astype(np.float16)
            has_unit[i] = units[1:] >= 0
            written[i] = True
        maps.flush()
        del maps
    if not written.all():
        missing = chosen[~written][:5].tolist()
        raise AtlasError(f"{dump_dir}: {int((~written).sum())} sentences of {token_table} are not in the dump "
                         f"(e.g. {missing}); rerun snakemake to rebuild it")
    index = {"example_ids": chosen, "n_words": n_words, "offsets": offsets,
             "has_unit": np.concatenate(has_unit) if has_unit else np.zeros(0, bool),
             "num_layers": np.int64(dump.num_layers), "num_heads": np.int64(dump.num_heads),
             "input_protocol": np.str_(dump.manifest.get("input_protocol", "text"))}
    with atomic_path(index_output) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **index)
    stats = {"sentences": len(chosen), "words": int(n_words.sum()), "values": int(offsets[-1]),
             "bytes": int(offsets[-1]) * 2, "words_without_tokens": int((~index["has_unit"]).sum()),
             "sentences_without_special_token": int(no_root), "seconds": round(time.perf_counter() - start, 2)}
    log.info("probe features of %s: %s", dump_dir, stats)
    return stats


@dataclass
class ProbeFeatures:
    maps: np.ndarray  # flat float16 (memory-mapped)
    example_ids: np.ndarray
    n_words: np.ndarray
    offsets: np.ndarray
    has_unit: np.ndarray  # concatenated per word
    num_layers: int
    num_heads: int
    input_protocol: str = "text"  # how the treebank sentences were fed (attention/texts.py)

    @classmethod
    def load(cls, maps_path: str | Path, index_path: str | Path) -> ProbeFeatures:
        try:
            index = np.load(index_path)
            maps = np.load(maps_path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise AtlasError(f"{maps_path} / {index_path}: unreadable probe feature cache ({exc}); delete them "
                             "and rerun snakemake") from exc
        features = cls(maps, index["example_ids"], index["n_words"], index["offsets"], index["has_unit"],
                       int(index["num_layers"]), int(index["num_heads"]),
                       str(index["input_protocol"]) if "input_protocol" in index.files else "text")
        if features.offsets[-1] != len(maps):
            raise AtlasError(f"{maps_path}: {len(maps)} values, its index {index_path} expects "
                             f"{features.offsets[-1]}; delete both and rerun snakemake")
        return features

    @property
    def num_features(self) -> int:
        return self.num_layers * self.num_heads

    def sentence(self, i: int) -> np.ndarray:
        n = int(self.n_words[i]) + 1
        return np.asarray(self.maps[self.offsets[i]:self.offsets[i + 1]]).reshape(self.num_features, n, n)

    def has_unit_of(self) -> dict[int, np.ndarray]:
        bounds = np.cumsum(self.n_words)[:-1]
        return {int(e): h for e, h in zip(self.example_ids, np.split(self.has_unit, bounds))}


# ---------------------------------------------------------------------------------------------
# Probe data


@dataclass
class ProbeSentence:
    example_id: int
    index: int  # position in the feature cache (-1: none)
    gold: np.ndarray  # (n,) extended index of each word's head
    train_mask: np.ndarray  # (n,) words used in training (they have tokens)
    score_mask: np.ndarray  # (n,) words scored (tokens, and not punctuation when excluded)
    vectors: np.ndarray  # (n + 1, d + 2) extended vectors


class GloveLookup:
    def __init__(self, path: str | Path | None, dim: int = 50) -> None:
        self.index: dict[str, int] = {}
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        if path is not None:
            table = pq.read_table(path)
            self.vectors = list_rows(table["vector"]).astype(np.float32)
            # The first occurrence wins (GloVe lists words by frequency).
            for i, word in enumerate(table["word"].to_pylist()):
                self.index.setdefault(word, i)
        self.dim = self.vectors.shape[1] if len(self.vectors) else dim
        self.lookups = 0
        self.misses = 0

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        for i, word in enumerate(words):
            row = self.index.get(word.lower())
            self.lookups += 1
            if row is None:
                self.misses += 1
            else:
                out[i] = self.vectors[row]
        return out


def probe_sentences(trees: Mapping[int, tuple], example_ids: Sequence[int], has_unit: Mapping[int, np.ndarray],
                    glove: GloveLookup, *, exclude_punct: bool, cache_index: Mapping[int, int] | None = None
                    ) -> list[ProbeSentence]:
    sentences = []
    for example_id in example_ids:
        words, upos, heads, _ = trees[int(example_id)]
        units = has_unit[int(example_id)]
        score = units & (~np.array([u == "PUNCT" for u in upos], dtype=bool) if exclude_punct else True)
        sentences.append(ProbeSentence(
            example_id=int(example_id), index=-1 if cache_index is None else cache_index[int(example_id)],
            gold=extended_heads(heads), train_mask=units.copy(), score_mask=np.asarray(score, dtype=bool),
            vectors=extended_vectors(glove(words))))
    return sentences


def distance_bucket(n_words: int) -> np.ndarray:
    """(n+1, n+1) bucket of candidate e (row) for dependent j (column) by the signed word distance e - j.

    Buckets: 0: <= -10, 1: -9..-6, 2..6: -5..-1, 7..11: +1..+5, 12: +6..+9, 13: >= +10, 14: ROOT (row 0).
    The diagonal (distance 0) is never a candidate; it gets bucket 6 and is masked by the probe.
    """
    ext = np.arange(n_words + 1)
    d = ext[:, None] - ext[None, :]
    bucket = np.select([d <= -10, d <= -6, d <= -1, d == 0, d <= 5, d <= 9], [0, 1, d + 7, 6, d + 6, 12],
                       default=13)
    bucket[0, :] = 14
    return bucket.astype(np.int64)


def distance_features(n_words: int) -> np.ndarray:
    """(buckets, n+1, n+1) one-hot distance features in the layout of attention features (A[b, i, j])."""
    bucket = distance_bucket(n_words)
    return (bucket[None, :, :] == np.arange(N_DISTANCE_FEATURES)[:, None, None]).astype(np.float32)


def pair_features(features: np.ndarray) -> np.ndarray:
    """(n+1, n+1, 2K) features of every (dependent j, candidate i) pair from A (K, n+1, n+1).

    ``pair[j, i, :K] = A[:, i, j]`` (attention from the candidate to the dependent) and
    ``pair[j, i, K:] = A[:, j, i]`` (from the dependent to the candidate).
    """
    return np.concatenate([features.transpose(2, 1, 0), features.transpose(1, 2, 0)], axis=-1)
