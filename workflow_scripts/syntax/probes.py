"""Attention-based probing classifiers for dependency parsing (METHODS 7.5, [C] §5).

Every probe scores, for each dependent word j, every candidate head i (the other
words of the sentence, plus ROOT) and predicts the best-scoring one; trained
with a softmax cross-entropy over the candidates, scored by UAS.

Candidate indexing (the one place an off-by-one can hide): the *extended*
index e of a sentence of n words is 0 for ROOT and w + 1 for word w. The
feature tensor A (heads, n+1, n+1) is indexed by extended indices on both
axes, and the vector of candidate e is row e of the extended vector matrix
(:func:`extended_vectors`); a gold head h (-1 root) is extended index h + 1.

- ``attn``: logit(i|j) = sum_k w_k A[k,i,j] + u_k A[k,j,i] + b_root [i = ROOT],
  with A[k,a,c] the word-level attention (METHODS 5) of head k *from* a *to* c.
  ROOT is represented by the first special token (``[CLS]``): its word-level
  row and column stand in ROOT's place, and a learned bias is added to ROOT.
- ``attn_glove``: the per-head weights depend on the two words,
  w_k -> W_k (x_i (+) x_j) and u_k -> U_k (x_i (+) x_j), where x is the word's
  fixed GloVe vector (lowercased lookup; zero for out-of-vocabulary words and
  ROOT) extended by an is-ROOT indicator and a constant 1 (so every head keeps a
  word-independent weight).
- ``distance_glove`` (baseline, no attention): the attention maps are replaced
  by one-hot buckets of the signed distance i - j (and a ROOT bucket), with the
  same word-dependent weights W_b (x_i (+) x_j).
- ``right_branching`` (baseline, no training): each word's head is the next
  word; the last word is the root.
- the random-init control is ``attn_glove`` on the random checkpoint's maps.

UAS is scored on words that have tokens (words cut by truncation are skipped
and counted) and, following [C], excluding punctuation (UPOS PUNCT; config
``syntax.exclude_punct``). Training uses every word that has tokens.

Features are computed once per checkpoint and split, streaming the dump, and
stored as one float16 array (:func:`build_probe_features`), memory-mapped at
training time.

:func:`mst_uuas` decodes an undirected maximum spanning tree from one head's
symmetrised, renormalised word-level map and scores its UUAS.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..attention.reader import AttentionDump, to_word_level
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.io import atomic_path, read_metadata, write_csv, write_table
from ..core.stats import paired_bootstrap_test, ratio_bootstrap_ci
from .dependency import read_trees

log = logging.getLogger(__name__)

TRAINED_PROBES = ("attn", "attn_glove", "distance_glove")
ATTENTION_PROBES = ("attn", "attn_glove")
BASELINE_PROBES = ("right_branching", "distance_glove")
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
                         seed: int = 0) -> dict[str, Any]:
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
            column = table["vector"].combine_chunks()
            self.vectors = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, column.type.list_size)
            self.vectors = self.vectors.astype(np.float32)
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


# ---------------------------------------------------------------------------------------------
# The probe model


def _torch():
    import torch

    return torch


def pair_features(features: np.ndarray) -> np.ndarray:
    """(n+1, n+1, 2K) features of every (dependent j, candidate i) pair from A (K, n+1, n+1).

    ``pair[j, i, :K] = A[:, i, j]`` (attention from the candidate to the dependent) and
    ``pair[j, i, K:] = A[:, j, i]`` (from the dependent to the candidate).
    """
    return np.concatenate([features.transpose(2, 1, 0), features.transpose(1, 2, 0)], axis=-1)


def make_probe(kind: str, num_features: int, vector_dim: int):
    """The torch module of a trained probe (see the module docstring).

    ``num_features`` is the number of pair features C (2K for the attention probes: a weight per
    head and direction; the distance buckets for ``distance_glove``).
    """
    if kind not in TRAINED_PROBES:
        raise AtlasError(f"unknown probe {kind!r}; known: {', '.join(TRAINED_PROBES)}")
    torch = _torch()
    nn = torch.nn

    class PairProbe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kind = kind
            if kind == "attn":
                self.weight = nn.Parameter(torch.zeros(num_features))  # (w_k, u_k)
                self.root_bias = nn.Parameter(torch.zeros(()))
            else:
                # W_k (x_i (+) x_j) = W_k^cand x_i + W_k^dep x_j, for the weights of both directions at once.
                self.candidate = nn.Linear(vector_dim, num_features, bias=False)
                self.dependent = nn.Linear(vector_dim, num_features, bias=False)
                nn.init.zeros_(self.candidate.weight)
                nn.init.zeros_(self.dependent.weight)

        def forward(self, pairs, vectors):
            """pairs (B, N, N, C): [b, j, i] features of dependent j and candidate i (extended indices);
            vectors (B, N, D): extended vectors. Returns logits (B, j, i)."""
            if self.kind == "attn":
                root = torch.zeros(pairs.shape[2], dtype=pairs.dtype)
                root[0] = 1.0
                return pairs @ self.weight + self.root_bias * root
            weight_candidate = self.candidate(vectors)  # (B, N, C), indexed by the candidate i
            weight_dependent = self.dependent(vectors)  # (B, N, C), indexed by the dependent j
            return ((pairs * weight_candidate[:, None, :, :]).sum(-1)
                    + (pairs @ weight_dependent.unsqueeze(-1)).squeeze(-1))

    return PairProbe()


def length_batches(lengths: np.ndarray, max_sentences: int, max_cells: int) -> list[np.ndarray]:
    """Sentences grouped by similar length: at most ``max_sentences`` and ``max_cells`` padded (n+1)^2 cells."""
    order = np.argsort(lengths, kind="stable")
    batches, current = [], []
    for i in order:
        size = (int(lengths[i]) + 1) ** 2
        if current and (len(current) >= max_sentences or size * (len(current) + 1) > max_cells):
            batches.append(np.asarray(current))
            current = []
        current.append(i)
    if current:
        batches.append(np.asarray(current))
    return batches


class FeatureSource:
    """Padded features of a batch: attention maps from the cache, or distance one-hots.

    :meth:`raw` gathers a batch once (features kept as float16 (B, F, N, N) in the layout
    A[b, f, from, to]); :meth:`pairs` turns them into the probe's (B, N, N, C) pair features
    [b, dependent j, candidate i] (see :func:`pair_features`) with torch, batch-wide.
    """

    def __init__(self, kind: str, features: ProbeFeatures | None) -> None:
        self.kind = kind
        self.features = features
        if kind in ATTENTION_PROBES and features is None:
            raise AtlasError(f"probe {kind!r} needs attention features")
        self.raw_features = features.num_features if kind in ATTENTION_PROBES else N_DISTANCE_FEATURES
        self.num_features = 2 * self.raw_features if kind in ATTENTION_PROBES else N_DISTANCE_FEATURES

    def raw(self, sentences: Sequence[ProbeSentence]):
        torch = _torch()
        size = max(len(s.gold) for s in sentences) + 1
        b = len(sentences)
        maps = np.zeros((b, self.raw_features, size, size), dtype=np.float16)
        vectors = np.zeros((b, size, sentences[0].vectors.shape[1]), dtype=np.float32)
        gold = np.zeros((b, size), dtype=np.int64)
        train = np.zeros((b, size), dtype=bool)
        score = np.zeros((b, size), dtype=bool)
        candidate = np.zeros((b, size, size), dtype=bool)  # [b, j, i]
        for r, s in enumerate(sentences):
            n = len(s.gold) + 1
            if self.kind in ATTENTION_PROBES:
                maps[r, :, :n, :n] = self.features.sentence(s.index)
            else:
                maps[r, :, :n, :n] = distance_features(n - 1)
            vectors[r, :n] = s.vectors
            gold[r, 1:n] = s.gold
            train[r, 1:n] = s.train_mask
            score[r, 1:n] = s.score_mask
            candidate[r, :n, :n] = ~np.eye(n, dtype=bool)
        return (torch.from_numpy(maps), torch.from_numpy(vectors), torch.from_numpy(gold),
                torch.from_numpy(train), torch.from_numpy(score), torch.from_numpy(candidate))

    def pairs(self, maps):
        """(B, F, N, N) float16 maps -> (B, N, N, C) float32 pair features [b, j, i]."""
        torch = _torch()
        to_dependent = maps.permute(0, 3, 2, 1)  # [b, j, i, f] = A[b, f, i, j]: from candidate i to j
        if self.kind not in ATTENTION_PROBES:
            return to_dependent.float().contiguous()
        return torch.cat([to_dependent, maps.permute(0, 2, 3, 1)], dim=-1).float()

    def batch(self, sentences: Sequence[ProbeSentence]):
        maps, *rest = self.raw(sentences)
        return (self.pairs(maps), *rest)


def _masked_logits(model, feats, vectors, candidate):
    torch = _torch()
    logits = model(feats, vectors)
    return logits.masked_fill(~candidate, torch.finfo(logits.dtype).min)


def evaluate(model, source: FeatureSource, sentences: Sequence[ProbeSentence], batches: list[np.ndarray],
             prepared: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(correct, scored) per sentence, in the order of ``sentences``."""
    torch = _torch()
    correct = np.zeros(len(sentences), dtype=np.int64)
    total = np.zeros(len(sentences), dtype=np.int64)
    model.eval()
    with torch.no_grad():
        for b, batch in enumerate(batches):
            maps, vectors, gold, _, score, candidate = (prepared[b] if prepared is not None
                                                        else source.raw([sentences[i] for i in batch]))
            predicted = _masked_logits(model, source.pairs(maps), vectors, candidate).argmax(-1)
            hits = (predicted == gold) & score
            correct[batch] = hits.sum(-1).numpy()
            total[batch] = score.sum(-1).numpy()
    return correct, total


