"""The pattern CNN's files (safetensors weights, JSON description): a file planted in a shared results folder
can never run code in the job that reads it (docs/security.md).

The loaders are imported from pattern_cnn, where they were when the CNN was a pickle, so that these tests also
run (and fail) on the pickle-loading code."""

from __future__ import annotations

import builtins
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from support.study_configs import MODEL, study_of
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.finetune_effects.pattern_cnn import build_cnn, classify_dump, load_cnn, save_cnn
from workflow_scripts.finetune_effects.pattern_rules import CLASSES


class MarkerPayload:
    """Unpickling this creates ``marker``: the proof that a load ran code of the file's choosing."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return builtins.open, (self.marker, "w")


def info_path(weights) -> Path:
    """The JSON description beside the weights (pattern_cnn.json beside pattern_cnn.safetensors)."""
    return Path(weights).with_suffix(".json")


def expected_classifier_file(results) -> str:
    """Where the workflow reads a model's trained CNN from (the pattern_classes_part rule's input)."""
    study = study_of({"finetune_effects": {"classifier": "cnn"}}, results=str(results))
    wildcards = SimpleNamespace(model=MODEL, checkpoint="pretrained", corpus="cola")
    return study.finetune_effects.pattern_classes(wildcards)["cnn"]


@pytest.mark.parametrize("planting", ["plain_pickle", "torch_save"])
def test_a_pickle_planted_as_the_classifier_is_refused_without_running(tmp_path, planting):
    path = tmp_path / expected_classifier_file(tmp_path / "results")
    path.parent.mkdir(parents=True)
    marker = tmp_path / "payload_ran"
    if planting == "plain_pickle":
        path.write_bytes(pickle.dumps(MarkerPayload(marker)))
    else:  # the format the CNN used to be saved in: torch.save of a dict
        torch.save({"state_dict": MarkerPayload(marker), "classes": list(CLASSES)}, path)
    # A description beside it, as a planter who knows the layout would leave one.
    info_path(path).write_text(json.dumps({"format": "attention-atlas pattern CNN", "classes": list(CLASSES),
                                           "channels": 3, "size": 8}))
    assert not marker.exists()
    refusal = None
    try:
        load_cnn(path)
    except Exception as error:  # what was raised is checked below, after the marker
        refusal = error
    assert not marker.exists(), "loading the planted classifier ran its payload"
    assert isinstance(refusal, AtlasError), f"the planted classifier was not refused: {refusal!r}"
    assert str(path) in str(refusal) and "delete the file and rerun snakemake" in str(refusal)
    # The job that classifies maps loads the CNN first, so it stops there too.
    with pytest.raises(AtlasError, match="safetensors"):
        classify_dump(path, tmp_path / "no_dump", tmp_path / "no_tokens.parquet", {0}, threads=1)
    assert not marker.exists(), "loading the planted classifier ran its payload"


def test_an_old_pickled_classifier_is_not_the_file_the_workflow_reads(tmp_path):
    """A results folder from before holds pattern_cnn.pt: the classifier has another name now, so the next
    plain run retrains it instead of reading the pickle."""
    expected = expected_classifier_file(tmp_path / "results")
    assert expected.endswith("/pattern_cnn.safetensors")
    assert str(info_path(expected)).endswith("/pattern_cnn.json")


def test_saved_cnn_round_trips_as_safetensors_and_json(tmp_path):
    torch.manual_seed(0)
    network = build_cnn()
    path = tmp_path / "pattern_cnn.safetensors"
    save_cnn(network, path, size=8, channels=3, epochs=1, seed=0, model="tiny")
    info = json.loads(info_path(path).read_text())
    assert info["classes"] == list(CLASSES) and info["size"] == 8 and info["model"] == "tiny"
    assert not path.read_bytes().startswith((b"PK", b"\x80"))  # neither a torch.save zip nor a pickle
    loaded, loaded_info = load_cnn(path)
    assert loaded_info == info and not loaded.training
    for (name, saved), (_, read) in zip(network.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(saved, read), name
    images = torch.rand(2, 3, 8, 8)
    with torch.no_grad():
        assert torch.equal(network.eval()(images), loaded(images))


def test_weights_that_do_not_fit_their_description_are_refused(tmp_path):
    path = tmp_path / "pattern_cnn.safetensors"
    save_cnn(build_cnn(), path, size=8, channels=3)
    info = json.loads(info_path(path).read_text())
    info_path(path).write_text(json.dumps({**info, "channels": 4}))
    with pytest.raises(AtlasError, match="do not fit the network"):
        load_cnn(path)
    info_path(path).write_text(json.dumps({**info, "size": "8; import os"}))
    with pytest.raises(AtlasError, match="'size' must be a positive integer"):
        load_cnn(path)
    info_path(path).unlink()
    with pytest.raises(AtlasError, match="unreadable pattern CNN description"):
        load_cnn(path)
