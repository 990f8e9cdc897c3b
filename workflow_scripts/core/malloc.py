"""The C allocator's settings for a process whose large arrays come and go batch after batch (extraction).

glibc's defaults hand large freed blocks back to the kernel: blocks of more than 32 MB are mapped and unmapped one
by one, freed memory at the top of the heap is trimmed, and each thread that allocates gets an arena of its own,
whose heaps are unmapped once empty. A forward pass that keeps every layer's attention weights (batch x heads x
T x T, float32) then takes its memory from the kernel afresh at every batch, and each new page costs a page fault:
on the 2-core machine of docs/attention.md, 0.6-2.5 s of system time in 300 examples, more than the writing of the
dump's bytes. With one arena, no mapping of single blocks and no trimming, freed memory is reused by the next batch:
the process keeps the peak of one batch's memory, which does not grow with the examples.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# Larger than any block a batch allocates, within mallopt's int.
KEEP_BELOW_BYTES = 1 << 30
# A thread arena's heaps are 64 MB; with this much padding an emptied one is kept, not unmapped.
THREAD_HEAP_BYTES = 1 << 27


def reuse_freed_memory() -> bool:
    """Set glibc's allocator to keep freed memory for reuse (see the module's doc). Best called before the process
    starts threads: threads that allocated before keep arenas of their own, and a new thread may be given one of
    them; the top padding makes those, too, keep their emptied heaps (blocks over a heap's 64 MB are still mapped
    one by one there). Returns False where the C library is not glibc (macOS, musl): the defaults then stand, and
    only speed differs."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = {M_ARENA_MAX: 1, M_MMAP_THRESHOLD: KEEP_BELOW_BYTES, M_TRIM_THRESHOLD: KEEP_BELOW_BYTES,
                M_TOP_PAD: THREAD_HEAP_BYTES}
    refused = [param for param, value in settings.items() if mallopt(param, value) != 1]
    if refused:
        log.debug("the C library refused mallopt parameter(s) %s: their defaults stand", refused)
    return not refused