def train_probe(kind: str, train: Sequence[ProbeSentence], test: Sequence[ProbeSentence],
                train_source: FeatureSource, test_source: FeatureSource, *, epochs: int, lr: float, seed: int,
                batch_sentences: int = 32, max_cells: int = 40_000, threads: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Train a probe (Adam, softmax cross-entropy over candidates); return test (correct, total) per sentence."""
    torch = _torch()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = make_probe(kind, train_source.num_features, train[0].vectors.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train_batches = length_batches(np.array([len(s.gold) for s in train]), batch_sentences, max_cells)
    test_batches = length_batches(np.array([len(s.gold) for s in test]), batch_sentences, max_cells)
    history = []
    start = time.perf_counter()
    # The training batches are gathered once (float16 maps, padded): each epoch then only computes.
    prepared = [train_source.raw([train[i] for i in batch]) for batch in train_batches]
    for epoch in range(epochs):
        model.train()
        total_loss, total_words = 0.0, 0
        for b in rng.permutation(len(train_batches)):
            maps, vectors, gold, mask, _, candidate = prepared[b]
            if not mask.any():
                continue
            logits = _masked_logits(model, train_source.pairs(maps), vectors, candidate)
            loss = torch.nn.functional.cross_entropy(logits[mask], gold[mask], reduction="sum")
            optimizer.zero_grad()
            (loss / mask.sum()).backward()
            optimizer.step()
            total_loss += loss.item()
            total_words += int(mask.sum())
        history.append(total_loss / max(total_words, 1))
        log.info("probe %s epoch %d/%d: train loss %.4f (%.0fs)", kind, epoch + 1, epochs, history[-1],
                 time.perf_counter() - start)
    train_correct, train_total = evaluate(model, train_source, train, train_batches, prepared)
    del prepared
    correct, total = evaluate(model, test_source, test, test_batches)
    info = {"train_loss": history, "train_uas": float(train_correct.sum() / max(train_total.sum(), 1)),
            "train_sentences": len(train), "test_sentences": len(test), "epochs": epochs, "lr": lr, "seed": seed,
            "train_seconds": round(time.perf_counter() - start, 2)}
    return correct, total, info


def right_branching(sentences: Sequence[ProbeSentence]) -> tuple[np.ndarray, np.ndarray]:
    """Each word's head is the next word; the last word is the root. (correct, total) per sentence."""
    correct = np.zeros(len(sentences), dtype=np.int64)
    total = np.zeros(len(sentences), dtype=np.int64)
    for r, s in enumerate(sentences):
        n = len(s.gold)
        predicted = np.arange(n) + 2  # extended index of word w + 1
        predicted[-1] = 0
        correct[r] = int(((predicted == s.gold) & s.score_mask).sum())
        total[r] = int(s.score_mask.sum())
    return correct, total


# ---------------------------------------------------------------------------------------------
# Maximum spanning tree of one head


def maximum_spanning_tree(weights: np.ndarray) -> list[tuple[int, int]]:
    """Edges (a, b), a < b, of an undirected maximum spanning tree of a symmetric weight matrix (Prim)."""
    n = len(weights)
    if n < 2:
        return []
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = weights[0].astype(np.float64).copy()
    parent = np.zeros(n, dtype=np.int64)
    edges = []
    for _ in range(n - 1):
        candidates = np.where(in_tree, -np.inf, best)
        v = int(np.argmax(candidates))
        edges.append((min(v, int(parent[v])), max(v, int(parent[v]))))
        in_tree[v] = True
        better = (~in_tree) & (weights[v] > best)
        best = np.where(better, weights[v], best)
        parent = np.where(better, v, parent)
    return edges


def symmetrised_map(word_map: np.ndarray) -> np.ndarray:
    """Rows renormalised to sum to 1 over the words, then (A + A^T) / 2."""
    sums = word_map.sum(axis=1, keepdims=True)
    normalised = np.divide(word_map, sums, out=np.zeros_like(word_map, dtype=np.float64), where=sums > 0)
    return (normalised + normalised.T) / 2


def mst_sentence(word_map: np.ndarray, heads: np.ndarray, nodes: np.ndarray) -> tuple[int, int]:
    """(correct, gold) undirected edges of the MST over ``nodes`` (word indices) of a word-to-word map."""
    if len(nodes) < 2:
        return 0, 0
    sub = symmetrised_map(word_map[np.ix_(nodes, nodes)].astype(np.float64))
    predicted = {(int(nodes[a]), int(nodes[b])) for a, b in maximum_spanning_tree(sub)}
    node_set = set(nodes.tolist())
    gold = {tuple(sorted((int(j), int(h)))) for j, h in enumerate(heads) if h >= 0 and j in node_set and h in node_set}
    return len(gold & predicted), len(gold)


def mst_uuas(features: ProbeFeatures, trees: Mapping[int, tuple], layer: int, head: int, *, exclude_punct: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(example ids, correct, gold) per sentence of the MST decoded from one head's word-to-word map."""
    k = layer * features.num_heads + head
    has_unit = features.has_unit_of()
    correct = np.zeros(len(features.example_ids), dtype=np.int64)
    total = np.zeros_like(correct)
    for i, example_id in enumerate(features.example_ids):
        words, upos, heads, _ = trees[int(example_id)]
        word_map = features.sentence(i)[k, 1:, 1:].astype(np.float64)  # drop ROOT: word-to-word only
        keep = has_unit[int(example_id)].copy()
        if exclude_punct:
            keep &= np.array([u != "PUNCT" for u in upos], dtype=bool)
        correct[i], total[i] = mst_sentence(word_map, np.asarray(heads), np.flatnonzero(keep))
    return features.example_ids, correct, total


# ---------------------------------------------------------------------------------------------
# Entry-level functions


def _write_scores(example_ids: Sequence[int], correct: np.ndarray, total: np.ndarray, output: str | Path,
                  meta: dict[str, Any]) -> None:
    table = pa.table({"example_id": pa.array(np.asarray(example_ids, dtype=np.int64)),
                      "correct": pa.array(correct.astype(np.int32)), "total": pa.array(total.astype(np.int32))})
    uas = float(correct.sum() / max(total.sum(), 1))
    meta = {**meta, "uas": uas, "n": int(total.sum())}
    log.info("probe %s: UAS %.4f over %d words", meta.get("probe"), uas, int(total.sum()))
    write_table(table, output, meta)


def run_attention_probe(kind: str, train_maps: str | Path, train_index: str | Path, test_maps: str | Path,
                        test_index: str | Path, train_annotation: str | Path, test_annotation: str | Path,
                        glove_path: str | Path | None, output: str | Path, *, epochs: int, lr: float, seed: int,
                        exclude_punct: bool = True, batch_sentences: int = 32, threads: int | None = None) -> None:
    """Train an attention probe on the train features and write its per-sentence test scores."""
    if kind not in ATTENTION_PROBES:
        raise AtlasError(f"unknown attention probe {kind!r}; known: {', '.join(ATTENTION_PROBES)}")
    train_features = ProbeFeatures.load(train_maps, train_index)
    test_features = ProbeFeatures.load(test_maps, test_index)
    glove = GloveLookup(glove_path if kind == "attn_glove" else None)
    sets = []
    for features, annotation in ((train_features, train_annotation), (test_features, test_annotation)):
        trees = read_trees(annotation)
        cache_index = {int(e): i for i, e in enumerate(features.example_ids)}
        sets.append(probe_sentences(trees, features.example_ids, features.has_unit_of(), glove,
                                    exclude_punct=exclude_punct, cache_index=cache_index))
    correct, total, info = train_probe(kind, sets[0], sets[1], FeatureSource(kind, train_features),
                                       FeatureSource(kind, test_features), epochs=epochs, lr=lr, seed=seed,
                                       batch_sentences=batch_sentences, threads=threads)
    info.update({"probe": kind, "exclude_punct": exclude_punct, "input_protocol": test_features.input_protocol,
                 "glove_oov_rate": glove.misses / glove.lookups if glove.lookups else None})
    _write_scores(test_features.example_ids, correct, total, output, info)


def run_baseline_probe(kind: str, train_tokens: str | Path, test_tokens: str | Path, train_annotation: str | Path,
                       test_annotation: str | Path, glove_path: str | Path | None, output: str | Path, *,
                       epochs: int, lr: float, seed: int, max_train_sentences: int | None = None,
                       exclude_punct: bool = True, batch_sentences: int = 32, threads: int | None = None) -> None:
    """Right-branching or distances+GloVe, on the same words as the attention probes."""
    glove = GloveLookup(glove_path if kind == "distance_glove" else None)
    sets = []
    for tokens, annotation, cap in ((train_tokens, train_annotation, max_train_sentences),
                                    (test_tokens, test_annotation, None)):
        trees = read_trees(annotation)
        words_of_tokens = token_words(tokens)
        ids = choose_sentences(sorted(words_of_tokens), cap, seed)
        has_unit = {int(e): word_has_unit(words_of_tokens[int(e)], len(trees[int(e)][0])) for e in ids}
        sets.append((ids, probe_sentences(trees, ids, has_unit, glove, exclude_punct=exclude_punct)))
    (train_ids, train), (test_ids, test) = sets
    if kind == "right_branching":
        correct, total = right_branching(test)
        info: dict[str, Any] = {"train_sentences": 0, "test_sentences": len(test)}
    elif kind == "distance_glove":
        source = FeatureSource(kind, None)
        correct, total, info = train_probe(kind, train, test, source, source, epochs=epochs, lr=lr, seed=seed,
                                           batch_sentences=batch_sentences, threads=threads)
        info["glove_oov_rate"] = glove.misses / glove.lookups if glove.lookups else None
    else:
        raise AtlasError(f"unknown baseline probe {kind!r}; known: {', '.join(BASELINE_PROBES)}")
    info.update({"probe": kind, "exclude_punct": exclude_punct,
                 "input_protocol": read_metadata(test_tokens).get("input_protocol", "text")})
    _write_scores(test_ids, correct, total, output, info)


def best_all_head(dependency_scores: str | Path) -> tuple[int, int, float]:
    """(layer, head, accuracy) of the head best at the `all` relation (dependent -> head) on a score part."""
    from .dependency import ALL, DEP_TO_HEAD
    from .dependency_selection import SplitCounts

    counts = SplitCounts.read(dependency_scores)
    _, total, heads, _ = counts.candidates(ALL, DEP_TO_HEAD)
    if total.sum() == 0:
        raise AtlasError(f"{dependency_scores}: no scored arcs to choose a head from")
    accuracy = heads.sum(axis=0) / total.sum()
    k = int(np.argmax(accuracy))
    n_heads = int(counts.meta["num_heads"])
    return k // n_heads, k % n_heads, float(accuracy[k])


def run_mst(test_maps: str | Path, test_index: str | Path, test_annotation: str | Path,
            dependency_scores: str | Path, output: str | Path, *, exclude_punct: bool = True) -> None:
    """UUAS of the MST of the best `all` head (chosen on ``dependency_scores``' split) on the test features."""
    layer, head, select_accuracy = best_all_head(dependency_scores)
    features = ProbeFeatures.load(test_maps, test_index)
    trees = read_trees(test_annotation)
    ids, correct, total = mst_uuas(features, trees, layer, head, exclude_punct=exclude_punct)
    _write_scores(ids, correct, total, output, {
        "probe": "mst_best_head", "metric": "uuas", "layer": layer, "head": head,
        "head_label": f"{layer + 1}-{head + 1}", "select_accuracy": select_accuracy,
        "selected_on": str(dependency_scores), "exclude_punct": exclude_punct,
        "input_protocol": features.input_protocol})


# ---------------------------------------------------------------------------------------------
# Table


def summarise_probes(parts: Sequence[tuple[str, str, str, str | Path]], output: str | Path, *, resamples: int = 1000,
                     seed: int = 0, control_checkpoint: str = "random") -> pd.DataFrame:
    """probes.csv from the per-sentence parts (model, checkpoint, probe, path); paired tests vs the control."""
    loaded = {}
    for model, checkpoint, probe, path in parts:
        table = pq.read_table(path).to_pandas().sort_values("example_id")
        loaded[(model, checkpoint, probe)] = (table, read_metadata(path))
    rows = []
    for (model, checkpoint, probe), (table, meta) in loaded.items():
        correct, total = table["correct"].to_numpy(np.float64), table["total"].to_numpy(np.float64)
        estimate, low, high = ratio_bootstrap_ci(correct, total, resamples=resamples, seed=seed)
        row = {"model": model, "checkpoint": checkpoint, "probe": probe, "input_protocol": meta.get("input_protocol"),
               "metric": meta.get("metric", "uas"),
               "uas": float(estimate), "n": int(total.sum()), "ci_low": float(low), "ci_high": float(high),
               "sentences": len(table), "train_sentences": meta.get("train_sentences"),
               "train_uas": meta.get("train_uas"), "epochs": meta.get("epochs"), "lr": meta.get("lr"),
               "seed": meta.get("seed"), "head_label": meta.get("head_label", ""),
               "exclude_punct": meta.get("exclude_punct"), "train_seconds": meta.get("train_seconds")}
        control = loaded.get((model, control_checkpoint, probe)) if checkpoint not in (control_checkpoint, "none") \
            else None
        if control is not None:
            other = control[0]
            if not np.array_equal(other["example_id"].to_numpy(), table["example_id"].to_numpy()) or \
                    not np.array_equal(other["total"].to_numpy(), table["total"].to_numpy()):
                raise AtlasError(f"probe {probe}: {checkpoint} and {control_checkpoint} were scored on different "
                                 "words; rerun snakemake")
            diff, _, _, p = paired_bootstrap_test(other["correct"].to_numpy(np.float64), correct, total,
                                                  resamples=resamples, seed=seed)
            row.update({"control_checkpoint": control_checkpoint,
                        "control_uas": float(other["correct"].sum() / max(other["total"].sum(), 1)),
                        "diff_vs_control": diff, "p_vs_control": p})
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame):
        order = {p: i for i, p in enumerate(("right_branching", "distance_glove", "attn", "attn_glove",
                                             "mst_best_head"))}
        frame = frame.sort_values(["model", "probe", "checkpoint"],
                                  key=lambda s: s.map(order) if s.name == "probe" else s, kind="stable")
    write_csv(frame, output)
    return frame

