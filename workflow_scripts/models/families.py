"""Model families: what the workflow must know of an architecture, declared once per family.

In the manner of TransformerLens's architecture adapters, each :class:`Family` says, for the transformers model
types it covers:

- where each layer's attention is (:attr:`Family.attention_layers`): the module that calls the attention function
  and its output projection W_O. Head ablation (``ablation/heads.py``) disables a head inside the attention
  function of those modules; the ``norm`` signal (``attention/signals.py``) records the value vectors (W_V's
  output) as they pass through that function and multiplies them by W_O;
- how inputs are padded (:meth:`Family.pad_id`; padding is on the right for every family so far);
- whether the model is causal (a decoder): its dumps store each map's lower triangle (attention/layout.py);
- which transformers class loads its models for each use (:attr:`Family.auto_classes`, :func:`load_pretrained`):
  the encoder alone (``base``: extraction, diagnostics, random-init), a sequence classifier (``classifier``:
  fine-tuning, head disabling, the plan's timing) and a masked-LM (``masked_lm``: the separator gradient);
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
from pathlib import Path
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


def _opt_layers(base: Any) -> list[AttentionLayer]:
    return [AttentionLayer(layer.self_attn, layer.self_attn.out_proj) for layer in base.decoder.layers]


def _llama_layers(base: Any) -> list[AttentionLayer]:
    """Llama's layout, which the families built on its code share: ``layers[i].self_attn.o_proj``."""
    return [AttentionLayer(layer.self_attn, layer.self_attn.o_proj) for layer in base.layers]


# transformers' Auto classes a model is loaded through, per use; a family whose models load otherwise (a T5 encoder:
# T5EncoderModel) names its own in Family.auto_classes.
AUTO_CLASSES = {"base": "AutoModel", "classifier": "AutoModelForSequenceClassification",
                "masked_lm": "AutoModelForMaskedLM", "causal_lm": "AutoModelForCausalLM"}
# Keys of from_pretrained that reading the config needs too (the rest are the model's).
CONFIG_KEYS = ("revision", "local_files_only", "token", "cache_dir")


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
    # The attention projections LoRA adapts (finetune.method lora), as peft's target_modules: module names' last
    # parts. The query and value projections, as Hu et al. (2022) adapted; a fused QKV projection where the family
    # has one. Empty: LoRA is refused for the family's models.
    lora_targets: tuple[str, ...] = ()
    # Layers of the sequence classifier's head besides peft's "classifier"/"score", trained whole under LoRA too:
    # DistilBERT's pre_classifier (newly initialised); BERT's pooler, the head's dense layer before the classifier,
    # which a sentence encoder's checkpoint never trained for it (all-MiniLM-L6-v2 on SST-2 by LoRA: 0.716 dev
    # accuracy with it frozen, 0.779 trained; docs/finetune.md). A name a model has no module of is left out.
    lora_trained_whole: tuple[str, ...] = ()
    # (use, transformers class name) pairs replacing AUTO_CLASSES' for this family's models
    auto_classes: tuple[tuple[str, str], ...] = ()

    def model_class(self, use: str) -> Any:
        """The transformers class that loads this family's models for ``use`` (AUTO_CLASSES' keys)."""
        import transformers

        name = {**AUTO_CLASSES, **dict(self.auto_classes)}.get(use)
        if name is None:
            raise AtlasError(f"model family {self.name}: no model class for use {use!r} (uses: "
                             f"{', '.join(AUTO_CLASSES)})")
        return getattr(transformers, name)

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
    Family("bert", frozenset({"bert", "electra"}), _encoder_layers, weight_pattern=ENCODER_QUERY,
           lora_targets=("query", "value"), lora_trained_whole=("pooler",)),
    Family("roberta", frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "roberta-prelayernorm",
                                 "data2vec-text"}), _encoder_layers, reserves_padding_positions=True,
           weight_pattern=ENCODER_QUERY, lora_targets=("query", "value")),
    Family("distilbert", frozenset({"distilbert"}), _distilbert_layers,
           weight_pattern="transformer.layer.{layer}.attention.q_lin.weight", lora_targets=("q_lin", "v_lin"),
           lora_trained_whole=("pre_classifier",)),
    Family("modernbert", frozenset({"modernbert"}), _modernbert_layers,
           weight_pattern="layers.{layer}.attn.Wqkv.weight", lora_targets=("Wqkv",)),
    Family("gpt2", frozenset({"gpt2"}), _gpt2_layers, causal=True, weight_pattern="h.{layer}.attn.c_attn.weight",
           lora_targets=("c_attn",)),
    Family("gpt-neox", frozenset({"gpt_neox"}), _gpt_neox_layers, causal=True,  # Pythia
           weight_pattern="layers.{layer}.attention.query_key_value.weight", lora_targets=("query_key_value",)),
    Family("opt", frozenset({"opt"}), _opt_layers, causal=True,
           weight_pattern="decoder.layers.{layer}.self_attn.q_proj.weight", lora_targets=("q_proj", "v_proj")),
    # Llama and the families transformers builds on its code (SmolLM and SmolLM2 are model type llama).
    Family("llama", frozenset({"llama", "mistral", "qwen2", "qwen3"}), _llama_layers, causal=True,
           weight_pattern="layers.{layer}.self_attn.q_proj.weight", lora_targets=("q_proj", "v_proj")),
    # Position ids after the padding index, like RoBERTa, but attention code of their own.
    Family("roberta-like, own attention", frozenset({"longformer", "ibert", "mpnet"}), None,
           reserves_padding_positions=True),
)
GENERIC = Family("generic", frozenset(), None)  # any other model type: nothing known beyond transformers' config


