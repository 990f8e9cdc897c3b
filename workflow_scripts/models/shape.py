"""A model's shape in one record (:class:`ModelShape`): layers, heads, key/value heads, hidden size, feed-forward
size, vocabulary, positions, and its parameters where they were counted.

Made from a ``config.json`` (or a transformers config) whatever the model type calls each number (:data:`KEYS`:
BERT's ``num_hidden_layers``, GPT-2's ``n_layer``, DistilBERT's ``n_layers``, T5's ``num_layers``; a model card's
and tables/models.csv's ``num_layers`` and ``num_heads``). Which config.json a model has is found in one order by
``model_config.py`` (:func:`~.model_config.find_config`: local, recorded, then the hub through :func:`hub_config`,
the one probe of the hub the plan makes). The study's estimates of sizes and GPU memory (``study/estimates/``), the
forecast's time (``study/forecast/timing.py``), the folder checks (``folder_check.py``) and the head explorer read it.
A folder's parameters are counted from its safetensors headers (:func:`parameter_count`), read by the
safetensors library without reading a tensor; the plan counts a config's on the meta device (``estimates/memory.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.table_names import MODELS
from .families import family_of

# Where each number of the record is in a config.json, first key found first: the names model types give it.
KEYS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim"),
    "intermediate": ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "hidden_dim", "d_inner"),
    "vocab": ("vocab_size", "n_vocab"),
    "max_positions": ("max_position_embeddings", "n_positions", "max_seq_len"),
}
# Model types whose feed-forward size is 4 x hidden where config.json leaves n_inner null or out (their default).
INNER_IS_4X_HIDDEN = frozenset({"gpt2", "gptj", "codegen", "gpt_bigcode", "imagegpt"})


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first(config: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    return next((_integer(config[key]) for key in keys if _integer(config.get(key)) is not None), None)


@dataclass(frozen=True)
class ModelShape:
    """What a model's config says of its architecture; None where it says nothing. For an encoder-decoder (T5),
    the encoder's layers."""

    model_type: str | None = None
    layers: int | None = None
    heads: int | None = None
    kv_heads: int | None = None  # the keys' and values' heads: fewer than ``heads`` under grouped-query attention
    hidden: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    max_positions: int | None = None
    architectures: tuple[str, ...] = ()  # config.json's classes the weights were saved from
    parameters: int | None = None  # counted (safetensors headers, the meta device); None: not counted
    lora_parameters_per_rank: int | None = None  # trained by LoRA per unit of rank (estimates/memory.py counts them)
    # Where the numbers come from, in words ('config.json', 'model card', ...): not part of the shape.
    source: str = field(default="", compare=False)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | Any, source: str = "config.json") -> ModelShape:
        """The record of a config.json's keys (or of a transformers config's)."""
        keys = config if isinstance(config, Mapping) else config.to_dict()
        model_type = keys.get("model_type") if isinstance(keys.get("model_type"), str) else None
        found = {name: _first(keys, names) for name, names in KEYS.items()}
        if found["kv_heads"] is None:
            found["kv_heads"] = found["heads"]
        if found["intermediate"] is None and model_type in INNER_IS_4X_HIDDEN and found["hidden"]:
            found["intermediate"] = 4 * found["hidden"]
        names = keys.get("architectures")
        architectures = tuple(name for name in names if isinstance(name, str)) if isinstance(names, list) else ()
        return cls(model_type=model_type, architectures=architectures, source=source, **found)

    @property
    def layers_heads(self) -> tuple[int, int] | None:
        """(layers, heads), None unless both are known: what a dump's size needs."""
        return (self.layers, self.heads) if self.layers and self.heads else None

    @property
    def head_count(self) -> int:
        """Layers x heads: the number of the model's heads (0 where either is unknown)."""
        return (self.layers or 0) * (self.heads or 0)

    @property
    def mlm_head(self) -> bool | None:
        """Whether the checkpoint has a masked-LM head (the separator gradient needs one), from config.json's
        'architectures' (BertForMaskedLM, BertForPreTraining: yes; BertModel: no); None: not known."""
        if not self.architectures:
            return None
        return any("MaskedLM" in name or "ForPreTraining" in name for name in self.architectures)

    @property
    def causal(self) -> bool:
        """A decoder (its family is causal, models/families.py): its dumps store each map's lower triangle."""
        return family_of(self.model_type).causal


def models_row_shape(models: Any, model: str, source: str = f"tables/{MODELS}.csv") -> ModelShape:
    """``model``'s shape from its row of the models table (tables/models.csv as a DataFrame, one row per model card,
    keyed by ``name``); every number None where the table has no row for it (``source`` then says so)."""
    if models is None or "name" not in models.columns:
        return ModelShape(source=f"{source}: no models table")
    rows = models[models["name"].astype(str) == model]
    if rows.empty:
        return ModelShape(source=f"{source}: no row for model {model!r}")
    # A table's numbers are numpy's, and a column with a gap is read as floats: as the config.json's ints again.
    row = {key: value.item() if hasattr(value, "item") else value for key, value in rows.iloc[0].items()}
    row = {key: int(value) if isinstance(value, float) and value.is_integer() else value for key, value in row.items()}
    return ModelShape.from_config(row, source=source)


# --- the weights' headers ---------------------------------------------------------------------------------------


def weight_shapes(directory: str | Path) -> dict[str, list[int]] | None:
    """Every tensor's name and shape in a folder's ``*.safetensors`` files, None if it has none. The safetensors
    library reads each file's header only (no tensor, no torch); a damaged file raises its error."""
    from safetensors import safe_open

    files = sorted(Path(directory).glob("*.safetensors"))
    shapes: dict[str, list[int]] = {}
    for path in files:
        with safe_open(path, framework="numpy") as weights:
            shapes.update({name: list(weights.get_slice(name).get_shape()) for name in weights.keys()})
    return shapes if files else None


def parameter_count(directory: str | Path) -> int | None:
    """The number of weights in a folder's safetensors files, from their headers (no tensor is read); None without
    such a file."""
    shapes = weight_shapes(directory)
    return None if shapes is None else sum(math.prod(shape) for shape in shapes.values())


# --- the hub -----------------------------------------------------------------------------------------------------


def may_ask_hub(*, network: bool, offline: bool) -> bool:
    """Whether the plan may ask the hub for a config: network allowed (no --no-network), the study not offline, and
    the hub's libraries not told to stay offline (HF_HUB_OFFLINE)."""
    return network and not offline and not os.environ.get("HF_HUB_OFFLINE")


def hub_config(hub: str, revision: str | None) -> Any:
    """A hub model's transformers config, from the hub. Raises what the hub's libraries raise: no network, no such
    model or revision."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants
    from transformers import AutoConfig

    # Without a name server the hub library retries for about 25 s; a failed lookup answers at once.
    socket.getaddrinfo(urlparse(constants.ENDPOINT).hostname, 443)
    return AutoConfig.from_pretrained(hub, **({"revision": revision} if revision else {}))
