"""Head clustering (METHODS 7.6, [C] §6): Jensen-Shannon divergence between heads, then MDS.

The distance between heads i and j is the Jensen-Shannon divergence (nats) between their
attention rows, averaged over every token (row) of the analysed examples:

    d(i, j) = sum over examples, rows t of JS(A_i[t], A_j[t]) / number of rows

with JS(p, q) = H((p+q)/2) - (H(p) + H(q))/2. For each example the divergences between all
pairs of heads are computed at once (numpy over tiles of heads x heads x rows x columns in two
reused, cache-sized buffers, so memory is bounded); the dump is streamed. The (heads x heads) matrix is then
embedded in 2-D with metric MDS (precomputed dissimilarities, fixed random_state); with
``distance: js_distance`` the square root of the divergence is embedded instead.

Every head gets a behaviour label from its surface statistics (7.1, surface_heads): the
largest of the shares cls, sep, punct (period + comma), next, prev, self that exceeds
``threshold``; else ``broad`` if its mean entropy is at least ``broad_entropy`` nats; else
``other``.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.stats import PLOGP_FLOOR, entropy

log = logging.getLogger(__name__)

BEHAVIOURS = ("cls", "sep", "punct", "next", "prev", "self", "broad", "other")
DISTANCES = ("js_divergence", "js_distance")
BLOCK_ELEMENTS = 1 << 18  # float32 values per buffer (1 MiB: stays in cache)


def _neg_plogp_sum(p: np.ndarray) -> np.ndarray:
    """Entropy over the last axis (nats), 0 log 0 = 0."""
    return entropy(p)


def pairwise_js(rows: np.ndarray, block_elements: int = BLOCK_ELEMENTS) -> np.ndarray:
    """Sum over rows of JS(rows[i, t], rows[j, t]) for every pair of heads (i, j).

    ``rows``: (K heads, T rows, N columns) attention distributions. Returns (K, K) float64,
    symmetric, zero diagonal. Tiles of (heads i) x (heads j >= i) x rows x columns are computed
    at once, in two reused buffers of at most ``block_elements`` values (cache-sized: faster
    than one huge block, and memory stays bounded whatever K and T).
    """
    rows = np.asarray(rows, dtype=np.float32)
    k, t, n = rows.shape
    per_pair = t * n
    own = _neg_plogp_sum(rows)  # (K, T)
    out = np.zeros((k, k), dtype=np.float64)
    pairs = max(1, block_elements // per_pair)
    tile_j = min(k, pairs)
    tile_i = max(1, pairs // tile_j)
    mixture_buffer = np.empty(tile_i * tile_j * per_pair, dtype=np.float32)
    log_buffer = np.empty_like(mixture_buffer)
    for i0 in range(0, k, tile_i):
        i1 = min(k, i0 + tile_i)
        for j0 in range(i0, k, tile_j):
            j1 = min(k, j0 + tile_j)
            size = (i1 - i0) * (j1 - j0) * per_pair
            mixture = mixture_buffer[:size].reshape(i1 - i0, j1 - j0, t, n)
            logs = log_buffer[:size].reshape(mixture.shape)
            np.add(rows[i0:i1, None], rows[None, j0:j1], out=mixture)
            mixture *= 0.5
            np.maximum(mixture, PLOGP_FLOOR, out=logs)  # plogp, in the buffers
            np.log(logs, out=logs)
            mixture *= logs  # m log m, 0 where m = 0
            js = -mixture.sum(-1) - 0.5 * (own[i0:i1, None] + own[None, j0:j1])  # (i, j, T)
            out[i0:i1, j0:j1] = np.maximum(js, 0.0).sum(-1, dtype=np.float64)
    upper = np.triu(out, 1)
    return upper + upper.T


def js_divergences(dump_dir: str | Path, example_ids: set[int] | None = None,
                   block_elements: int = BLOCK_ELEMENTS) -> tuple[np.ndarray, int, int, tuple[int, int]]:
    """Mean JS divergence between every pair of heads over the tokens of a dump (streamed).

    Returns (matrix (K, K), tokens, examples, (layers, heads)); heads are numbered
    layer * num_heads + head.
    """
    from ..attention.reader import AttentionDump

    dump = AttentionDump(dump_dir)
    k = dump.num_layers * dump.num_heads
    total = np.zeros((k, k), dtype=np.float64)
    tokens = examples = 0
    for example in dump.iter_examples():
        if example_ids is not None and example.example_id not in example_ids:
            continue
        maps = example.attention
        total += pairwise_js(maps.reshape(k, maps.shape[-2], maps.shape[-1]), block_elements)
        tokens += maps.shape[-2]
        examples += 1
    if not tokens:
        raise AtlasError(f"no example of the dump {dump_dir} was analysed (selected ids: "
                         f"{sorted(example_ids)[:10] if example_ids is not None else 'all'})")
    log.info("JS divergences over %d examples, %d tokens of %s", examples, tokens, dump_dir)
    return total / tokens, tokens, examples, (dump.num_layers, dump.num_heads)


def mds_embedding(dissimilarity: np.ndarray, seed: int, n_init: int = 4,
                  max_iter: int = 1000) -> tuple[np.ndarray, float]:
    """2-D metric MDS of a precomputed dissimilarity matrix: (points (K, 2), normalised stress)."""
    from sklearn.manifold import MDS

    parameters = inspect.signature(MDS).parameters
    kwargs = {"n_components": 2, "n_init": n_init, "max_iter": max_iter, "random_state": seed}
    if "metric_mds" in parameters:  # scikit-learn >= 1.8: 'dissimilarity' became 'metric'
        kwargs.update(metric="precomputed", metric_mds=True, init="random")
    else:
        kwargs.update(dissimilarity="precomputed", metric=True)
    if "normalized_stress" in parameters:
        kwargs["normalized_stress"] = True
    mds = MDS(**kwargs)
    points = mds.fit_transform(np.asarray(dissimilarity, dtype=np.float64))
    return points, float(mds.stress_)


def behaviour_labels(surface: pd.DataFrame, threshold: float, broad_entropy: float) -> pd.Series:
    """Behaviour of every head (row) of a surface_heads table; see the module docstring."""
    missing = [c for c in ("cls", "sep", "period", "comma", "next", "prev", "self", "entropy")
               if c not in surface.columns]
    if missing:
        raise AtlasError(f"the surface table lacks columns {missing}; rebuild it (rule surface_heads_part)")
    shares = pd.DataFrame({"cls": surface["cls"], "sep": surface["sep"],
                           "punct": surface["period"] + surface["comma"], "next": surface["next"],
                           "prev": surface["prev"], "self": surface["self"]}).to_numpy(dtype=np.float64)
    names = np.array(BEHAVIOURS[:6], dtype=object)
    best = shares.argmax(axis=1)
    top = shares[np.arange(len(shares)), best]
    broad = surface["entropy"].to_numpy(dtype=np.float64) >= broad_entropy
    labels = np.where(top > threshold, names[best], np.where(broad, "broad", "other"))
    return pd.Series(labels, index=surface.index, name="behaviour")


def choose_examples(token_table: str | Path, cap: int | None, seed: int) -> set[int] | None:
    """At most ``cap`` example ids of a token table, a random subset fixed by ``seed`` (None: all)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ids = np.asarray(pc.unique(pq.read_table(token_table, columns=["example_id"])["example_id"]).to_numpy())
    if cap is None or cap >= len(ids):
        return None
    return {int(i) for i in np.sort(np.random.default_rng(seed).permutation(ids)[:cap])}


