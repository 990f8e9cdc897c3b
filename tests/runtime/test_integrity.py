"""The plan's check of a results folder (workflow_scripts/runtime/integrity.py): which damage it finds in a dump and
a checkpoint, what rebuilds it, and what it withdraws. The whole repair on the real DAG: tests/workflow/
test_damage_repair.py."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from support.tiny_dumps import tiny_dump
from workflow_scripts.core.file_records import mark_damaged, marker_path, write_sealed_json
from workflow_scripts.models.checkpoints import make_random
from workflow_scripts.runtime.integrity import (
    checkpoint_damage,
    damage_lines,
    dump_damage,
    marked_damage,
    withdraw,
)


@pytest.fixture
def dump(tmp_path, tiny_bert):
    _, _, out, _, _ = tiny_dump(tmp_path, tiny_bert, pairs=False, n_shards=3)
    return out


def shard(out, index):
    return out / f"shard-000{index}-of-0003.parquet"


def test_a_sound_dump_has_no_damage_even_copied_with_new_times(dump, tmp_path):
    assert dump_damage(dump, 3) == []
    copy = tmp_path / "copy"
    shutil.copytree(dump, copy, copy_function=shutil.copy)  # new modification times: the sha256s are compared
    assert dump_damage(copy, 3) == []
    assert dump_damage(dump, 4) == []  # a manifest of another shard count is Snakemake's (a changed setting)


def test_a_shard_that_lost_bytes_is_damaged_and_rebuilt_through_its_manifest(dump):
    victim = shard(dump, 1)
    before = victim.stat()
    victim.write_bytes(victim.read_bytes()[:-10])
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    (damage,) = dump_damage(dump, 3)
    assert damage.file == str(victim) and damage.target == str(dump / "manifest.json")
    assert damage.problem == f"it has {before.st_size - 10} bytes, the workflow wrote {before.st_size}"
    withdraw([damage])  # the shard, its record and the manifest go; the marker keeps the reason
    assert not victim.exists() and not (dump / "manifest.json").exists()
    assert not (dump / "parts" / "shard-0001-of-0003.json").exists()
    assert json.loads(marker_path(victim).read_text())["problem"] == damage.problem
    (marked,) = marked_damage(dump)
    assert (marked.file, marked.target, marked.problem) == (str(victim), str(dump / "manifest.json"), damage.problem)


def test_same_size_other_bytes_are_found_where_the_time_differs(dump):
    first, second = shard(dump, 0), shard(dump, 2)
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size, a new time
    first.write_bytes(bytes(data))
    found = {d.file: d for d in dump_damage(dump, 3)}
    assert list(found) == [str(first)] and "its blake3 is" in found[str(first)].problem
    second.unlink()
    assert set(d.file for d in dump_damage(dump, 3)) == {str(first), str(second)}
    assert "the file is missing" in {d.file: d for d in dump_damage(dump, 3)}[str(second)].problem


def test_an_edited_manifest_and_a_missing_one_are_gathered_again(dump):
    manifest = dump / "manifest.json"
    record = json.loads(manifest.read_text())
    record["examples"] += 1
    manifest.write_text(json.dumps(record))
    (damage,) = dump_damage(dump, 3)
    assert damage.target == str(manifest) and "edited after the workflow wrote it" in damage.problem
    # Resealed by hand, it must still agree with the shards' records.
    record["shards"][0]["blake3"] = "0" * 64
    write_sealed_json(record, manifest)
    (damage,) = dump_damage(dump, 3)
    assert "lists shard-0000-of-0003.parquet other than the shard's record" in damage.problem
    manifest.unlink()
    (damage,) = dump_damage(dump, 3)
    assert damage.target == str(manifest) and "manifest is missing" in damage.problem
    withdraw([damage])  # nothing to remove: the gather is simply due
    assert not list(dump.glob(".*.damaged"))


def test_an_empty_folder_is_no_damage(tmp_path):
    assert dump_damage(tmp_path / "never-built", 3) == []


def test_a_checkpoint_with_replaced_weights_an_extra_file_or_an_edited_record(tiny_bert, tmp_path):
    record = make_random("tiny", str(tiny_bert), tmp_path / "random", seed=3, offline=True)
    weights = tmp_path / "random" / "weights"
    assert checkpoint_damage(record) == []
    (weights / "pytorch_model.bin").write_bytes(b"not written by the workflow")
    (damage,) = checkpoint_damage(record)
    assert damage.target == str(record) and "weights/pytorch_model.bin was not written" in damage.problem
    (weights / "pytorch_model.bin").unlink()
    shutil.copy(tiny_bert / "model.safetensors", weights / "model.safetensors")
    (damage,) = checkpoint_damage(record)
    assert damage.problem.startswith("weights/model.safetensors: ")
    make_random("tiny", str(tiny_bert), tmp_path / "random", seed=3, offline=True)
    text = json.loads(record.read_text())
    text["load_from"] = str(tiny_bert)
    record.write_text(json.dumps(text))
    (damage,) = checkpoint_damage(record)
    assert "edited after the workflow wrote it" in damage.problem


def test_a_marker_whose_target_was_rebuilt_is_dropped(dump):
    victim = shard(dump, 0)
    withdraw(dump_damage(dump, 3) or [])  # nothing damaged: nothing withdrawn
    assert victim.exists()
    mark_damaged(victim, "a test", target=dump / "manifest.json")
    assert [d.file for d in marked_damage(dump)] == [str(victim)]  # the manifest is older than the marker
    os.utime(dump / "manifest.json")  # rebuilt since
    assert marked_damage(dump) == [] and not marker_path(victim).exists()


def test_the_plan_names_each_damaged_file_relative_to_the_results_folder(dump):
    shard(dump, 2).unlink()
    lines = damage_lines(dump_damage(dump, 3), str(dump.parent))
    assert lines[0].startswith(f"Damaged in {dump.parent} (1 file): removed, and rebuilt")
    assert lines[1] == f"  {dump.name}/shard-0002-of-0003.parquet: the file is missing"


def test_a_plan_hashes_no_shard_whose_time_is_the_one_the_gather_saw(dump, monkeypatch):
    import workflow_scripts.core.file_records as file_records

    def refuse_to_hash(path, algorithm="sha256"):
        raise AssertionError(f"the plan hashed {path}")

    monkeypatch.setattr(file_records, "file_digest", refuse_to_hash)
    assert dump_damage(dump, 3) == []
