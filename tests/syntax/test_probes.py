"""Probing classifiers (METHODS 7.5): word indexing, the probe's formula, training, baselines and the MST."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch

from support.dumps import write_annotation, write_dump, write_word_index_tokens
from support.maps import token_maps
from workflow_scripts.data.glove import vectors_table
from workflow_scripts.probing import model as probes
from workflow_scripts.probing.features import (
    GloveLookup,
    ProbeFeatures,
    ProbeSentence,
    build_probe_features,
    distance_bucket,
    extended_heads,
    extended_vectors,
    pair_features,
    probe_sentences,
)
from workflow_scripts.probing.model import FeatureSource, make_probe, right_branching, train_probe
from workflow_scripts.syntax.probes.mst import maximum_spanning_tree, mst_sentence
from workflow_scripts.syntax.probes.training import run_attention_probe


def test_extended_indices_put_root_first_and_word_w_at_w_plus_one():
    vectors = np.arange(6, dtype=np.float32).reshape(3, 2)
    ext = extended_vectors(vectors)
    assert ext.shape == (4, 4)
    np.testing.assert_array_equal(ext[1:, :2], vectors)  # candidate w + 1 carries word w's vector
    assert ext[0].tolist() == [0, 0, 1, 1] and (ext[1:, 2] == 0).all() and (ext[:, 3] == 1).all()
    assert extended_heads([1, -1, 1]).tolist() == [2, 0, 2]


def test_pair_features_index_dependent_then_candidate():
    a = np.random.default_rng(0).random((2, 4, 4))  # A[k, from, to]
    pairs = pair_features(a)
    for j in range(4):
        for i in range(4):
            np.testing.assert_array_equal(pairs[j, i, :2], a[:, i, j])  # from the candidate to the dependent
            np.testing.assert_array_equal(pairs[j, i, 2:], a[:, j, i])  # from the dependent to the candidate


def _features(sentences: list[np.ndarray]) -> ProbeFeatures:
    """An in-memory feature cache of (K, n+1, n+1) maps."""
    n_words = np.array([s.shape[-1] - 1 for s in sentences])
    flat = np.concatenate([s.reshape(-1) for s in sentences]).astype(np.float16)
    offsets = np.concatenate([[0], np.cumsum([s.size for s in sentences])])
    return ProbeFeatures(flat, np.arange(len(sentences)), n_words, offsets, np.ones(n_words.sum(), bool), 1,
                         sentences[0].shape[0])


def test_the_probe_computes_the_papers_formula():
    rng = np.random.default_rng(1)
    k, n, d = 2, 4, 3
    a = rng.random((k, n + 1, n + 1)).astype(np.float32)
    vectors = rng.normal(size=(n + 1, d)).astype(np.float32)
    sentence = ProbeSentence(0, 0, np.zeros(n, np.int64), np.ones(n, bool), np.ones(n, bool), vectors)
    pairs, vec, *_ = FeatureSource("attn_glove", _features([a])).batch([sentence])
    torch.manual_seed(0)
    model = make_probe("attn_glove", 2 * k, d)
    for parameter in model.parameters():
        torch.nn.init.normal_(parameter)
    with torch.no_grad():
        logits = model(pairs, vec)[0].numpy()
    wc, wd = model.candidate.weight.detach().numpy(), model.dependent.weight.detach().numpy()
    a16 = a.astype(np.float16).astype(np.float64)
    for j in range(1, n + 1):
        for i in range(n + 1):
            # sum_k W_k (x_i (+) x_j) a^k_ij + U_k (x_i (+) x_j) a^k_ji, with a^k_ij = A[k, i, j].
            expected = sum((wc[h] @ vectors[i] + wd[h] @ vectors[j]) * a16[h, i, j]
                           + (wc[k + h] @ vectors[i] + wd[k + h] @ vectors[j]) * a16[h, j, i] for h in range(k))
            assert logits[j, i] == pytest.approx(expected, rel=1e-4, abs=1e-4)
    attention_only = make_probe("attn", 2 * k, d)
    with torch.no_grad():
        attention_only.weight.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
        attention_only.root_bias.fill_(5.0)
        logits = attention_only(pairs, vec)[0].numpy()
    assert logits[2, 3] == pytest.approx(1 * a16[0, 3, 2] + 2 * a16[1, 3, 2] + 3 * a16[0, 2, 3] + 4 * a16[1, 2, 3],
                                         rel=1e-4)
    assert logits[2, 0] == pytest.approx(1 * a16[0, 0, 2] + 2 * a16[1, 0, 2] + 3 * a16[0, 2, 0] + 4 * a16[1, 2, 0]
                                         + 5.0, rel=1e-4)


def _head_word_corpus(tmp_path, n_sentences=24, seed=0):
    """Sentences whose head is always the word 'verb' (root: ROOT): only the candidate's own vector says so."""
    rng = np.random.default_rng(seed)
    vocabulary = ["verb", "a", "b", "c", "d", "e"]
    glove = tmp_path / "glove.parquet"
    pq.write_table(vectors_table(vocabulary, rng.normal(size=(len(vocabulary), 8))), glove)
    trees, maps = {}, []
    for s in range(n_sentences):
        n = int(rng.integers(4, 9))
        words = list(rng.choice(vocabulary[1:], size=n))
        position = int(rng.integers(0, n))
        words[position] = "VERB"  # looked up lowercased
        heads = [position] * n
        heads[position] = -1
        trees[s] = (words, ["X"] * n, heads, ["dep"] * n)
        maps.append(np.full((1, n + 1, n + 1), 0.1, dtype=np.float32))  # attention says nothing
    return trees, _features(maps), GloveLookup(glove)


