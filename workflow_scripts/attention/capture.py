"""Attention weights without the model's eager attention (METHODS 4).

transformers 5 returns attention weights only from its eager attention function; fused kernels
(SDPA, flash) return none. ``attention.implementation: fused`` loads the model with
:data:`FUSED_WITH_WEIGHTS`, an attention function registered through transformers' attention
interface: the layer's output comes from PyTorch's fused SDPA kernel, as in the model's default
path, and the weights that must be stored are computed beside it, softmax(QK^T * scaling + mask),
from the same query, key and mask. This serves models whose eager path is missing or slower; on a
model with both, the two give the same maps up to float rounding (tests/attention/test_extraction.py,
test_fused_capture_stores_the_eager_maps).
"""

from __future__ import annotations

from typing import Any

FUSED_WITH_WEIGHTS = "atlas_fused_with_weights"
# attention.implementation (config) -> the attn_implementation the model is loaded with.
IMPLEMENTATIONS = {"eager": "eager", "fused": FUSED_WITH_WEIGHTS}


def fused_attention_with_weights(module: Any, query: Any, key: Any, value: Any, attention_mask: Any | None,
                                 scaling: float | None = None, dropout: float = 0.0, **kwargs: Any):
    """(output, weights): the output from the fused SDPA kernel, the weights computed beside it."""
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    kwargs.pop("output_attentions", None)  # the kernel returns no weights; they are computed here
    output, _ = sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling,
                                       dropout=dropout, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:  # grouped-query attention: each key head serves several query heads
        key = repeat_kv(key, groups)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # SDPA-style mask: True = may attend
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:  # additive mask
            scores = scores + attention_mask[:, :, :, : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return output, weights


def register() -> None:
    """Make FUSED_WITH_WEIGHTS a valid ``attn_implementation`` (idempotent): the attention function, and
    the SDPA-style padding mask that transformers builds for it (without one it would pass no mask)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(FUSED_WITH_WEIGHTS, fused_attention_with_weights)
    AttentionMaskInterface.register(FUSED_WITH_WEIGHTS, sdpa_mask)


def attn_implementation(implementation: str) -> str:
    """The ``attn_implementation`` to load a model with for config ``attention.implementation``."""
    if implementation == "fused":
        register()
    return IMPLEMENTATIONS[implementation]
