"""One background thread that runs queued jobs in order: best-effort API writes off the loop.

Events, ``PodScheduled`` condition patches and PodGroup status patches are feedback, not
decisions: the scheduling loop must never wait on them, and one failing must not stop the next.
Their writers queue a job here and go on; the thread runs the jobs in the order queued, and a
job that raises is logged and dropped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from policyengine.controller.logs import get_logger

log = get_logger(__name__)

Job = Callable[[], None]


class JobThread:
    """A named daemon thread draining a queue of jobs (module docstring)."""

    def __init__(self, name: str, failure: str) -> None:
        self._name = name
        self._failure = failure  # the log line of a job that raised
        # None: stop. A SimpleQueue (one C call each way), not a Queue (a Condition and its
        # locks in Python): a job thread may take one job per pod.
        self._work: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Run what is queued (up to ``timeout``), then stop."""
        if self._thread is None:
            return
        self._work.put(None)
        self._thread.join(timeout)
        self._thread = None

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every job queued so far has run (for tests)."""
        done = threading.Event()
        self._work.put(done.set)
        return done.wait(timeout)

    def submit(self, job: Job) -> None:
        self._work.put(job)

    def _run(self) -> None:
        while True:
            job = self._work.get()
            if job is None:
                return
            try:
                job()
            except Exception:
                log.exception(self._failure)
