"""The checkpoint convention (workflow_scripts/models/checkpoints.py) on a tiny model built by the tests."""

from __future__ import annotations

import json

import pytest
import torch

from workflow_scripts.core.errors import AtlasError
from workflow_scripts.models.checkpoints import (
    load_checkpoint,
    make_pretrained,
    make_random,
    parse_checkpoint_name,
    read_manifest,
)


@pytest.mark.parametrize(("name", "expected"), [
    ("pretrained", {"kind": "pretrained", "task": None, "seed": None, "step": None}),
    ("random", {"kind": "random", "task": None, "seed": None, "step": None}),
    ("cola.seed3.step50", {"kind": "finetuned", "task": "cola", "seed": 3, "step": 50}),
    ("sst2.seed0.final", {"kind": "finetuned", "task": "sst2", "seed": 0, "step": "final"}),
])
def test_checkpoint_names_parse_into_kind_task_seed_and_step(name, expected):
    assert parse_checkpoint_name(name) == expected


@pytest.mark.parametrize("name", ["final", "cola.seed.final", "CoLA.seed1.final", "cola.seed1.step", "cola.seed1"])
def test_a_checkpoint_name_outside_the_convention_is_an_error(name):
    with pytest.raises(AtlasError, match="is not 'pretrained', 'random'"):
        parse_checkpoint_name(name)


def test_the_pretrained_checkpoint_loads_the_model_itself_with_eager_attention(tiny_bert, tmp_path):
    manifest = make_pretrained("tiny", str(tiny_bert), tmp_path / "pretrained")
    assert read_manifest(manifest)["load_from"] == str(tiny_bert)
    tokenizer, model = load_checkpoint(manifest, offline=True)
    assert model.config._attn_implementation == "eager"
    out = model(**tokenizer("the cat sat", return_tensors="pt"), output_attentions=True)
    assert len(out.attentions) == model.config.num_hidden_layers


def test_the_random_checkpoint_is_reproducible_from_its_seed_and_differs_from_the_pretrained(tiny_bert, tmp_path):
    first = make_random("tiny", str(tiny_bert), tmp_path / "a", seed=7, offline=True)
    again = make_random("tiny", str(tiny_bert), tmp_path / "b", seed=7, offline=True)
    other = make_random("tiny", str(tiny_bert), tmp_path / "c", seed=8, offline=True)
    assert json.loads(first.read_text())["init_seed"] == 7
    weights = [load_checkpoint(m, offline=True)[1].state_dict() for m in (first, again, other)]
    pretrained = load_checkpoint(make_pretrained("tiny", str(tiny_bert), tmp_path / "p"), offline=True)[1].state_dict()
    key = "encoder.layer.0.attention.self.query.weight"
    assert torch.equal(weights[0][key], weights[1][key])
    assert not torch.equal(weights[0][key], weights[2][key])
    assert not torch.equal(weights[0][key], pretrained[key])


def test_an_unreadable_manifest_names_the_file_and_the_fix(tmp_path):
    broken = tmp_path / "checkpoint.json"
    broken.write_text("{not json")
    with pytest.raises(AtlasError, match=r"checkpoint.json: unreadable checkpoint manifest .* rerun snakemake"):
        read_manifest(broken)
