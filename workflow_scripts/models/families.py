"""Model families: what the workflow must know of an architecture, declared once per family.

In the manner of TransformerLens's architecture adapters, each :class:`Family` says, for the transformers model
types it covers:

- where each layer's attention is (:attr:`Family.attention_layers`): the module that calls the attention function
  and its output projection W_O. Head ablation (``ablation/heads.py``) disables a head inside the attention
  function of those modules; the ``norm`` signal (``attention/signals.py``) records the value vectors (W_V's
  output) as they pass through that function and multiplies them by W_O;
- how inputs are padded (:meth:`Family.pad_id`; padding is on the right for every family so far);
- whether the model is causal (a decoder): its dumps store each map's lower triangle (attention/layout.py);
- whether position ids start after the padding index (:attr:`Family.reserves_padding_positions`, RoBERTa's
  ``create_position_ids_from_input_ids``), which lowers the longest input the model accepts
  (``models/cards.py``).

A model type no family covers still runs every stage that needs none of this (extraction of the default signal,
every analysis of the dumps); the stages that need it name the model types they know. A new architecture is
a new entry of :data:`FAMILIES` (docs/models.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..core.errors import AtlasError


class AttentionLayer(NamedTuple):
    """One layer's attention: the module that calls the attention function, and its output projection W_O."""

    attention: Any
    output_projection: Any
    stored_in_out: bool = False  # GPT-2's Conv1D keeps its weight as (in, out), nn.Linear as (out, in)

    def output_weight(self) -> Any:
        """W_O as nn.Linear keeps it: (hidden out, heads x head size in); input columns h*d..(h+1)*d are head h's."""
        weight = self.output_projection.weight
        return weight.T if self.stored_in_out else weight


def _encoder_layers(base: Any) -> list[AttentionLayer]:
    """BERT's layout, shared by the families copied from it: ``encoder.layer[i].attention.{self, output.dense}``."""
    return [AttentionLayer(layer.attention.self, layer.attention.output.dense) for layer in base.encoder.layer]


def _distilbert_layers(base: Any) -> list[AttentionLayer]:
    return [AttentionLayer(layer.attention, layer.attention.out_lin) for layer in base.transformer.layer]


def _modernbert_layers(base: Any) -> list[AttentionLayer]:
    return [AttentionLayer(layer.attn, layer.attn.Wo) for layer in base.layers]


def _gpt2_layers(base: Any) -> list[AttentionLayer]:
    return [AttentionLayer(block.attn, block.attn.c_proj, stored_in_out=True) for block in base.h]


def _gpt_neox_layers(base: Any) -> list[AttentionLayer]:
    return [AttentionLayer(layer.attention, layer.attention.dense) for layer in base.layers]


def _llama_layers(base: Any) -> list[AttentionLayer]:
    """Llama's layout, which the families built on its code share: ``layers[i].self_attn.o_proj``."""
    return [AttentionLayer(layer.self_attn, layer.self_attn.o_proj) for layer in base.layers]


@dataclass(frozen=True)
class Family:
    name: str
    model_types: frozenset[str]
    # base model -> its layers' attention, in layer order; None: the workflow cannot act inside this family's
    # attention (its modeling code does not call transformers' attention-function interface).
    attention_layers: Callable[[Any], list[AttentionLayer]] | None
    reserves_padding_positions: bool = False
    causal: bool = False  # a decoder: a token attends to itself and the tokens before it (dumps store the triangle)
    # Where a layer's attention weights are in a checkpoint of the family, below any base-model prefix ("bert.",
    # "model."): the model folder check (models/folder_check.py) finds weights of another architecture by it.
    weight_pattern: str | None = None

    def pad_id(self, config: Any) -> int:
        """The token id that pads a batch's shorter inputs (right padding; the mask hides them): the model's pad
        token, else its end-of-text token (GPT-2, Pythia and Llama have no pad token), else 0."""
        for name in ("pad_token_id", "eos_token_id"):
            value = getattr(config, name, None)
            value = value[0] if isinstance(value, (list, tuple)) and value else value
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return 0


def ensure_pad_token(model: Any, tokenizer: Any) -> int:
    """The id a classifier's batches are padded with: the tokenizer's pad token, else the family's pad id (a decoder's
    end-of-text token: GPT-2, Pythia and Llama have no pad token). Sets it on the tokenizer and on the model's config
    where they have none, so that sequence classification finds each input's last token (transformers pools a
    decoder's last non-pad token); encoders have both already."""
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = family_of(model.config.model_type).pad_id(model.config)
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(pad)
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = pad
    return pad


ENCODER_QUERY = "encoder.layer.{layer}.attention.self.query.weight"
FAMILIES: tuple[Family, ...] = (
    Family("bert", frozenset({"bert", "electra"}), _encoder_layers, weight_pattern=ENCODER_QUERY),
    Family("roberta", frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "roberta-prelayernorm",
                                 "data2vec-text"}), _encoder_layers, reserves_padding_positions=True,
           weight_pattern=ENCODER_QUERY),
    Family("distilbert", frozenset({"distilbert"}), _distilbert_layers,
           weight_pattern="transformer.layer.{layer}.attention.q_lin.weight"),
    Family("modernbert", frozenset({"modernbert"}), _modernbert_layers,
           weight_pattern="layers.{layer}.attn.Wqkv.weight"),
    Family("gpt2", frozenset({"gpt2"}), _gpt2_layers, causal=True, weight_pattern="h.{layer}.attn.c_attn.weight"),
    Family("gpt-neox", frozenset({"gpt_neox"}), _gpt_neox_layers, causal=True,  # Pythia
           weight_pattern="layers.{layer}.attention.query_key_value.weight"),
    # Llama and the families transformers builds on its code (SmolLM and SmolLM2 are model type llama).
    Family("llama", frozenset({"llama", "mistral", "qwen2", "qwen3"}), _llama_layers, causal=True,
           weight_pattern="layers.{layer}.self_attn.q_proj.weight"),
    # Position ids after the padding index, like RoBERTa, but attention code of their own.
    Family("roberta-like, own attention", frozenset({"longformer", "ibert", "mpnet"}), None,
           reserves_padding_positions=True),
)
GENERIC = Family("generic", frozenset(), None)  # any other model type: nothing known beyond transformers' config


def family_of(model_type: str | None) -> Family:
    """The family of a transformers model type (``config.model_type``); :data:`GENERIC` when none covers it."""
    return next((family for family in FAMILIES if model_type in family.model_types), GENERIC)


def attention_of_layers(model: Any, purpose: str, remedy: str) -> list[AttentionLayer]:
    """Every layer's attention module and output projection of a loaded model, in layer order.

    ``purpose`` names what needs them and ``remedy`` how a study does without, for the error a model of an
    unknown family gets.
    """
    model_type = model.config.model_type
    family = family_of(model_type)
    if family.attention_layers is None:
        known = sorted(t for f in FAMILIES if f.attention_layers is not None for t in f.model_types)
        raise AtlasError(f"model type {model_type!r}: {purpose} acts inside each layer's attention, which this "
                         f"workflow knows for model types {', '.join(known)}. {remedy}, or declare the model's "
                         "architecture in workflow_scripts/models/families.py (docs/contributing.md)")
    layers = family.attention_layers(model.base_model)
    expected = int(model.config.num_hidden_layers)
    if len(layers) != expected:
        raise AtlasError(f"model type {model_type!r}: found {len(layers)} attention layers, the config says "
                         f"{expected}; its family ({family.name}) in workflow_scripts/models/families.py no longer "
                         "matches this version of transformers")
    return layers
