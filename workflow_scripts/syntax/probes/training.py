"""The syntax stage's probe jobs (METHODS 7.5, [C] §5): train a probe and write its per-sentence test scores.

The probes themselves (the models, their training and scoring) are :mod:`workflow_scripts.probing.model`, a
library the found-heads check (ablation stage) uses too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...attention.annotate import read_trees
from ...attention.tokens import token_words
from ...core.errors import AtlasError
from ...core.io import read_metadata
from ...probing.features import GloveLookup, ProbeFeatures, choose_sentences, probe_sentences, word_has_unit
from ...probing.model import ATTENTION_PROBES, BASELINE_PROBES, FeatureSource, right_branching, train_probe
from .tables import write_scores


def run_attention_probe(kind: str, train_maps: str | Path, train_index: str | Path, test_maps: str | Path,
                        test_index: str | Path, train_annotation: str | Path, test_annotation: str | Path,
                        glove_path: str | Path | None, output: str | Path, *, epochs: int, lr: float, seed: int,
                        exclude_punct: bool, batch_sentences: int, threads: int | None) -> None:
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
    write_scores(test_features.example_ids, correct, total, output, info)


def run_baseline_probe(kind: str, train_tokens: str | Path, test_tokens: str | Path, train_annotation: str | Path,
                       test_annotation: str | Path, glove_path: str | Path | None, output: str | Path, *,
                       epochs: int, lr: float, seed: int, max_train_sentences: int | None = None,
                       exclude_punct: bool, batch_sentences: int, threads: int | None) -> None:
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
    write_scores(test_ids, correct, total, output, info)
