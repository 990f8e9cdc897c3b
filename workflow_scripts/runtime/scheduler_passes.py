"""Snakemake's scheduler passes a run makes while its jobs wait (docs/contributing.md, "Snakemake's own cost").

Snakemake 9's job scheduler (``snakemake/scheduling/job_scheduler.py``) wakes on a semaphore: a finishing job releases
it, and, with a job rate limit (every local run has one: ``--max-jobs-per-timespan``, 100 per second by default), so
does a timer that every pass starts (``_schedule_reevalutation``) so that jobs the limit held back are started once the
timespan has passed. Each pass starts one such timer whatever woke it, and each timer's pass starts the next: every
finished job adds a chain of one pass per second that lasts until the run ends. A study's 400th job makes its main
process pass 400 times a second over the ready jobs (their input files' sizes read from disk, the scheduler's
selection), for nothing: the cores are what hold the jobs back, and a finishing job wakes the scheduler anyway.

:func:`one_pending_pass` mends the run's scheduler in the Snakefile's ``onstart`` (after Snakemake made it, before
its first pass): a pass starts a timer only where the rate limit held a job back (no free slot left), and never a
second one while one is pending; the timer does not keep the process alive at its end. The jobs start when they
would have: a pass a timer would have woken finds the same ready jobs and the same free cores as the pass their
finishing woke. ``ATLAS_SCHEDULER_PASSES=snakemake`` leaves Snakemake's own loop as it is (to measure it:
benchmarks/bench_scheduler.py).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

ENV = "ATLAS_SCHEDULER_PASSES"
# The private method the mend replaces (its name's spelling is Snakemake's); a Snakemake without it is left as it is.
METHOD = "_schedule_reevalutation"


def one_pending_pass(scheduler: Any) -> bool:
    """Replace ``scheduler``'s re-evaluation timer (module docstring); False where it is left as it is (the
    environment asks so, or the scheduler has no such method: another Snakemake)."""
    if os.environ.get(ENV) == "snakemake" or not callable(getattr(scheduler, METHOD, None)):
        return False
    pending = threading.Event()

    def wake() -> None:
        pending.clear()
        scheduler._open_jobs.release()

    def reevaluate(delay: float) -> None:
        limiter = getattr(scheduler, "job_rate_limiter", None)
        queued = getattr(getattr(scheduler.workflow, "dag", None), "queue_input_jobs", None)
        held_back = limiter is not None and limiter.get_free_jobs() == 0
        if not (held_back or queued) or pending.is_set():
            return  # a finishing job wakes the scheduler; or a pass is due already
        pending.set()
        timer = threading.Timer(delay, wake)
        timer.daemon = True
        timer.start()

    setattr(scheduler, METHOD, reevaluate)
    return True
