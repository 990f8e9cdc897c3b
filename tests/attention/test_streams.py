"""Model streams (workflow_scripts/attention/streams.py): cores split between streams, results in order, and a
dump whose maps and storage order do not depend on how many streams computed it."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import torch

from support.tiny_dumps import tiny_dump
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.attention.shards import RECORD_DIR
from workflow_scripts.attention.streams import in_order, stream_threads


@pytest.mark.parametrize(("threads", "device", "signal", "expected"), [
    (2, "cpu", "attention", [1, 1]),
    (3, "cpu", "attention", [2, 1]),
    (8, "cpu", "attention", [4, 4]),
    (1, "cpu", "attention", [1]),
    (0, "cpu", "attention", [1]),
    (4, "cuda", "attention", [4]),  # the writer does not compete with a GPU's forward pass
    (2, "cpu", "norm", [2]),  # the norm signal's value vectors are recorded per forward pass
    (2, "cpu", "rollout", [2]),
])
def test_streams_split_the_threads(threads, device, signal, expected):
    assert stream_threads(threads, device, signal) == expected


def test_results_come_in_order_from_streams_of_their_own_thread_counts():
    """Later items finish first (shorter sleeps), yet come out in order; each stream runs with its share of the
    threads; no item starts more than one item per stream ahead of the consumer."""
    consumed, ahead = [], []

    def compute(item):
        ahead.append(item - len(consumed))
        time.sleep(0.02 * (10 - item))
        return item, threading.current_thread().name, torch.get_num_threads()

    items = list(range(10))
    for result in in_order(compute, items, [2, 1]):
        consumed.append(result)
    assert [item for item, _, _ in consumed] == items
    assert {name.split("_")[0] for _, name, _ in consumed} == {"model-stream"}
    by_stream = {}
    for _, name, count in consumed:
        by_stream.setdefault(name, set()).add(count)
    assert sorted(next(iter(counts)) for counts in by_stream.values()) == [1, 2]
    assert all(len(counts) == 1 for counts in by_stream.values())
    assert max(ahead) <= 2


def test_one_stream_computes_in_the_calling_thread():
    names = [name for name in in_order(lambda item: threading.current_thread().name, [1, 2, 3], [1])]
    assert names == [threading.current_thread().name] * 3


def test_an_error_in_a_stream_reaches_the_consumer_and_stops_the_rest():
    started = []

    def compute(item):
        started.append(item)
        if item == 2:
            raise ValueError("batch 2 is broken")
        time.sleep(0.01)
        return item

    seen = []
    with pytest.raises(ValueError, match="batch 2 is broken"):
        for item in in_order(compute, list(range(50)), [1, 1]):
            seen.append(item)
    assert seen == [0, 1]
    assert max(started) <= 4  # the streams stopped: at most one item each beyond the failure


def test_two_streams_store_what_one_stream_stores(tmp_path, tiny_bert):
    """threads=2 (two streams of one thread) and threads=1 (one stream): the same maps, in the same storage order,
    the same bytes per shard but for the run ids in the footers."""
    dumps = {}
    for threads in (1, 2):
        folder = tmp_path / f"threads-{threads}"
        folder.mkdir()
        _, _, out, summary, _ = tiny_dump(folder, tiny_bert, pairs=True, n_shards=2, batch_size=2, threads=threads)
        dumps[threads] = (out, summary)
    (one, one_summary), (two, two_summary) = dumps[1], dumps[2]
    one_examples = [(e.example_id, e.attention) for e in AttentionDump(one).iter_examples()]
    two_examples = [(e.example_id, e.attention) for e in AttentionDump(two).iter_examples()]
    assert [i for i, _ in one_examples] == [i for i, _ in two_examples]
    for (_, expected), (_, stored) in zip(one_examples, two_examples, strict=True):
        np.testing.assert_array_equal(stored, expected)
    assert [s["bytes"] for s in one_summary["shards"]] == [s["bytes"] for s in two_summary["shards"]]
    assert [s["example_ids_sha256"] for s in one_summary["shards"]] == \
        [s["example_ids_sha256"] for s in two_summary["shards"]]
    record = json.loads(next((two / RECORD_DIR).glob("*.json")).read_text())
    assert record["timings"]["forward pass"] > 0 and record["timings"]["waiting for the model"] >= 0
