"""Benchmark: the surface statistics (METHODS 7.1) over a real wiki dump, streamed and vectorised.

    python benchmarks/bench_surface.py [DUMP_DIR] [--tokens TOKEN_TABLE] [--repeats N] [--jobs N]

Defaults: the 1000-segment wiki dump of all-MiniLM-L6-v2 (pretrained) under results/. First the read
path alone on one core (GB/s of float16 maps), then the statistics as the rules run them: one job per
shard, --jobs at a time (2: as ``--cores 2``), then the gather, checked equal to the one-process table.
Then each measurement runs in a fresh subprocess, so that its peak RSS (resource.getrusage, ru_maxrss) is
its own: a baseline that only streams and decodes the shards (no statistics), then the full
statistics over the first 100 examples and over all of them. Flat peak RSS from 100 to all
examples shows that memory does not grow with the number of examples (one row group at a
time); the ratio to the baseline shows what the vectorised statistics add to reading.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DUMP = REPO / "results" / "attention" / "all-MiniLM-L6-v2" / "pretrained" / "wiki" / "segments"
DEFAULT_TOKENS = REPO / "results" / "tokens" / "all-MiniLM-L6-v2" / "wiki" / "segments.parquet"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def measure(mode: str, dump: str, tokens: str, limit: int | None) -> dict:
    """Run one measurement in this process (called in a subprocess by main)."""
    sys.path.insert(0, str(REPO))
    import numpy as np  # noqa: F401  (imports before the clock and the baseline RSS)

    from workflow_scripts.attention.reader import AttentionDump
    from workflow_scripts.surface.statistics import SurfaceAccumulator, read_token_roles

    roles = read_token_roles(tokens) if mode == "surface" else None
    reader = AttentionDump(dump)
    accumulator = SurfaceAccumulator(reader.num_layers, reader.num_heads)
    rss_before = peak_rss_mib()
    started, cpu_started = time.perf_counter(), time.process_time()
    examples = 0
    for example in reader.iter_examples():
        if mode == "read":  # the read path alone: read, check pages, decompress, a float16 view per example
            pass
        elif mode == "stream":  # baseline: read, check and decode every map to float32, compute nothing
            example.attention.astype("float32")
        else:  # the statistics of every head of the example at once
            accumulator.add(example.example_id, example.attention, roles[example.example_id])
        examples += 1
        if limit is not None and examples >= limit:
            break
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    rss_streamed = peak_rss_mib()
    bootstrap_seconds = 0.0
    if mode == "surface":  # the table: estimates and 95% intervals over examples (1000 resamples)
        started = time.perf_counter()
        accumulator.frame(resamples=1000, seed=0)
        bootstrap_seconds = time.perf_counter() - started
    return {"mode": mode, "limit": limit, "examples": examples, "seconds": seconds, "cpu_seconds": cpu_seconds,
            "examples_per_s": examples / seconds, "bootstrap_seconds": bootstrap_seconds,
            "rss_before_mib": rss_before, "rss_streamed_mib": rss_streamed, "peak_rss_mib": peak_rss_mib()}


def _shard_job(dump: str, tokens: str, shard: str, output: str) -> None:
    from workflow_scripts.surface.statistics import surface_heads_shard

    surface_heads_shard(Path(dump) / "manifest.json", tokens, output, shard_group=shard)


def run_shard_jobs(dump: Path, tokens: Path, jobs: int) -> dict:
    """The rules' way: one job per shard (``jobs`` worker processes at once, as ``--cores``), then the gather.

    The workers start (and import) before the clock, as Snakemake's job start-up is not the analysis's time.
    """
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    sys.path.insert(0, str(REPO))
    from workflow_scripts.attention.reader import AttentionDump
    from workflow_scripts.surface.statistics import surface_heads, surface_heads_gather

    shards = [f.removesuffix(".parquet") for f in AttentionDump(dump).shard_files]
    labels = {"model": "bench", "checkpoint": "pretrained", "corpus": "wiki", "split": "segments"}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_warm_up, range(jobs)))
        outputs = [str(Path(tmp) / f"{shard}.parquet") for shard in shards]
        started = time.perf_counter()
        list(pool.map(_shard_job, [str(dump)] * len(shards), [str(tokens)] * len(shards), shards, outputs))
        shard_seconds = time.perf_counter() - started
        gathered = surface_heads_gather(dump / "manifest.json", outputs, Path(tmp) / "gathered.csv", resamples=1000,
                                        seed=0, **labels)
        seconds = time.perf_counter() - started
        serial = surface_heads(dump / "manifest.json", tokens, Path(tmp) / "serial.csv", resamples=1000, seed=0,
                               **labels)
    identical = gathered.equals(serial)
    return {"seconds": seconds, "shard_seconds": shard_seconds, "gather_seconds": seconds - shard_seconds,
            "identical": identical}


def _warm_up(_: int) -> None:
    sys.path.insert(0, str(REPO))
    import workflow_scripts.surface.statistics  # noqa: F401  (imports, as a started job has done them)


def largest_group_mib(dump: Path) -> float:
    """Uncompressed size of the largest row group of the dump's shards."""
    import pyarrow.parquet as pq

    largest = 0
    for path in sorted(dump.glob("shard-*.parquet")):
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            largest = max(largest, metadata.row_group(group).total_byte_size)
    return largest / 2**20


