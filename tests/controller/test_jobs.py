"""The background job thread behind events and PodGroup status patches."""

from __future__ import annotations

from policyengine.controller.hooks import call_hook
from policyengine.controller.jobs import JobThread


def _boom() -> None:
    raise RuntimeError("boom")


def test_jobs_run_in_order_and_a_failing_one_does_not_stop_the_rest() -> None:
    ran: list[int] = []
    jobs = JobThread("test-jobs", "test job failed")
    jobs.start()
    jobs.submit(lambda: ran.append(1))
    jobs.submit(_boom)
    jobs.submit(lambda: ran.append(2))
    assert jobs.flush()
    assert ran == [1, 2]
    jobs.stop()


def test_stop_runs_what_is_queued_and_a_second_stop_is_harmless() -> None:
    ran: list[int] = []
    jobs = JobThread("test-jobs", "test job failed")
    jobs.start()
    for i in range(5):
        jobs.submit(lambda i=i: ran.append(i))
    jobs.stop()
    jobs.stop()
    assert ran == [0, 1, 2, 3, 4]


def test_a_failing_hook_is_swallowed() -> None:
    seen: list[str] = []
    call_hook(_boom)
    call_hook(seen.append, "ok")
    assert seen == ["ok"]
