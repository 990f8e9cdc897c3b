"""Downloads are checked against their checksum: a corrupted one is deleted and refused with both digests named;
a matching one is accepted; one with no checksum known records the digest it received (table metadata and
data_summary.csv)."""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import pytest
import yaml

from support.entries import UD, UD_SOURCE
from support.paths import SCHEMA_PATH
from support.release_server import free_port, git_blob_id, serve, write_contents_api, write_releases
from workflow_scripts.core.errors import ChecksumMismatchError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data import fetch
from workflow_scripts.data.build import build_glove, build_treebank, build_wic, summarize
from workflow_scripts.data.entries import treebank_entry
from workflow_scripts.data.registry import GLOVE_RELEASE_URL, PINNED_DIGESTS, WIC_RELEASE_URL, PinnedDigest


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
        build_wic("dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", url=url, sha256=None)
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
    build_glove([], out, max_words=None, mirror=None, offline=False, download_dir=tmp_path / "dl", url=url,
                sha256=None)
    assert read_metadata(out)["downloads"][0] == {"url": url, "sha256": sha256(data),
                                                  "verified": "md5 matches the source registry: agreed md5"}
    assert pq.read_table(out).num_rows == 10


def test_a_user_url_without_checksum_records_the_digest_in_metadata_and_the_summary(releases, tmp_path):
    root, base, _ = releases
    entry = treebank_entry("mine", {"url": f"{base}/ud/UD_English-EWT", "splits": {"dev": "en_ewt-ud-dev.conllu"}},
                           treebank_splits=["dev"])
    out = tmp_path / "mine" / "dev.parquet"
    build_treebank(entry, "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl",
                   ud_tag="r2.16", **UD_SOURCE)
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
                       download_dir=tmp_path / "dl",
                       ud_tag="r2.16", **UD_SOURCE)
    right = treebank_entry("mine", {**fields, "sha256": {"en_ewt-ud-dev.conllu": digest}}, treebank_splits=["dev"])
    assert right.params()["sha256"] == {"en_ewt-ud-dev.conllu": digest}
    build_treebank(right, "dev", [], tmp_path / "ok.parquet", mirror=None, offline=False,
                   download_dir=tmp_path / "dl",
                       ud_tag="r2.16", **UD_SOURCE)
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


def test_the_pinned_release_urls_are_the_schemas_defaults():
    """The registry pins the releases at the schema's default URLs (the defaults live in the schema alone)."""
    data = yaml.safe_load(SCHEMA_PATH.read_text())["properties"]["data"]["properties"]
    assert WIC_RELEASE_URL == data["wic"]["properties"]["url"]["default"]
    assert GLOVE_RELEASE_URL == data["glove"]["properties"]["url"]["default"]
    assert WIC_RELEASE_URL in PINNED_DIGESTS and GLOVE_RELEASE_URL in PINNED_DIGESTS


def test_the_git_blob_id_is_gits():  # printf hello | git hash-object --stdin
    assert git_blob_id(b"hello") == "b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0"


def _ud(base: str, api: str | None = None) -> dict:
    """A 'ud' treebank's sources on the test server: the files at ud/REPO/FILE, the contents API at api/REPO/FILE."""
    return {"ud_tag": "r2.16", "ud_url": f"{base}/ud/{{repo}}/{{file}}",
            "ud_api_url": api if api is not None else f"{base}/api/{{repo}}/{{file}}?ref={{tag}}"}


