"""A full disk is named as such, in every stage's job, and the failure record survives it
(workflow_scripts/runtime/disk_space.py, workflow_scripts/runtime/failures.py)."""

from __future__ import annotations

import errno
import os
import shutil
from collections import namedtuple
from types import SimpleNamespace

import pytest

from workflow_scripts import entrypoints
from workflow_scripts.runtime import disk_space, failures
from workflow_scripts.runtime.disk_space import DiskFullError, disk_full_error

Usage = namedtuple("Usage", "total used free")


def _room(monkeypatch, free: int, total: int = 10**9) -> None:
    monkeypatch.setattr(disk_space.shutil, "disk_usage", lambda path: Usage(total, total - free, free))


def test_enospc_anywhere_in_the_chain_is_a_full_disk_naming_the_fullest_folder(tmp_path, monkeypatch):
    _room(monkeypatch, free=0, total=2_000_000)
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as cause:
            raise ValueError("could not write the shard") from cause
    except ValueError as error:
        full = disk_full_error(error, [tmp_path / "results" / "attention"])
    assert isinstance(full, DiskFullError)
    message = str(full)
    assert message.startswith(f"the disk that holds {tmp_path} is full (0 bytes free of 2.0 MB now): this job could "
                              "not write its outputs (ValueError: could not write the shard)"), message
    assert "\nfix: free space on that disk (or move the results to a larger one: --config results=PATH)" in message
    assert failures.split_fix(message)[1].startswith("free space on that disk")


def test_a_quota_is_said_to_be_a_quota(tmp_path, monkeypatch):
    _room(monkeypatch, free=10**8)
    full = disk_full_error(OSError(errno.EDQUOT, "Disk quota exceeded"), [tmp_path])
    assert "is over its quota (100.0 MB free of 1.0 GB now)" in str(full)


def test_torchs_write_failure_is_a_full_disk_only_where_the_disk_is_nearly_full(tmp_path, monkeypatch):
    # torch drops the errno: "PytorchStreamWriter failed writing file data/0: file write failed".
    error = RuntimeError("[enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing file "
                         "data/0: file write failed")
    _room(monkeypatch, free=4096)
    assert isinstance(disk_full_error(error, [tmp_path]), DiskFullError)
    _room(monkeypatch, free=10**9)
    assert disk_full_error(error, [tmp_path]) is None  # room left: some other failure, told as it is


def test_other_errors_are_not_a_full_disk(tmp_path, monkeypatch):
    _room(monkeypatch, free=0)
    assert disk_full_error(ZeroDivisionError("division by zero"), [tmp_path]) is None
    assert disk_full_error(OSError(errno.EACCES, "Permission denied"), [tmp_path]) is None


def test_the_record_goes_to_the_temporary_folder_where_the_logs_disk_refuses_it(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # the log's folder cannot be made: as a full disk, the record cannot be written there
    log = blocked / "extract.log"
    failures.clear(log)
    written = failures.write_record(log, rule="extract_attention", wildcards={}, error=DiskFullError("full"),
                                    bug=False)
    assert written == failures.spare_record_path(log) and written.parent.name == "atlas-failures"
    assert failures.read_record(log)["message"] == "full"
    failures.clear(log)
    assert failures.read_record(log) is None and not written.exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here (a Linux device: every write fails "
                    "with ENOSPC)")
def test_a_job_whose_write_fails_for_space_says_so_and_is_not_called_a_bug(tmp_path, monkeypatch, capfd,
                                                                           job_logging):
    def writes_to_a_full_disk(smk):
        with open("/dev/full", "w") as stream:  # a real ENOSPC, raised by the flush
            stream.write("x" * 10)

    monkeypatch.setattr(entrypoints, "_import_all", lambda: None)
    monkeypatch.setitem(entrypoints.ENTRY_POINTS, "extract_attention", writes_to_a_full_disk)
    log = tmp_path / "logs" / "extract.log"
    output = tmp_path / "results" / "attention" / "shard-0000-of-0001.parquet"
    smk = SimpleNamespace(rule="extract_attention", log=[str(log)], output=[str(output)], params={}, threads=1,
                          wildcards=SimpleNamespace(items=lambda: [("model", "tiny")]))
    with pytest.raises(SystemExit) as exited:
        entrypoints.run(smk)
    assert exited.value.code == 1
    console = capfd.readouterr()
    assert "Traceback" not in console.err + console.out
    record = failures.read_record(log)
    assert record["bug"] is False and record["type"] == "DiskFullError", record
    assert record["message"].startswith(f"the disk that holds {tmp_path} is ")
    assert "(OSError: [Errno 28] No space left on device)" in record["message"]
    block = failures.block("extract_attention", {"model": "tiny"}, [str(log)], record)
    assert "a bug" not in block and "    fix: free space on that disk" in block and len(block.splitlines()) <= 6


def test_disk_usage_is_read_from_the_nearest_existing_folder(tmp_path):
    assert disk_space._existing([tmp_path / "not" / "yet"]) == [tmp_path]
    assert shutil.disk_usage(tmp_path).total > 0
