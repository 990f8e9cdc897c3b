"""The gather step of an attention dump (rule attention_dump_manifest), and the adoption of dumps written
before shard jobs.

Each shard's job (extract.extract_shard) leaves the shard and its record (``parts/shard-IIII-of-NNNN.json``);
:func:`gather_manifest` checks the records against each other and the shards on disk and writes
``manifest.json``, the file every analysis depends on. :func:`adopt_legacy_dumps` writes the records of
dumps made by the earlier one-job extraction from their manifests, so that an existing results folder keeps
its dumps (see docs/attention.md, "Upgrading").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.file_records import mark_damaged, seal_problem, write_sealed_json
from ..core.io import write_json
from .reader import footer_run_id
from .shards import example_ids_digest, shard_names, shard_record_path

log = logging.getLogger(__name__)


# Fields every shard record of one dump must share: records that differ were made by different settings.
SHARED_FIELDS = ("model", "checkpoint", "input_protocol", "signal", "layout", "compression", "implementation",
                 "weights_dtype", "num_layers",
                 "num_heads", "token_table", "table_examples", "num_shards")


def _shared(record: dict[str, Any], field: str) -> Any:
    """A shared field of a shard record; a record written before weights_dtype was recorded had float32 weights."""
    return record.get(field, "float32" if field == "weights_dtype" else None)


def gather_manifest(out_dir: str | Path, n_shards: int) -> dict[str, Any]:
    """Write ``manifest.json`` of a dump from its shards' records (rule attention_dump_manifest).

    Checks that the records describe one extraction (same settings, contiguous positions covering the
    token table) and that each shard on disk is the one its record describes (size and footer run id:
    a stat and a footer read). A shard that is not is removed with its record, so that the next plain
    ``snakemake`` run extracts it again.
    """
    out_dir = Path(out_dir)
    records = []
    for index, name in enumerate(shard_names(n_shards)):
        path = shard_record_path(out_dir, name)
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise AtlasError(f"{path}: missing or unreadable shard record ({exc}); run snakemake again to extract "
                             f"shard {name}") from exc
        if problem := seal_problem(record):
            mark_damaged(out_dir / name, f"its record {path.name}: {problem}", remove=(path,),
                         target=out_dir / "manifest.json")
            raise AtlasError(f"attention shard record {path}: {problem}. The shard and its record were removed: "
                             "run snakemake again (no options needed) to extract it")
        if record.get("index") != index or record.get("num_shards") != n_shards or record["shard"]["file"] != name:
            raise AtlasError(f"{path} describes shard {record['shard'].get('file')!r}, not {name!r}")
        record.setdefault("signal", "attention")  # records written before attention.signals hold attention maps
        record.setdefault("layout", "full")  # records written before causal dumps store whole maps
        records.append(record)
    first = records[0]
    for record in records[1:]:
        differing = [k for k in SHARED_FIELDS if _shared(record, k) != _shared(first, k)]
        if differing:
            raise AtlasError(f"{out_dir}: shard {record['shard']['file']} was extracted with other "
                             f"{', '.join(differing)} than {first['shard']['file']} ({_shared(record, differing[0])!r} "
                             f"vs {_shared(first, differing[0])!r}); run snakemake again (with --forcerun "
                             "extract_attention)")
    position = 0
    for record in records:
        shard = record["shard"]
        if shard["first_position"] != position:
            raise AtlasError(f"{out_dir}: shard {shard['file']} starts at position {shard['first_position']}, "
                             f"the shards before it end at {position}")
        position += shard["rows"]
        _check_shard_file(out_dir, record)
    if position != first["table_examples"]:
        raise AtlasError(f"{out_dir}: the shards hold {position} examples, the token table "
                         f"{first['table_examples']}")
    shards = [record["shard"] for record in records]
    values = sum(r["values"] for r in records)
    total_bytes = sum(s["bytes"] for s in shards)
    timings = {key: round(sum(r["timings"].get(key, 0.0) for r in records), 3) for key in first["timings"]}
    summary = {"model": first["model"], "checkpoint": first["checkpoint"],
               # The dump's identity is that of its shards: regathering the same shards gives the same id.
               "dump_id": hashlib.sha256(" ".join(s["run_id"] for s in shards).encode()).hexdigest()[:32],
               "input_protocol": first["input_protocol"], "signal": first["signal"], "layout": first["layout"],
               "compression": first["compression"], "implementation": first["implementation"],
               "weights_dtype": first.get("weights_dtype", "float32"),
               "num_layers": first["num_layers"], "num_heads": first["num_heads"], "examples": position,
               "tokens": sum(r["tokens"] for r in records),
               "values": values, "bytes": total_bytes, "bytes_per_value": total_bytes / max(values, 1),
               "device": ",".join(sorted({r["device"] for r in records})),
               # Summed over the shard jobs (model loading excluded): the extraction's compute, not its wall time.
               "seconds": round(sum(r["seconds"] for r in records), 3), "shards": shards,
               "token_table": first["token_table"], "timings": timings}
    summary = write_sealed_json(summary, out_dir / "manifest.json")
    log.info("dump complete: %d examples in %d shards, %.3f bytes per stored value, %.1f s of extraction",
             summary["examples"], n_shards, summary["bytes_per_value"], summary["seconds"])
    return summary


def _check_shard_file(out_dir: Path, record: dict[str, Any]) -> None:
    shard = record["shard"]
    path = out_dir / shard["file"]
    try:
        size = path.stat().st_size
        footer = pq.read_schema(path).metadata or {}
    except Exception as exc:  # missing, truncated footer, ...
        problem = f"{type(exc).__name__}: {exc}"
    else:
        run_id = footer_run_id(footer)
        problem = (f"{size} bytes, its record says {shard['bytes']}" if size != shard["bytes"] else
                   f"its run id is {run_id!r}, its record says {shard['run_id']!r}" if run_id != shard["run_id"]
                   else None)
        # The time as Snakemake left it (it touches a job's outputs when the job ends, after the shard's job
        # wrote its record): the plan hashes a shard only where its time differs from this one.
        shard["mtime_ns"] = path.stat().st_mtime_ns
    if problem:
        mark_damaged(path, problem, remove=(shard_record_path(out_dir, shard["file"]),),
                     target=out_dir / "manifest.json")
        raise AtlasError(f"attention shard {path} is not the one its record describes ({problem}); the shard and "
                         "its record were removed: run snakemake again to extract it")


def adopt_legacy_dumps(results: str | Path, *, dry_run: bool = False) -> list[Path]:
    """Write the shard records of every dump under ``results/attention`` that has a manifest but no records
    (made by the one-job extraction), from its manifest and its shards' footers and token counts.

    Records get their shard's modification time, so that Snakemake sees nothing newer than the manifest and
    reruns no gather and no analysis; a shard that does not match its manifest entry is left alone (the
    next run extracts it). Returns the dumps adopted.
    """
    adopted = []
    for manifest_path in sorted(Path(results, "attention").glob("*/*/*/*/manifest.json")):
        out_dir = manifest_path.parent
        manifest = json.loads(manifest_path.read_text())
        shards = manifest.get("shards", [])
        names = shard_names(len(shards))
        if not shards or all(shard_record_path(out_dir, name).exists() for name in names):
            continue
        records = [_legacy_record(out_dir, manifest, index, shard) for index, shard in enumerate(shards)]
        if any(record is None for record in records):
            log.warning("%s: a shard does not match its manifest; left to the next run to re-extract", out_dir)
            continue
        if not dry_run:
            for record in records:
                path = shard_record_path(out_dir, record["shard"]["file"])
                write_json(record, path)
                shard_time = (out_dir / record["shard"]["file"]).stat().st_mtime
                os.utime(path, (shard_time, shard_time))
        adopted.append(out_dir)
    return adopted


def _legacy_record(out_dir: Path, manifest: dict[str, Any], index: int, shard: dict[str, Any]) -> dict | None:
    path = out_dir / shard["file"]
    try:
        parquet = pq.ParquetFile(path)
        if path.stat().st_size != shard["bytes"]:
            return None
        footer = parquet.schema_arrow.metadata or {}
        columns = parquet.read(columns=["example_id", "n_tokens"])
    except Exception:  # missing or unreadable: the next run re-extracts it
        return None
    ids, lengths = columns["example_id"].to_numpy(), columns["n_tokens"].to_numpy().astype(np.int64)
    if example_ids_digest(ids) != shard.get("example_ids_sha256", example_ids_digest(ids)):
        return None
    codec = parquet.metadata.row_group(0).column(2).compression.lower() if parquet.metadata.num_row_groups else "zstd"
    layers, heads = int(manifest["num_layers"]), int(manifest["num_heads"])
    examples = int(manifest["examples"])
    return {"model": manifest["model"], "checkpoint": manifest["checkpoint"],
            "input_protocol": manifest.get("input_protocol", "text"), "signal": manifest.get("signal", "attention"),
            "compression": manifest.get("compression", {"uncompressed": "none"}.get(codec, codec)),
            "implementation": manifest.get("implementation", "eager"), "num_layers": layers, "num_heads": heads,
            "device": manifest.get("device", "cpu"), "token_table": manifest["token_table"],
            "table_examples": examples, "index": index, "num_shards": len(manifest["shards"]),
            "examples": int(shard["rows"]), "tokens": int(lengths.sum()),
            "values": int((layers * heads * lengths ** 2).sum()),
            "seconds": round(float(manifest.get("seconds", 0.0)) * int(shard["rows"]) / max(examples, 1), 3),
            "timings": {}, "shard": {**shard, "run_id": footer_run_id(footer)}}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Keep the attention dumps of a results folder made before shard "
                                                 "jobs: write their shard records (docs/attention.md).")
    parser.add_argument("results", type=Path, help="the results folder (config 'results')")
    parser.add_argument("--dry-run", action="store_true", help="list the dumps without writing anything")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    adopted = adopt_legacy_dumps(args.results, dry_run=args.dry_run)
    print(f"{'would adopt' if args.dry_run else 'adopted'} {len(adopted)} dump(s)")
    for out_dir in adopted:
        print(f"  {out_dir}")


if __name__ == "__main__":
    main()
