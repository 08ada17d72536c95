"""The scheduling queue: order, backoff, unschedulable moves, in-flight updates.

A fake clock drives every timing; ``pop(timeout=0)`` only looks, so no test sleeps.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import pytest

from policyengine.controller.queue import (
    ACTIVE,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    NODE_ADD,
    UNSCHEDULABLE,
    SchedulingQueue,
    spec_changed,
)
from policyengine.model.frozen import FrozenDict
from tests.controller.builders import pod


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def q(clock: Clock) -> SchedulingQueue:
    return SchedulingQueue(clock=clock)


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (item := q.pop(timeout=0)) is not None:
        out.append(item.pod.name)
        q.done(item.key)
    return out


@dataclass(frozen=True)
class OrderCase:
    name: str
    pods: list[tuple[str, int, str]]  # name, priority, creationTimestamp
    expect: list[str]


ORDER_CASES = [
    OrderCase(
        "priority first",
        [("low", 0, "2026-01-01T00:00:00Z"), ("high", 100, "2026-01-02T00:00:00Z")],
        ["high", "low"],
    ),
    OrderCase(
        "then oldest",
        [("young", 5, "2026-01-02T00:00:00Z"), ("old", 5, "2026-01-01T00:00:00Z")],
        ["old", "young"],
    ),
    OrderCase(
        "then arrival",
        [("a", 0, "2026-01-01T00:00:00Z"), ("b", 0, "2026-01-01T00:00:00Z")],
        ["a", "b"],
    ),
    OrderCase(
        "negative priority last",
        [("neg", -10, "2025-01-01T00:00:00Z"), ("zero", 0, "2026-01-01T00:00:00Z")],
        ["zero", "neg"],
    ),
]


@pytest.mark.parametrize("case", ORDER_CASES, ids=lambda c: c.name)
def test_active_order(q: SchedulingQueue, case: OrderCase) -> None:
    for name, priority, created in case.pods:
        q.add(pod(name, priority=priority), created)
    assert drain(q) == case.expect


def test_priority_raised_while_queued_reorders(q: SchedulingQueue) -> None:
    q.add(pod("a"), "2026-01-01T00:00:00Z")
    q.add(pod("b"), "2026-01-02T00:00:00Z")
    q.update(pod("b", priority=10))
    assert drain(q) == ["b", "a"]


@pytest.mark.parametrize(
    ("failures", "backoff"),
    [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)],
)
def test_backoff_doubles_from_one_second_to_ten(
    q: SchedulingQueue, clock: Clock, failures: int, backoff: float
) -> None:
    q.add(pod("p"))
    for attempt in range(failures):
        item = q.pop(timeout=0)
        assert item is not None, f"attempt {attempt + 1} not ready"
        q.add_backoff(item)
        if attempt < failures - 1:
            clock.advance(q.backoff_duration(item))
    assert q.where("default/p") == BACKOFF
    clock.advance(backoff - 0.01)
    assert q.pop(timeout=0) is None
    clock.advance(0.02)
    item = q.pop(timeout=0)
    assert item is not None and item.attempts == failures + 1


def test_unschedulable_waits_for_an_event(q: SchedulingQueue, clock: Clock) -> None:
    q.add(pod("p"))
    item = q.pop(timeout=0)
    assert item is not None
    q.add_unschedulable(item)
    assert q.where("default/p") == UNSCHEDULABLE
    clock.advance(60)
    assert q.pop(timeout=0) is None  # no event, no timeout yet: stays parked
    assert q.move_all(NODE_ADD) == 1
    assert q.where("default/p") == ACTIVE  # its 1 s backoff is long over
    assert drain(q) == ["p"]


def test_moved_pod_still_backing_off_goes_to_backoff(q: SchedulingQueue, clock: Clock) -> None:
    q.add(pod("p"))
    item = q.pop(timeout=0)
    assert item is not None
    q.add_unschedulable(item)
    clock.advance(0.5)
    q.move_all(ASSIGNED_POD_DELETE)
    assert q.where("default/p") == BACKOFF
    clock.advance(0.5)  # the backoff counts from the failure, not from the move
    assert drain(q) == ["p"]


def test_a_policy_change_retries_unschedulable_and_backing_off_pods_at_once(
    q: SchedulingQueue, clock: Clock
) -> None:
    for name in ("parked", "backing"):
        q.add(pod(name))
    parked, backing = q.pop(timeout=0), q.pop(timeout=0)
    assert parked is not None and backing is not None
    q.add_unschedulable(parked)
    q.add_backoff(backing)
    assert (q.where("default/parked"), q.where("default/backing")) == (UNSCHEDULABLE, BACKOFF)
    assert q.retry_all_now("PolicyChange") == 2
    # no time has passed: the old policy's backoff does not hold them back
    assert sorted(drain(q)) == ["backing", "parked"]
    clock.advance(20)
    assert q.pop(timeout=0) is None  # the stale backoff entry does not bring one back twice


def test_unschedulable_times_out_after_five_minutes(q: SchedulingQueue, clock: Clock) -> None:
    q.add(pod("p"))
    item = q.pop(timeout=0)
    assert item is not None
    q.add_unschedulable(item)
    clock.advance(299)
    assert q.pop(timeout=0) is None
    clock.advance(1)
    assert drain(q) == ["p"]


def test_move_with_predicate_moves_only_selected(q: SchedulingQueue, clock: Clock) -> None:
    for name in ("a", "b"):
        q.add(pod(name))
    for _ in range(2):
        item = q.pop(timeout=0)
        assert item is not None
        q.add_unschedulable(item)
    clock.advance(5)
    assert q.move_all(ASSIGNED_POD_ADD, lambda p: p.name == "b") == 1
    assert (q.where("default/a"), q.where("default/b")) == (UNSCHEDULABLE, ACTIVE)


def test_event_during_cycle_sends_unschedulable_pod_to_backoff(q: SchedulingQueue) -> None:
    """The snapshot it failed on is stale: parking it would miss the node that just came."""
    q.add(pod("p"))
    item = q.pop(timeout=0)
    assert item is not None
    q.move_all(NODE_ADD)  # arrives while p is in flight
    q.add_unschedulable(item)
    assert q.where("default/p") == BACKOFF


def test_update_during_cycle_is_kept(q: SchedulingQueue) -> None:
    q.add(pod("p"))
    item = q.pop(timeout=0)
    assert item is not None
    assert q.where("default/p") == IN_FLIGHT
    q.update(pod("p", labels={"new": "label"}))
    assert q.where("default/p") == IN_FLIGHT  # not queued twice
    q.add_unschedulable(item)
    requeued = q.get("default/p")
    assert requeued is not None and requeued.pod.labels["new"] == "label"
    assert q.where("default/p") == BACKOFF  # its spec changed: worth another try


def test_status_only_update_does_not_retry_an_unschedulable_pod(
    q: SchedulingQueue, clock: Clock
) -> None:
    original = pod("p")
    q.add(original)
    item = q.pop(timeout=0)
    assert item is not None
    q.add_unschedulable(item)
    clock.advance(30)
    q.update(replace(original, resource_version="99", phase="Pending"))
    assert q.where("default/p") == UNSCHEDULABLE
    q.update(replace(original, labels=FrozenDict({"fixed": "yes"})))
    assert q.where("default/p") == ACTIVE


@pytest.mark.parametrize(
    "where",
    [ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT],
    ids=["ACTIVE", "BACKOFF", "UNSCHEDULABLE", "IN_FLIGHT"],
)
def test_delete_leaves_every_sub_queue(q: SchedulingQueue, where: str) -> None:
    q.add(pod("p"))
    if where != ACTIVE:
        item = q.pop(timeout=0)
        assert item is not None
        if where == BACKOFF:
            q.add_backoff(item)
        elif where == UNSCHEDULABLE:
            q.add_unschedulable(item)
    assert q.where("default/p") == where
    q.delete("default/p")
    if where == IN_FLIGHT:
        q.add_backoff(item)  # the cycle ends after the delete: nothing is requeued
    assert q.where("default/p") is None
    assert len(q) == 0


def test_pod_recreated_while_in_flight_is_queued_as_new(q: SchedulingQueue) -> None:
    q.add(pod("p", uid="old"))
    item = q.pop(timeout=0)
    assert item is not None
    q.delete("default/p")
    q.add(pod("p", uid="new"))
    q.done(item.key)  # e.g. the old pod's bind answered 409
    again = q.pop(timeout=0)
    assert again is not None and again.pod.uid == "new" and again.attempts == 1


def test_depths_and_close(q: SchedulingQueue) -> None:
    q.add(pod("a"))
    q.add(pod("b"))
    item = q.pop(timeout=0)
    assert item is not None
    q.add_backoff(item)
    assert q.depths() == {ACTIVE: 1, BACKOFF: 1, UNSCHEDULABLE: 0, GATED: 0}
    q.close()
    assert q.pop(timeout=None) is None


@pytest.mark.parametrize(
    ("queued", "woken", "expected"),
    [
        ([], "before", [None]),
        ([], "while-waiting", [None]),
        (["a"], "before", ["a", None]),  # a ready pod still comes first; the wake is kept
    ],
    ids=["before", "while-waiting", "ready-pod-first"],
)
def test_a_wake_ends_the_wait_of_a_pop_with_nothing_ready(
    q: SchedulingQueue, queued: list[str], woken: str, expected: list[str | None]
) -> None:
    for name in queued:
        q.add(pod(name))
    if woken == "before":
        q.wake()
    else:
        threading.Timer(0.05, q.wake).start()
    got: list[str | None] = []

    def pops() -> None:
        # No timeout: with nothing ready, only the wake can end a pop's wait.
        for _ in expected:
            item = q.pop(timeout=None)
            got.append(item.pod.name if item is not None else None)

    popper = threading.Thread(target=pops, daemon=True)
    popper.start()
    popper.join(30)  # a bound on a hang, not a measure of speed
    assert not popper.is_alive()
    assert got == expected


def test_a_gated_pod_waits_until_its_last_gate_is_removed(q: SchedulingQueue) -> None:
    """kube-scheduler's SchedulingGates PreEnqueue: never tried while gated, then queued."""
    gated = replace(pod("g", priority=10), scheduling_gates=("example.com/a", "example.com/b"))
    q.add(gated)
    q.add(pod("plain"))
    assert q.where("default/g") == GATED
    assert q.depths() == {ACTIVE: 1, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 1}
    assert len(q) == 2
    assert drain(q) == ["plain"]
    q.update(replace(gated, scheduling_gates=("example.com/b",)))  # one gate left
    assert q.where("default/g") == GATED
    assert q.move_all(NODE_ADD) == 0  # cluster events do not reach gated pods
    assert drain(q) == []
    q.update(replace(gated, scheduling_gates=()))
    assert q.where("default/g") == ACTIVE
    assert drain(q) == ["g"]


def test_a_gated_pod_deleted_leaves_the_queue(q: SchedulingQueue) -> None:
    q.add(replace(pod("g"), scheduling_gates=("x",)))
    q.delete("default/g")
    assert q.where("default/g") is None and len(q) == 0


def test_spec_changed_ignores_status() -> None:
    p = pod("p")
    assert not spec_changed(p, replace(p, resource_version="7", status_qos_class="Burstable"))
    assert spec_changed(p, replace(p, priority=3))
