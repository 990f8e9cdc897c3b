"""The maximum spanning tree of one head (METHODS 7.5): [C]'s unsupervised parse from attention.

:func:`run_mst` takes the head best at the ``all`` relation on the selection split's dependency
scores, decodes an undirected maximum spanning tree from that head's symmetrised, renormalised
word-level map of every test sentence, and scores its UUAS.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ...attention.annotate import read_trees
from ...core.errors import AtlasError
from ...probing.features import ProbeFeatures
from .tables import write_scores


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


def best_all_head(dependency_scores: str | Path) -> tuple[int, int, float]:
    """(layer, head, accuracy) of the head best at the `all` relation (dependent -> head) on a score part."""
    from ...core.labels import DEP_TO_HEAD
    from ..dependency import ALL
    from ..dependency_selection import SplitCounts

    counts = SplitCounts.read(dependency_scores)
    _, total, heads, _ = counts.candidates(ALL, DEP_TO_HEAD)
    if total.sum() == 0:
        raise AtlasError(f"{dependency_scores}: no scored arcs to choose a head from")
    accuracy = heads.sum(axis=0) / total.sum()
    k = int(np.argmax(accuracy))
    n_heads = int(counts.meta["num_heads"])
    return k // n_heads, k % n_heads, float(accuracy[k])


def run_mst(test_maps: str | Path, test_index: str | Path, test_annotation: str | Path,
            dependency_scores: str | Path, output: str | Path, *, exclude_punct: bool) -> None:
    """UUAS of the MST of the best `all` head (chosen on ``dependency_scores``' split) on the test features."""
    layer, head, select_accuracy = best_all_head(dependency_scores)
    features = ProbeFeatures.load(test_maps, test_index)
    trees = read_trees(test_annotation)
    ids, correct, total = mst_uuas(features, trees, layer, head, exclude_punct=exclude_punct)
    write_scores(ids, correct, total, output, {
        "probe": "mst_best_head", "metric": "uuas", "layer": layer, "head": head,
        "head_label": f"{layer + 1}-{head + 1}", "select_accuracy": select_accuracy,
        "selected_on": str(dependency_scores), "exclude_punct": exclude_punct,
        "input_protocol": features.input_protocol})