def load_pretrained(use: str, location: str | Path, **options: Any) -> Any:
    """``from_pretrained(location, **options)`` of the class the model's family declares for ``use``: the config is
    read first (its model_type names the family). Every stage loads a model through here or :func:`from_config`.

    transformers reports every weight a load leaves new or unused (its "LOAD REPORT", which a job's log keeps); most
    are what the workflow plans: a classifier's new head on a pretrained encoder, a fine-tuned checkpoint's head
    left out when its encoder alone is loaded, a masked-LM head a checkpoint was saved without. Only the others --
    a weight of the encoder itself new, unused or of another shape -- are said as a warning, which reaches the
    console (:func:`unplanned_weights`)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(location, **{k: v for k, v in options.items() if k in CONFIG_KEYS})
    wants_info = options.pop("output_loading_info", False)
    model, info = family_of(config.model_type).model_class(use).from_pretrained(
        location, output_loading_info=True, **options)
    unplanned = unplanned_weights(model, info)
    if unplanned:
        import logging

        logging.getLogger(__name__).warning(
            "loading %s as a %s model: %d weights of the encoder itself are not as the checkpoint has them (%s%s): "
            "they were initialised afresh or left out, so this model is not the one the checkpoint holds; check "
            "the model folder (its config.json and weights) or the model entry", location, use, len(unplanned),
            ", ".join(unplanned[:4]), ", ..." if len(unplanned) > 4 else "")
    return (model, info) if wants_info else model


def unplanned_weights(model: Any, info: dict[str, Any]) -> list[str]:
    """The weights of a load's report that the workflow never plans: missing or unused weights of the encoder body
    (``model.base_model``; a task head's weights are planned) and any weight of another shape."""
    prefix = getattr(model, "base_model_prefix", "")
    body = {name for name, _ in model.base_model.named_parameters()} if hasattr(model, "base_model") else set()

    def in_body(key: str) -> bool:
        return (key.removeprefix(f"{prefix}.") if prefix else key) in body

    found = [key for key in [*(info.get("missing_keys") or []), *(info.get("unexpected_keys") or [])]
             if in_body(key)]
    found += [str(item[0] if isinstance(item, tuple | list) else item) for item in info.get("mismatched_keys") or []]
    return sorted(set(found))


def from_config(use: str, config: Any, **options: Any) -> Any:
    """A model with fresh weights on ``config``, of the class its family declares for ``use``."""
    model_class = family_of(config.model_type).model_class(use)
    # transformers' Auto classes build from a config with from_config, a model class with _from_config
    return (model_class.from_config if hasattr(model_class, "from_config") else model_class._from_config)(
        config, **options)


def family_of(model_type: str | None) -> Family:
    """The family of a transformers model type (``config.model_type``); :data:`GENERIC` when none covers it."""
    return next((family for family in FAMILIES if model_type in family.model_types), GENERIC)


def declared_causal(models: Any, model: str) -> bool | None:
    """Whether ``model``'s family is causal, by the ``model_type`` of its row of the models table (tables/models.csv
    as a DataFrame); None where the table has no model_type for it."""
    if models is None or not {"name", "model_type"} <= set(models.columns):
        return None
    types = models.loc[models["name"].astype(str) == model, "model_type"]
    return family_of(types.iloc[0]).causal if not types.empty and isinstance(types.iloc[0], str) else None


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
