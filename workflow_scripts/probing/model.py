"""The trained dependency probes and the baselines (METHODS 7.5, [C] §5).

Every probe scores, for each dependent word j, every candidate head i (the other words of the
sentence, plus ROOT; extended indices, see :mod:`.features`) and predicts the best-scoring one;
trained with a softmax cross-entropy over the candidates, scored by UAS.

- ``attn``: logit(i|j) = sum_k w_k A[k,i,j] + u_k A[k,j,i] + b_root [i = ROOT],
  with A[k,a,c] the word-level attention (METHODS 5) of head k *from* a *to* c, and a learned
  bias added to ROOT.
- ``attn_glove``: the per-head weights depend on the two words,
  w_k -> W_k (x_i (+) x_j) and u_k -> U_k (x_i (+) x_j), where x is the word's extended GloVe
  vector (its constant 1 keeps every head a word-independent weight).
- ``distance_glove`` (baseline, no attention): the attention maps are replaced by one-hot
  buckets of the signed distance i - j (and a ROOT bucket), with the same word-dependent
  weights W_b (x_i (+) x_j).
- ``right_branching`` (baseline, no training): each word's head is the next word; the last
  word is the root.
- the random-init control is ``attn_glove`` on the random checkpoint's maps.

UAS is scored on words that have tokens (words cut by truncation are skipped and counted) and,
following [C], excluding punctuation when ``exclude_punct``. Training uses every word that has
tokens.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.batches import length_batches
from ..core.errors import AtlasError
from .features import N_DISTANCE_FEATURES, ProbeFeatures, ProbeSentence, distance_features

log = logging.getLogger(__name__)

TRAINED_PROBES = ("attn", "attn_glove", "distance_glove")
ATTENTION_PROBES = ("attn", "attn_glove")
BASELINE_PROBES = ("right_branching", "distance_glove")
MAX_CELLS = 40_000  # padded (n+1)^2 cells of a batch of sentences


def _torch():
    import torch

    return torch


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


def sentence_batches(sentences: Sequence[ProbeSentence], max_sentences: int, max_cells: int = MAX_CELLS
                     ) -> list[np.ndarray]:
    """Positions of ``sentences`` in batches of similar length (:func:`length_batches`)."""
    return length_batches((np.array([len(s.gold) for s in sentences]) + 1) ** 2, max_sentences, max_cells)


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


def fit_probe(kind: str, train: Sequence[ProbeSentence], train_source: FeatureSource, *, epochs: int, lr: float,
              seed: int, batch_sentences: int, max_cells: int = MAX_CELLS, threads: int | None = None
              ) -> tuple[Any, dict[str, Any]]:
    """Train a probe (Adam, softmax cross-entropy over candidates); return (probe, info with its train UAS)."""
    torch = _torch()
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = make_probe(kind, train_source.num_features, train[0].vectors.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train_batches = sentence_batches(train, batch_sentences, max_cells)
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
    info = {"train_loss": history, "train_uas": float(train_correct.sum() / max(train_total.sum(), 1)),
            "train_sentences": len(train), "epochs": epochs, "lr": lr, "seed": seed}
    return model, info


def train_probe(kind: str, train: Sequence[ProbeSentence], test: Sequence[ProbeSentence],
                train_source: FeatureSource, test_source: FeatureSource, *, epochs: int, lr: float, seed: int,
                batch_sentences: int, max_cells: int = MAX_CELLS, threads: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Train a probe (:func:`fit_probe`); return test (correct, total) per sentence, and the training info."""
    start = time.perf_counter()
    model, info = fit_probe(kind, train, train_source, epochs=epochs, lr=lr, seed=seed,
                            batch_sentences=batch_sentences, max_cells=max_cells, threads=threads)
    test_batches = sentence_batches(test, batch_sentences, max_cells)
    correct, total = evaluate(model, test_source, test, test_batches)
    info.update({"test_sentences": len(test), "train_seconds": round(time.perf_counter() - start, 2)})
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
