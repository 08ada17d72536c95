"""A pool of worker threads for the volume binds: each job goes straight to the most recently
idle worker, and threads start only as the work needs them.

The volume binder starts one job per pod with claims to bind (its requests wait on the API
server and on the claims' provisioning). ``concurrent.futures.ThreadPoolExecutor`` costs more
per job than the job's own Python work around its request: a ``Future`` (a ``Condition`` and
its lock), a work item, a queue, and on every submit a ``Semaphore`` (written in Python)
asked whether a worker is idle; and its idle workers wait on one queue, so successive jobs go
round all of them (each with its own connection, its own cold stack). Here a job goes to the
most recently idle worker through that worker's own lock (one C call on each side), so under
light load one or two workers do every job on warm connections, and more start (up to
``size``) only while every one is busy; jobs that find no idle worker wait in order in a
backlog, which busy workers drain before going idle.

A job that raises is logged and the worker carries on. Threads are daemons: the volume
binder's ``shutdown`` is what waits for jobs in flight.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from policyengine.controller.logs import get_logger

log = get_logger(__name__)

Job = Callable[[], None]


class _Worker:
    __slots__ = ("job", "wake")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.wake = threading.Lock()  # held while idle; released to hand over ``job``
        self.wake.acquire()


class WorkerPool:
    """Up to ``size`` threads named ``{name}_{n}`` running submitted jobs (module docstring)."""

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # the most recently idle last
        self._backlog: deque[Job] = deque()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, job: Job) -> bool:
        """Run ``job`` on a worker; False (and nothing runs) once shut down."""
        with self._lock:
            if self._closed:
                return False
            if self._idle:
                worker = self._idle.pop()
                worker.job = job
                worker.wake.release()
                return True
            self._backlog.append(job)
            if len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._run,
                    args=(_Worker(),),
                    name=f"{self._name}_{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
        return True

    def threads(self) -> int:
        """How many worker threads were started."""
        with self._lock:
            return len(self._threads)

    def idle(self) -> int:
        """How many workers wait for a job."""
        with self._lock:
            return len(self._idle)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Take no more jobs; the queued ones still run. Idle workers end at once, busy ones
        after the backlog; with ``wait``, join them (up to ``timeout`` each)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            threads = list(self._threads)
        for worker in idle:
            worker.job = None
            worker.wake.release()
        if wait:
            current = threading.current_thread()
            for thread in threads:
                if thread is not current:
                    thread.join(timeout)

    def _run(self, worker: _Worker) -> None:
        while True:
            with self._lock:
                if self._backlog:
                    job: Job | None = self._backlog.popleft()
                elif self._closed:
                    return
                else:
                    self._idle.append(worker)
                    job = None
            if job is None:
                worker.wake.acquire()  # until submit (or shutdown) hands over a job
                job = worker.job
                worker.job = None
                if job is None:
                    return
            try:
                job()
            except Exception:
                log.exception("worker job failed", pool=self._name)