def head_clusters(dump_manifest: str | Path, token_table: str | Path, surface_part: str | Path,
                  output: str | Path, distances_output: str | Path | None = None, *, model: str, checkpoint: str,
                  max_examples: int | None, seed: int, distance: str, threshold: float,
                  broad_entropy: float) -> pd.DataFrame:
    """The per-checkpoint part of ``head_clusters.csv`` (and its divergence matrix).

    ``distance`` is one of DISTANCES: what MDS embeds, the divergence or its square root.
    """
    chosen = choose_examples(token_table, max_examples, seed)
    divergence, tokens, examples, (layers, heads) = js_divergences(Path(dump_manifest).parent, chosen)
    dissimilarity = np.sqrt(divergence) if distance == "js_distance" else divergence
    points, stress = mds_embedding(dissimilarity, seed)
    surface = pd.read_csv(surface_part)
    surface = surface[(surface["model"] == model) & (surface["checkpoint"] == checkpoint)]
    surface = surface.set_index(["layer", "head"])
    layer, head = np.divmod(np.arange(layers * heads), heads)
    try:
        surface = surface.loc[list(zip(layer, head))].reset_index()
    except KeyError:
        raise AtlasError(f"{surface_part}: has no surface statistics for every head of {model}/{checkpoint} "
                         f"({layers} layers x {heads} heads); rebuild it") from None
    frame = pd.DataFrame({"model": model, "checkpoint": checkpoint, "layer": layer, "head": head,
                          "x": points[:, 0], "y": points[:, 1],
                          "behaviour": behaviour_labels(surface, threshold, broad_entropy).to_numpy()})
    frame["mean_js_to_others"] = divergence.sum(1) / max(1, len(divergence) - 1)
    for column in ("cls", "sep", "period", "comma", "next", "prev", "self", "entropy"):
        frame[column] = surface[column].to_numpy()
    frame["n_examples"], frame["n_tokens"] = examples, tokens
    frame["distance"], frame["stress"], frame["cluster_seed"] = distance, stress, seed
    frame["behaviour_threshold"], frame["broad_entropy"] = threshold, broad_entropy
    write_csv(frame, output)
    if distances_output is not None:
        names = [f"{layer_index}-{head_index}" for layer_index, head_index in zip(layer, head)]  # 0-based layer-head
        write_csv(pd.DataFrame(divergence, columns=names).assign(head=names)[["head", *names]], distances_output)
    log.info("%s/%s: MDS of %d heads (%s), stress %.4f; behaviours %s", model, checkpoint, len(frame), distance,
             stress, frame["behaviour"].value_counts().to_dict())
    return frame