def test_a_head_known_only_by_its_word_vector_is_found(tmp_path):
    """The off-by-one check: if candidate e's vector were not word e - 1's, the probe could not find the head."""
    trees, features, glove = _head_word_corpus(tmp_path)
    sentences = probe_sentences(trees, features.example_ids, features.has_unit_of(), glove, exclude_punct=False,
                                cache_index={i: i for i in range(len(trees))})
    source = FeatureSource("attn_glove", features)
    correct, total, info = train_probe("attn_glove", sentences, sentences, source, source, epochs=25, lr=0.1,
                                       seed=0, batch_sentences=8)
    assert correct.sum() == total.sum(), info
    # The same training with every vector moved one candidate to the right fails: the test would catch it.
    shifted = [ProbeSentence(s.example_id, s.index, s.gold, s.train_mask, s.score_mask, np.roll(s.vectors, 1, axis=0))
               for s in sentences]
    correct, total, _ = train_probe("attn_glove", shifted, shifted, source, source, epochs=25, lr=0.1, seed=0,
                                    batch_sentences=8)
    assert correct.sum() < 0.6 * total.sum()


# [CLS] the cat sat on the ma ##t [SEP], a word split in two tokens; "sat" is the root.
WORDS = ["the", "cat", "sat", "on", "the", "mat"]
UPOS = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]
HEADS = [1, 2, -1, 5, 5, 2]
TOKEN_WORD = [-1, 0, 1, 2, 3, 4, 5, 5, -1]


def _gold_dump(tmp_path, token_word=TOKEN_WORD, n_sentences=8):
    """Head 0 attends from every word to its gold head ([CLS] for the root); head 1 is uniform."""
    token_word = np.asarray(token_word)
    gold = token_maps(token_word, [[h] if h >= 0 else [] for h in HEADS], special_mass=0.0)
    gold[token_word == HEADS.index(-1)] = 0
    gold[np.ix_(np.flatnonzero(token_word == HEADS.index(-1)), [0])] = 1.0  # the root attends to [CLS]
    uniform = np.full_like(gold, 1 / len(token_word))
    maps = np.array([[gold, uniform]])
    dump = write_dump(tmp_path / "dump", {i: maps for i in range(n_sentences)}, n_shards=1).parent
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {i: list(token_word) for i in range(n_sentences)})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {i: (WORDS, UPOS, HEADS, ["dep"] * 6) for i in range(n_sentences)})
    return dump, tokens, annotation, maps


