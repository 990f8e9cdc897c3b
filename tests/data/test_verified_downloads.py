"""Downloads are checked against their checksum: a corrupted one is deleted and refused with both digests named;
a matching one is accepted; one with no checksum known records the digest it received (table metadata and
data_summary.csv)."""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import pytest

from support.release_server import serve, write_releases
from workflow_scripts.core.errors import ChecksumMismatchError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data import fetch
from workflow_scripts.data.build import build_glove, build_treebank, build_wic, summarize
from workflow_scripts.data.entries import treebank_entry
from workflow_scripts.data.registry import PINNED_DIGESTS, PinnedDigest


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = write_releases(tmp_path_factory.mktemp("releases"))
    with serve(root) as (base, requests):
        yield root, base, requests


def test_a_corrupted_download_is_deleted_and_refused_with_both_digests(releases, tmp_path, monkeypatch):
    root, base, _ = releases
    url = f"{base}/WiC_dataset.zip"
    good = sha256((root / "WiC_dataset.zip").read_bytes())
    expected = "0" * 64  # what the registry says the release is; the server's file is not that
    monkeypatch.setitem(PINNED_DIGESTS, url, PinnedDigest("sha256", expected, "a test pin"))
    out = tmp_path / "wic.parquet"
    with pytest.raises(ChecksumMismatchError) as info:
        build_wic("dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", url=url)
    message = str(info.value)
    assert url in message and f"expected sha256 {expected}" in message and f"received sha256 {good}" in message
    assert "the source registry: a test pin" in message and "data.wic.sha256" in message and "fix:" in message
    assert not any(p.is_file() for p in (tmp_path / "dl").rglob("*")), "the refused file must be deleted"
    assert not out.exists()


def test_a_matching_checksum_is_accepted_and_a_config_checksum_replaces_the_pin(releases, tmp_path, monkeypatch):
    root, base, _ = releases
    url = f"{base}/WiC_dataset.zip"
    good = sha256((root / "WiC_dataset.zip").read_bytes())
    monkeypatch.setitem(PINNED_DIGESTS, url, PinnedDigest("sha256", "1" * 64, "an outdated pin"))
    out = tmp_path / "wic.parquet"
    build_wic("dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", url=url, sha256=good.upper())
    assert pq.read_table(out).num_rows == 4
    assert read_metadata(out)["downloads"] == [
        {"url": url, "sha256": good, "verified": "sha256 matches config key 'data.wic.sha256'"}]


def test_an_md5_pin_is_checked_and_the_sha256_still_recorded(releases, tmp_path, monkeypatch):
    root, base, _ = releases
    url = f"{base}/glove.6B.zip"
    data = (root / "glove.6B.zip").read_bytes()
    monkeypatch.setitem(PINNED_DIGESTS, url, PinnedDigest("md5", hashlib.md5(data).hexdigest(), "agreed md5"))
    out = tmp_path / "glove.parquet"
    build_glove([], out, max_words=None, mirror=None, offline=False, download_dir=tmp_path / "dl", url=url)
    assert read_metadata(out)["downloads"][0] == {"url": url, "sha256": sha256(data),
                                                  "verified": "md5 matches the source registry: agreed md5"}
    assert pq.read_table(out).num_rows == 10


def test_a_user_url_without_checksum_records_the_digest_in_metadata_and_the_summary(releases, tmp_path):
    root, base, _ = releases
    entry = treebank_entry("mine", {"url": f"{base}/ud/UD_English-EWT", "splits": {"dev": "en_ewt-ud-dev.conllu"}},
                           treebank_splits=["dev"])
    out = tmp_path / "mine" / "dev.parquet"
    build_treebank(entry, "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", ud_tag="r2.16")
    digest = sha256((root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes())
    assert read_metadata(out)["downloads"] == [{"url": f"{base}/ud/UD_English-EWT/en_ewt-ud-dev.conllu",
                                                "sha256": digest, "verified": fetch.UNVERIFIED}]
    summary = summarize([out], tmp_path / "data_summary.csv")
    assert summary["download_sha256"].tolist() == [digest]
    assert summary["download_check"].tolist() == [fetch.UNVERIFIED]


def test_a_user_url_checksum_refuses_another_file_and_accepts_its_own(releases, tmp_path):
    root, base, _ = releases
    digest = sha256((root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes())
    fields = {"url": f"{base}/ud/UD_English-EWT", "splits": {"dev": "en_ewt-ud-dev.conllu"}}
    wrong = treebank_entry("mine", {**fields, "sha256": {"en_ewt-ud-dev.conllu": "a" * 64}}, treebank_splits=["dev"])
    with pytest.raises(ChecksumMismatchError, match=rf"expected sha256 {'a' * 64} .*\n  received sha256 {digest}"):
        build_treebank(wrong, "dev", [], tmp_path / "x.parquet", mirror=None, offline=False,
                       download_dir=tmp_path / "dl", ud_tag="r2.16")
    right = treebank_entry("mine", {**fields, "sha256": {"en_ewt-ud-dev.conllu": digest}}, treebank_splits=["dev"])
    assert right.params()["sha256"] == {"en_ewt-ud-dev.conllu": digest}
    build_treebank(right, "dev", [], tmp_path / "ok.parquet", mirror=None, offline=False,
                   download_dir=tmp_path / "dl", ud_tag="r2.16")
    assert read_metadata(tmp_path / "ok.parquet")["downloads"][0]["verified"].startswith("sha256 matches config key")


def test_an_earlier_download_that_no_longer_matches_is_fetched_again(releases, tmp_path):
    root, base, requests = releases
    url = f"{base}/glove.6B.zip"
    good = sha256((root / "glove.6B.zip").read_bytes())
    target = tmp_path / "glove.zip"
    target.write_bytes(b"truncated")
    before = len(requests)
    fetched = fetch.download(url, target, fetch.ExpectedDigest("sha256", good, "test"))
    assert fetched.sha256 == good and len(requests) == before + 1
    fetch.download(url, target, fetch.ExpectedDigest("sha256", good, "test"))
    assert len(requests) == before + 1  # a complete, verified download is reused


def test_an_entry_without_checksums_keeps_the_params_it_had(tmp_path):
    entry = treebank_entry("ewt", {"ud": "UD_English-EWT"}, treebank_splits=["dev"])
    assert "sha256" not in entry.params()  # so existing tables are not rebuilt for a key they do not use
    assert type(entry).from_params(entry.params()) == entry


def test_pins_are_keyed_by_exact_url_and_hold_digests():
    for url, pin in PINNED_DIGESTS.items():
        assert url.startswith("https://") and "{" not in url
        assert len(pin.value) == {"sha256": 64, "md5": 32}[pin.algorithm] and int(pin.value, 16) >= 0


def test_a_download_url_with_dot_dot_is_never_saved_outside_the_downloads_folder(tmp_path):
    from workflow_scripts.core.errors import AtlasError
    from workflow_scripts.data.build import _download_path

    downloads = tmp_path / "downloads"
    assert _download_path(downloads, "https://example.org/a/b.conllu") == downloads / "example.org" / "a" / "b.conllu"
    with pytest.raises(AtlasError, match="outside the downloads folder"):
        _download_path(downloads, "https://example.org/a/../../../x.conllu")
