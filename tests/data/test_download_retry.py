"""Downloads on a flaky network: a dropped connection, a 503 or a transfer cut short is retried from the start
(and logged, with its cause), a file cut short is never kept, and a source that never answers properly ends, after
the bounded retries, in the error that names the places tried and the fix.

The server is a thread of the test on 127.0.0.1 that fails its first requests as told, then serves the file; it
stops when the test leaves it, or by itself after SERVER_LIFETIME_S. pooch's waits between attempts are recorded
instead of slept (``waits``), so the tests take no time and check the backoff.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import logging
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace

import pooch.core
import pytest

from support.entries import UD_SOURCE
from support.release_server import running
from workflow_scripts.core.errors import SourceUnavailableError
from workflow_scripts.core.io import FILE_MODE
from workflow_scripts.data import fetch
from workflow_scripts.data.build import build_treebank
from workflow_scripts.data.entries import treebank_entry

SERVER_LIFETIME_S = 30  # a test that hangs still ends: the server stops, the download fails
BODY = bytes(range(256)) * 800  # 200 KiB: a transfer cut short stops well inside it


@dataclass
class Script:
    """How the server answers: the first ``failures`` requests (-1: all) fail as ``how`` says, the rest get BODY."""

    how: str  # 'drop' (closed without a status line), '503', '404', 'truncate' (half of BODY, full Content-Length)
    failures: int
    requests: list[str] = field(default_factory=list)


class _Flaky(http.server.BaseHTTPRequestHandler):
    script: Script
    timeout = 5  # a client that stops reading cannot hold a handler thread

    def log_message(self, *args) -> None:  # the test's output stays readable
        pass

    def do_GET(self) -> None:
        script = self.script
        script.requests.append(self.path)
        how = script.how if script.failures < 0 or len(script.requests) <= script.failures else "serve"
        self.close_connection = True
        if how == "drop":
            return  # nothing written: the client sees the connection closed
        if how in ("503", "404"):
            self.send_response(int(how))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY if how == "serve" else BODY[:len(BODY) // 2])


@contextlib.contextmanager
def flaky_server(how: str, failures: int) -> Iterator[tuple[str, Script]]:
    """A server on a free port of 127.0.0.1 answering as ``how`` and ``failures`` say; yield its URL and script."""
    script = Script(how, failures)
    with running(type("Handler", (_Flaky,), {"script": script}), lifetime_s=SERVER_LIFETIME_S) as base:
        yield base, script


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The seconds pooch waits between attempts, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(pooch.core, "time", SimpleNamespace(sleep=slept.append))
    return slept


def attempt_messages(caplog, url: str) -> list[str]:
    """The failed attempts logged for ``url``: at INFO, for the job's log only (a job's console shows warnings, and
    a download that fails for good ends in the error that names its last cause)."""
    attempts = [r for r in caplog.records if r.name == fetch.__name__ and r.getMessage().startswith(f"{url}: download")]
    assert all(r.levelno == logging.INFO for r in attempts), [(r.levelname, r.getMessage()) for r in attempts]
    return [r.getMessage() for r in attempts]


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["drop", "503", "truncate"])
def test_a_download_that_fails_twice_is_retried_with_backoff_and_kept_once_whole(tmp_path, caplog, waits, how):
    target = tmp_path / "dl" / "release.bin"
    expected = fetch.ExpectedDigest("sha256", hashlib.sha256(BODY).hexdigest(), "test")
    with flaky_server(how, failures=2) as (base, script), caplog.at_level(logging.INFO, logger=fetch.__name__):
        fetched = fetch.download(f"{base}/release.bin", target, expected)
    assert target.read_bytes() == BODY and fetched.verified == "sha256 matches test"
    assert len(script.requests) == 3 and waits == [1, 2]  # the policy's backoff: one second longer each time
    logged = attempt_messages(caplog, f"{base}/release.bin")
    assert [m.split(" failed")[0] for m in logged] == [f"{base}/release.bin: download attempt {n} of "
                                                       f"{fetch.DOWNLOAD_RETRIES + 1}" for n in (1, 2)]
    cause = {"drop": "ConnectionError", "503": "HTTPError: 503 Server Error", "truncate": "ChunkedEncodingError"}
    assert all(cause[how] in m and m.endswith("trying again from the start") for m in logged), logged
    assert leftovers(tmp_path / "dl") == ["release.bin"]  # no temporary file of a failed attempt is left
    assert stat.S_IMODE(target.stat().st_mode) == FILE_MODE  # the mode open() gives, not a temporary file's


@pytest.mark.parametrize("how", ["drop", "503", "truncate"])
def test_a_source_that_never_answers_properly_ends_in_the_fix_after_the_bounded_retries(tmp_path, caplog, waits,
                                                                                          monkeypatch, how):
    monkeypatch.setattr(fetch, "DOWNLOAD_RETRIES", 2)
    with flaky_server(how, failures=-1) as (base, script), caplog.at_level(logging.INFO, logger=fetch.__name__):
        entry = treebank_entry("mine", {"url": f"{base}/tb", "splits": {"dev": "dev.conllu"}}, treebank_splits=["dev"])
        with pytest.raises(SourceUnavailableError) as info:
            build_treebank(entry, "dev", [], tmp_path / "dev.parquet", mirror=None, offline=False,
                           download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    assert len(script.requests) == 3 and waits == [1, 2]
    message = str(info.value)
    assert "corpus 'mine', split 'dev': could not be obtained (no mirror is set)" in message
    assert f"  - {base}/tb/dev.conllu\nlast error: " in message
    assert "\nfix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all\n" \
        in message and "python -m workflow_scripts.entrypoints.prefetch" in message
    logged = attempt_messages(caplog, f"{base}/tb/dev.conllu")
    assert len(logged) == 3 and logged[-1].endswith("no attempt left")
    # A transfer cut short is not kept: nothing (a partial file, a failed attempt's) is left in the downloads folder.
    assert leftovers(tmp_path / "dl") == [] and not (tmp_path / "dev.parquet").exists()


def test_an_answer_that_would_not_change_is_not_retried(tmp_path, caplog, waits):
    target = tmp_path / "dl" / "gone.bin"
    with flaky_server("404", failures=-1) as (base, script), pytest.raises(fetch.FinalHTTPError, match="404"):
        fetch.download(f"{base}/gone.bin", target, None)
    assert len(script.requests) == 1 and waits == [] and leftovers(tmp_path / "dl") == []


def test_a_truncated_earlier_download_is_replaced_by_a_whole_one(tmp_path, waits):
    target = tmp_path / "dl" / "release.bin"
    target.parent.mkdir()
    target.write_bytes(BODY[:1000])  # a transfer cut short by an older version, or by hand
    expected = fetch.ExpectedDigest("sha256", hashlib.sha256(BODY).hexdigest(), "test")
    with flaky_server("truncate", failures=1) as (base, script):
        fetch.download(f"{base}/release.bin", target, expected)
    assert target.read_bytes() == BODY and len(script.requests) == 2 and waits == [1]
