"""attention.max_dump_gb: a dump over the budget is refused before any job, naming the keys that bound it; a
decoder's dumps are sized as the lower triangles they store (study/estimates/sizes.py, plans/attention.py)."""

from __future__ import annotations

import json

import pytest

from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.estimates.sizes import model_shape, size_dump

# bert-base (12 x 12 heads) on the 1000 wiki segments: 1000 x 144 x 12,558 (measured mean T^2) x 1.98 bytes.
WIKI_GB = 1000 * 144 * 12558.0 * 1.98 / 1e9


def test_a_dump_over_the_budget_is_refused_with_the_keys_that_bound_it():
    config = {**one_model(), "attention": {"max_dump_gb": 1.0}}
    with pytest.raises(ConfigError) as caught:
        study_of(config)
    message = str(caught.value)
    assert message.startswith("config key 'attention.max_dump_gb': the dump of bert-base-uncased")
    for key in ("'attention.max_examples.", f"'models.{MODEL}.max_length'", "'attention.corpora'",
                "'attention.checkpoints'", "over the budget of 1 GB"):
        assert key in message


def test_a_budget_above_every_dump_plans_the_study():
    study = study_of({**one_model(), "attention": {"max_dump_gb": WIKI_GB + 0.01}})
    assert study.attention.dumps
    with pytest.raises(ConfigError, match="wiki/segments would take 3.6 GB"):
        study_of({**one_model(), "attention": {"max_dump_gb": WIKI_GB - 0.01}})


def test_a_decoders_dump_is_sized_as_its_lower_triangles(tmp_path):
    folder = tmp_path / "tiny-gpt2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 2, "n_head": 3}))
    (folder / "vocab.txt").write_text("<|endoftext|>\n")  # a tokenizer, which the config checks ask of a folder
    study = study_of({"study": {"models": ["dec"], "tasks": [], "wiki": True},
                      "models": {"dec": {"path": str(folder), "max_length": 10}},
                      "attention": {"corpora": {"wiki": ["segments"]}, "checkpoints": ["pretrained"]},
                      "surface": {"diagnostics": {"length": 4}}})
    shape = model_shape(study, "dec", network=False)
    assert shape.layers_heads == (2, 3) and shape.causal
    size = size_dump(study, study.attention.dumps[0], shape.layers_heads, causal=True)
    assert size.values_max == 1000 * 6 * (10 * 11 // 2)  # 1000 segments, 6 heads, 55 values per map
    encoder = size_dump(study, study.attention.dumps[0], shape.layers_heads, causal=False)
    assert encoder.values_max == 1000 * 6 * 100
