"""The worker pool: every job runs once, the most recently idle worker takes the next
job, threads start only while all are busy (up to the size), a backlog runs in order, a
failing job does not stop its worker, and shutdown refuses new jobs but runs queued ones."""

from __future__ import annotations

import threading

import pytest

from policyengine.controller.workers import WorkerPool
from tests.controller.builders import wait_until

WAIT = 10.0


def _settle(pool: WorkerPool) -> None:
    """Wait until every started worker is idle."""
    wait_until("idle workers", lambda: pool.idle() >= pool.threads(), pool.idle, timeout=WAIT)


def _run_and_wait(pool: WorkerPool, fail: bool = False) -> str:
    """Submit one job, wait until its worker is idle again; the name of its thread."""
    ran: list[str] = []

    def work() -> None:
        ran.append(threading.current_thread().name)
        if fail:
            raise RuntimeError("job failed")

    assert pool.submit(work)
    wait_until("the job to run", lambda: ran, timeout=WAIT)
    _settle(pool)
    return ran[0]


@pytest.mark.parametrize("size", [1, 4, 16])
def test_jobs_one_at_a_time_run_on_one_thread(size: int) -> None:
    pool = WorkerPool(size, "bind")
    assert {_run_and_wait(pool) for _ in range(20)} == {"bind_0"}
    assert pool.threads() == 1
    pool.shutdown()


@pytest.mark.parametrize("size", [2, 4])
def test_the_most_recently_idle_worker_takes_the_next_job(size: int) -> None:
    pool = WorkerPool(size, "bind")
    release = threading.Event()
    started = threading.Semaphore(0)
    finished: list[str] = []

    def hold() -> None:
        started.release()
        assert release.wait(WAIT)

    for _ in range(size):
        assert pool.submit(hold)
    for _ in range(size):
        assert started.acquire(timeout=WAIT)
    release.set()
    _settle(pool)
    assert pool.threads() == size
    finished = [_run_and_wait(pool) for _ in range(10)]
    assert len(set(finished)) == 1
    pool.shutdown()


@pytest.mark.parametrize(("size", "jobs"), [(1, 5), (3, 3), (3, 8), (16, 20)])
def test_busy_workers_grow_to_the_size_and_the_backlog_runs_in_order(size: int, jobs: int) -> None:
    pool = WorkerPool(size, "bind")
    release = threading.Event()
    started = threading.Semaphore(0)
    order: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        started.release()
        assert release.wait(WAIT)
        with lock:
            order.append(i)

    for i in range(jobs):
        assert pool.submit(lambda i=i: job(i))  # type: ignore[misc]
    for _ in range(min(size, jobs)):
        assert started.acquire(timeout=WAIT)  # that many run at once
    assert pool.threads() == min(size, jobs)
    release.set()
    pool.shutdown(wait=True)
    assert sorted(order) == list(range(jobs))
    if size == 1:
        assert order == list(range(jobs))  # the backlog, in submission order


def test_a_failing_job_does_not_stop_its_worker() -> None:
    pool = WorkerPool(1, "bind")
    assert _run_and_wait(pool, fail=True) == "bind_0"
    assert _run_and_wait(pool) == "bind_0"
    assert pool.threads() == 1
    pool.shutdown()


def test_shutdown_runs_what_is_queued_and_refuses_more() -> None:
    pool = WorkerPool(1, "bind")
    release = threading.Event()
    ran: list[str] = []

    def first() -> None:
        assert release.wait(WAIT)
        ran.append("first")

    assert pool.submit(first)
    assert pool.submit(lambda: ran.append("queued"))
    closer = threading.Thread(target=pool.shutdown)
    closer.start()
    release.set()
    closer.join(WAIT)
    assert not closer.is_alive()
    assert ran == ["first", "queued"]
    assert pool.submit(lambda: ran.append("late")) is False
    assert ran == ["first", "queued"]


def test_shutdown_of_an_idle_pool_ends_its_threads() -> None:
    pool = WorkerPool(4, "bind")
    seen: list[threading.Thread] = []
    done = threading.Event()

    def job() -> None:
        seen.append(threading.current_thread())
        done.set()

    assert pool.submit(job)
    assert done.wait(WAIT)
    pool.shutdown(wait=True)
    assert len(seen) == 1 and not seen[0].is_alive()
