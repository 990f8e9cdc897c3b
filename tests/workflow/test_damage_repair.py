"""Nothing lost, nothing trusted that the workflow did not write (README, docs/troubleshooting.md), on the real DAG.

For each kind of damage: what reads the file refuses it (naming it), one plain ``snakemake`` run repairs it, and the
study's tables equal those of the undamaged run. A small study (the tiny one with EWT's dev dumps alone, attention
only, no fine-tuning: the syntax analyses, which need the train split too, drop out) keeps each repair to a few jobs:
the damaged file, what makes it, and the tables and pages that list the dumps. The readers' refusals are tested on
the files themselves.

Damages to different files are done together, to one copy of the small study that one run repairs (a run costs
seconds whatever it repairs): the shards' (``shards_damaged``) and those whose repair extracts every dump again
(``rebuilt_damaged``). Each test reads what was said of its own damage: the reader's refusal, taken just after that
damage was done, and the lines of the dry run and of the repairing run that name its file. An edited manifest is
repaired alone, since its repair must extract nothing, and the copied results folder is a study of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from support.paths import REPO
from support.workflow_runs import config_of, console, copy_study, snakemake
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
PRETRAINED = Path("results/checkpoints/tiny/pretrained")
TOKENS = Path("results/tokens/tiny/ewt/dev.parquet")


@dataclass(frozen=True)
class Repaired:
    """A copy of the small study after one plain run repaired the damages done to it: what refused each damage
    before that run (``refused``: a reader's message, by damage), a dry run's console before it (on a copy) and the
    run's console."""
    work: Path
    refused: dict[str, str]
    dry_run: str
    console: str


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


@pytest.fixture(scope="module")
def shards_damaged(small_study, tmp_path_factory) -> Repaired:
    """The pretrained dump's second shard truncated, its first replaced by the random-init dump's (time and all, as
    ``cp -p`` copies), then the random-init dump's two shards swapped; repaired by one run."""
    work = copy_study(small_study, tmp_path_factory.mktemp("shards") / "study")
    _keep_time(work / DUMP / "shard-0001-of-0002.parquet", lambda p: p.write_bytes(p.read_bytes()[:300]))
    refused = {"truncated": _refusal(lambda: _read_dump(work))}
    foreign = work / DUMP / "shard-0000-of-0002.parquet"
    shutil.copy2(work / RANDOM_DUMP / foreign.name, foreign)
    first, second = (work / RANDOM_DUMP / f"shard-000{i}-of-0002.parquet" for i in (0, 1))
    first.rename(work / "swap")
    second.rename(first)
    (work / "swap").rename(second)
    refused["swapped"] = _refusal(lambda: _read_dump(work, RANDOM_DUMP))
    return Repaired(work, refused, _dry_run_of_a_copy(work), _repaired(work))


@pytest.fixture(scope="module")
def rebuilt_damaged(small_study, tmp_path_factory, tiny_bert) -> Repaired:
    """The token table of EWT's dev split cut short (its time kept), the pretrained dump's second shard deleted, the
    random-init checkpoint's weights replaced by the pretrained ones (same architecture) and the pretrained
    checkpoint's record edited to load another model; repaired by one run, which extracts both dumps again."""
    work = copy_study(small_study, tmp_path_factory.mktemp("rebuilt") / "study")
    _keep_time(work / TOKENS, lambda p: p.write_bytes(p.read_bytes()[:-16]))
    (work / DUMP / "shard-0001-of-0002.parquet").unlink()
    shutil.copy(tiny_bert / "model.safetensors", work / RANDOM / "weights" / "model.safetensors")
    refused = {"weights": _refusal(lambda: load_checkpoint(work / RANDOM / "checkpoint.json", offline=True))}
    record_path = work / PRETRAINED / "checkpoint.json"
    record = json.loads(record_path.read_text())
    record["load_from"] = str(work / "another-model")  # would load another model, if it were followed
    record_path.write_text(json.dumps(record))
    return Repaired(work, refused, _dry_run_of_a_copy(work), _repaired(work))


def _repaired(work: Path) -> str:
    """One plain run: it says what is damaged, rebuilds it, and leaves tables equal to the reference and nothing
    to do. Returns its console."""
    run = snakemake(work)
    said = console(run)
    assert run.returncode == 0, said[-4000:]
    assert "Damaged in results" in said, said[:3000]
    verdicts = compare_tables.compare_folders(work / "reference", work / "results", ignore=WALL_CLOCK)
    assert not {n: v for n, v in verdicts.items() if v not in ("identical", "equal")}, verdicts
    after = console(snakemake(work, "--dry-run"))
    assert "Nothing to be done" in after, after[-3000:]
    assert not list((work / "results").rglob(".*.damaged")), "a marker outlived the repair"
    return said


def _dry_run_of_a_copy(work: Path) -> str:
    """The console of a dry run on a copy of ``work``: a dry run withdraws what is damaged, and the repairing run
    must find the damage itself."""
    return console(snakemake(copy_study(work, work.parent / "dry-run"), "--dry-run"))


def _refusal(read) -> str:
    """What ``read`` raised, reading a damaged file; a failure where it read the file without complaint."""
    try:
        read()
    except (CorruptShardError, CheckpointError) as error:
        return str(error)
    pytest.fail("a damaged file was read without complaint")


def _keep_time(path: Path, change) -> None:
    """Change a file the way a bad disk or a careless copy does: its modification time stays."""
    before = path.stat()
    change(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _read_dump(work: Path, dump: Path = DUMP) -> None:
    for _ in AttentionDump(work / dump).iter_examples():
        pass


def _names(text: str, damaged: Path, problem: str) -> bool:
    """Whether ``text`` (a console) has the line naming the damaged file (its path under results/) and its problem."""
    named = re.escape(str(damaged.relative_to("results"))) + r": .*" + re.escape(problem)
    return re.search(named, text) is not None


def test_a_truncated_shard_is_refused_and_extracted_again(shards_damaged):
    shard = shards_damaged.work / DUMP / "shard-0001-of-0002.parquet"
    assert re.search(f"attention shard {re.escape(str(shard))} is corrupt.*run snakemake again",
                     shards_damaged.refused["truncated"])
    assert _names(shards_damaged.console, DUMP / shard.name, "300 bytes")
    assert "extract_attention" in shards_damaged.console


def test_swapped_shards_are_refused_and_extracted_again(shards_damaged):
    assert "shard-0000-of-0002.parquet is corrupt" in shards_damaged.refused["swapped"]
    assert _names(shards_damaged.console, RANDOM_DUMP / "shard-0000-of-0002.parquet", "")
    assert _names(shards_damaged.console, RANDOM_DUMP / "shard-0001-of-0002.parquet", "")


def test_a_foreign_shard_is_found_by_the_plan_alone(shards_damaged):
    # Another dump's shard copied in, time and all (cp -p): the plan's digest finds it without any analysis.
    assert _names(shards_damaged.dry_run, DUMP / "shard-0000-of-0002.parquet", "")
    assert "extract_attention" in shards_damaged.dry_run
    assert _names(shards_damaged.console, DUMP / "shard-0000-of-0002.parquet", "")


def test_a_deleted_shard_is_extracted_again(rebuilt_damaged):
    assert _names(rebuilt_damaged.console, DUMP / "shard-0001-of-0002.parquet", "the file is missing")


def test_an_edited_manifest_is_refused_and_gathered_again(small):
    manifest = small / DUMP / "manifest.json"
    record = json.loads(manifest.read_text())
    record["shards"][0]["blake3"] = "0" * 64
    manifest.write_text(json.dumps(record))
    with pytest.raises(CorruptShardError, match="manifest.json: it was edited after the workflow wrote it"):
        _read_dump(small)
    said = _repaired(small)
    assert _names(said, DUMP / "manifest.json", "it was edited")
    assert "extract_attention" not in said.split("Job stats")[1].split("total")[0]  # the shards were fine


def test_replaced_checkpoint_weights_are_refused_and_the_checkpoint_made_again(rebuilt_damaged):
    assert re.search("weights/model.safetensors: .* run snakemake again", rebuilt_damaged.refused["weights"])
    assert _names(rebuilt_damaged.console, RANDOM / "checkpoint.json", "weights/model.safetensors")
    assert "random_checkpoint" in rebuilt_damaged.console


def test_an_edited_checkpoint_record_is_refused_and_the_checkpoint_made_again(rebuilt_damaged):
    edited = "it was edited after the workflow wrote it"
    assert _names(rebuilt_damaged.dry_run, PRETRAINED / "checkpoint.json", edited)
    assert _names(rebuilt_damaged.console, PRETRAINED / "checkpoint.json", edited)
    assert "pretrained_checkpoint" in rebuilt_damaged.console


def test_a_damaged_token_table_is_made_again(rebuilt_damaged):
    assert _names(rebuilt_damaged.console, TOKENS, "token table: it has")
    assert "token_table" in rebuilt_damaged.console


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
