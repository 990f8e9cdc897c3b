"""Disabling attention heads of a loaded model, in four modes (docs/ablation.md).

transformers 5 removed ``head_mask``. Every self-attention module of an encoder now calls the function
registered (``transformers.AttentionInterface``) under its config's attention implementation; a model
loaded with ``attn_implementation=attn_implementation()`` calls :func:`ablated_attention`: the model's own
eager attention function (``eager_attention_forward`` of its modeling module: BERT, RoBERTa, DistilBERT,
ELECTRA, ...), then the ablation of the heads that a :class:`HeadAblation` set for the module's layer. With
no head set it returns the eager result untouched, so an unablated pass computes exactly what the model
loaded with ``attn_implementation="eager"`` computes (tests/ablation/test_ablation_heads.py).

Modes, for head h of layer l; its *output* is its context vector (the attention-weighted values, before
the layer's output projection mixes the heads):

- ``zero``: the output is 0 (Michel et al. 2019's head mask ξ_h = 0); its returned weights are 0;
- ``uniform``: its weights are 1/n over the n real (non-pad) tokens of the example, so its output is the
  mean of their values (Kovaleva et al. 2019's disabling by a uniform distribution);
- ``first``: all its weight goes to the first token ([CLS] / <s>): its output is that token's value;
- ``mean``: its output is replaced at every position by its mean output over the real tokens of the
  evaluated examples, collected by an unablated pass (:meth:`HeadAblation.collecting_means`); the
  returned weights are left as computed (the output no longer depends on them).

One loaded model serves every ablated evaluation: ``set`` and ``clear`` change which heads are disabled
between forward passes, with no reload.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from ..models.checkpoints import load_checkpoint, read_manifest, weights_options
from ..models.families import attention_of_layers, ensure_pad_token, load_pretrained

ABLATION_IMPLEMENTATION = "atlas_head_ablation"
MODES = ("zero", "uniform", "first", "mean")
# Set on every self-attention module by HeadAblation: the module's layer, and the ablation it obeys.
LAYER_ATTRIBUTE = "atlas_ablation_layer"
ABLATION_ATTRIBUTE = "atlas_head_ablation"


def register() -> None:
    """Make ABLATION_IMPLEMENTATION a valid ``attn_implementation`` (idempotent): the attention function,
    and the eager (additive) padding mask it expects; transformers passes no mask to a function without one."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ABLATION_IMPLEMENTATION, ablated_attention)
    AttentionMaskInterface.register(ABLATION_IMPLEMENTATION, eager_mask)


def attn_implementation() -> str:
    """The ``attn_implementation`` to load a model with for head ablation (registered on first use)."""
    register()
    return ABLATION_IMPLEMENTATION


def eager_function(module: Any):
    """The eager attention function of ``module``'s own modeling module."""
    modeling = sys.modules.get(type(module).__module__)
    function = getattr(modeling, "eager_attention_forward", None)
    if function is None:
        raise AtlasError(f"{type(module).__name__} ({type(module).__module__}) has no eager_attention_forward; head "
                         "ablation supports the families whose attention goes through transformers' attention "
                         "interface (workflow_scripts/models/families.py); choose such a model")
    return function


def ablated_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any | None,
                      scaling: float | None = None, dropout: float = 0.0, **kwargs: Any):
    """(output, weights) of the eager function, with the heads set for this module's layer disabled."""
    output, weights = eager_function(module)(module, query, key, value, attention_mask, scaling=scaling,
                                             dropout=dropout, **kwargs)
    ablation = getattr(module, ABLATION_ATTRIBUTE, None)
    if ablation is None:  # a model loaded for ablation but not prepared: plain eager attention
        return output, weights
    # Encoders say whether the weights are asked for; decoders (GPT-2, Llama) do not pass output_attentions to the
    # attention function, so their disabled heads' weights are always rebuilt.
    return ablation.apply(getattr(module, LAYER_ATTRIBUTE), value, attention_mask, output, weights,
                          returns_weights=bool(kwargs.get("output_attentions", True)))


def allowed_keys(attention_mask: Any | None, batch: int, queries: int, keys: int, device: Any):
    """(batch, 1 or heads, queries, keys) bool: which keys each query may attend to (no mask: every key)."""
    import torch

    if attention_mask is None:  # transformers drops the mask of a batch without padding
        return torch.ones((batch, 1, queries, keys), dtype=torch.bool, device=device)
    mask = attention_mask[..., :keys]
    if mask.dtype == torch.bool:  # SDPA-style: True = may attend
        return mask
    return mask > torch.finfo(mask.dtype).min / 2  # additive: 0 = may attend, the dtype's minimum = may not