def run(mode: str, dump: Path, tokens: Path, limit: int | None) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(dump), "--tokens", str(tokens)]
    if limit is not None:
        command += ["--limit", str(limit)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", nargs="?", default=str(DEFAULT_DUMP), help="dump directory (holds manifest.json)")
    parser.add_argument("--tokens", default=str(DEFAULT_TOKENS), help="token table of that dump")
    parser.add_argument("--repeats", type=int, default=1, help="repeat every measurement, report the fastest")
    parser.add_argument("--jobs", type=int, default=2, help="shard jobs at once (as snakemake --cores)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    dump, tokens = Path(args.dump), Path(args.tokens)
    if args.child:
        print(json.dumps(measure(args.child, str(dump), str(tokens), args.limit)))
        return 0
    if not (dump / "manifest.json").is_file() or not tokens.is_file():
        print(f"SKIPPED: no dump at {dump} (or no token table {tokens}); build it first with\n"
              "  snakemake --profile profiles/offline --config mirror=PATH --cores 2 "
              f"{dump / 'manifest.json'}")
        return 0
    manifest = json.loads((dump / "manifest.json").read_text())
    print(f"dump {dump}: {manifest['examples']} examples, {manifest['tokens']} tokens, "
          f"{manifest['num_layers']} layers x {manifest['num_heads']} heads, {len(manifest['shards'])} shards")

    def best(mode: str, limit: int | None) -> dict:
        return min((run(mode, dump, tokens, limit) for _ in range(max(1, args.repeats))), key=lambda r: r["seconds"])

    baseline_first = best("stream", 100)
    baseline = best("stream", None)
    first = best("surface", 100)
    full = best("surface", None)
    # Last: they run in this process, whose peak RSS a later child would inherit (Linux keeps it across fork).
    read = best("read", None)
    gigabytes = manifest["values"] * 2 / 1e9
    print(f"read path alone (read, page checksums, decompress, float16 views), one core: {read['seconds']:.2f} s "
          f"for {gigabytes:.2f} GB of float16 maps: {gigabytes / read['seconds']:.2f} GB/s (target >= 1)")
    sharded = min((run_shard_jobs(dump, tokens, args.jobs) for _ in range(max(1, args.repeats))),
                  key=lambda r: r["seconds"])
    print(f"surface statistics as the workflow runs them: {len(manifest['shards'])} shard jobs, {args.jobs} at a time, "
          f"then the gather: {sharded['seconds']:.2f} s (shard jobs {sharded['shard_seconds']:.2f} s, gather "
          f"{sharded['gather_seconds']:.2f} s; target <= 3 s on 2 cores); the same table as one process: "
          f"{sharded['identical']}")
    for label, r in (("baseline: stream + decode only, first 100", baseline_first),
                     ("baseline: stream + decode only, all examples", baseline),
                     ("surface statistics, first 100 examples", first),
                     ("surface statistics, all examples", full)):
        print(f"{label:46s} {r['examples']:5d} ex {r['seconds']:7.2f} s (CPU {r['cpu_seconds']:6.2f} s) "
              f"{r['examples_per_s']:7.1f} ex/s | "
              f"peak RSS {r['rss_before_mib']:6.1f} MiB before, {r['rss_streamed_mib']:6.1f} after streaming, "
              f"{r['peak_rss_mib']:6.1f} after the bootstrap ({r['bootstrap_seconds']:.2f} s)")
    print(f"peak RSS while streaming, 100 -> {full['examples']} examples: "
          f"statistics {first['rss_streamed_mib']:.1f} -> "
          f"{full['rss_streamed_mib']:.1f} MiB, stream-only baseline {baseline_first['rss_streamed_mib']:.1f} -> "
          f"{baseline['rss_streamed_mib']:.1f} MiB; statistics on top of streaming: "
          f"{first['rss_streamed_mib'] - baseline_first['rss_streamed_mib']:+.1f} MiB at 100, "
          f"{full['rss_streamed_mib'] - baseline['rss_streamed_mib']:+.1f} MiB at {full['examples']}")
    print(f"  the reader holds one row group (a batch of examples) at a time; largest: {largest_group_mib(dump):.1f} "
          "MiB of float16 maps (shards are length-sorted, so the baseline's peak rises with the longest batch)")
    print(f"  the bootstrap (1000 resamples x examples count matrix) adds "
          f"{full['peak_rss_mib'] - full['rss_streamed_mib']:+.1f} MiB at {full['examples']} examples")
    print(f"time ratio, streaming statistics / stream-only baseline (all examples): "
          f"{full['seconds'] / baseline['seconds']:.2f}x; with the bootstrap "
          f"{(full['seconds'] + full['bootstrap_seconds']) / baseline['seconds']:.2f}x; "
          f"{full['seconds'] / full['examples'] * 1000:.1f} ms per example; CPU-time ratio "
          f"{full['cpu_seconds'] / baseline['cpu_seconds']:.2f}x (robust to other load on the machine)")
    print(f"load average while measuring: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs (wall times stretch when the machine is shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
