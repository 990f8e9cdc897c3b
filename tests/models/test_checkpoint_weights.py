"""Loading a checkpoint never runs code from a file in the results folder or the model's folder
(docs/security.md): the workflow's own checkpoints are read as safetensors only, a pretrained model's pickled
weights are read with torch.load(weights_only=True), and a model that asks for its own Python code is refused."""

from __future__ import annotations

import builtins
import json
import shutil

import pytest
import torch

from workflow_scripts.models.checkpoints import load_checkpoint, make_pretrained, make_random


class MarkerPayload:
    """Unpickling this creates ``marker``: the proof that a load ran code of the file's choosing."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return builtins.open, (self.marker, "w")


def test_a_pickle_put_in_place_of_an_own_checkpoint_is_never_read(tiny_bert, tmp_path):
    manifest = make_random("tiny", str(tiny_bert), tmp_path / "random", seed=7, offline=True)
    weights = tmp_path / "random" / "weights"
    state = load_checkpoint(manifest, offline=True)[1].state_dict()
    (weights / "model.safetensors").unlink()
    # Even weights that would load (a pretrained model folder holding them is read) are not read here.
    torch.save(state, weights / "pytorch_model.bin")
    with pytest.raises(OSError, match="no file named model.safetensors"):
        load_checkpoint(manifest, offline=True)


def test_a_pretrained_model_with_a_pickled_payload_is_read_weights_only(tiny_bert, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert, folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "payload_ran"
    torch.save({"embeddings.word_embeddings.weight": MarkerPayload(marker)}, folder / "pytorch_model.bin")
    with pytest.raises(Exception, match="(?i)weights_only|unpickl"):
        load_checkpoint(make_pretrained("tiny", str(folder), tmp_path / "pretrained"), offline=True)
    assert not marker.exists()


def test_a_model_that_asks_for_its_own_code_is_refused(tiny_bert, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert, folder)
    marker = tmp_path / "module_ran"
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="atlas-remote-code-probe",
                  auto_map={"AutoConfig": "remote_code.ProbeConfig", "AutoModel": "remote_code.ProbeModel"})
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "remote_code.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_checkpoint(make_pretrained("tiny", str(folder), tmp_path / "pretrained"), offline=True)
    assert not marker.exists()
