"""Per-shard analysis jobs and their gather: an analysis of a dump spread over cores and nodes.

An analysis that sums over the examples of a dump (surface statistics, attention distance, dependency
scoring) runs as one job per shard group of the dump: ``attention.analysis_shards_per_job`` consecutive shards
(shards.shard_groups; by default one). Each job reads its shards alone and writes their per-example values, a
*partial* (Parquet); the gather job reads the dump's partials and makes the table.
The per-example values are those one job over the whole dump computes, and every table orders the
examples by id before it combines them, so the gathered table is the serial one, value for value
(tests/surface/test_shard_gather.py, tests/syntax/test_dependency_shards.py).

A partial names the analysis and the shards it was computed from: each shard's file and the manifest's
checksum of it. The gather takes the partials only if they cover the dump's shards, each exactly once. A partial
of an earlier extraction of the dump, of another analysis or another dump, a shard without a partial, or
two partials of one shard are refused, and so are partials computed with different settings (those the
gather names, e.g. dependency scoring's offsets). A refused partial is removed, so the next plain ``snakemake``
run recomputes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.file_records import mark_damaged
from ..core.io import read_metadata, write_table
from .reader import AttentionDump


def shard_fingerprint(entry: Mapping[str, Any]) -> str:
    """What identifies one extraction of a shard: the manifest's digest of the file (its run id otherwise)."""
    return str(entry.get("blake3") or entry.get("sha256") or entry.get("run_id")
               or f"rows={entry['rows']},bytes={entry.get('bytes')}")


def write_partial(table: pa.Table, output: str | os.PathLike[str], *, dump: AttentionDump, shards: Sequence[str],
                  analysis: str, examples: int, info: Mapping[str, Any] | None = None) -> None:
    """Write the part of an analysis computed from ``shards`` (shard files of the dump; one job's shard group)
    atomically, labelled with the shards and the extraction of each it comes from."""
    entries = [dump.shard_entry(file) for file in shards]
    expected = sum(int(entry["rows"]) for entry in entries)
    if examples != expected:
        raise AtlasError(f"{dump.directory}: {analysis} read {examples} examples of {', '.join(shards)}, the manifest "
                         f"says {expected}; rerun snakemake to rebuild the dump")
    label = {"analysis": analysis, "dump": str(dump.directory), "shards": list(shards),
             "fingerprints": [shard_fingerprint(entry) for entry in entries], "examples": examples,
             "info": dict(info or {})}
    write_table(table, output, {"partial": label})


def _refuse(path: Path, problem: str) -> AtlasError:
    mark_damaged(path, problem)  # the next plain run recomputes it, though the tables it fed are there
    return AtlasError(f"{path}: {problem}; the file was removed, run snakemake again (no options needed) to "
                      "recompute it")


def read_partials(paths: Iterable[str | os.PathLike[str]], dump: AttentionDump, analysis: str, *,
                  agree_on: Iterable[str] = ()) -> list[tuple[pa.Table, dict[str, Any]]]:
    """The partials of ``analysis`` that cover the dump's shards, each shard once, checked against its manifest.

    Returns (table, info) per partial, in the storage order of their shards, where info is what the partial's job
    passed to :func:`write_partial`.
    ``agree_on`` names the info entries (settings) that every partial must share.
    """
    by_shard: dict[str, tuple[Path, dict[str, Any]]] = {}
    for raw in paths:
        path = Path(raw)
        try:
            label = read_metadata(path).get("partial")
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise _refuse(path, f"unreadable partial of {analysis} ({type(exc).__name__}: {exc})") from exc
        if not isinstance(label, dict) or label.get("analysis") != analysis:
            found = label.get("analysis") if isinstance(label, dict) else None
            raise _refuse(path, f"not a partial of {analysis} (it holds {found or 'no partial label'})")
        # Partials of one shard each, as first written, name it under "shard".
        files = label.get("shards") or [label.get("shard")]
        fingerprints = label.get("fingerprints") or [label.get("fingerprint")]
        if not isinstance(files, list) or not isinstance(fingerprints, list) or len(files) != len(fingerprints):
            raise _refuse(path, f"a partial of {analysis} whose label names no shards, or unequal lists of shards "
                                "and fingerprints")
        for file, fingerprint in zip(files, fingerprints, strict=True):
            if file not in dump.shard_files:
                raise _refuse(path, f"computed from shard {file}, which the dump {dump.directory} does not have")
            if file in by_shard:
                raise AtlasError(f"{path} and {by_shard[file][0]}: two partials of {analysis} for the shard {file} "
                                 f"of {dump.directory}; remove the one that is not of this study and rerun snakemake")
            if fingerprint != shard_fingerprint(dump.shard_entry(file)):
                raise _refuse(path, f"computed from an earlier extraction of {dump.directory / file} (the dump was "
                                    "rebuilt since)")
            by_shard[file] = (path, label)
    missing = [f for f in dump.shard_files if f not in by_shard]
    if missing:
        raise AtlasError(f"{dump.directory}: no partial of {analysis} for the shards {', '.join(missing)}; the "
                         "gather needs every shard of the dump in exactly one partial, rerun snakemake")
    # Each partial once, in the storage order of its first shard.
    ordered = list({str(path): (path, label) for path, label in (by_shard[f] for f in dump.shard_files)}.values())
    _check_agreement(ordered, analysis, dump, tuple(agree_on))
    partials = []
    for path, label in ordered:
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise _refuse(path, f"unreadable partial of {analysis} ({type(exc).__name__}: {exc})") from exc
        partials.append((table, dict(label.get("info") or {})))
    return partials


def _check_agreement(labelled: list[tuple[Path, dict[str, Any]]], analysis: str, dump: AttentionDump,
                     keys: tuple[str, ...]) -> None:
    """Refuse partials computed with different settings. Which of them is current cannot be told from the files,
    so all are removed, and the next plain run recomputes every one with the study's settings."""
    first_path, first = labelled[0]
    for path, label in labelled[1:]:
        for key in keys:
            ours, theirs = (dict(x.get("info") or {}).get(key) for x in (first, label))
            if ours != theirs:
                for stale, _ in labelled:
                    mark_damaged(stale, f"computed with other settings than the dump's other partials ({key})")
                raise AtlasError(f"{first_path} and {path}: partials of {analysis} of {dump.directory} differ in "
                                 f"{key} ({ours!r} against {theirs!r}): they were computed with different settings. "
                                 f"The dump's {len(labelled)} partials were removed; run snakemake again (no options "
                                 "needed) to recompute them")
