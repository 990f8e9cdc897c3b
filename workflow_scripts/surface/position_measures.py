"""Two positional head diagnostics of decoder studies, on natural text, defined for every model.

- ``first_token``: Gu et al. (2025)'s alpha_1, the mean over queries ``i >= 1`` of ``A[i, 0]``: how much a head
  sends to the first position (the attention sink of a decoder; [CLS] of an encoder). Query 0 is left out: in a
  causal model it can attend only to itself.
- ``previous_token``: the mean over queries ``i >= 1`` of ``A[i, i - 1]``: the previous-token heads of induction
  circuits (Olsson et al. 2022). It differs from the surface statistics' ``prev``, whose mean also counts the
  first row (which has no previous token) as 0.

Per head, each is a ratio of per-example sums over the ``T - 1`` queries of each example, with its 95% interval
over examples; an example of one token adds nothing.
"""

from __future__ import annotations

import numpy as np

from .head_measures import ExampleTokens


def first_token_sums(attention: np.ndarray, tokens: ExampleTokens) -> tuple[np.ndarray, float]:
    """(layers, heads) summed attention of queries 1..T-1 to position 0; the number of those queries."""
    n = attention.shape[-1]
    return attention[:, :, 1:, 0].sum(axis=-1, dtype=np.float64), float(max(n - 1, 0))


def previous_token_sums(attention: np.ndarray, tokens: ExampleTokens) -> tuple[np.ndarray, float]:
    """(layers, heads) summed attention of queries 1..T-1 to the position before each; the number of queries."""
    n = attention.shape[-1]
    queries = np.arange(1, n)
    return attention[:, :, queries, queries - 1].sum(axis=-1, dtype=np.float64), float(max(n - 1, 0))
