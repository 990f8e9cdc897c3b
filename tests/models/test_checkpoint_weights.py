"""Loading a checkpoint never runs code from a file in the results folder or the model's folder
(docs/security.md): the workflow's own checkpoints are read as safetensors only, a pretrained model's pickled
weights are read with torch.load(weights_only=True), and a model that asks for its own Python code is refused."""

from __future__ import annotations

import builtins
import json
import shutil

import pytest
import torch

from workflow_scripts.core.file_records import marker_path
from workflow_scripts.models.checkpoints import (
    CheckpointError,
    load_checkpoint,
    make_pretrained,
    make_random,
    read_manifest,
    weights_options,
)


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
    # Even weights that would load (a pretrained model folder holding them is read) are not read here: the record
    # lists the files the workflow wrote, and the load checks them first.
    torch.save(state, weights / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"random: weights/model.safetensors: the file is missing\. Its "
                                              r"checkpoint.json was removed.* run snakemake again"):
        load_checkpoint(manifest, offline=True)
    assert not manifest.exists() and marker_path(manifest).exists()  # the next plain run re-creates it


def test_a_pickle_beside_an_own_checkpoints_weights_is_refused_and_never_read(tiny_bert, tmp_path):
    manifest = make_random("tiny", str(tiny_bert), tmp_path / "random", seed=7, offline=True)
    marker = tmp_path / "payload_ran"
    torch.save({"x": MarkerPayload(marker)}, tmp_path / "random" / "weights" / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="weights/pytorch_model.bin was not written by the workflow"):
        load_checkpoint(manifest, offline=True)
    assert not marker.exists()


def test_an_edited_record_is_refused_whatever_it_says(tiny_bert, tmp_path):
    manifest = make_random("tiny", str(tiny_bert), tmp_path / "random", seed=7, offline=True)
    record = json.loads(manifest.read_text())
    record["kind"] = "pretrained"  # would have turned safetensors-only off
    manifest.write_text(json.dumps(record))
    with pytest.raises(CheckpointError, match="random: it was edited after the workflow wrote it"):
        load_checkpoint(manifest, offline=True)
    # A record without a seal (written before seals) is still read by its name: kind random, safetensors only.
    del record["record_sha256"]
    manifest.write_text(json.dumps(record))
    assert read_manifest(manifest)["kind"] == "random"
    assert weights_options(read_manifest(manifest)) == {"use_safetensors": True}


def test_replaced_weights_are_refused_before_transformers_reads_them(tiny_bert, tmp_path):
    manifest = make_random("tiny", str(tiny_bert), tmp_path / "random", seed=7, offline=True)
    weights = tmp_path / "random" / "weights" / "model.safetensors"
    shutil.copy(tiny_bert / "model.safetensors", weights)  # other weights of the same architecture
    with pytest.raises(CheckpointError, match=r"weights/model.safetensors: .*(bytes|sha256)"):
        load_checkpoint(manifest, offline=True)


def test_a_copied_checkpoint_reads_its_own_weights(tiny_bert, tmp_path):
    original = make_random("tiny", str(tiny_bert), tmp_path / "a" / "random", seed=7, offline=True)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    copy = tmp_path / "b" / "random" / "checkpoint.json"
    assert json.loads(copy.read_text())["load_from"] == "weights"  # relative to the checkpoint's folder
    make_random("tiny", str(tiny_bert), tmp_path / "a" / "random", seed=8, offline=True)  # the original changes
    assert read_manifest(copy)["load_from"] == str((tmp_path / "b" / "random" / "weights").resolve())
    seed7 = load_checkpoint(copy, offline=True)[1].state_dict()
    seed8 = load_checkpoint(original, offline=True)[1].state_dict()
    name = "embeddings.word_embeddings.weight"
    assert not torch.equal(seed7[name], seed8[name])


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
