"""LoRA trains the classification head whole (finetune/lora.py, Family.lora_trained_whole): BERT's pooler with its
classifier, a head layer a model does not have (ELECTRA's classifier has no pooler) left out."""

from __future__ import annotations

from workflow_scripts.finetune.lora import with_lora
from workflow_scripts.finetune.tasks import task_settings
from workflow_scripts.models.families import load_pretrained


def trained(model) -> set[str]:
    return {name for name, parameter in model.named_parameters() if parameter.requires_grad}


def settings():
    from workflow_scripts.core.schema import section_properties

    values = {key: entry.get("default") for key, entry in section_properties("finetune").items()}
    return task_settings({**values, "per_task": {}, "method": "lora", "lora_rank": 2}, "sst2")


def test_bert_trains_its_pooler_and_classifier_whole_and_lora_updates_of_query_and_value(tiny_bert):
    model = with_lora(load_pretrained("classifier", tiny_bert, num_labels=2), settings(), "sst2")
    names = trained(model)
    assert any("pooler" in n and n.endswith("dense.weight") for n in names)
    assert any("classifier" in n and n.endswith("weight") for n in names)
    assert any("query.lora_A" in n for n in names) and any("value.lora_B" in n for n in names)
    frozen_encoder = [n for n in names if "encoder" in n and "lora_" not in n]
    assert frozen_encoder == []  # the encoder's own weights stay frozen


def test_a_head_layer_the_model_lacks_is_left_out(tiny_bert, monkeypatch):
    import workflow_scripts.finetune.lora as lora

    monkeypatch.setattr(lora, "family_of", lambda model_type: _with_whole(("pooler", "no_such_layer")))
    model = with_lora(load_pretrained("classifier", tiny_bert, num_labels=2), settings(), "sst2")
    assert any("pooler" in n for n in trained(model))


def _with_whole(names):
    import dataclasses

    from workflow_scripts.models.families import FAMILIES

    bert = next(f for f in FAMILIES if f.name == "bert")
    return dataclasses.replace(bert, lora_trained_whole=names)
