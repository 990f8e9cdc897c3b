"""A model's config found in one order (workflow_scripts/models/model_config.py): its local config.json first, then the
recorded configs, then the hub only where allowed; each answer says where it came from, and a config.json is read
once per version of the file."""

from __future__ import annotations

import json
import os
import re

import pytest

from workflow_scripts.models import model_config
from workflow_scripts.models.known_configs import KNOWN_CONFIGS, RECORDED
from workflow_scripts.models.model_config import find_config

TINY = {"model_type": "bert", "num_hidden_layers": 3, "num_attention_heads": 2, "hidden_size": 8, "vocab_size": 40}


def _folder(tmp_path, keys=TINY, tokenizer=None):
    (tmp_path / "config.json").write_text(json.dumps(keys))
    if tokenizer is not None:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    return {"path": str(tmp_path)}


def test_a_local_folder_gives_its_config_and_its_tokenizer_limit(tmp_path):
    found = find_config("tiny", _folder(tmp_path, tokenizer={"model_max_length": 64}))
    assert (found.source, found.shape().layers_heads, found.tokenizer_keys) == (
        "its config.json", (3, 2), {"model_max_length": 64})
    assert found.transformers_config().num_hidden_layers == 3


def test_a_hub_model_not_cached_takes_the_recorded_config_and_never_the_hub_unless_allowed(monkeypatch):
    asked = []
    monkeypatch.setattr(model_config, "hub_config", lambda hub, revision: asked.append(hub))
    hub = next(iter(KNOWN_CONFIGS))
    assert find_config("m", {"hub": hub}, hub_allowed=True).source == RECORDED
    unknown = find_config("x", {"hub": "nobody/no-such-model"})
    assert not unknown.found and "the hub is not asked" in unknown.source and asked == []


def test_the_hub_is_asked_last_and_its_failure_is_named(monkeypatch):
    class Config:
        def to_dict(self):
            return dict(TINY)

    monkeypatch.setattr(model_config, "hub_config", lambda hub, revision: Config())
    found = find_config("x", {"hub": "nobody/no-such-model"}, hub_allowed=True)
    assert (found.source, found.shape().layers) == ("its config.json from the hub", 3)

    def no_network(hub, revision):
        raise OSError("no network")

    monkeypatch.setattr(model_config, "hub_config", no_network)
    failed = find_config("x", {"hub": "nobody/no-such-model"}, hub_allowed=True)
    assert not failed.found and failed.source.endswith("the hub did not give it (OSError)")


def test_a_missing_folder_is_not_found_and_says_where_it_looked(tmp_path):
    found = find_config("gone", {"path": str(tmp_path / "gone")})
    assert not found.found and found.source == f"no config.json in {tmp_path / 'gone'}"
    assert found.shape().layers_heads is None


def test_a_config_is_read_once_per_version_of_its_file(tmp_path, monkeypatch):
    reads = []
    real = model_config.read_json_object
    monkeypatch.setattr(model_config, "read_json_object", lambda path: reads.append(path) or real(path))
    model_config._read_version.cache_clear()
    entry = _folder(tmp_path)
    for _ in range(3):
        assert find_config("tiny", entry).shape().layers == 3
    assert reads.count(str(tmp_path / "config.json")) == 1
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_hidden_layers": 5}))
    stat = (tmp_path / "config.json").stat()
    os.utime(tmp_path / "config.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert find_config("tiny", entry).shape().layers == 5


@pytest.mark.parametrize("keys", [{"num_hidden_layers": 2}, {"model_type": 7}])
def test_a_config_without_a_model_type_is_refused_by_name_when_transformers_needs_it(tmp_path, keys):
    found = find_config("odd", _folder(tmp_path, keys))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'config.json'} names no model_type: give it")):
        found.transformers_config()


def test_a_damaged_config_json_is_not_taken_for_a_missing_one(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert",')
    found = find_config("bad", {"path": str(tmp_path)})
    assert not found.found and not found.from_local_file and found.path == str(tmp_path / "config.json")
    assert found.source == (f"{tmp_path / 'config.json'} is not a readable JSON object (the config checks say where "
                            "it breaks)")


def test_a_model_type_transformers_does_not_know_is_named_with_its_file(tmp_path):
    found = find_config("odd", _folder(tmp_path, {**TINY, "model_type": "bertt"}))
    assert found.from_local_file
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'config.json'}: model_type 'bertt' is not one "
                                                   "transformers")):
        found.transformers_config()
