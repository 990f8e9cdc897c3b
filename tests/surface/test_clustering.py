"""Head clustering (METHODS 7.6): Jensen-Shannon divergences, MDS and behaviour labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from support.dumps import write_dump, write_token_table
from support.maps import SPECIAL5, TOKENS5, column, shifted
from workflow_scripts.surface.clustering import (
    behaviour_labels,
    head_clusters,
    js_divergences,
    mds_embedding,
    pairwise_js,
)
from workflow_scripts.surface.figures import plot_head_clusters
from workflow_scripts.surface.statistics import surface_heads

LN2 = float(np.log(2))


def test_known_divergences():
    n = 4
    heads = np.stack([shifted(n, -1), shifted(n, -1), shifted(n, 1), np.full((n, n), 1 / n, np.float32)])
    js = pairwise_js(heads)
    assert js.shape == (4, 4)
    np.testing.assert_allclose(np.diag(js), 0, atol=1e-7)
    np.testing.assert_allclose(js, js.T)
    assert js[0, 1] == pytest.approx(0, abs=1e-7)  # identical heads
    # previous vs next token: one-hot rows on different tokens in every row -> ln 2 each.
    assert js[0, 2] == pytest.approx(n * LN2, rel=1e-6)
    # one-hot vs uniform over n: H(m) - H(uniform)/2, per row.
    m = np.array([0.5 + 0.5 / n] + [0.5 / n] * (n - 1))
    per_row = -(m * np.log(m)).sum() - 0.5 * np.log(n)
    assert js[0, 3] == pytest.approx(n * per_row, rel=1e-5)


def test_all_pairs_at_once_equal_scipy_pair_by_pair_for_any_block_size():
    rng = np.random.default_rng(7)
    heads = rng.dirichlet(np.full(6, 0.5), size=(5, 6)).astype(np.float32)  # 5 heads, 6 rows, 6 columns
    expected = np.zeros((5, 5))
    for i in range(5):
        for j in range(5):
            expected[i, j] = sum(jensenshannon(heads[i, t], heads[j, t]) ** 2 for t in range(6))
    for block in (1, 6 * 6, 10**9):  # one head pair at a time ... everything in one block
        np.testing.assert_allclose(pairwise_js(heads, block_elements=block), expected, rtol=1e-4, atol=1e-6)


def test_divergences_average_over_the_tokens_of_the_streamed_dump(tmp_path):
    # 1 layer x 3 heads: previous, previous, next; examples of 5 and 3 tokens.
    maps = {i: np.stack([shifted(n, -1), shifted(n, -1), shifted(n, 1)])[None] for i, n in ((0, 5), (1, 3))}
    manifest = write_dump(tmp_path / "dump", maps)
    divergence, tokens, examples, shape = js_divergences(manifest.parent)
    assert (tokens, examples, shape) == (8, 2, (1, 3))
    assert divergence[0, 1] == pytest.approx(0, abs=1e-7)
    assert divergence[0, 2] == pytest.approx(LN2, rel=1e-4)  # every row differs
    _, tokens, examples, _ = js_divergences(manifest.parent, example_ids={1})
    assert (tokens, examples) == (3, 1)


def test_mds_reproduces_a_known_configuration_and_is_seeded():
    points = np.array([[0, 0], [0, 0], [3, 0], [0, 4], [3, 4]], dtype=float)
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    embedded, stress = mds_embedding(distances, seed=0)
    recovered = np.linalg.norm(embedded[:, None] - embedded[None], axis=-1)
    np.testing.assert_allclose(recovered, distances, atol=1e-2)
    assert stress < 1e-2
    again, _ = mds_embedding(distances, seed=0)
    np.testing.assert_allclose(again, embedded)


def test_behaviour_labels_follow_the_thresholds():
    surface = pd.DataFrame({
        "cls": [0.9, 0.1, 0.0, 0.0, 0.0, 0.1, 0.3],
        "sep": [0.0, 0.7, 0.0, 0.0, 0.0, 0.1, 0.3],
        "period": [0.0, 0.0, 0.3, 0.0, 0.0, 0.1, 0.0],
        "comma": [0.0, 0.0, 0.3, 0.0, 0.0, 0.1, 0.0],
        "next": [0.0, 0.0, 0.0, 0.8, 0.0, 0.1, 0.0],
        "prev": [0.0, 0.0, 0.0, 0.0, 0.6, 0.1, 0.0],
        "self": [0.1, 0.0, 0.0, 0.0, 0.1, 0.1, 0.0],
        "entropy": [0.5, 1.0, 1.0, 0.2, 0.3, 4.0, 1.0]})
    labels = behaviour_labels(surface, threshold=0.5, broad_entropy=3.0).tolist()
    assert labels == ["cls", "sep", "punct", "next", "prev", "broad", "other"]
    # A lower threshold: the largest share above it wins (cls and sep tie at 0.3 -> first, cls).
    assert behaviour_labels(surface, threshold=0.25, broad_entropy=3.0).tolist()[-1] == "cls"
    assert behaviour_labels(surface, threshold=0.95, broad_entropy=0.4).tolist()[:3] == ["broad", "broad", "broad"]


def test_head_clusters_end_to_end(tmp_path):
    n = 5
    # 2 layers x 3 heads: layer 0 = cls, cls, prev; layer 1 = next, uniform, sep.
    heads = np.stack([column(n, 0), column(n, 0), shifted(n, -1),
                      shifted(n, 1), np.full((n, n), 1 / n, np.float32), column(n, 4)]).reshape(2, 3, n, n)
    maps = {i: heads for i in range(4)}
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_token_table(tmp_path / "tokens.parquet", {i: TOKENS5 for i in maps}, {i: SPECIAL5 for i in maps})
    surface_heads(manifest, tokens, tmp_path / "surface.csv", model="m", checkpoint="pretrained", corpus="w",
                  split="s", resamples=50, seed=0)
    frame = head_clusters(manifest, tokens, tmp_path / "surface.csv", tmp_path / "clusters.csv",
                          tmp_path / "distances.csv", model="m", checkpoint="pretrained", max_examples=3, seed=0,
                          distance="js_divergence", threshold=0.5, broad_entropy=1.5)
    assert frame[["layer", "head"]].values.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert frame["behaviour"].tolist() == ["cls", "cls", "prev", "next", "broad", "sep"]
    assert (frame["n_examples"] == 3).all() and (frame["n_tokens"] == 15).all()
    xy = frame[["x", "y"]].to_numpy()
    assert np.linalg.norm(xy[0] - xy[1]) < 1e-3  # identical heads land on the same point
    assert np.linalg.norm(xy[0] - xy[5]) > 0.1
    distances = pd.read_csv(tmp_path / "distances.csv").set_index("head")
    assert distances.shape == (6, 6) and distances.loc["0-0", "1-2"] == pytest.approx(LN2, rel=1e-4)
    for name in ("model", "checkpoint", "layer", "head", "x", "y", "behaviour"):
        assert name in pd.read_csv(tmp_path / "clusters.csv").columns
    plot_head_clusters(tmp_path / "clusters.csv", tmp_path / "clusters.png", tmp_path / "clusters.pdf")
    assert (tmp_path / "clusters.png").read_bytes()[:4] == b"\x89PNG"
