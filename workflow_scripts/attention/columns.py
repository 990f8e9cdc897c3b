"""A batch's maps as the dump's Arrow column: each example's maps cut to its T x T (or lower triangle) and
stored as one float16 blob per example (docs/attention.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .layout import pack, stored_values


def _blob_offsets(num_maps: int, lengths: np.ndarray, layout: str, itemsize: int) -> np.ndarray:
    sizes = [num_maps * stored_values(n, layout) * itemsize for n in lengths.tolist()]
    return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)


def maps_column(maps: np.ndarray, lengths: np.ndarray, layout: str, example_ids: Sequence[int]
                ) -> pa.LargeBinaryArray:
    """A batch's maps (batch, layers, heads, W, W) cut to each example's T x T (or its lower triangle, for the
    ``lower_triangle`` layout: layout.py), as one Arrow column.

    The blobs are copied once, straight into the column's single data buffer: no bytes object per
    example and no second copy when Arrow builds the column.
    """
    offsets = _blob_offsets(maps.shape[1] * maps.shape[2], lengths, layout, maps.itemsize)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    for row, n in enumerate(lengths.tolist()):
        destination = data[offsets[row]:offsets[row + 1]].view(maps.dtype).reshape(*maps.shape[1:3], -1)
        np.copyto(destination, pack(maps[row, :, :, :n, :n], layout, example_ids[row]).reshape(destination.shape))
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def layers_column(layers: Sequence[Any], lengths: np.ndarray, layout: str, example_ids: Sequence[int]
                  ) -> pa.LargeBinaryArray:
    """Each layer's weights (batch, heads, W, W), cast to float16 and cut to each example's T x T (or its lower
    triangle) straight into the column's data buffer: the same column as maps_column of the stacked float16 maps,
    in one pass over the weights instead of two (no padded float16 batch is made)."""
    import torch

    num_layers, num_heads = len(layers), int(layers[0].shape[1])
    offsets = _blob_offsets(num_layers * num_heads, lengths, layout, 2)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    values = torch.from_numpy(data.view(np.float16))
    for row, n in enumerate(lengths.tolist()):
        example = values[offsets[row] // 2:offsets[row + 1] // 2].view(num_layers, num_heads, -1)
        for layer, weights in enumerate(layers):
            example[layer].copy_(pack(weights[row, :, :n, :n], layout, example_ids[row]).reshape(num_heads, -1))
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])
