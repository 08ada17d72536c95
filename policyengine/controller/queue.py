"""The scheduling queue: which pending pod is tried next, and when a failed one is tried again.

A loop that simply retried every pending pod would spin on pods that cannot fit and starve the
ones that can; one that never retried would strand pods when the cluster changes. This module
reproduces kube-scheduler's ``PriorityQueue`` so that the loop behaves the way operators
expect:

* **activeQ** — pods ready to be tried, highest ``spec.priority`` first, then the oldest
  (``metadata.creationTimestamp``), then arrival order.
* **backoffQ** — pods whose last attempt failed with an error (or that became schedulable
  again while still inside their backoff window). A pod waits ``1 s × 2^(attempts−1)``,
  capped at 10 s, counted from the moment it failed.
* **unschedulable pool** — pods the policy could place nowhere. They wait for a cluster event
  that could make them fit, or at most 5 minutes. Which events move which pods:

  ==========================  ==============================================================
  ``NodeAdd``                 every unschedulable pod (a new node may fit anything)
  ``NodeUpdate``              every unschedulable pod (labels, taints, allocatable or
                              schedulability changed; the caller filters out no-op updates)
  ``AssignedPodDelete``       every unschedulable pod (capacity, ports, anti-affinity freed)
  ``AssignedPodAdd``          only pods with pod (anti-)affinity terms (a new peer may
                              satisfy a required affinity term)
  ``PodUpdate``               the updated pod itself, when its spec or labels changed
  ``UnschedulableTimeout``    a pod that has waited 5 minutes
  ==========================  ==============================================================

  A moved pod goes to backoffQ while its backoff window lasts, otherwise to activeQ.
* **gated** — pods with ``spec.schedulingGates`` (kube-scheduler's SchedulingGates
  PreEnqueue): never tried and never reported unschedulable (the API server already marks
  them ``PodScheduled=False``, ``SchedulingGated``). Gates are set at creation and only ever
  removed: the update that removes the last one moves the pod to activeQ.

**In flight.** A popped pod is *in flight* until the loop reports its fate (``done``,
``add_unschedulable``, ``add_backoff``) — through its whole binding cycle. Updates that arrive
meanwhile are kept and the requeued pod carries the newest object; a delete (or a bind by
someone else) meanwhile means it is not requeued; a pod recreated under the same name meanwhile
is queued as the new pod it is. If a move event happened during the pod's cycle, an
unschedulable verdict sends it to backoffQ rather than the pool, because the snapshot it failed
against is already stale (kube-scheduler's ``moveRequestCycle``).

Thread-safe: one lock and one condition variable; ``pop`` blocks on the condition and wakes up
for new pods, for backoff expiries and for the unschedulable timeout.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from policyengine.controller.samefields import equal_except
from policyengine.model.objects import Pod

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE = 300.0

NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
POD_UPDATE = "PodUpdate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
IN_FLIGHT = "in_flight"
GATED = "gated"


@dataclass(eq=False)
class QueuedPod:
    """A pod in the queue and its scheduling history."""

    pod: Pod
    created: str = ""  # metadata.creationTimestamp; RFC 3339 text sorts chronologically
    attempts: int = 0  # how many times it was popped
    enqueued_at: float = 0.0  # when it last entered a sub-queue (backoff counts from here)
    first_popped_at: float | None = None  # for end-to-end latency
    cycle: int = 0  # the scheduling cycle of its latest pop

    @property
    def key(self) -> str:
        return self.pod.key


@dataclass(eq=False)
class _InFlight:
    item: QueuedPod
    latest: Pod | None = None  # newest object seen while in flight
    spec_changed: bool = False
    gone: bool = False  # deleted, or bound by someone else
    replacement: QueuedPod | None = None  # a new pod (other uid) under the same name


# The fields of a pod that a status update (or any write) moves without changing its verdict.
_STATUS_FIELDS = frozenset(
    {
        "resource_version",
        "phase",
        "status_qos_class",
        "nominated_node_name",
        "preempted_by_scheduler",
        "resize_infeasible",
    }
)


def spec_changed(old: Pod, new: Pod) -> bool:
    """Whether an update could change the scheduling verdict: anything but status and the
    resourceVersion (our own PodScheduled patch must not make a pod retry itself)."""
    return not equal_except(old, new, _STATUS_FIELDS)


class _HeapEntry(NamedTuple):
    # A tuple, so the heap compares entries in C: by sort_key, then seq (unique per push, so
    # the key itself is never compared). Every pod is pushed and popped once at least.
    sort_key: tuple[object, ...]
    seq: int
    key: str


class SchedulingQueue:
    """kube-scheduler's priority queue (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_unschedulable: float = MAX_UNSCHEDULABLE,
    ) -> None:
        self._clock = clock
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_unschedulable = max_unschedulable
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._seq = 0
        # Heaps use lazy deletion: an entry is live only while the dict maps its key to its seq.
        self._active: dict[str, tuple[int, QueuedPod]] = {}
        self._active_heap: list[_HeapEntry] = []
        self._backoff: dict[str, tuple[int, QueuedPod]] = {}
        self._backoff_heap: list[_HeapEntry] = []
        self._unschedulable: dict[str, QueuedPod] = {}
        self._gated: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, _InFlight] = {}
        self._cycle = 0
        self._move_cycle = -1
        self._closed = False
        self._woken = False  # wake(): the next pop that would wait returns None

    # ------------------------------------------------------------------ informer side

    def add(self, pod: Pod, created: str = "") -> None:
        """A pending pod appeared (or reappeared after a relist)."""
        self.update(pod, created)

    def update(self, pod: Pod, created: str = "") -> None:
        """A pending pod changed; an unknown pod is added."""
        key = pod.key
        with self._cond:
            flight = self._in_flight.get(key)
            if flight is not None:
                self._note_in_flight_update(flight, pod, created)
                return
            gated = self._gated.get(key)
            if pod.scheduling_gates:
                if gated is not None:
                    gated.pod = pod
                else:  # gates come with the pod's creation: it is in no other sub-queue
                    self._gated[key] = QueuedPod(pod, created, enqueued_at=self._clock())
                return
            if gated is not None:  # the last gate is gone: it may be tried now
                del self._gated[key]
                gated.pod = pod
                gated.enqueued_at = self._clock()
                self._push_active(gated)
                return
            if key in self._active:
                _, item = self._active[key]
                old = item.pod
                item.pod = pod
                if pod.priority != old.priority:
                    self._push_active(item)  # the old heap entry goes stale
                return
            if key in self._backoff:
                self._backoff[key][1].pod = pod
                return
            item_u = self._unschedulable.get(key)
            if item_u is not None:
                old = item_u.pod
                item_u.pod = pod
                if spec_changed(old, pod):
                    del self._unschedulable[key]
                    self._requeue_moved(item_u)
                return
            self._push_active(QueuedPod(pod, created, enqueued_at=self._clock()))

    def delete(self, key: str) -> None:
        """The pod was deleted or bound (by anyone): it leaves every sub-queue."""
        with self._cond:
            self._active.pop(key, None)
            self._backoff.pop(key, None)
            self._unschedulable.pop(key, None)
            self._gated.pop(key, None)
            flight = self._in_flight.get(key)
            if flight is not None:
                flight.gone = True
                flight.replacement = None

    def move_all(self, event: str, predicate: Callable[[Pod], bool] | None = None) -> int:
        """A cluster event that may make unschedulable pods fit: move them (all, or those the
        predicate selects) to activeQ, or to backoffQ while they are backing off."""
        with self._cond:
            self._move_cycle = self._cycle
            moved = [
                item
                for item in self._unschedulable.values()
                if predicate is None or predicate(item.pod)
            ]
            for item in moved:
                del self._unschedulable[item.key]
                self._requeue_moved(item)
            return len(moved)

    def retry_all_now(self, event: str) -> int:
        """Every unschedulable or backing-off pod straight to activeQ.

        For a new policy version: the failures that earned those pods their backoff were
        verdicts of the old policy, so they say nothing about the new one.
        """
        with self._cond:
            self._move_cycle = self._cycle
            moved = [*self._unschedulable.values(), *(item for _, item in self._backoff.values())]
            self._unschedulable.clear()
            self._backoff.clear()  # their heap entries go stale and are skipped
            for item in moved:
                self._push_active(item)
            self._cond.notify()
            return len(moved)

    # ------------------------------------------------------------------ loop side

    def pop(self, timeout: float | None = None) -> QueuedPod | None:
        """The next pod to schedule (now in flight); None on timeout or once closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._flush_locked()
                item = self._pop_active()
                if item is not None:
                    self._cycle += 1
                    item.cycle = self._cycle
                    item.attempts += 1
                    if item.first_popped_at is None:
                        item.first_popped_at = self._clock()
                    self._in_flight[item.key] = _InFlight(item)
                    return item
                if self._woken:
                    self._woken = False
                    return None
                wait = self._next_wakeup()
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def wake(self) -> None:
        """Make a ``pop`` that is waiting (or the next one, if none is) return None at once
        when no pod is ready: the loop has other work (an answer to read)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def done(self, key: str) -> None:
        """The pod's cycle ended for good (bound, or dropped)."""
        with self._cond:
            flight = self._in_flight.pop(key, None)
            if flight is not None and flight.replacement is not None:
                self._push_active(flight.replacement)

    def add_unschedulable(self, item: QueuedPod) -> None:
        """The policy placed the pod nowhere: park it until an event could change that."""
        with self._cond:
            target, changed = self._end_flight(item)
            if target is None:
                return
            if changed or self._move_cycle >= target.cycle:
                self._push_backoff(target)
            else:
                target.enqueued_at = self._clock()
                self._unschedulable.pop(target.key, None)  # keep the pool in entry order
                self._unschedulable[target.key] = target

    def add_backoff(self, item: QueuedPod) -> None:
        """The attempt failed with an error (or its bind did): retry after the backoff."""
        with self._cond:
            target, _ = self._end_flight(item)
            if target is not None:
                self._push_backoff(target)

    def flush(self) -> None:
        """Move due backoffs and timed-out unschedulable pods (``pop`` does this itself)."""
        with self._cond:
            self._flush_locked()

    def close(self) -> None:
        """Wake every ``pop`` and make it return None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ inspection

    def depths(self) -> dict[str, int]:
        with self._lock:
            return {
                ACTIVE: len(self._active),
                BACKOFF: len(self._backoff),
                UNSCHEDULABLE: len(self._unschedulable),
                GATED: len(self._gated),
            }

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def where(self, key: str) -> str | None:
        """Which sub-queue holds the pod (``in_flight`` while popped), or None."""
        with self._lock:
            if key in self._in_flight:
                return IN_FLIGHT
            if key in self._active:
                return ACTIVE
            if key in self._backoff:
                return BACKOFF
            if key in self._unschedulable:
                return UNSCHEDULABLE
            if key in self._gated:
                return GATED
            return None

    def get(self, key: str) -> QueuedPod | None:
        with self._lock:
            if key in self._in_flight:
                return self._in_flight[key].item
            for table in (self._active, self._backoff):
                if key in table:
                    return table[key][1]
            return self._unschedulable.get(key) or self._gated.get(key)

    def backoff_duration(self, item: QueuedPod) -> float:
        if item.attempts <= 0:
            return 0.0
        return min(self._initial_backoff * 2 ** (item.attempts - 1), self._max_backoff)

    def __len__(self) -> int:
        with self._lock:
            return (
                len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._gated)
            )

    # ------------------------------------------------------------------ internals (locked)

    def _note_in_flight_update(self, flight: _InFlight, pod: Pod, created: str) -> None:
        current = flight.latest or flight.item.pod
        if pod.uid and current.uid and pod.uid != current.uid:
            flight.replacement = QueuedPod(pod, created, enqueued_at=self._clock())
            return
        if flight.replacement is not None:
            flight.replacement.pod = pod
            return
        if spec_changed(current, pod):
            flight.spec_changed = True
        flight.latest = pod

    def _end_flight(self, item: QueuedPod) -> tuple[QueuedPod | None, bool]:
        """Close the in-flight record: the item to requeue (carrying its newest object) or
        None when the pod went away meanwhile, and whether its spec changed in flight."""
        flight = self._in_flight.pop(item.key, None)
        if flight is None:
            return item, False
        if flight.replacement is not None:
            self._push_active(flight.replacement)
            return None, False
        if flight.gone:
            return None, False
        if flight.latest is not None:
            item.pod = flight.latest
        return item, flight.spec_changed

    def _push_active(self, item: QueuedPod) -> None:
        self._seq += 1
        self._active[item.key] = (self._seq, item)
        heapq.heappush(
            self._active_heap,
            _HeapEntry((-item.pod.priority, item.created), self._seq, item.key),
        )
        self._cond.notify()

    def _pop_active(self) -> QueuedPod | None:
        while self._active_heap:
            entry = heapq.heappop(self._active_heap)
            live = self._active.get(entry.key)
            if live is not None and live[0] == entry.seq:
                del self._active[entry.key]
                return live[1]
        return None

    def _push_backoff(self, item: QueuedPod) -> None:
        item.enqueued_at = self._clock()
        self._seq += 1
        self._backoff[item.key] = (self._seq, item)
        expiry = item.enqueued_at + self.backoff_duration(item)
        heapq.heappush(self._backoff_heap, _HeapEntry((expiry,), self._seq, item.key))
        self._cond.notify()

    def _requeue_moved(self, item: QueuedPod) -> None:
        if self._clock() < item.enqueued_at + self.backoff_duration(item):
            # Keep its original failure time: the backoff window is not restarted.
            self._seq += 1
            self._backoff[item.key] = (self._seq, item)
            expiry = item.enqueued_at + self.backoff_duration(item)
            heapq.heappush(self._backoff_heap, _HeapEntry((expiry,), self._seq, item.key))
            self._cond.notify()
        else:
            self._push_active(item)

    def _flush_locked(self) -> None:
        now = self._clock()
        while self._backoff_heap:
            entry = self._backoff_heap[0]
            live = self._backoff.get(entry.key)
            if live is None or live[0] != entry.seq:
                heapq.heappop(self._backoff_heap)
                continue
            if entry.sort_key[0] > now:  # type: ignore[operator]
                break
            heapq.heappop(self._backoff_heap)
            del self._backoff[entry.key]
            self._push_active(live[1])
        # The pool is a dict in order of entry, so the oldest pods come first.
        while self._unschedulable:
            oldest = next(iter(self._unschedulable.values()))
            if now - oldest.enqueued_at < self._max_unschedulable:
                break
            del self._unschedulable[oldest.key]
            self._requeue_moved(oldest)

    def _next_wakeup(self) -> float | None:
        """Seconds until a backoff expires or an unschedulable pod times out (clock time)."""
        now = self._clock()
        times: list[float] = []
        while self._backoff_heap:
            entry = self._backoff_heap[0]
            live = self._backoff.get(entry.key)
            if live is None or live[0] != entry.seq:
                heapq.heappop(self._backoff_heap)
                continue
            times.append(float(entry.sort_key[0]))  # type: ignore[arg-type]
            break
        if self._unschedulable:
            oldest = next(iter(self._unschedulable.values()))
            times.append(oldest.enqueued_at + self._max_unschedulable)
        if not times:
            return None
        return max(0.0, min(times) - now) + 0.001
