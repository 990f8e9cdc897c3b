"""A hub model's card job fetches the whole model (weights too) into the cache first when online, so that jobs on
nodes without internet load it from there; offline it asks nothing of the hub."""

from __future__ import annotations

import pytest

from workflow_scripts.core.errors import SourceUnavailableError
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


def test_an_unreachable_hub_names_the_model_and_the_prefetch(monkeypatch):
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", refuse)
    with pytest.raises(SourceUnavailableError, match=r"hub model 'org/model' \(revision main\) could not be "
                                                     r"downloaded: ConnectionError: no route to host\nfix: .*prefetch"):
        hub.fetch_hub_model("org/model", None)
