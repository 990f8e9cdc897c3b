"""Benchmark: dependency-head scoring (METHODS 7.3) of every head over EWT train and dev, streamed and vectorised.

    python benchmarks/bench_dependency.py [--model all-MiniLM-L6-v2] [--checkpoint pretrained]
        [--results results] [--splits train dev] [--naive-sentences 200]

Defaults: the all-MiniLM-L6-v2 pretrained EWT dumps under results/. Every measurement runs in
a fresh subprocess, so that its peak RSS (resource.getrusage, ru_maxrss) is its own:

- ``stream``: the baseline — stream the shards, decode them and convert every example to
  word level (METHODS 5), without scoring;
- ``score``: the full scoring (:func:`score_dependency_heads`: word-level conversion, every
  head's predictions and per-sentence, per-relation counts of all heads and offsets at once,
  written to a temporary Parquet file);
- ``phases``: where the scoring's time goes, on one thread: reading and decoding the shards, the
  word-level conversion, the heads' predictions (``predict``), the counts (``count_predictions``),
  and stacking the counts into the table and writing it;
- ``naive`` / ``vectorised`` on the first ``--naive-sentences`` sentences: the same counts with
  a Python loop over heads (a reference, checked equal) against the vectorised code.

Peak RSS that stays flat from dev (2k sentences) to train (12.5k) shows that memory does not grow
with the corpus (one row group at a time). The dumps are not built here: if they are absent the
benchmark says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def paths(results: Path, model: str, checkpoint: str, split: str) -> dict[str, Path]:
    return {"dump": results / "attention" / model / checkpoint / "ewt" / split,
            "tokens": results / "tokens" / model / "ewt" / f"{split}.parquet",
            "annotation": results / "annotation" / "ewt" / f"{split}.parquet"}


def naive_counts(maps, unit_word, heads, deprels, vocabulary, offsets):
    """Reference: the same per-relation counts, one head at a time (Python loops over heads and words)."""
    import numpy as np

    layers, n_heads = maps.shape[:2]
    words = [int(w) for w in unit_word if w >= 0]
    unit_of_word = {w: u for u, w in enumerate(unit_word) if w >= 0}
    counts = {}
    for layer in range(layers):
        for head in range(n_heads):
            for j, h in enumerate(heads):
                if h < 0 or j not in unit_of_word or h not in unit_of_word:
                    continue
                row = np.array(maps[layer, head, unit_of_word[j], [unit_of_word[w] for w in words]], dtype=np.float64)
                row[words.index(j)] = -np.inf
                predicted = words[int(np.argmax(row))]
                relations = ["all", deprels[j]] + ([deprels[j].split(":")[0] + ":*"]
                                                   if deprels[j].split(":")[0] + ":*" in vocabulary else [])
                for relation in relations:
                    if relation in vocabulary:
                        key = (relation, layer * n_heads + head)
                        counts[key] = counts.get(key, 0) + int(predicted == h)
    return counts


def measure(mode: str, dump: str, tokens: str, annotation: str, limit: int | None) -> dict:
    """Run one measurement in this process (called in a subprocess by main)."""
    sys.path.insert(0, str(REPO))
    import numpy as np

    from workflow_scripts.attention.annotate import read_trees
    from workflow_scripts.attention.reader import AttentionDump
    from workflow_scripts.attention.tokens import token_words
    from workflow_scripts.syntax.dependency import offsets_for, relation_vocabulary, score_dependency_heads
    from workflow_scripts.syntax.dependency_counts import score_sentence

    reader = AttentionDump(dump)
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    sentences = 0
    extra: dict = {}
    kept: list = []
    if mode == "score":
        with tempfile.TemporaryDirectory() as tmp:
            stats = score_dependency_heads(dump, tokens, annotation, Path(tmp) / "scores.parquet", max_offset=5)
        sentences = stats["sentences"]
    elif mode == "phases":
        extra["phases"] = phases(reader, tokens, annotation)
        sentences = len(reader)
    else:
        trees = read_trees(annotation)
        words = token_words(tokens)
        n_words = {e: len(t[0]) for e, t in trees.items()}
        vocabulary = {r: i for i, r in enumerate(relation_vocabulary(t[3] for t in trees.values()))}
        names = list(vocabulary)
        offsets = offsets_for(5)
        if mode in ("vectorised", "naive"):
            started = time.perf_counter()  # the head-to-head comparison times the loop only
        for example in reader.iter_word_maps(words, n_words):
            if mode in ("vectorised", "naive"):
                _, _, heads, deprels = trees[example.example_id]
                if mode == "naive":
                    naive_counts(example.attention, example.unit_word, heads, deprels, vocabulary, offsets)
                else:
                    counts = score_sentence(example.attention, example.unit_word, heads, deprels, vocabulary, offsets)
                    if len(kept) < 20:  # checked against the reference after the clock stops
                        kept.append((example, heads, deprels, counts))
            sentences += 1
            if limit is not None and sentences >= limit:
                break
    seconds = time.perf_counter() - started
    for example, heads, deprels, counts in kept:
        reference = naive_counts(example.attention, example.unit_word, heads, deprels, vocabulary, offsets)
        for r, row in zip(counts.relations, counts.dep_correct):
            expected = [reference.get((names[r], k), 0) for k in range(len(row))]
            if not np.array_equal(row, expected):
                raise AssertionError(f"example {example.example_id}: {names[r]} counts differ from the reference")
    if mode == "vectorised":
        extra["checked_against_reference"] = len(kept)
    return {"mode": mode, "sentences": sentences, "seconds": round(seconds, 3),
            "sentences_per_second": round(sentences / max(seconds, 1e-9), 1),
            "peak_rss_mib": round(peak_rss_mib(), 1), "rss_before_mib": round(rss_before, 1),
            "heads": reader.num_layers * reader.num_heads, **extra}


def phases(reader, tokens: str, annotation: str) -> dict[str, float]:
    """Seconds of each phase of score_tables, timed around the same calls it makes (its setup included)."""
    import numpy as np

    from workflow_scripts.attention.annotate import read_trees
    from workflow_scripts.attention.reader import to_word_level
    from workflow_scripts.attention.tokens import token_words
    from workflow_scripts.syntax import dependency, dependency_counts

    clock = {"read trees and token table": 0.0, "read and decode shards": 0.0, "word-level conversion": 0.0,
             "predictions": 0.0, "counts": 0.0, "table: stack, sort, write": 0.0}
    began = time.perf_counter()
    trees = read_trees(annotation)
    words = token_words(tokens)
    vocabulary = {r: i for i, r in enumerate(dependency.relation_vocabulary(t[3] for t in trees.values()))}
    memberships, offsets = dependency_counts.Memberships(vocabulary), dependency.offsets_for(5)
    clock["read trees and token table"] += time.perf_counter() - began
    groups, group, group_ids = [], [], []

    def score_group() -> None:
        began = time.perf_counter()
        counts = dependency_counts.count_predictions(group, vocabulary, offsets, memberships,
                                                     num_heads=reader.num_layers * reader.num_heads)
        groups.append((np.asarray(group_ids)[counts.sentence], counts))
        clock["counts"] += time.perf_counter() - began
        group.clear()
        group_ids.clear()

    examples = reader.iter_examples()
    while True:
        began = time.perf_counter()
        example = next(examples, None)
        decoded = time.perf_counter()
        clock["read and decode shards"] += decoded - began
        if example is None:
            break
        _, _, heads, deprels = trees[example.example_id]
        word_maps = to_word_level(example, words[example.example_id], len(heads))
        converted = time.perf_counter()
        clock["word-level conversion"] += converted - decoded
        group.append(dependency_counts.predict(
            dependency_counts.ScoredSentence(word_maps.attention, word_maps.unit_word, heads, deprels)))
        clock["predictions"] += time.perf_counter() - converted
        group_ids.append(example.example_id)
        if dependency_counts.window_is_full(group):
            score_group()
    if group:
        score_group()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        table = dependency.counts_table(groups, list(vocabulary), reader.num_layers * reader.num_heads, len(offsets))
        dependency.write_table(table, Path(tmp) / "scores.parquet", {})
    clock["table: stack, sort, write"] += time.perf_counter() - began
    return {name: round(seconds, 3) for name, seconds in clock.items()}


def median_run(results: list[dict]) -> dict:
    """The run of median time (the upper median of an even count), with every run's seconds in ``all_seconds``."""
    ranked = sorted(results, key=lambda result: result["seconds"])
    return {**ranked[len(ranked) // 2], "all_seconds": [result["seconds"] for result in results]}


def run_child(mode: str, files: dict[str, Path], limit: int | None) -> dict:
    command = [sys.executable, __file__, "--child", mode, str(files["dump"]), str(files["tokens"]),
               str(files["annotation"]), str(limit if limit is not None else -1)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"measurement {mode} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=REPO / "results")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--checkpoint", default="pretrained")
    parser.add_argument("--splits", nargs="+", default=["train", "dev"])
    parser.add_argument("--naive-sentences", type=int, default=200,
                        help="sentences for the loop-over-heads reference (0: skip it)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="fresh processes per measurement, alternating stream and score: the median is reported "
                             "(a small VM's times vary by a fifth from run to run)")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, dump, tokens, annotation, limit = args.child
        print(json.dumps(measure(mode, dump, tokens, annotation, None if int(limit) < 0 else int(limit))))
        return
    rows = []
    for split in args.splits:
        files = paths(args.results, args.model, args.checkpoint, split)
        missing = [str(p) for p in ((files["dump"] / "manifest.json"), files["tokens"], files["annotation"])
                   if not p.exists()]
        if missing:
            print(f"skipping {split}: {', '.join(missing)} absent (build them with snakemake first)")
            continue
        manifest = json.loads((files["dump"] / "manifest.json").read_text())
        on_disk = sum(s["bytes"] for s in manifest["shards"]) / 2**20
        decoded = manifest["values"] * 4 / 2**20  # every map as float32
        print(f"{split}: {manifest['examples']} sentences, {manifest['num_layers']}x{manifest['num_heads']} heads, "
              f"{on_disk:.0f} MiB of shards, {decoded:.0f} MiB if all maps were held as float32")
        runs: dict[str, list[dict]] = {"stream": [], "score": []}
        for _ in range(max(args.repeat, 1)):
            for mode in runs:
                runs[mode].append(run_child(mode, files, None))
        stream, score = (median_run(runs[mode]) for mode in ("stream", "score"))
        for result in (stream, score):
            print(f"  {result['mode']:>10}: {result['seconds']:8.2f} s  {result['sentences_per_second']:8.1f} "
                  f"sentences/s  peak RSS {result['peak_rss_mib']:7.1f} MiB  (median of {len(result['all_seconds'])}: "
                  f"{', '.join(f'{s:.2f}' for s in result['all_seconds'])} s)")
        print(f"  scoring / streaming+word-level baseline: {score['seconds'] / stream['seconds']:.2f}x")
        timed = run_child("phases", files, None)
        print("  where the scoring's time goes: " + ", ".join(f"{name} {seconds:.2f} s"
                                                          for name, seconds in timed["phases"].items()))
        rows.append({"split": split, "stream": stream, "score": score, "phases": timed["phases"],
                     "ratio_score_to_stream": round(score["seconds"] / stream["seconds"], 3),
                     "shards_mib": round(on_disk, 1), "all_maps_float32_mib": round(decoded, 1)})
        if args.naive_sentences and split == args.splits[-1]:
            naive = run_child("naive", files, args.naive_sentences)
            vectorised = run_child("vectorised", files, args.naive_sentences)
            print(f"  first {vectorised['sentences']} sentences, loop over heads: {naive['seconds']:.2f} s; vectorised "
                  f"over heads: {vectorised['seconds']:.2f} s (incl. word-level conversion; "
                  f"{vectorised['checked_against_reference']} sentences checked equal)")
            rows[-1].update({"naive": naive, "vectorised": vectorised})
    if not rows:
        print("no dump found: nothing to benchmark")
        return
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
