"""The allocator's settings for extraction (workflow_scripts/core/malloc.py): a freed batch's memory is reused by
the next one, in the main thread and in a thread started after the settings, instead of being faulted in afresh."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from support.paths import REPO

# Allocates 100 MB twice (a batch, then the next one), in the main thread and in a new thread, and prints the page
# faults of each second allocation. 100 MB is above glibc's largest dynamic mmap threshold (32 MB) and a thread
# arena's 64 MB heaps: by default each such block is mapped afresh, and every one of its pages faults again.
# malloc and memset through ctypes, as torch allocates a tensor's memory (numpy would ask for huge pages).
PROBE = """
import ctypes, json, resource, sys, threading
from workflow_scripts.core.malloc import reuse_freed_memory
tuned = reuse_freed_memory() if sys.argv[1] == "tuned" else None
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, (ctypes.c_size_t,), (ctypes.c_void_p,)

def batch():
    block = libc.malloc(100_000_000)
    ctypes.memset(block, 1, 100_000_000)
    libc.free(block)

def second_batch_faults():
    batch()
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    batch()
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before

result = {"tuned": tuned, "main": second_batch_faults()}
worker = threading.Thread(target=lambda: result.update(thread=second_batch_faults()))
worker.start(); worker.join()
print(json.dumps(result))
"""
PAGES = 100_000_000 // 4096


def probe(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's mallopt; elsewhere they are "
                    "left at the C library's defaults")
def test_a_freed_batch_is_reused_not_faulted_in_again():
    default, tuned = probe("default"), probe("tuned")
    assert tuned["tuned"] is True
    # By default the second 100 MB faults in (nearly) every page again, in either thread.
    assert default["main"] > PAGES * 0.9 and default["thread"] > PAGES * 0.9
    # Tuned, it reuses the freed pages: a handful of faults (bookkeeping), not one per page.
    assert tuned["main"] < PAGES * 0.05 and tuned["thread"] < PAGES * 0.05
