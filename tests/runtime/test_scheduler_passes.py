"""The run's scheduler passes (workflow_scripts/runtime/scheduler_passes.py): a pass starts a timer only where the
job rate limit held a job back, never a second one while one is pending, and the timer does not outlive the run."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from workflow_scripts.runtime.scheduler_passes import ENV, METHOD, one_pending_pass


class Limiter:
    def __init__(self, free: int) -> None:
        self.free = free

    def get_free_jobs(self) -> int:
        return self.free


def scheduler(free: int, queued=()) -> SimpleNamespace:
    """A stand-in of Snakemake's JobScheduler: the parts the mend reads."""
    return SimpleNamespace(_open_jobs=threading.Semaphore(0), job_rate_limiter=Limiter(free),
                           workflow=SimpleNamespace(dag=SimpleNamespace(queue_input_jobs=list(queued))),
                           **{METHOD: lambda delay: pytest.fail("Snakemake's own timer was started")})


def wakes(found: SimpleNamespace, within: float) -> int:
    """How many passes the scheduler is woken for within ``within`` seconds."""
    count, deadline = 0, time.monotonic() + within
    while found._open_jobs.acquire(timeout=max(0.0, deadline - time.monotonic())):
        count += 1
    return count


def test_no_timer_while_the_rate_limit_holds_no_job_back():
    found = scheduler(free=5)
    assert one_pending_pass(found)
    for _ in range(10):
        getattr(found, METHOD)(0.01)
    assert wakes(found, 0.2) == 0  # the cores hold the jobs back: a finishing job wakes the scheduler


def test_one_pending_timer_where_the_limit_holds_jobs_back_and_it_lets_the_run_end():
    found = scheduler(free=0)
    assert one_pending_pass(found)
    for _ in range(10):  # ten passes, one timer
        getattr(found, METHOD)(0.05)
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert timers and all(t.daemon for t in timers)
    assert wakes(found, 0.4) == 1
    getattr(found, METHOD)(0.05)  # the pass it woke: the next timer
    assert wakes(found, 0.4) == 1


def test_queue_input_jobs_keep_their_timer_and_the_environment_or_another_snakemake_keep_snakemake_s(monkeypatch):
    found = scheduler(free=5, queued=["a job waiting for queue input"])
    assert one_pending_pass(found)
    getattr(found, METHOD)(0.01)
    assert wakes(found, 0.3) == 1
    monkeypatch.setenv(ENV, "snakemake")
    untouched = scheduler(free=0)
    original = getattr(untouched, METHOD)
    assert not one_pending_pass(untouched) and getattr(untouched, METHOD) is original
    monkeypatch.delenv(ENV)
    assert not one_pending_pass(SimpleNamespace(_open_jobs=threading.Semaphore(0)))  # no such method