class HeadAblation:
    """Which heads of ``model`` are disabled, and how; usable as a context manager that detaches on exit.

        with HeadAblation(model) as ablation:
            ablation.set({(3, 7)}, "zero")      # (layer, head), 0-based
            ...forward passes...
            ablation.clear()                    # the plain model again
            with ablation.collecting_means():   # for mode "mean": an unablated pass over the examples
                ...forward passes...
            with ablation.ablating({(0, 1)}, "mean"):
                ...
    """

    def __init__(self, model: Any) -> None:
        implementation = getattr(model.config, "_attn_implementation", None)
        if implementation != ABLATION_IMPLEMENTATION:
            raise AtlasError(f"the model was loaded with attn_implementation={implementation!r}; load it with "
                             "attn_implementation=workflow_scripts.ablation.heads.attn_implementation() (the "
                             "ablation acts inside that attention function)")
        self.modules = [layer.attention for layer in attention_of_layers(
            model, "head ablation", "Set ablation.tasks to [] in the config, or leave this model out of the study")]
        self.num_layers = len(self.modules)
        self.num_heads = int(model.config.num_attention_heads)
        for layer, module in enumerate(self.modules):
            setattr(module, LAYER_ATTRIBUTE, layer)
            setattr(module, ABLATION_ATTRIBUTE, self)
        self.mode: str | None = None
        self.heads: frozenset[tuple[int, int]] = frozenset()
        self._by_layer: dict[int, list[int]] = {}
        self.means: Any | None = None  # (layers, heads, head size) float32, from collecting_means
        self._sums: dict[int, Any] | None = None
        self._counts: dict[int, float] = {}

    def __enter__(self) -> HeadAblation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def detach(self) -> None:
        """Leave the model as loaded: its attention modules no longer refer to this object."""
        self.clear()
        for module in self.modules:
            for name in (LAYER_ATTRIBUTE, ABLATION_ATTRIBUTE):
                if hasattr(module, name):
                    delattr(module, name)

    def check_head(self, layer: int, head: int, source: str = "") -> None:
        """AtlasError unless (layer, head) (0-based) is a head of the model; ``source`` names where it came from."""
        if not (0 <= int(layer) < self.num_layers and 0 <= int(head) < self.num_heads):
            where = f"{source}: " if source else ""
            raise AtlasError(f"{where}head (layer {layer}, head {head}) (0-based) is not a head of this model, "
                             f"which has {self.num_layers} layers x {self.num_heads} heads; give 0-based indices "
                             "below those (a table of another model?)")

    def set(self, heads: Iterable[tuple[int, int]], mode: str) -> None:
        """Disable ``heads`` ((layer, head), 0-based) in ``mode`` from the next forward pass on."""
        if mode not in MODES:
            raise AtlasError(f"ablation mode {mode!r} is not one of {', '.join(MODES)} (config ablation.modes)")
        heads = frozenset((int(layer), int(head)) for layer, head in heads)
        for layer, head in sorted(heads):
            self.check_head(layer, head)
        if mode == "mean" and heads and self.means is None:
            raise AtlasError("mode 'mean' needs each head's mean output: run an unablated pass over the evaluated "
                             "examples inside HeadAblation.collecting_means() first")
        by_layer: dict[int, list[int]] = {}
        for layer, head in sorted(heads):
            by_layer.setdefault(layer, []).append(head)
        self.heads, self.mode, self._by_layer = heads, mode, by_layer

    def clear(self) -> None:
        """Disable no head: the model computes its plain output."""
        self.heads, self.mode, self._by_layer = frozenset(), None, {}

    @contextmanager
    def ablating(self, heads: Iterable[tuple[int, int]], mode: str) -> Iterator[HeadAblation]:
        """``set`` for the duration of a block, then ``clear``."""
        self.set(heads, mode)
        try:
            yield self
        finally:
            self.clear()

    @contextmanager
    def collecting_means(self) -> Iterator[HeadAblation]:
        """Sum every head's output over the real tokens of the forward passes run in the block; on leaving it,
        ``means`` holds the mean per (layer, head). Run on the unablated model (mode ``mean``'s definition)."""
        import torch

        if self._by_layer:
            raise AtlasError("means are collected from the unablated model; call clear() before collecting_means()")
        self._sums, self._counts = {}, {}
        try:
            yield self
            missing = [layer for layer in range(self.num_layers) if not self._counts.get(layer)]
            if missing:
                raise AtlasError(f"no real token reached layer(s) {missing} inside collecting_means(); run forward "
                                 "passes over the evaluated examples inside the block")
            self.means = torch.stack([(self._sums[layer] / self._counts[layer]).float()
                                      for layer in range(self.num_layers)])
        finally:
            self._sums = None

    def _accumulate(self, layer: int, output: Any, attention_mask: Any | None) -> None:
        batch, tokens = output.shape[:2]
        real = allowed_keys(attention_mask, batch, tokens, tokens, output.device).any(dim=-2)[:, 0]  # (B, T)
        # float64: thousands of tokens are summed; the mean must not depend on the batch order.
        total = (output.double() * real[:, :, None, None]).sum(dim=(0, 1))
        self._sums[layer] = self._sums[layer] + total if layer in self._sums else total
        self._counts[layer] = self._counts.get(layer, 0.0) + float(real.sum())

    def apply(self, layer: int, value: Any, attention_mask: Any | None, output: Any, weights: Any | None,
              returns_weights: bool = True):
        """(output, weights) of one layer's eager attention with this layer's disabled heads replaced.

        ``value``: (B, heads, keys, d); ``output``: (B, queries, heads, d); ``weights``: (B, heads, queries, keys).
        ``returns_weights``: whether the caller asked for the weights (``output_attentions``); when not, the
        disabled heads' weights are not rebuilt (the model discards them).
        """
        import torch

        if self._sums is not None:
            self._accumulate(layer, output, attention_mask)
        heads = self._by_layer.get(layer)
        if not heads:
            return output, weights
        output = output.clone()  # the eager result is left intact; only this layer's copy changes
        batch, queries = output.shape[:2]
        keys = value.shape[-2]
        if self.mode == "zero":
            output[:, :, heads] = 0
        elif self.mode == "mean":
            output[:, :, heads] = self.means[layer, heads].to(device=output.device, dtype=output.dtype)
        elif self.mode == "first":  # every query takes the first token's value
            output[:, :, heads] = value[:, heads, :1].transpose(1, 2)
        else:  # uniform: every query takes the mean of the real tokens' values
            uniform = self._replaced_weights(attention_mask, batch, queries, keys, value.dtype, value.device)
            output[:, :, heads] = torch.matmul(uniform.expand(batch, len(heads), queries, keys),
                                               value[:, heads]).transpose(1, 2)
        if returns_weights and weights is not None and self.mode != "mean":
            weights = weights.clone()
            weights[:, heads] = self._replaced_weights(attention_mask, batch, queries, keys, weights.dtype,
                                                       weights.device)
        return output, weights

    def _replaced_weights(self, attention_mask: Any | None, batch: int, queries: int, keys: int, dtype: Any,
                          device: Any):
        """(B, 1, queries, keys): the weights a disabled head has in the current mode (zero, uniform, first)."""
        import torch

        if self.mode == "uniform":
            allowed = allowed_keys(attention_mask, batch, queries, keys, device).to(dtype)
            return allowed / allowed.sum(dim=-1, keepdim=True).clamp(min=1)
        replaced = torch.zeros((batch, 1, queries, keys), dtype=dtype, device=device)
        if self.mode == "first":
            replaced[..., 0] = 1
        return replaced


