"""Per-shard analysis jobs and their gather: an analysis of a dump spread over cores and nodes.

An analysis that sums over the examples of a dump (surface statistics, attention distance, dependency
scoring) runs as one job per shard of the dump. Each job reads its shard alone and writes the shard's
per-example values, a *partial* (Parquet); the gather job reads the dump's partials and makes the table.
The per-example values are those one job over the whole dump computes, and every table orders the
examples by id before it combines them, so the gathered table is the serial one, value for value
(tests/surface/test_shard_gather.py, tests/syntax/test_dependency_shards.py).

A partial names the analysis and the shard it was computed from: the shard's file and the manifest's
checksum of it. The gather takes the partials only if they match the dump's manifest one to one. A partial
of an earlier extraction of the dump, of another analysis or another dump, a shard without a partial, or
two partials of one shard are refused. A refused partial is removed, so the next plain ``snakemake`` run
recomputes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import read_metadata, write_table
from .reader import AttentionDump


def shard_file(shard: str) -> str:
    """The shard file of a ``shard`` wildcard (``shard-0001-of-0004`` -> ``shard-0001-of-0004.parquet``)."""
    return shard if shard.endswith(".parquet") else f"{shard}.parquet"


def shard_fingerprint(entry: Mapping[str, Any]) -> str:
    """What identifies one extraction of a shard: the manifest's sha256 of the file (its run id otherwise)."""
    return str(entry.get("sha256") or entry.get("run_id") or f"rows={entry['rows']},bytes={entry.get('bytes')}")


def write_partial(table: pa.Table, output: str | os.PathLike[str], *, dump: AttentionDump, shard: str,
                  analysis: str, examples: int, info: Mapping[str, Any] | None = None) -> None:
    """Write one shard's part of an analysis (atomically), labelled with the shard it comes from."""
    file = shard_file(shard)
    entry = dump.shard_entry(file)
    if examples != int(entry["rows"]):
        raise AtlasError(f"{dump.directory / file}: {analysis} read {examples} examples of the shard, the manifest "
                         f"says {entry['rows']}; rerun snakemake to rebuild the dump")
    label = {"analysis": analysis, "dump": str(dump.directory), "shard": file,
             "fingerprint": shard_fingerprint(entry), "examples": examples, "info": dict(info or {})}
    write_table(table, output, {"partial": label})


def _refuse(path: Path, problem: str) -> AtlasError:
    path.unlink(missing_ok=True)
    return AtlasError(f"{path}: {problem}; the file was removed, run snakemake again (no options needed) to "
                      "recompute it")


def read_partials(paths: Iterable[str | os.PathLike[str]], dump: AttentionDump, analysis: str
                  ) -> list[tuple[pa.Table, dict[str, Any]]]:
    """Every shard's partial of ``analysis``, in the dump's storage order, checked against its manifest.

    Returns (table, info) per shard, where info is what the shard's job passed to :func:`write_partial`.
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
        file = label.get("shard")
        if file not in dump.shard_files:
            raise _refuse(path, f"computed from shard {file}, which the dump {dump.directory} does not have")
        if file in by_shard:
            raise AtlasError(f"{path} and {by_shard[file][0]}: two partials of {analysis} for the shard {file} of "
                             f"{dump.directory}; remove the one that is not of this study and rerun snakemake")
        if label.get("fingerprint") != shard_fingerprint(dump.shard_entry(file)):
            raise _refuse(path, f"computed from an earlier extraction of {dump.directory / file} (the dump was "
                                "rebuilt since)")
        by_shard[file] = (path, label)
    missing = [f for f in dump.shard_files if f not in by_shard]
    if missing:
        raise AtlasError(f"{dump.directory}: no partial of {analysis} for the shards {', '.join(missing)}; the "
                         "gather needs one per shard of the dump, rerun snakemake")
    partials = []
    for file in dump.shard_files:
        path, label = by_shard[file]
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise _refuse(path, f"unreadable partial of {analysis} ({type(exc).__name__}: {exc})") from exc
        partials.append((table, dict(label.get("info") or {})))
    return partials