def test_feature_cache_maps_words_and_root_to_extended_indices(tmp_path):
    dump, tokens, annotation, maps = _gold_dump(tmp_path)
    stats = build_probe_features(dump, tokens, annotation, tmp_path / "f.npy", tmp_path / "f.npz", max_sentences=5,
                                 seed=0)
    assert stats["sentences"] == 5 and stats["words_without_tokens"] == 0
    features = ProbeFeatures.load(tmp_path / "f.npy", tmp_path / "f.npz")
    a = features.sentence(0).astype(np.float32)  # (2 heads, 7, 7)
    assert a.shape == (2, 7, 7)
    for w, h in enumerate(HEADS):
        assert a[0, w + 1, h + 1] == pytest.approx(1.0, abs=1e-3)  # word w -> its head (ROOT = [CLS] = 0)
    # The split word "mat" (extended 6) receives the sum of its two tokens' attention ...
    assert a[1, 1, 6] == pytest.approx(2 / 9, abs=1e-3)
    # ... and ROOT's row is [CLS]'s own row (it attends to itself, not to a word).
    assert a[0, 0, 1:].sum() == pytest.approx(0.0, abs=1e-3)


def test_attention_probe_learns_a_gold_head_map_end_to_end(tmp_path):
    dump, tokens, annotation, _ = _gold_dump(tmp_path)
    build_probe_features(dump, tokens, annotation, tmp_path / "f.npy", tmp_path / "f.npz", seed=0)
    out = tmp_path / "attn.parquet"
    run_attention_probe("attn", tmp_path / "f.npy", tmp_path / "f.npz", tmp_path / "f.npy", tmp_path / "f.npz",
                        annotation, annotation, None, out, epochs=30, lr=0.2, seed=0, exclude_punct=True,
                        batch_sentences=32, threads=None)  # None: torch's own thread count
    scores = pq.read_table(out).to_pandas()
    assert (scores["correct"] == scores["total"]).all() and scores["total"].sum() == 8 * 6


def test_words_without_tokens_have_zero_features_and_are_not_scored(tmp_path):
    token_word = [-1, 0, 1, 2, 3, 4, -1]  # "mat" was cut off
    dump, tokens, annotation, _ = _gold_dump(tmp_path, token_word, n_sentences=2)
    stats = build_probe_features(dump, tokens, annotation, tmp_path / "f.npy", tmp_path / "f.npz", seed=0)
    assert stats["words_without_tokens"] == 2
    features = ProbeFeatures.load(tmp_path / "f.npy", tmp_path / "f.npz")
    a = features.sentence(1)
    assert not a[:, 6, :].any() and not a[:, :, 6].any()
    assert features.has_unit_of()[1].tolist() == [True] * 5 + [False]


def test_right_branching_attaches_each_word_to_the_next_and_the_last_to_root():
    def sentence(heads, upos=None):
        n = len(heads)
        score = np.ones(n, bool) if upos is None else np.array([u != "PUNCT" for u in upos])
        return ProbeSentence(0, -1, extended_heads(heads), np.ones(n, bool), score, np.zeros((n + 1, 3)))

    correct, total = right_branching([sentence([1, 2, -1]), sentence([-1, 0, 1]),
                                      sentence([1, 3, 3, -1], ["DET", "NOUN", "PUNCT", "VERB"])])
    assert correct.tolist() == [3, 0, 2] and total.tolist() == [3, 3, 3]


def test_distance_buckets():
    bucket = distance_bucket(12)
    assert (bucket[0] == 14).all()  # ROOT
    # Dependent word 6 (extended 7): candidates words 0..11 at distances -6..+5.
    assert bucket[1:, 7].tolist() == [1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 11]
    assert distance_bucket(30)[1, 25] == 0 and distance_bucket(30)[25, 1] == 13


