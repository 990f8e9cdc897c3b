"""What jobs of a killed run leave in the results folder, and the next run removes before its first job
(workflow_scripts/runtime/results_lock.py sweep, called by on_start with the lock held)."""

from __future__ import annotations

from types import SimpleNamespace

from workflow_scripts.core.io import atomic_path
from workflow_scripts.runtime import results_lock


def test_the_next_run_removes_partial_files_and_failure_records_and_nothing_else(tmp_path):
    results = tmp_path / "results"
    shard = results / "attention" / "m" / "pretrained" / "ewt" / "dev" / "shard-0000-of-0002.parquet"
    with atomic_path(shard) as tmp:
        tmp.write_bytes(b"x" * 1000)
        made = tmp.name
    assert results_lock.LEFTOVER.match(made), "the name atomic_path gives is the one the sweep removes"
    stale = shard.with_name(made)  # as a job killed mid-write leaves it
    stale.write_bytes(b"x" * 1000)
    log = results / "logs" / "data" / "cola_dev.log"
    log.parent.mkdir(parents=True)
    log.write_text("log")
    (results / "logs" / "data" / "cola_dev.log.failure.json").write_text("{}")
    (results / "logs" / "data" / ".cola_dev.log.failure.json.4242.tmp").write_text("{")
    kept = [shard, log, results / "data" / "notes.partial", results / "models" / ".m.partial" / "config.json"]
    for path in kept[2:]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("kept")

    notes = []
    workflow = SimpleNamespace(remote_exec=False, subprocess_exec=False, dryrun=False)
    try:
        assert results_lock.on_start(workflow, results, note=notes.append) == results / ".atlas.lock"
    finally:
        results_lock.release(results)
    assert not stale.exists() and not list(results.rglob("*.failure.json*"))
    assert all(path.exists() for path in kept)
    assert notes == [f"removed 2 partial file(s) (0.0 MB) that jobs of an interrupted earlier run left in '{results}'"]
    assert results_lock.sweep(results) == (0, 0)
