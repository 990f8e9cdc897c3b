"""Attention signals (config ``attention.signals``, docs/signals.md): what an attention map holds.

Every signal is computed in one forward pass per batch, in float32, and cast once to float16 maps
of shape (batch, layers, heads, T, T); row i of head h in layer l is about token i's view of every
token j.

``attention``
    The weights alpha[l, h, i, j] themselves, exactly as the model returns them (:func:`forward_attentions`).
``norm``
    Kobayashi, Kuribayashi, Yokoi and Inui (EMNLP 2020), "Attention is Not Only a Weight: Analyzing
    Transformers with Vector Norms": N[l, h, i, j] = alpha[l, h, i, j] * ||f_h(x_j)||, where
    f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h is head h's value vector of token j times head h's slice of the
    attention output projection (columns h*d to (h+1)*d of the nn.Linear weight). The output bias is
    left out: it is added once per layer, not per head. The value vectors are recorded through
    transformers' attention interface (a wrapper around the model's own attention function, as
    capture.py registers one), so they are the very tensors the layer used. Rows do not sum to 1.
``rollout``
    Abnar and Zuidema (ACL 2020), "Quantifying Attention Flow in Transformers", with the residual
    connection added as they define it: Ã_l = 0.5 * mean_h(A_{l,h}) + 0.5 * I, R_1 = Ã_1,
    R_l = Ã_l R_{l-1}. To keep the dump's (layers, heads, T, T) layout it is stored per head:
    R_{l,h} = (0.5 A_{l,h} + 0.5 I) R_{l-1}, with R_0 = I. By linearity the mean over heads of
    R_{l,h} is exactly the layer rollout R_l. Rows sum to 1.

Padding: the rows of real tokens give pad columns zero weight (the padding mask), so a norm or rollout
row of a real token never reaches a pad token, and cutting each example of a padded batch to its own
T x T afterwards gives its maps alone (tests/attention/test_signals.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..core.errors import AtlasError
from ..core.subjects import DEFAULT_SIGNAL
from ..models.families import attention_of_layers
from .capture import attn_implementation, fused_attention_with_weights

SIGNALS = (DEFAULT_SIGNAL, "norm", "rollout")
# attention.implementation -> the attention function registered for ``norm``: the same weights, and the
# value vectors recorded on their way in.
RECORDING_VALUES = {"eager": "atlas_eager_recording_values", "fused": "atlas_fused_recording_values"}
# The value vectors of the forward pass under way, by attention module (None: nobody is recording).
_RECORDED_VALUES: ContextVar[dict[Any, Any] | None] = ContextVar("atlas_recorded_values", default=None)


def check_signal(signal: str) -> None:
    if signal not in SIGNALS:
        raise AtlasError(f"unknown attention signal {signal!r} (config attention.signals); choose from "
                         f"{', '.join(SIGNALS)}")


def _models_own_eager(module: Any) -> Callable:
    """The eager attention function of the module's own modeling file (each family has its own copy)."""
    function = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if function is None:
        raise AtlasError(f"{type(module).__name__} ({type(module).__module__}) has no eager_attention_forward; "
                         "attention signal 'norm' cannot record its value vectors: use attention.implementation: "
                         "fused, or leave norm out of attention.signals")
    return function


def _recording_values(inner: Callable[[Any], Callable]) -> Callable:
    def attention_recording_values(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, *args: Any,
                                   **kwargs: Any):
        recorded = _RECORDED_VALUES.get()
        if recorded is not None:
            recorded[module] = value
        return inner(module)(module, query, key, value, attention_mask, *args, **kwargs)

    return attention_recording_values


def attn_implementation_for(implementation: str, signal: str) -> str:
    """The ``attn_implementation`` to load a model with for ``attention.implementation`` and a signal:
    today's for attention and rollout (the weights are all they need), a value-recording wrapper for norm."""
    check_signal(signal)
    loaded_as = attn_implementation(implementation)  # registers the fused function when asked for
    if signal != "norm":
        return loaded_as
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask, sdpa_mask

    inner = {"eager": _models_own_eager, "fused": lambda module: fused_attention_with_weights}[implementation]
    AttentionInterface.register(RECORDING_VALUES[implementation], _recording_values(inner))
    # The padding mask transformers builds for the wrapped function: eager's additive one, or SDPA's boolean one.
    AttentionMaskInterface.register(RECORDING_VALUES[implementation], eager_mask if implementation == "eager"
                                    else sdpa_mask)
    return RECORDING_VALUES[implementation]


def attention_layers(model: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any | None) -> tuple:
    """The forward pass: each layer's attention weights (batch, heads, T, T), as the model returns them."""
    import torch

    kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "output_attentions": True}
    if token_type_ids is not None:
        kwargs["token_type_ids"] = token_type_ids
    with torch.inference_mode():
        outputs = model(**kwargs)
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None or a.numel() == 0 for a in attentions):
        implementation = getattr(model.config, "_attn_implementation", "?")
        raise AtlasError(
            f"model type {model.config.model_type!r} returned no attention weights "
            f"(attention implementation {implementation!r}); load it with attn_implementation='eager' "
            "(fused SDPA/flash kernels return none), or choose a model type that supports eager attention")
    return attentions


def _float16_maps(first: Any, layers: int) -> Any:
    import torch

    return torch.empty((first.shape[0], layers, *first.shape[1:]), dtype=torch.float16, device=first.device)