def test_a_ud_file_is_checked_against_the_releases_git_blob_id(releases, tmp_path):
    root, base, requests = releases
    out = tmp_path / "ewt.parquet"
    build_treebank(UD["ewt"], "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", **_ud(base))
    content = (root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes()
    assert read_metadata(out)["downloads"] == [{"url": f"{base}/ud/UD_English-EWT/en_ewt-ud-dev.conllu",
                                                "sha256": sha256(content),
                                                "verified": "git blob id matches the release (GitHub API)"}]
    assert "/api/UD_English-EWT/en_ewt-ud-dev.conllu?ref=r2.16" in requests
    summary = summarize([out], tmp_path / "data_summary.csv")
    assert summary["download_check"].tolist() == ["git blob id matches the release (GitHub API)"]

    # The verified download is reused: the release's blob id is asked again, the file is not.
    before = [r for r in requests if r.startswith("/ud/")]
    build_treebank(UD["ewt"], "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl", **_ud(base))
    assert [r for r in requests if r.startswith("/ud/")] == before


def test_a_ud_file_that_is_not_the_releases_is_deleted_and_refused(tmp_path):
    root = write_releases(tmp_path / "releases")
    other = git_blob_id(b"the release's file\n")
    write_contents_api(root, "UD_English-EWT", "en_ewt-ud-dev.conllu", {"sha": other})
    served = git_blob_id((root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes())
    with serve(root) as (base, _), pytest.raises(ChecksumMismatchError) as info:
        build_treebank(UD["ewt"], "dev", [], tmp_path / "ewt.parquet", mirror=None, offline=False,
                       download_dir=tmp_path / "dl", **_ud(base))
    message = str(info.value)
    assert f"the download of {base}/ud/UD_English-EWT/en_ewt-ud-dev.conllu is not the expected file" in message
    assert f"expected git blob id {other} (the release (GitHub API), read from {base}/api/" in message
    assert f"received git blob id {served} (sha256 " in message
    assert "fix:" in message and "treebanks.ewt.sha256: en_ewt-ud-dev.conllu" in message
    assert not any(p.is_file() for p in (tmp_path / "dl").rglob("*"))


@pytest.mark.parametrize("api", ["unreachable", "rate limit"])
def test_an_unreadable_release_checksum_records_the_digest_and_says_why(tmp_path, caplog, api):
    root = write_releases(tmp_path / "releases")
    if api == "rate limit":  # GitHub's answer to too many requests carries a message and no 'sha'
        write_contents_api(root, "UD_English-EWT", "en_ewt-ud-dev.conllu", {"message": "API rate limit exceeded"})
    with serve(root) as (base, _):
        template = f"http://127.0.0.1:{free_port()}/{{repo}}/{{file}}" if api == "unreachable" else None
        out = tmp_path / "ewt.parquet"
        build_treebank(UD["ewt"], "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl",
                       **_ud(base, template))
    content = (root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes()
    record = read_metadata(out)["downloads"][0]
    assert record["sha256"] == sha256(content) and record["verified"].startswith("unverified: ")
    why = "could not be read from http://127.0.0.1:" if api == "unreachable" else \
        "answered without a git blob id ('sha'): API rate limit exceeded"
    assert why in record["verified"] and record["verified"].endswith("the received sha256 is recorded")
    assert any(why in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_a_planted_file_in_the_downloads_folder_is_not_taken_without_a_check(releases, tmp_path):
    root, base, requests = releases
    entry = treebank_entry("mine", {"url": f"{base}/ud/UD_English-EWT", "splits": {"dev": "en_ewt-ud-dev.conllu"}},
                           treebank_splits=["dev"])
    host = base.removeprefix("http://")
    planted = tmp_path / "dl" / host / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu"
    planted.parent.mkdir(parents=True)
    planted.write_text("# text = Planted\n1\tPlanted\t_\tX\t_\t_\t0\troot\t_\t_\n\n")
    before = len(requests)
    out = tmp_path / "mine.parquet"
    build_treebank(entry, "dev", [], out, mirror=None, offline=False, download_dir=tmp_path / "dl",
                   ud_tag="r2.16", **UD_SOURCE)
    assert len(requests) == before + 1  # nothing to check it against: downloaded again
    assert planted.read_bytes() == (root / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu").read_bytes()
    assert "Planted" not in pq.read_table(out)["text"].to_pylist()


def test_a_mirror_file_is_checked_against_the_entrys_sha256(tmp_path):
    mirror_file = tmp_path / "mirror" / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu"
    mirror_file.parent.mkdir(parents=True)
    content = b"# text = Ok\n1\tOk\t_\tX\t_\t_\t0\troot\t_\t_\n\n"
    mirror_file.write_bytes(content)
    fields = {"ud": "UD_English-EWT"}
    wrong = treebank_entry("ewt", {**fields, "sha256": {"en_ewt-ud-dev.conllu": "c" * 64}}, treebank_splits=["dev"])
    with pytest.raises(ChecksumMismatchError) as info:
        build_treebank(wrong, "dev", [mirror_file], tmp_path / "x.parquet", mirror=str(tmp_path / "mirror"),
                       offline=True, download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    message = str(info.value)
    assert f"the mirror file {mirror_file} is not the expected file, and was left as it is" in message
    assert f"expected sha256 {'c' * 64} (config key 'treebanks.ewt.sha256: en_ewt-ud-dev.conllu')" in message
    assert f"received sha256 {sha256(content)}, {len(content)} bytes" in message and "fix: put the release's" in message
    assert mirror_file.read_bytes() == content and not (tmp_path / "x.parquet").exists()

    right = treebank_entry("ewt", {**fields, "sha256": {"en_ewt-ud-dev.conllu": sha256(content)}},
                           treebank_splits=["dev"])
    build_treebank(right, "dev", [mirror_file], tmp_path / "ok.parquet", mirror=str(tmp_path / "mirror"),
                   offline=True, download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    assert read_metadata(tmp_path / "ok.parquet")["downloads"] == [
        {"url": f"mirror:{mirror_file}", "sha256": sha256(content),
         "verified": "sha256 matches config key 'treebanks.ewt.sha256: en_ewt-ud-dev.conllu'"}]


def test_a_web_page_instead_of_the_archive_is_named_as_such(releases, tmp_path):
    from workflow_scripts.core.errors import AtlasError

    root, base, _ = releases
    (root / "moved.html").write_text("<html><body>This release has moved.</body></html>")
    with pytest.raises(AtlasError) as info:
        build_wic("dev", [], tmp_path / "wic.parquet", mirror=None, offline=False, download_dir=tmp_path / "dl",
                  url=f"{base}/moved.html", sha256=None)
    message = str(info.value)
    assert f"{base}/moved.html: the file received" in message and "is not a zip archive (it starts like an HTML" \
        in message and "config key 'data.wic.url'" in message
