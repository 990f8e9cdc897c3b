"""Shard jobs and their gather: the same dump as one process, foreign shards refused, old dumps adopted."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from support.tiny_dumps import SENTENCES
from support.tiny_dumps import tiny_dump as _dump
from workflow_scripts.attention.extract import extract_shard
from workflow_scripts.attention.gather import adopt_legacy_dumps, gather_manifest
from workflow_scripts.attention.reader import AttentionDump, CorruptShardError
from workflow_scripts.attention.shards import (
    RECORD_DIR,
    shard_group_files,
    shard_groups,
    shard_names,
    shard_record_path,
)
from workflow_scripts.core.errors import AtlasError

VOLATILE = ("dump_id", "seconds", "timings", "run_id", "blake3", "mtime_ns", "record_sha256")


def _without_volatile(manifest):
    kept = {k: v for k, v in manifest.items() if k not in VOLATILE}
    kept["shards"] = [{k: v for k, v in shard.items() if k not in VOLATILE} for shard in manifest["shards"]]
    return kept


def _extract_shards(tmp_path, token_path, out, indices, n_shards=3):
    for index in indices:
        extract_shard(tmp_path / "ckpt" / "checkpoint.json", token_path, out, index=index, n_shards=n_shards,
                      batch_size=3, max_batch_tokens=10_000, device="cpu", threads=1, offline=False,
                      compression="lz4", implementation="eager")


@pytest.mark.parametrize("pairs", [False, True])
def test_shard_jobs_and_their_gather_make_the_one_process_dump(tmp_path, tiny_bert, pairs):
    _, token_path, whole, summary, _ = _dump(tmp_path, tiny_bert, pairs=pairs)
    sharded = tmp_path / "sharded"
    _extract_shards(tmp_path, token_path, sharded, [2, 0, 1])  # any order, as parallel jobs finish
    assert not (sharded / "manifest.json").exists(), "only the gather writes the manifest"
    gathered = gather_manifest(sharded, 3)
    assert json.loads((sharded / "manifest.json").read_text()) == gathered
    assert _without_volatile(gathered) == _without_volatile(summary)
    assert all(s["bytes"] > 0 for s in gathered["shards"])
    assert gathered["bytes"] == sum(s["bytes"] for s in gathered["shards"])
    assert gathered["seconds"] > 0 and set(gathered["timings"]) == set(summary["timings"])
    # Every footer differs (its run id), every map is the same.
    expected = {example.example_id: example.attention for example in AttentionDump(whole).iter_examples()}
    for example in AttentionDump(sharded).iter_examples():
        np.testing.assert_array_equal(example.attention, expected.pop(example.example_id))
    assert not expected
    # The gather is deterministic: the same shards give the same manifest, dump id included.
    assert gather_manifest(sharded, 3) == gathered


def test_a_shard_from_another_run_of_the_same_dump_is_refused(tmp_path, tiny_bert):
    _, token_path, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    rerun = tmp_path / "rerun"
    _extract_shards(tmp_path, token_path, rerun, [1])  # the same shard of the same dump, another job
    victim = out / shard_names(3)[1]
    shutil.copyfile(rerun / victim.name, victim)
    with pytest.raises(CorruptShardError, match=rf"{victim}.*another dump or extraction run.*atlas.run_id"):
        list(AttentionDump(out).iter_examples())
    assert not victim.exists() and not (out / "manifest.json").exists()


def test_rerunning_one_shard_job_regathers_a_dump_that_reads(tmp_path, tiny_bert):
    _, token_path, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    _extract_shards(tmp_path, token_path, out, [1])
    assert not (out / "manifest.json").exists(), "a shard job removes the manifest that described the old shard"
    gathered = gather_manifest(out, 3)
    assert gathered["shards"][0]["run_id"] == summary["shards"][0]["run_id"]
    assert gathered["shards"][1]["run_id"] != summary["shards"][1]["run_id"]
    assert gathered["dump_id"] != summary["dump_id"]
    assert len(list(AttentionDump(out).iter_examples())) == len(SENTENCES)


def test_the_gather_refuses_a_shard_its_record_does_not_describe(tmp_path, tiny_bert):
    _, token_path, out, _, _ = _dump(tmp_path, tiny_bert, pairs=False)
    other = tmp_path / "other"
    _extract_shards(tmp_path, token_path, other, [2])
    victim = out / shard_names(3)[2]
    shutil.copyfile(other / victim.name, victim)  # the same size, another run id
    with pytest.raises(AtlasError, match=rf"{victim} is not the one its record describes.*run id"):
        gather_manifest(out, 3)
    assert not victim.exists() and not shard_record_path(out, victim.name).exists()
    shard_record_path(out, shard_names(3)[0]).unlink()
    with pytest.raises(AtlasError, match="missing or unreadable shard record"):
        gather_manifest(out, 3)


def _as_written_before_shard_jobs(dump, summary, old_id, compression):
    """Rewrite a dump as extraction wrote it before shard jobs: one atlas.dump_id in every shard's footer and at
    the top of the manifest, no run ids."""
    for shard in summary["shards"]:
        path = dump / shard["file"]
        table = pq.read_table(path)
        metadata = {k: v for k, v in table.schema.metadata.items() if k != b"atlas.run_id"}
        pq.write_table(table.replace_schema_metadata({**metadata, b"atlas.dump_id": old_id.encode()}), path,
                       compression=compression, write_page_checksum=True)
        shard["bytes"] = path.stat().st_size
        del shard["run_id"]
    summary["dump_id"] = old_id
    summary.pop("record_sha256", None)  # no seals then
    (dump / "manifest.json").write_text(json.dumps(summary))


def test_dumps_written_with_one_id_for_every_shard_are_still_read_and_checked(tmp_path, tiny_bert):
    """Before shard jobs a dump carried one atlas.dump_id in every shard and at the top of its manifest."""
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    _as_written_before_shard_jobs(out, summary, "0" * 32, "lz4")
    assert len(list(AttentionDump(out, remove_corrupt=False).iter_examples())) == len(SENTENCES)
    summary["dump_id"] = "1" * 32  # another dump's shards
    (out / "manifest.json").write_text(json.dumps(summary))
    with pytest.raises(CorruptShardError, match="another dump.*atlas.dump_id"):
        list(AttentionDump(out, remove_corrupt=False).iter_examples())


def test_a_dump_made_before_shard_jobs_is_adopted_without_rerunning_anything(tmp_path, tiny_bert):
    """adopt_legacy_dumps writes the records of a one-job dump, dated like its shards: the gather then gives
    the dump back, and each shard's run id is the dump's old id (still checked against the footer)."""
    _, _, made, summary, _ = _dump(tmp_path, tiny_bert, pairs=False)
    results = tmp_path / "results"
    dump = results / "attention" / "tiny" / "pretrained" / "toy" / "dev"
    dump.parent.mkdir(parents=True)
    made.rename(dump)
    expected = {example.example_id: example.attention for example in AttentionDump(dump).iter_examples()}
    old_id = "0" * 32
    for key in ("compression", "implementation", "timings"):  # not in a manifest made before shard jobs
        del summary[key]
    _as_written_before_shard_jobs(dump, summary, old_id, "zstd")
    for record in (dump / RECORD_DIR).iterdir():
        record.unlink()

    assert adopt_legacy_dumps(results, dry_run=True) == [dump] and not any((dump / RECORD_DIR).iterdir())
    assert adopt_legacy_dumps(results) == [dump]
    assert adopt_legacy_dumps(results) == []  # done once
    for name in shard_names(3):
        record = shard_record_path(dump, name)
        assert record.stat().st_mtime == (dump / name).stat().st_mtime  # never newer than the manifest
        assert json.loads(record.read_text())["shard"]["run_id"] == old_id
    gathered = gather_manifest(dump, 3)
    assert gathered["compression"] == "zstd" and gathered["implementation"] == "eager"
    assert gathered["examples"] == summary["examples"] and gathered["values"] == summary["values"]
    for example in AttentionDump(dump).iter_examples():
        np.testing.assert_array_equal(example.attention, expected.pop(example.example_id))
    assert not expected


def test_a_shard_group_names_its_shards_and_a_bad_name_is_refused():
    for count, per_group in ((1, 1), (4, 1), (4, 3), (7, 2), (3, 5)):
        files = [file for group in shard_groups(count, per_group) for file in shard_group_files(group)]
        assert files == shard_names(count)  # every shard once, in order
    assert shard_group_files("shards-0001-0002-of-0004") == ["shard-0001-of-0004.parquet", "shard-0002-of-0004.parquet"]
    for bad in ("shards-0002-0001-of-0004", "shard-0004-of-0004", "shards-0000-0004-of-0004", "segments"):
        with pytest.raises(ValueError, match="shard group|first to a last shard"):
            shard_group_files(bad)


def test_shard_records_from_before_the_weights_dtype_are_gathered_with_new_ones(tmp_path, tiny_bert):
    """A shard extracted again beside shards whose records predate weights_dtype: those were float32 weights."""
    from workflow_scripts.core.file_records import write_sealed_json

    _, token_path, _, _, _ = _dump(tmp_path, tiny_bert, pairs=False)
    sharded = tmp_path / "sharded"
    _extract_shards(tmp_path, token_path, sharded, [0, 1, 2])
    old = shard_record_path(sharded, "shard-0000-of-0003.parquet")
    record = {k: v for k, v in json.loads(old.read_text()).items() if k not in ("weights_dtype", "record_sha256")}
    write_sealed_json(record, old)
    assert gather_manifest(sharded, 3)["weights_dtype"] == "float32"