def forward_attentions(model: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any | None) -> Any:
    """One forward pass returning float16 attention maps stacked as (batch, layers, heads, T, T)."""
    attentions = attention_layers(model, input_ids, attention_mask, token_type_ids)
    # Straight into one float16 buffer: stacking in float32 first would cost a second pass over every map.
    maps = _float16_maps(attentions[0], len(attentions))
    for layer, attention in enumerate(attentions):
        maps[:, layer].copy_(attention)
    return maps


def norm_projections(model: Any) -> list[tuple[Any, Any]]:
    """Per layer: (the module that calls the attention function, head-wise Gram matrices of its output
    projection, float32 (heads, d, d)). Raises AtlasError for a family whose output projection is unknown."""
    import torch

    layers = attention_of_layers(model, "attention signal 'norm'",
                                 "Remove norm from attention.signals in the config, or this model from the study")
    heads = int(model.config.num_attention_heads)
    projections = []
    with torch.no_grad():
        for layer in layers:
            # (hidden, heads * d): input columns h*d..(h+1)*d are head h's
            weight = layer.output_weight().float().contiguous()
            per_head = weight.view(weight.shape[0], heads, -1)
            # ||v W_h^T||^2 = v (W_h^T W_h) v^T: a (d, d) matrix per head instead of a (T, hidden) product per head.
            projections.append((layer.attention, torch.einsum("ohd,ohe->hde", per_head, per_head)))
    return projections


def projected_value_norms(value: Any, gram: Any, groups: int) -> Any:
    """||f_h(x_j)|| for every head and token: (batch, heads, T), float32."""
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv

    value = value.float()
    if groups > 1:  # grouped-query attention: each value head serves several query heads
        value = repeat_kv(value, groups)
    # The quadratic form as one contraction: several times faster than a matmul broadcast over the batch and a sum.
    squared = torch.einsum("bhtd,hde,bhte->bht", value, gram, value)
    return squared.clamp_min(0).sqrt()  # rounding can take an exact zero a hair below it


class SignalMaps:
    """One signal's maps for one loaded model, batch by batch: ``maps, seconds = signal_maps(ids, mask, types)``
    gives the float16 maps (batch, layers, heads, T, T) and the seconds spent on the signal after the forward
    pass (0 for attention, which has no such step)."""

    def __init__(self, model: Any, signal: str) -> None:
        check_signal(signal)
        self.model, self.signal = model, signal
        self.projections = norm_projections(model) if signal == "norm" else []

    def __call__(self, input_ids: Any, attention_mask: Any, token_type_ids: Any | None) -> tuple[Any, float]:
        if self.signal == DEFAULT_SIGNAL:
            return forward_attentions(self.model, input_ids, attention_mask, token_type_ids), 0.0
        recorded: dict[Any, Any] = {}
        token = _RECORDED_VALUES.set(recorded if self.signal == "norm" else None)
        try:
            attentions = attention_layers(self.model, input_ids, attention_mask, token_type_ids)
        finally:
            _RECORDED_VALUES.reset(token)
        _finish(attentions[0])  # the forward pass's time is not the signal's
        began = time.perf_counter()
        maps = self._norm(attentions, recorded) if self.signal == "norm" else rollout(attentions)
        _finish(maps)
        return maps, time.perf_counter() - began

    def _norm(self, attentions: tuple, recorded: dict[Any, Any]) -> Any:
        import torch

        missing = [layer for layer, (module, _) in enumerate(self.projections) if module not in recorded]
        if missing:
            raise AtlasError(f"model type {self.model.config.model_type!r}: layers {missing} passed no value vectors "
                             "through the attention function; attention signal 'norm' needs a model loaded with "
                             "attn_implementation_for(..., 'norm') whose layers use transformers' attention "
                             "interface")
        maps = _float16_maps(attentions[0], len(attentions))
        with torch.inference_mode():
            for layer, (attention, (module, gram)) in enumerate(zip(attentions, self.projections, strict=True)):
                norms = projected_value_norms(recorded[module], gram, getattr(module, "num_key_value_groups", 1))
                # Column j scaled by ||f_h(x_j)||, in float32 and in place (the weights are not needed after this
                # layer; a float16 out= would take a slow mixed-dtype path), then cast once into the maps.
                maps[:, layer].copy_(attention.float().mul_(norms.unsqueeze(2)))
        return maps


def _finish(tensor: Any) -> None:
    """Wait for the GPU kernels queued so far: they run asynchronously, and a time is theirs only once they end."""
    if tensor.is_cuda:
        import torch

        torch.cuda.synchronize(tensor.device)


def rollout(attentions: tuple) -> Any:
    """Per-head attention rollout, float16 (batch, layers, heads, T, T), computed in float32 (module docstring)."""
    import torch

    maps = _float16_maps(attentions[0], len(attentions))
    with torch.inference_mode():
        width = attentions[0].shape[-1]
        half_identity = 0.5 * torch.eye(width, dtype=torch.float32, device=attentions[0].device)
        previous = None  # R_{l-1}; R_0 = I
        for layer, attention in enumerate(attentions):
            residual = 0.5 * attention.float() + half_identity  # (batch, heads, T, T): 0.5 A_{l,h} + 0.5 I
            batch, heads = residual.shape[:2]
            if previous is None:
                maps[:, layer].copy_(residual)
                previous = residual.mean(1)
            else:
                # Every head multiplies the same R_{l-1}: the heads' rows stacked make one (heads*T, T) product
                # per example, twice as fast as a matmul broadcasting R_{l-1} over the heads.
                per_head = torch.bmm(residual.reshape(batch, heads * width, width), previous)
                maps[:, layer].copy_(per_head.view(batch, heads, width, width))
                previous = torch.matmul(residual.mean(1), previous)  # R_l = Ã_l R_{l-1}, Ã_l = mean_h of residual
    return maps
