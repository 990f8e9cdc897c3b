"""The plan's check of what earlier runs left in the results folder: damage is rebuilt by the next plain run.

Snakemake rebuilds a missing file only where a job that needs it must run again, and a file that is there but
damaged never: after an analysis refused a shard, or a shard was truncated or deleted, a plain run would print
"Nothing to be done". So before the DAG is built, the Snakefile calls :func:`find_damage`, which finds

- **dumps** (the study's): a manifest edited or missing while shards or their records are there; a shard that is
  missing, has no record, or differs from its record (size, and sha256 where the time differs: a cheap check
  a dry run makes too); a token table that differs from the one its shards were extracted from;
- **checkpoints** (random, fine-tuned): an edited ``checkpoint.json``, or weights that differ from it, or a
  file in ``weights/`` the workflow did not write;
- **refused files**: what a job refused and removed, by the marker it left (core/file_records.py);

Each damaged file is withdrawn (:func:`withdraw`: removed with what vouches for it, e.g. a shard with its record
and its dump's manifest, and a marker left) and what rebuilds it becomes an input of rule all, so that
Snakemake, which sees it missing, runs its job and everything downstream of it again; a dry run lists those
jobs. The Snakefile makes this check in its main process, in dry runs too: a dry run withdraws what is damaged
(nothing of use is lost; the marker keeps the reason until the rebuild).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..attention.shards import RECORD_DIR, shard_names, shard_record_path
from ..core.errors import AtlasError
from ..core.file_records import DIGESTS, damage_markers, file_problem, mark_damaged, seal_problem
from ..core.json_files import read_json_object
from ..models.checkpoints import MANIFEST, OWN_KINDS, WEIGHTS, parse_checkpoint_name, weights_problem


@dataclass(frozen=True)
class Damage:
    file: str                    # the damaged file, as named to the user
    problem: str                 # what is wrong with it, in words
    target: str                  # what the run builds to repair it: the file, or its dump's manifest
    withdraw: tuple[str, ...] = ()  # removed first (with the file), so that Snakemake sees the target missing


def find_damage(study: Any) -> list[Damage]:
    """Every damaged file of the study's results folder that a run must rebuild (module docstring)."""
    found = marked_damage(study.results)  # first: a job's refusal says best what was wrong
    shard_count = int(study.config["attention"]["num_shards"])
    for model, checkpoint, corpus, split in sorted(set(study.attention.dumps)):
        found += dump_damage(Path(study.paths.dump_dir(model, checkpoint, corpus, split)), shard_count,
                             token_table=study.paths.token_table(model, corpus, split))
    for model in study.models:
        for record in sorted(Path(study.results, "checkpoints", model).glob(f"*/{MANIFEST}")):
            found += checkpoint_damage(record)
    # A missing manifest is named only where nothing else explains it (a shard withdrawn with it says why).
    explained = {d.target for d in found if d.file != d.target}
    found = [d for d in found if d.file != d.target or Path(d.file).exists() or d.target not in explained]
    unique: dict[str, Damage] = {}
    for damage in found:
        unique.setdefault(damage.file, damage)
    return list(unique.values())


def withdraw(damage: list[Damage]) -> None:
    """Remove each damaged file that is still there, with what vouches for it, and leave its marker (which also
    keeps the reason for a later run, should this one stop before the rebuild)."""
    for item in damage:
        if Path(item.file).exists() or any(Path(path).exists() for path in item.withdraw):
            mark_damaged(item.file, item.problem, remove=item.withdraw, target=item.target)


