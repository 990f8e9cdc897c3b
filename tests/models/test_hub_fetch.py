"""A hub model's card job fetches the whole model (weights too) into the cache first when online, so that jobs on
nodes without internet load it from there; offline it asks nothing of the hub. The fetch itself runs against a
hub stand-in on 127.0.0.1 (tests/support/hub_server.py): revisions, and every file checked against the digests
the hub lists."""

from __future__ import annotations

import json

import pytest

from support.hub_server import HubRepo, folder_files, serve_hub
from workflow_scripts.core.errors import ChecksumMismatchError, SourceUnavailableError
from workflow_scripts.models import hub
from workflow_scripts.models.cards import describe_model


@pytest.mark.parametrize("offline, fetched", [(False, True), (True, False)])
def test_the_model_card_fetches_a_hub_model_whole_only_online(tmp_path, tiny_bert, monkeypatch, offline, fetched):
    calls = []
    monkeypatch.setattr(hub, "fetch_hub_model", lambda repo, revision, local_dir=None: calls.append((repo, revision)))
    # A hub id that from_pretrained can also read as a folder: the card loads it without a network.
    card = describe_model("tiny", {"hub": str(tiny_bert), "revision": "v1"}, tmp_path / "model.json",
                          offline=offline)
    assert card["source"] == "hub" and calls == ([(str(tiny_bert), "v1")] if fetched else [])


def test_an_unreachable_hub_names_the_model_the_offline_profile_and_the_prefetch(monkeypatch):
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", refuse)
    with pytest.raises(SourceUnavailableError, match=r"hub model 'org/model' \(revision main\) could not be "
                                                     r"downloaded: ConnectionError: no route to host\nfix: ") as error:
        hub.fetch_hub_model("org/model", None)
    assert "python -m workflow_scripts.entrypoints.prefetch" in str(error.value)
    assert "snakemake --profile profiles/offline --config mirror=PATH" in str(error.value)


@pytest.fixture
def hub_repo(tiny_bert):
    """org/tiny with two commits: v1 (a tag; its config.json says which) and main, whose weights differ."""
    repo = HubRepo("org/tiny")
    files = folder_files(tiny_bert)
    config = json.loads(files["config.json"].read_text())
    weights = files["model.safetensors"].read_bytes()
    # The old weights differ in their last bytes only: a size check alone could not tell them apart.
    repo.commit({**files, "config.json": json.dumps({**config, "revision_note": "v1"}).encode(),
                 "model.safetensors": weights[:-4] + b"\0\0\0\0", "onnx/model.onnx": b"not fetched"}, tag="v1")
    repo.commit(files)
    return repo


@pytest.fixture
def hub_endpoint(hub_repo, tmp_path, monkeypatch):
    """The hub stand-in serving ``hub_repo``, as huggingface_hub's HF_ENDPOINT; the cache in tmp_path."""
    from huggingface_hub import constants

    with serve_hub([hub_repo]) as server:
        # huggingface_hub reads HF_ENDPOINT and HF_HUB_CACHE at import: set what it computed from them.
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
        yield server


def test_a_revision_is_fetched_as_that_commit_into_the_cache_and_a_folder(hub_repo, hub_endpoint, tmp_path):
    old = hub.fetch_hub_model("org/tiny", "v1")
    assert old.name == hub_repo.refs["v1"] and old.is_relative_to(tmp_path / "cache")
    assert json.loads((old / "config.json").read_text())["revision_note"] == "v1"
    assert (old / "model.safetensors").read_bytes()[-4:] == b"\0\0\0\0"
    # The cache records the tag, so that a job loading the model by it offline finds this commit.
    assert (tmp_path / "cache" / "models--org--tiny" / "refs" / "v1").read_text() == hub_repo.refs["v1"]
    assert not (old / "onnx").exists(), "only what transformers loads is fetched"
    main = hub.fetch_hub_model("org/tiny", None, local_dir=tmp_path / "models" / "tiny")
    assert main == tmp_path / "models" / "tiny"
    assert "revision_note" not in json.loads((main / "config.json").read_text())
    assert "GET /api/models/{repo}/revision/{rev}?blobs" in hub_endpoint.endpoints()


