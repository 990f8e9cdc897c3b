"""Whether two checkpoints hold the same weights (workflow_scripts/models/weights_digest.py, docs/roles.md): hub
revisions that serve the same files (as 86 of pythia-2.8b's 154 step branches do), downloaded by the real hub client
from the hub stand-in on 127.0.0.1, have one digest, read from the cache's blob names; another revision's differs;
a fine-tuned checkpoint's comes from its record; and role agreement names such a pair, never counts it as kept."""

from __future__ import annotations

import pandas as pd
import pytest

from support.hub_server import HubRepo, serve_hub
from workflow_scripts.entrypoints.report import same_weights
from workflow_scripts.models.checkpoints import clear_weights, make_pretrained, write_manifest
from workflow_scripts.models.weights_digest import combine, folder_entries, weights_digest
from workflow_scripts.report.role_agreement import role_agreement

HUB_ID = "atlas-test/revisions"


def files(weights: bytes) -> dict[str, bytes]:
    return {"config.json": b'{"model_type": "gpt2"}', "model.safetensors": weights}


@pytest.fixture
def hub_revisions(tmp_path, monkeypatch):
    """The stand-in hub with three branches: step100 and step200 serve the same weights, step0 others; each
    downloaded into a fresh Hugging Face cache by huggingface_hub's own client, and recorded as a pretrained
    checkpoint of its own model."""
    repo = HubRepo(HUB_ID)
    repo.commit(files(b"\x01" * 4096), branch="step0")
    repo.commit(files(b"\x02" * 4096), branch="step100")
    repo.commit(files(b"\x02" * 4096), branch="step200")
    from huggingface_hub import constants, snapshot_download

    with serve_hub([repo]) as hub:
        # huggingface_hub reads HF_ENDPOINT and HF_HUB_CACHE at import: set what it computed from them.
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            hub.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))

        records = {}
        for revision in ("step0", "step100", "step200"):
            snapshot_download(HUB_ID, revision=revision)
            records[revision] = make_pretrained(f"tiny-{revision}", HUB_ID, tmp_path / revision, revision=revision)
        yield records


def test_revisions_that_serve_the_same_files_have_one_digest(hub_revisions):
    digests = {revision: weights_digest(record) for revision, record in hub_revisions.items()}
    assert digests["step100"] == digests["step200"] is not None and digests["step0"] != digests["step100"]


def test_a_cached_blob_is_named_by_its_sha256_and_a_plain_file_hashed(tmp_path):
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshot"
    blobs.mkdir()
    snapshot.mkdir()
    name = "ab" * 32  # a blob named by its sha256: its name is taken, its bytes are not read
    (blobs / name).write_bytes(b"anything")
    (snapshot / "model.safetensors").symlink_to(blobs / name)
    (snapshot / "pytorch_model.bin").write_bytes(b"weights")
    (snapshot / "config.json").write_text("{}")  # not a weight file
    import hashlib

    assert folder_entries(snapshot) == {"model.safetensors": name,
                                        "pytorch_model.bin": hashlib.sha256(b"weights").hexdigest()}
    assert combine({}) is None


def test_a_fine_tuned_checkpoint_s_digest_comes_from_its_record(tmp_path):
    def checkpoint(folder, weights):
        directory = tmp_path / folder
        saved = clear_weights(directory)
        (saved / "model.safetensors").write_bytes(weights)
        (saved / "config.json").write_text("{}")
        return write_manifest(directory, model="m", name="cola.seed1.final", load_from=saved)

    first, twin, other = checkpoint("a", b"w" * 64), checkpoint("b", b"w" * 64), checkpoint("c", b"v" * 64)
    assert weights_digest(first) == weights_digest(twin) != weights_digest(other)


def test_a_pair_of_the_same_weights_is_named_so_and_not_kept():
    pair = {"relation": "revision_next", "first_model": "p-step100", "first_checkpoint": "pretrained",
            "second_model": "p-step200", "second_checkpoint": "pretrained"}
    marked = same_weights(dict(pair), {("p-step100", "pretrained"): "d" * 64, ("p-step200", "pretrained"): "d" * 64})
    assert marked["same_weights"] and "same weights (digest dddddddddddd)" in marked["weights_note"]
    assert "same_weights" not in same_weights(dict(pair), {("p-step100", "pretrained"): "d" * 64})
    scores = [0.1, 0.9, 0.4, 0.6]
    atlas = pd.concat([pd.DataFrame({"model": model, "checkpoint": "pretrained", "role": "induction", "detail": "",
                                     "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "score": scores, "num_layers": 2,
                                     "num_heads": 2}) for model in ("p-step100", "p-step200")])
    halves = atlas[atlas["model"] == "p-step100"][["model", "checkpoint", "role", "detail", "layer", "head"]].assign(
        score_half_a=scores, score_half_b=scores)
    row = role_agreement(atlas, [marked], thresholds={}, resamples=50, seed=0, halves=halves).iloc[0]
    assert row["rho"] == 1.0 and row["verdict"] == "same weights" and "same weights" in row["note"]