def test_maximum_spanning_tree_and_uuas():
    weights = np.array([[0, 5, 1, 0], [5, 0, 4, 1], [1, 4, 0, 6], [0, 1, 6, 0]], dtype=float)
    assert sorted(maximum_spanning_tree(weights)) == [(0, 1), (1, 2), (2, 3)]
    # A map in which every word attends to its gold head (the root to itself) decodes the gold tree,
    # whatever the row scale: rows are renormalised first.
    heads = np.array(HEADS)
    word_map = np.zeros((6, 6))
    for w, h in enumerate(heads):
        word_map[w, h if h >= 0 else w] = 0.3 + 0.1 * w
    word_map += 0.01
    assert mst_sentence(word_map, heads, np.arange(6)) == (5, 5)
    # Leaving a word out (punctuation) drops its gold edges from the count.
    assert mst_sentence(word_map, heads, np.array([0, 1, 2, 4, 5])) == (4, 4)


def test_probe_names_are_checked():
    with pytest.raises(Exception, match="unknown probe"):
        make_probe("attn_words", 4, 3)
    assert set(probes.ATTENTION_PROBES) <= set(probes.TRAINED_PROBES)


def test_the_probes_table_has_a_row_per_treebank_each_paired_with_its_own_control(tmp_path):
    """ewt: 2 sentences of 5 scored words, attn 7/10, its control 2/10; ptb: 3 sentences of 4 words, attn 6/12,
    its control 12/12. A control from the other treebank could not even be paired (other sentences)."""
    from workflow_scripts.syntax.probes.tables import summarise_probes, write_scores

    scores = {("pretrained", "ewt", "attn"): ([3, 4], [5, 5]), ("random", "ewt", "attn"): ([1, 1], [5, 5]),
              ("none", "ewt", "right_branching"): ([2, 2], [5, 5]),
              ("pretrained", "ptb", "attn"): ([2, 2, 2], [4, 4, 4]), ("random", "ptb", "attn"): ([4, 4, 4], [4, 4, 4]),
              ("none", "ptb", "right_branching"): ([1, 1, 1], [4, 4, 4])}
    parts = []
    for (checkpoint, treebank, probe), (correct, total) in scores.items():
        path = tmp_path / f"{checkpoint}_{treebank}_{probe}.parquet"
        write_scores(list(range(len(correct))), np.array(correct), np.array(total), path,
                     {"probe": probe, "input_protocol": "words"})
        parts.append(("m", checkpoint, treebank, probe, path))
    frame = summarise_probes(parts, tmp_path / "probes.csv", resamples=20, seed=0)
    written = pd.read_csv(tmp_path / "probes.csv")
    assert list(written.columns[:4]) == ["model", "checkpoint", "treebank", "probe"]
    assert list(zip(frame.treebank, frame.probe, frame.checkpoint)) == [
        ("ewt", "right_branching", "none"), ("ewt", "attn", "pretrained"), ("ewt", "attn", "random"),
        ("ptb", "right_branching", "none"), ("ptb", "attn", "pretrained"), ("ptb", "attn", "random")]
    rows = frame.set_index(["treebank", "checkpoint", "probe"])
    assert rows.loc[("ewt", "pretrained", "attn"), "uas"] == pytest.approx(0.7)
    assert rows.loc[("ptb", "pretrained", "attn"), "uas"] == pytest.approx(0.5)
    assert rows.loc[("ptb", "none", "right_branching"), "n"] == 12
    assert rows.loc[("ewt", "pretrained", "attn"), "control_uas"] == pytest.approx(0.2)
    assert rows.loc[("ptb", "pretrained", "attn"), "control_uas"] == pytest.approx(1.0)
    assert rows.loc[("ewt", "pretrained", "attn"), "diff_vs_control"] == pytest.approx(0.5)
    assert rows.loc[("ptb", "pretrained", "attn"), "diff_vs_control"] == pytest.approx(-0.5)
    with pytest.raises(Exception, match="model, checkpoint, treebank, probe, path"):
        summarise_probes([("m", "pretrained", "attn", parts[0][-1])], tmp_path / "old.csv", resamples=5, seed=0)