@pytest.mark.parametrize("name, algorithm", [("model.safetensors", "sha256"), ("config.json", "git blob id")])
def test_a_file_that_differs_from_the_hubs_listing_is_deleted_and_refused(hub_repo, hub_endpoint, tmp_path, name,
                                                                         algorithm):
    listed = hub_repo.commits[hub_repo.refs["main"]][name]
    changed = bytearray(listed.content)
    changed[len(changed) // 2] ^= 0xFF  # same size: only a digest tells
    hub_repo.tampered[name] = bytes(changed)
    with pytest.raises(ChecksumMismatchError) as error:
        hub.fetch_hub_model("org/tiny", "main")
    message = str(error.value)
    expected = listed.sha256 if algorithm == "sha256" else listed.blob_id
    assert f"hub model 'org/tiny' (revision main, commit {hub_repo.refs['main']})" in message
    assert f"the downloaded file {name} is not the file the hub lists, and was deleted" in message
    assert f"expected {algorithm}" in message and expected in message and "received" in message
    assert "fix: run again" in message
    snapshot = tmp_path / "cache" / "models--org--tiny" / "snapshots" / hub_repo.refs["main"]
    assert not (snapshot / name).exists(), "the bad file must not stay where a later run would take it as present"
    assert not any(blob.stat().st_size == len(changed) and blob.read_bytes() == changed
                   for blob in (tmp_path / "cache" / "models--org--tiny" / "blobs").iterdir())
    # Once the served file is the listed one again, a rerun downloads it afresh and passes.
    del hub_repo.tampered[name]
    assert (hub.fetch_hub_model("org/tiny", "main") / name).read_bytes() == listed.content


def test_a_changed_file_in_a_prefetch_folder_is_refused_and_fetched_again(hub_repo, hub_endpoint, tmp_path):
    folder = hub.fetch_hub_model("org/tiny", None, local_dir=tmp_path / "tiny")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\1")  # changed on disk since the download
    with pytest.raises(ChecksumMismatchError, match="model.safetensors"):
        hub.fetch_hub_model("org/tiny", None, local_dir=tmp_path / "tiny")
    hub.fetch_hub_model("org/tiny", None, local_dir=tmp_path / "tiny")
    assert weights.read_bytes() == hub_repo.commits[hub_repo.refs["main"]]["model.safetensors"].content


def test_the_model_card_records_the_hub_id_of_a_hub_entry_and_of_a_prefetched_folder(tmp_path, tiny_bert, caplog):
    import shutil

    hub_card = describe_model("tiny", {"hub": str(tiny_bert)}, tmp_path / "hub.json", offline=True)
    assert hub_card["hub_id"] == str(tiny_bert)
    # The prefetch's folder MODELS/NAME, recorded in MODELS/PREFETCH.json as downloaded from the hub at a revision.
    models = tmp_path / "models"
    shutil.copytree(tiny_bert, models / "gpt2")
    shutil.copytree(tiny_bert, models / "copied")
    (models / hub.PREFETCH_RECORD).write_text(json.dumps({
        "gpt2": {"source": "hub openai-community/gpt2 @ abc123", "files": {}},
        "copied": {"source": str(tiny_bert), "files": {}}}))
    card = describe_model("gpt2", {"path": str(models / "gpt2")}, tmp_path / "p.json", offline=True)
    assert (card["source"], card["hub_id"]) == ("path", "openai-community/gpt2")
    # A folder copied from a local one, a folder the prefetch did not write, a broken record: no hub id.
    assert describe_model("c", {"path": str(models / "copied")}, tmp_path / "c.json", offline=True)["hub_id"] is None
    assert describe_model("t", {"path": str(tiny_bert)}, tmp_path / "t.json", offline=True)["hub_id"] is None
    (models / hub.PREFETCH_RECORD).write_text("{broken")
    assert hub.prefetched_hub_id(models / "gpt2") is None
    # ... said once, naming the folder and the record that could not be read
    assert f"model folder {models / 'gpt2'}: no hub id recorded" in caplog.text
    assert f"{models / hub.PREFETCH_RECORD}: not a readable prefetch record" in caplog.text