def dump_damage(directory: Path, shard_count: int, token_table: str | None = None) -> list[Damage]:
    """The damage of one dump. ``token_table``: where this study's token table of the dump is (the path in the
    shards' records is the one of the folder they were extracted in, which a copied folder does not share)."""
    manifest_path = directory / "manifest.json"
    manifest_name = str(manifest_path)
    names = shard_names(shard_count)
    found: list[Damage] = []
    entries: dict[str, Any] = {}
    if manifest_path.exists():
        manifest = read_json_object(manifest_path)
        if manifest is None:
            return [Damage(manifest_name, "the dump's manifest is unreadable", manifest_name)]
        entries = {entry.get("file"): entry for entry in manifest.get("shards", [])}
        if sorted(entries) != names:
            return []  # written for another attention.num_shards: Snakemake reruns it for the changed setting
        if problem := seal_problem(manifest):
            found.append(Damage(manifest_name, f"the dump's manifest: {problem}", manifest_name))
    elif any(directory.glob("shard-*.parquet")) or (directory / RECORD_DIR).is_dir():
        found.append(Damage(manifest_name, "the dump's manifest is missing (an extraction was interrupted, or a "
                                           "shard refused): it is gathered again", manifest_name))
    for name in names:
        shard, record_path = directory / name, shard_record_path(directory, name)
        record = read_json_object(record_path)
        vouchers = (str(record_path), manifest_name)
        if record is None:
            if shard.exists() or entries:
                found.append(Damage(str(shard), f"{'the file is missing and ' if not shard.exists() else ''}its "
                                                f"record {RECORD_DIR}/{record_path.name} is missing or unreadable",
                                    manifest_name, vouchers))
            continue
        written = record.get("shard", {})
        entry = entries.get(name)
        # The manifest holds the shard's time as the gather found it (Snakemake touches a job's outputs when it
        # ends). Without a manifest a gather is due anyway, which checks the size and run id; a manifest written
        # before times were recorded gets the size check alone, so that a plan never hashes every shard.
        expected = {"bytes": written.get("bytes")}
        if entry and "mtime_ns" in entry:
            expected.update({name: written[name] for name in DIGESTS if name in written}, mtime_ns=entry["mtime_ns"])
        if problem := seal_problem(record) or file_problem(shard, expected):
            found.append(Damage(str(shard), problem, manifest_name, vouchers))
            continue
        if entry is not None and any(entry.get(k) != written.get(k) for k in ("bytes", *DIGESTS, "run_id")):
            found.append(Damage(manifest_name, f"the dump's manifest lists {name} other than the shard's record",
                                manifest_name))
        found += _token_table_damage(record, shard, token_table)
    return found


def _token_table_damage(record: dict[str, Any], shard: Path, table: str | None) -> list[Damage]:
    """The token table a shard was extracted from, if it is there and differs from it without being newer
    (a newer one is a rebuild, which makes Snakemake extract the dump again anyway)."""
    table, entry = table or record.get("token_table"), record.get("token_table_file")
    if not table or not entry:
        return []
    try:
        if os.stat(table).st_mtime_ns > shard.stat().st_mtime_ns:
            return []
    except OSError:
        return []
    problem = file_problem(table, entry)
    return [Damage(str(table), f"token table: {problem}", str(table))] if problem else []


def checkpoint_damage(record_path: Path) -> list[Damage]:
    record = read_json_object(record_path)
    path = str(record_path)
    if record is None:
        return [Damage(path, "the checkpoint's record is unreadable", path)]
    if problem := seal_problem(record):
        return [Damage(path, problem, path)]
    try:
        kind = parse_checkpoint_name(str(record.get("checkpoint")))["kind"]
    except AtlasError as exc:
        return [Damage(path, str(exc), path)]
    files = record.get("files")
    if kind not in OWN_KINDS or files is None:
        return []
    problem = weights_problem(record_path.parent / WEIGHTS, files, always_hash=False)
    return [Damage(path, problem, path)] if problem else []


def marked_damage(results: str | os.PathLike[str]) -> list[Damage]:
    """Files that jobs refused and removed. A marker whose target has been rebuilt since is removed."""
    found = []
    for path, problem, target, marker in damage_markers(results):
        try:
            if target.stat().st_mtime_ns >= marker.stat().st_mtime_ns:
                marker.unlink(missing_ok=True)
                continue
        except FileNotFoundError:
            pass
        # A job names the target as it was given the file; the rules name it relative to the working directory.
        if target.is_absolute() and target.is_relative_to(Path.cwd()):
            target = target.relative_to(Path.cwd())
        found.append(Damage(str(path), problem or "refused by a job of an earlier run", str(target)))
    return found


def damage_lines(damage: list[Damage], results: str) -> list[str]:
    """What the plan tells the user: one line per damaged file, then what the run does about it."""
    def shown(path: str) -> str:
        return str(Path(path).relative_to(results)) if Path(path).is_relative_to(results) else path

    count = f"{len(damage)} file{'s' if len(damage) != 1 else ''}"
    lines = [f"Damaged in {results} ({count}): removed, and rebuilt with what depends on it by the next run "
             "that builds the study (this one, unless it is a dry run or names other targets):"]
    lines += [f"  {shown(d.file)}: {d.problem}" for d in damage]
    return lines
