"""Model families (workflow_scripts/models/families.py): every declared layout matches transformers' models."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModel

from support.tiny_models import tiny_config
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.models.families import FAMILIES, GENERIC, attention_of_layers, family_of

# Three layers of two heads (one value head: grouped-query families), sizes no family shares by default.
SMALL = {"layers": 3, "heads": 2, "intermediate": 37, "vocab": 99, "positions": 64}
DECLARED = sorted(t for family in FAMILIES if family.attention_layers is not None for t in family.model_types)
ENCODERS_NAMED_SELF_ATTENTION = {t for f in FAMILIES if f.name in ("bert", "roberta", "distilbert")
                                 for t in f.model_types}


def _tiny(model_type: str):
    return AutoModel.from_config(tiny_config(model_type, **SMALL), attn_implementation="eager").eval()


@pytest.mark.parametrize("model_type", DECLARED)
def test_each_declared_layout_finds_every_layers_attention_and_output_projection(model_type):
    model = _tiny(model_type)
    layers = attention_of_layers(model, "a test", "Nothing to do")
    assert len(layers) == 3 and len({id(layer.attention) for layer in layers}) == 3
    assert all(type(layer.attention).__name__.endswith("Attention") for layer in layers)
    if model_type in ENCODERS_NAMED_SELF_ATTENTION:
        # The modules head ablation matched by class name before the families were declared, in layer order.
        by_name = [m for m in model.modules() if type(m).__name__.endswith("SelfAttention")]
        assert [layer.attention for layer in layers] == by_name
    head_size = getattr(model.config, "head_dim", None) or 32 // 2  # Qwen3 sets its own (128)
    for layer in layers:
        # W_O as nn.Linear keeps it, (hidden out, heads x head size in), GPT-2's Conv1D (in, out) included.
        assert tuple(layer.output_weight().shape) == (32, 2 * head_size)
    # Each projection is its own layer's: three different weights.
    assert len({id(layer.output_projection.weight) for layer in layers}) == 3


@pytest.mark.parametrize("model_type", DECLARED)
def test_each_declared_familys_lora_targets_are_its_attention_projections(model_type):
    """finetune.method lora adapts the modules the family names: each layer has them, inside its attention."""
    model = _tiny(model_type)
    targets = family_of(model_type).lora_targets
    found = [name for name, _ in model.named_modules() if name.rsplit(".", 1)[-1] in targets]
    assert targets and len(found) == 3 * len(targets), found
    layers = attention_of_layers(model, "a test", "-")
    attention_modules = {id(m) for layer in layers for m in layer.attention.modules()}
    assert all(id(model.get_submodule(name)) in attention_modules for name in found)


def test_gpt2s_output_weight_is_its_conv1d_weight_transposed():
    layer = attention_of_layers(_tiny("gpt2"), "a test", "Nothing to do")[0]
    hidden = torch.randn(5, 32)
    with torch.no_grad():
        expected = layer.output_projection(hidden) - layer.output_projection.bias
        torch.testing.assert_close(hidden @ layer.output_weight().T, expected)


def test_a_model_type_no_family_covers_is_generic_and_refused_where_attention_is_needed():
    assert family_of("bloom") is GENERIC and family_of(None) is GENERIC
    assert GENERIC.pad_id(SimpleNamespace(pad_token_id=None)) == 0
    albert = AutoModel.from_config(tiny_config("albert", embedding_size=16, **SMALL))
    with pytest.raises(AtlasError, match=r"model type 'albert': head ablation acts inside each layer's attention, "
                                         r"which this workflow knows for model types bert, camembert, .*distilbert.*"
                                         r"Do without it, or declare .*models/families.py"):
        attention_of_layers(albert, "head ablation", "Do without it")
    # Known positions, unknown attention: RoBERTa-like position ids, attention code of their own.
    mpnet = family_of("mpnet")
    assert mpnet.reserves_padding_positions and mpnet.attention_layers is None


def test_padding_positions_and_pad_ids_follow_the_family():
    assert family_of("roberta").reserves_padding_positions and family_of("camembert").reserves_padding_positions
    assert not family_of("bert").reserves_padding_positions and not family_of("gpt2").reserves_padding_positions
    assert family_of("roberta").pad_id(tiny_config("roberta", **SMALL)) == 1
    assert family_of("bert").pad_id(tiny_config("bert", **SMALL)) == 0
    # No pad token (GPT-2, Pythia, Llama): the end-of-text token pads, behind the attention mask.
    assert family_of("gpt2").pad_id(SimpleNamespace(pad_token_id=None, eos_token_id=50256)) == 50256
    assert family_of("llama").pad_id(SimpleNamespace(pad_token_id=None, eos_token_id=[128001, 128009])) == 128001


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


def test_a_decoder_classifier_pads_with_its_end_of_text_token(tiny_gpt2):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from workflow_scripts.models.families import ensure_pad_token

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    tokenizer.pad_token = None  # as GPT-2's, Pythia's and Llama's tokenizers come
    model = AutoModelForSequenceClassification.from_pretrained(tiny_gpt2, num_labels=2)
    assert model.config.pad_token_id is None and tokenizer.pad_token_id is None
    pad = ensure_pad_token(model, tokenizer)
    assert pad == model.config.eos_token_id == tokenizer.pad_token_id == model.config.pad_token_id
    # a batch of two inputs of different lengths now classifies, each from its own last token
    batch = tokenizer(["a b c d", "a"], padding=True, return_tensors="pt")
    logits = model(**batch).logits
    alone = model(**tokenizer(["a"], return_tensors="pt")).logits
    assert logits.shape == (2, 2) and abs(float(logits[1, 0] - alone[0, 0])) < 1e-5


def test_a_family_says_which_class_loads_its_models(tmp_path, monkeypatch):
    """A family whose models load through another class (a T5 encoder: T5EncoderModel) declares it: every stage
    loads through load_pretrained/from_config, so the declaration is all a new family needs."""
    import dataclasses

    from transformers import BertForMaskedLM, BertModel

    import workflow_scripts.models.families as families

    tiny = _tiny("bert")
    tiny.save_pretrained(tmp_path)
    assert type(families.load_pretrained("base", tmp_path)) is BertModel
    declared = dataclasses.replace(family_of("bert"), auto_classes=(("base", "BertForMaskedLM"),))
    monkeypatch.setattr(families, "family_of", lambda model_type: declared)
    assert type(families.load_pretrained("base", tmp_path)) is BertForMaskedLM
    assert type(families.from_config("base", tiny.config)) is BertForMaskedLM
    with pytest.raises(AtlasError, match="model family bert: no model class for use 'decoder'"):
        families.load_pretrained("decoder", tmp_path)


def test_no_stage_picks_an_auto_class_itself():
    """The Auto class a model loads through is its family's (models/families.py), at no other site."""
    import re
    from pathlib import Path

    package = Path(families_module().__file__).parents[1]
    sites = [f"{path.relative_to(package)}:{number}" for path in package.rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"AutoModel\w*\.from_(pretrained|config)", line) and path.name != "families.py"]
    assert sites == []


def families_module():
    import workflow_scripts.models.families as families

    return families