def load_ablatable(manifest_path: str | Path, *, offline: bool, classifier: bool = False) -> tuple[Any, Any]:
    """(tokenizer, model) of a checkpoint loaded for :class:`HeadAblation` (in eval mode).

    ``classifier``: the fine-tuned model with its sequence-classification head (what the fine-tuning
    stage evaluated); else the encoder alone (``load_checkpoint``).
    """
    if not classifier:
        return load_checkpoint(manifest_path, offline=offline, attn_implementation=attn_implementation())
    import torch
    from transformers import AutoTokenizer

    manifest = read_manifest(manifest_path)
    if manifest.get("kind") != "finetuned":
        raise AtlasError(f"{manifest_path}: checkpoint {manifest.get('checkpoint')!r} is not fine-tuned, so it has "
                         "no trained classifier to score a task with; give a '{task}.seed{N}.final' checkpoint")
    kwargs: dict[str, Any] = {"local_files_only": offline}
    if manifest.get("revision"):
        kwargs["revision"] = manifest["revision"]
    tokenizer = AutoTokenizer.from_pretrained(manifest["load_from"], **kwargs)
    model = load_pretrained("classifier", manifest["load_from"], attn_implementation=attn_implementation(), **kwargs,
                            **weights_options(manifest), dtype=torch.float32)
    ensure_pad_token(model, tokenizer)  # checkpoints fine-tuned before it was saved with them
    model.eval()
    return tokenizer, model
