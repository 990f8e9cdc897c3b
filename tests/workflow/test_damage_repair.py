"""Nothing lost, nothing trusted that the workflow did not write (README, docs/troubleshooting.md), on the real DAG.

For each kind of damage: what reads the file refuses it (naming it), one plain ``snakemake`` run repairs it, and the
study's tables equal those of the undamaged run. A small study (the tiny one with EWT's dev dumps alone, attention
only, no fine-tuning: the syntax analyses, which need the train split too, drop out) keeps each repair to a few jobs:
the damaged file, what makes it, and the tables and pages that list the dumps. The readers' refusals are tested on
the files themselves. Each test damages a copy of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from support.paths import REPO
from support.workflow_runs import config_of, copy_study, snakemake
from workflow_scripts.attention.reader import AttentionDump, CorruptShardError
from workflow_scripts.models.checkpoints import CheckpointError, load_checkpoint

pytestmark = pytest.mark.e2e

_spec = importlib.util.spec_from_file_location("compare_tables", REPO / "tools" / "compare_tables.py")
compare_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_tables)

WALL_CLOCK = ("seconds", "train_seconds")  # the only columns a rebuild may change
DUMP = Path("results/attention/tiny/pretrained/ewt/dev")
RANDOM_DUMP = Path("results/attention/tiny/random/ewt/dev")
RANDOM = Path("results/checkpoints/tiny/random")


@pytest.fixture(scope="module")
def small_study(tmp_path_factory, tiny_study):
    """The small study, built once for the module from a copy of the shared tiny study (only its gathers are made
    again); ``reference`` holds its undamaged tables."""
    work = copy_study(tiny_study, tmp_path_factory.mktemp("damage") / "study")
    config = config_of(work)
    config["study"].update(tasks=[], wiki=False, glove=False, treebanks=["ewt"])
    config["attention"].update(corpora={"ewt": ["dev"]}, signals=["attention"])
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    built = snakemake(work)
    assert built.returncode == 0, built.stderr[-4000:]
    shutil.copytree(work / "results" / "tables", work / "reference" / "tables")
    return work


@pytest.fixture
def small(small_study, tmp_path):
    """A copy of the small study for one test to damage and repair."""
    return copy_study(small_study, tmp_path / "study")


def _repaired(work: Path, *named: str) -> str:
    """One plain run: it names the damage, rebuilds it, and leaves tables equal to the reference and nothing
    to do. Returns its console."""
    run = snakemake(work)
    console = run.stdout + run.stderr
    assert run.returncode == 0, console[-4000:]
    assert "Damaged in results" in console, console[:3000]
    for text in named:
        assert text in console, console[:3000]
    verdicts = compare_tables.compare_folders(work / "reference", work / "results", ignore=WALL_CLOCK)
    assert not {n: v for n, v in verdicts.items() if v not in ("identical", "equal")}, verdicts
    after = snakemake(work, "--dry-run")
    assert "Nothing to be done" in after.stdout + after.stderr, (after.stdout + after.stderr)[-3000:]
    assert not list((work / "results").rglob(".*.damaged")), "a marker outlived the repair"
    return console


def _keep_time(path: Path, change) -> None:
    """Change a file the way a bad disk or a careless copy does: its modification time stays."""
    before = path.stat()
    change(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _read_dump(work: Path, dump: Path = DUMP) -> None:
    for _ in AttentionDump(work / dump).iter_examples():
        pass


def test_a_truncated_shard_is_refused_and_extracted_again(small):
    shard = small / DUMP / "shard-0001-of-0002.parquet"
    _keep_time(shard, lambda p: p.write_bytes(p.read_bytes()[:300]))
    with pytest.raises(CorruptShardError, match=f"attention shard {shard} is corrupt.*run snakemake again"):
        _read_dump(small)
    console = _repaired(small, "shard-0001-of-0002.parquet: 300 bytes")
    assert "extract_attention" in console


def test_swapped_shards_are_refused_and_extracted_again(small):
    first, second = (small / DUMP / f"shard-000{i}-of-0002.parquet" for i in (0, 1))
    first.rename(small / "swap")
    second.rename(first)
    (small / "swap").rename(second)
    with pytest.raises(CorruptShardError, match="shard-0000-of-0002.parquet is corrupt"):
        _read_dump(small)
    _repaired(small, "shard-0000-of-0002.parquet")


def test_a_foreign_shard_is_found_by_the_plan_alone(small):
    # Another dump's shard copied in, time and all (cp -p): the plan's digest finds it without any analysis.
    shard = small / DUMP / "shard-0000-of-0002.parquet"
    shutil.copy2(small / RANDOM_DUMP / shard.name, shard)
    dry = snakemake(small, "--dry-run")
    assert "shard-0000-of-0002.parquet: " in dry.stdout + dry.stderr
    assert "extract_attention" in dry.stdout + dry.stderr
    _repaired(small)


def test_a_deleted_shard_is_extracted_again(small):
    (small / DUMP / "shard-0001-of-0002.parquet").unlink()
    _repaired(small, "shard-0001-of-0002.parquet: the file is missing")


def test_an_edited_manifest_is_refused_and_gathered_again(small):
    manifest = small / DUMP / "manifest.json"
    record = json.loads(manifest.read_text())
    record["shards"][0]["blake3"] = "0" * 64
    manifest.write_text(json.dumps(record))
    with pytest.raises(CorruptShardError, match="manifest.json: it was edited after the workflow wrote it"):
        _read_dump(small)
    console = _repaired(small, "manifest.json: it was edited")
    assert "extract_attention" not in console.split("Job stats")[1].split("total")[0]  # the shards were fine


def test_replaced_checkpoint_weights_are_refused_and_the_checkpoint_made_again(small, tiny_bert):
    weights = small / RANDOM / "weights" / "model.safetensors"
    shutil.copy(tiny_bert / "model.safetensors", weights)  # the pretrained weights, same architecture
    with pytest.raises(CheckpointError, match="weights/model.safetensors: .* run snakemake again"):
        load_checkpoint(small / RANDOM / "checkpoint.json", offline=True)
    console = _repaired(small, "checkpoint.json: weights/model.safetensors")
    assert "random_checkpoint" in console


def test_an_edited_checkpoint_record_is_refused_and_the_checkpoint_made_again(small):
    record_path = small / RANDOM / "checkpoint.json"
    record = json.loads(record_path.read_text())
    record["kind"] = "pretrained"  # would read a pickle, if it were followed
    record_path.write_text(json.dumps(record))
    dry = snakemake(small, "--dry-run")
    assert "checkpoint.json: it was edited after the workflow wrote it" in dry.stdout + dry.stderr
    _repaired(small, "random_checkpoint")


def test_a_damaged_token_table_is_made_again(small):
    table = small / "results" / "tokens" / "tiny" / "ewt" / "dev.parquet"
    _keep_time(table, lambda p: p.write_bytes(p.read_bytes()[:-16]))
    _repaired(small, "tokens/tiny/ewt/dev.parquet: token table: it has")


def test_a_copied_results_folder_reads_only_its_own_files(small, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(small, copy, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))  # times kept
    (copy / "tiny.yaml").write_text((small / "tiny.yaml").read_text())
    before = {ex.example_id: ex.attention for ex in AttentionDump(copy / RANDOM_DUMP).iter_examples()}
    # The original's random-init weights change (another seed); the copy must not see it.
    config = yaml.safe_load((small / "tiny.yaml").read_text())
    config["checkpoints"] = {"random_seed": 99}
    (small / "seed99.yaml").write_text(yaml.safe_dump(config))
    assert snakemake(small, str(RANDOM / "checkpoint.json"), configfile="seed99.yaml").returncode == 0
    assert snakemake(copy, "--dry-run").stdout.count("Damaged") == 0
    rerun = snakemake(copy, str(RANDOM_DUMP / "manifest.json"), "--forcerun", "extract_attention")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for example in AttentionDump(copy / RANDOM_DUMP).iter_examples():
        np.testing.assert_array_equal(example.attention, before.pop(example.example_id))
    assert not before
