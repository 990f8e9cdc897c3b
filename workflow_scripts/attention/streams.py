"""Model streams: a shard's batches computed by threads that each run the model with a share of the cores.

On a CPU, extraction's writer thread (encode, compress, write and hash the dump) needs a core beside the model.
One forward pass over all the cores loses more than the writer's time: each of torch's parallel regions waits for
its slowest thread, and the thread whose core the writer took is the slowest. Two streams, each running the model
on half the cores, do not wait for each other: the writer's time is taken from one of them, and the other goes on.
On the 2-core machine of docs/attention.md, two streams of one thread computed 300 segments' maps in 0.9x the time
of one stream of two threads, and with the writer beside them extraction took 1.0-1.1x a bare forward pass, against
1.2-1.5x for one stream.

Each batch is computed by one stream, start to end (no state is shared between batches), and the results are taken
in the batches' order: the dump's bytes do not depend on the number of streams (each stream's intra-op threads
compute the same values; tests/attention/test_streams.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from ..core.subjects import DEFAULT_SIGNAL

Item = TypeVar("Item")
Result = TypeVar("Result")
MAX_STREAMS = 2


def stream_threads(threads: int, device: str, signal: str) -> list[int]:
    """Torch's intra-op threads for each model stream: two streams splitting ``threads`` for the attention signal
    on a CPU; one stream of all of them on a GPU (the writer does not compete with the model there), with one
    thread, and for the other signals, whose maps need state kept across one forward pass (the norm signal records
    each layer's value vectors)."""
    threads = max(1, threads)
    if device != "cpu" or signal != DEFAULT_SIGNAL or threads < MAX_STREAMS:
        return [threads]
    return [threads // MAX_STREAMS + (stream < threads % MAX_STREAMS) for stream in range(MAX_STREAMS)]


def in_order(compute: Callable[[Item], Result], items: Sequence[Item], threads: list[int]) -> Iterator[Result]:
    """``compute(item)`` for each item, yielded in the items' order, by ``len(threads)`` streams whose torch
    intra-op threads are ``threads``; each stream is at most one item ahead of the consumer, so that memory holds
    no more than one item's result per stream. One stream computes in the calling thread."""
    import torch

    if len(threads) == 1:
        torch.set_num_threads(threads[0])
        yield from map(compute, items)
        return
    shares = itertools.count()

    def start_stream() -> None:
        # Each stream's thread sets its own share: torch's OpenMP thread count is per thread. Torch first gives a
        # thread the count last set by any thread, when it first asks for it: asked first, it cannot undo this one.
        torch.get_num_threads()
        torch.set_num_threads(threads[next(shares)])

    with ThreadPoolExecutor(max_workers=len(threads), thread_name_prefix="model-stream",
                            initializer=start_stream) as streams:
        started: list[Future] = [streams.submit(compute, item) for item in items[:len(threads)]]
        try:
            for position in range(len(items)):
                result = started[position].result()
                started[position] = None  # the consumer holds it now
                if position + len(threads) < len(items):
                    started.append(streams.submit(compute, items[position + len(threads)]))
                yield result
        finally:
            for future in started:
                if future is not None:
                    future.cancel()
    torch.set_num_threads(sum(threads))  # the calling thread's count, as it was asked for
