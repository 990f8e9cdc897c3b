"""Model families (workflow_scripts/models/families.py): every declared layout matches transformers' models."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import AutoConfig, AutoModel

from workflow_scripts.core.errors import AtlasError
from workflow_scripts.models.families import FAMILIES, GENERIC, attention_of_layers, family_of

SMALL = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": 37,
         "vocab_size": 99, "max_position_embeddings": 64}
DISTILBERT = {"dim": 32, "n_layers": 3, "n_heads": 2, "hidden_dim": 37, "vocab_size": 99,
              "max_position_embeddings": 64}
DECLARED = sorted(t for family in FAMILIES if family.attention_layers is not None for t in family.model_types)


def _tiny(model_type: str):
    config = AutoConfig.for_model(model_type, **(DISTILBERT if model_type == "distilbert" else SMALL))
    return AutoModel.from_config(config, attn_implementation="eager").eval()


@pytest.mark.parametrize("model_type", DECLARED)
def test_each_declared_layout_finds_every_layers_attention_and_output_projection(model_type):
    model = _tiny(model_type)
    layers = attention_of_layers(model, "a test", "Nothing to do")
    assert len(layers) == 3
    # The attention modules are the model's self-attention modules, in layer order (what head ablation matched by
    # class name before the families were declared).
    by_name = [m for m in model.modules() if type(m).__name__.endswith("SelfAttention")]
    assert [layer.attention for layer in layers] == by_name
    for layer in layers:
        projection = layer.output_projection
        assert isinstance(projection, torch.nn.Linear) and projection.in_features == projection.out_features == 32
    # Each projection is its own layer's: three different weights.
    assert len({id(layer.output_projection.weight) for layer in layers}) == 3


def test_a_model_type_no_family_covers_is_generic_and_refused_where_attention_is_needed():
    assert family_of("gpt2") is GENERIC and family_of(None) is GENERIC
    assert GENERIC.pad_id(SimpleNamespace(pad_token_id=None)) == 0
    albert = AutoModel.from_config(AutoConfig.for_model("albert", embedding_size=16, **SMALL))
    with pytest.raises(AtlasError, match=r"model type 'albert': head ablation acts inside each layer's attention, "
                                         r"which this workflow knows for model types bert, camembert, .*distilbert.*"
                                         r"Do without it, or declare .*models/families.py"):
        attention_of_layers(albert, "head ablation", "Do without it")
    # Known positions, unknown attention: RoBERTa-like position ids, attention code of their own.
    mpnet = family_of("mpnet")
    assert mpnet.reserves_padding_positions and mpnet.attention_layers is None


def test_padding_positions_and_pad_ids_follow_the_family():
    assert family_of("roberta").reserves_padding_positions and family_of("camembert").reserves_padding_positions
    assert not family_of("bert").reserves_padding_positions and not family_of("distilbert").reserves_padding_positions
    assert family_of("roberta").pad_id(AutoConfig.for_model("roberta", **SMALL)) == 1
    assert family_of("bert").pad_id(AutoConfig.for_model("bert", **SMALL)) == 0


def test_a_layout_that_no_longer_matches_the_config_is_refused():
    layers = [SimpleNamespace(attention=SimpleNamespace(self=object(), output=SimpleNamespace(dense=object())))
              for _ in range(2)]
    model = SimpleNamespace(config=SimpleNamespace(model_type="bert", num_hidden_layers=3),
                            base_model=SimpleNamespace(encoder=SimpleNamespace(layer=layers)))
    with pytest.raises(AtlasError, match=r"found 2 attention layers, the config says 3; its family \(bert\)"):
        attention_of_layers(model, "a test", "Nothing to do")


def test_every_model_type_is_in_one_family_only():
    seen = [t for family in FAMILIES for t in family.model_types]
    assert len(seen) == len(set(seen))
