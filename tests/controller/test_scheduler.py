"""The scheduler loop end to end: the real ``kubernetes`` client against the loopback server.

Every test seeds the server, runs the loop on a thread, waits (with a timeout) for a condition
on what the server saw, and asserts on the recorded traffic: bindings, events, status patches.
"""

from __future__ import annotations

import gc
import threading
from collections import Counter
from dataclasses import dataclass, replace

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller.hooks import SchedulerHooks
from policyengine.engine import heap
from tests.controller.builders import (
    FAST,
    SCHEDULER,
    RunningScheduler,
    kube_default,
    node_obj,
    over_allocated,
    pod_obj,
    program_from,
)


def bound_exactly_once(server: LoopbackAPIServer, expected: set[str]) -> None:
    counts = Counter(f"{b.namespace}/{b.name}" for b in server.bindings())
    assert set(counts) == expected
    assert [key for key, n in counts.items() if n != 1] == []


def with_selector(obj: dict, selector: dict[str, str]) -> dict:
    obj["spec"]["nodeSelector"] = selector
    return obj


def test_500_pods_on_50_nodes_bound_exactly_once_and_as_the_policy_says(
    apiserver: LoopbackAPIServer,
) -> None:
    # 50 nodes × 4 CPU and 500 pods × 400m: exactly 10 per node, so a single overcommit or a
    # lost pod shows. The 100 high-priority pods must land in zone a (nodeSelector).
    for i in range(50):
        apiserver.create(node_obj(f"n{i:02}", labels={"zone": "a" if i < 25 else "b"}))
    zoned = {f"default/z{i:03}" for i in range(100)}
    for i in range(100):
        apiserver.create(with_selector(pod_obj(f"z{i:03}", cpu="400m", priority=10), {"zone": "a"}))
    for i in range(400):
        apiserver.create(pod_obj(f"p{i:03}", cpu="400m"))
    everyone = zoned | {f"default/p{i:03}" for i in range(400)}
    attempts: Counter[str] = Counter()
    lock = threading.Lock()

    def on_attempt(result: str, profile: str, seconds: float) -> None:
        with lock:
            attempts[result] += 1

    with RunningScheduler(apiserver, hooks=SchedulerHooks(on_attempt=on_attempt)) as rs:
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 500, timeout=40)
        assert rs.scheduler.events.flush()
    bound_exactly_once(apiserver, everyone)
    assert len(apiserver.binding_requests()) == 500  # never a second attempt
    assert over_allocated(apiserver) == {}
    per_node = Counter(apiserver.bound_nodes().values())
    assert set(per_node.values()) == {10}
    zone_of = {
        n["metadata"]["name"]: n["metadata"]["labels"]["zone"] for n in apiserver.list("nodes")
    }
    assert {zone_of[apiserver.bound_nodes()[key]] for key in zoned} == {"a"}
    assert len(apiserver.events(reason="Scheduled")) == 500
    assert attempts["scheduled"] == 500


def test_pod_for_another_scheduler_is_left_alone(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(pod_obj("theirs", scheduler="default-scheduler"))
    apiserver.create(pod_obj("huge-theirs", scheduler="default-scheduler", cpu="64"))
    apiserver.create(pod_obj("ours"))
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: "default/ours" in apiserver.bound_nodes())
        assert rs.scheduler.events.flush()
        assert rs.scheduler.queue.where("default/theirs") is None
    for name in ("theirs", "huge-theirs"):
        assert apiserver.requests(name=name, subresource="binding") == []
        assert apiserver.requests(name=name, subresource="status") == []
        assert apiserver.events(regarding=name) == []
    bound_exactly_once(apiserver, {"default/ours"})


def test_pods_bound_by_others_use_capacity(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1", cpu="2"))
    apiserver.create(node_obj("n2", cpu="2"))
    apiserver.create(pod_obj("elsewhere", scheduler="default-scheduler", cpu="1500m", node="n1"))
    apiserver.create(pod_obj("ours", cpu="1"))
    with RunningScheduler(apiserver):
        apiserver.wait_for(lambda: "default/ours" in apiserver.bound_nodes())
    assert apiserver.bound_nodes()["default/ours"] == "n2"


def test_watch_dropped_and_history_expired_mid_run(apiserver: LoopbackAPIServer) -> None:
    for i in range(20):
        apiserver.create(node_obj(f"n{i:02}"))
    first = {f"default/a{i:03}" for i in range(150)}
    for key in sorted(first):
        apiserver.create(pod_obj(key.split("/")[1], cpu="400m"))
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 40, timeout=20)
        # Cut every watch, keep them away while the cluster changes, and compact the history
        # so the scheduler must relist to catch up. Every informer's watch (nodes, pods,
        # PodGroups, PDBs) is held back, and their first watches after the relist too: a watch
        # let through at once would resume before the history is compacted, needing no relist.
        apiserver.delay(0.5, times=8, verb="watch")
        apiserver.drop_watches()
        second = {f"default/b{i:03}" for i in range(40)}
        for key in sorted(second):
            apiserver.create(pod_obj(key.split("/")[1], cpu="400m"))
        apiserver.delete("nodes", None, "n19")  # gone while we were away
        apiserver.expire_history()
        apiserver.wait_for(lambda: rs.scheduler.pod_informer.lists >= 2, timeout=10)
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 190, timeout=30)
        apiserver.wait_for(lambda: rs.scheduler.cache.assumed() == {}, timeout=10)
        # The node informer relists on its own clock: the pods may all be bound before it has.
        apiserver.wait_for(lambda: rs.scheduler.node_informer.lists >= 2, timeout=10)
        apiserver.wait_for(lambda: "n19" not in rs.scheduler.cache.snapshot(), timeout=10)
    bound_exactly_once(apiserver, first | second)
    assert len(apiserver.binding_requests()) == 190
    assert over_allocated(apiserver) == {}


@dataclass(frozen=True)
class BindFault:
    name: str
    code: int
    times: int


@pytest.mark.parametrize(
    "fault",
    [BindFault("500s", 500, 3), BindFault("503s", 503, 2), BindFault("429s", 429, 2)],
    ids=lambda f: f.name,
)
def test_bind_failures_are_retried(apiserver: LoopbackAPIServer, fault: BindFault) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(node_obj("n2"))
    pods = {f"default/p{i}" for i in range(6)}
    for key in sorted(pods):
        apiserver.create(pod_obj(key.split("/")[1]))
    apiserver.fail_next(
        fault.times, code=fault.code, verb="create", resource="pods", subresource="binding"
    )
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 6, timeout=15)
        apiserver.wait_for(lambda: rs.scheduler.cache.assumed() == {})
        assert rs.scheduler.stats()["backoff"] == 0
    bound_exactly_once(apiserver, pods)
    requests = apiserver.binding_requests()
    assert Counter(r.status for r in requests) == {201: 6, fault.code: fault.times}
    assert over_allocated(apiserver) == {}


def test_bind_conflict_drops_the_pod(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(pod_obj("p"))
    apiserver.fail_next(1, code=409, verb="create", resource="pods", subresource="binding")
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: len(apiserver.binding_requests()) == 1)
        apiserver.wait_for(lambda: rs.scheduler.stats()["in_flight"] == 0)
        assert rs.scheduler.queue.where("default/p") is None  # dropped, not requeued
    assert apiserver.bindings() == []
    assert len(apiserver.binding_requests()) == 1


def condition(server: LoopbackAPIServer, name: str) -> dict | None:
    obj = server.get("pods", "default", name)
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled":
            return c
    return None


def test_unschedulable_pod_reported_then_scheduled_when_a_node_fits(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(node_obj("small", cpu="2"))
    apiserver.create(pod_obj("big", cpu="6"))
    version = kube_default().version
    expected = (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        f"1 No preemption victims found for incoming pod.. (policy kube-default version {version})"
    )
    unschedulable = threading.Semaphore(0)

    def on_attempt(result: str, profile: str, seconds: float) -> None:
        if result == "unschedulable":
            unschedulable.release()

    hooks = SchedulerHooks(on_attempt=on_attempt)
    with RunningScheduler(apiserver, hooks=hooks) as rs:
        apiserver.wait_for(lambda: (condition(apiserver, "big") or {}).get("status") == "False")
        cond = condition(apiserver, "big")
        assert cond is not None
        assert (cond["reason"], cond["message"]) == ("Unschedulable", expected)
        assert unschedulable.acquire(timeout=5)
        # A node change that does not help: the pod is tried again, and fails the same way,
        # but neither the event nor the condition is sent again.
        small = node_obj("small", cpu="2", labels={"touched": "yes"})
        apiserver.update(small)
        assert unschedulable.acquire(timeout=5)
        assert rs.scheduler.events.flush()
        events = apiserver.events(reason="FailedScheduling", regarding="big")
        assert [e["note"] for e in events] == [expected]
        assert events[0]["reportingController"] == SCHEDULER
        assert events[0]["type"] == "Warning" and events[0]["action"] == "Scheduling"
        assert len(apiserver.requests(name="big", subresource="status", method="PATCH")) == 1
        assert rs.scheduler.stats()["unschedulable"] == 1
        # A node that fits: the NodeAdd event moves the pod at once (not the 5-minute flush).
        apiserver.create(node_obj("large", cpu="8"))
        apiserver.wait_for(lambda: apiserver.bound_nodes().get("default/big") == "large")
        assert rs.scheduler.events.flush()
    scheduled = apiserver.events(reason="Scheduled", regarding="big")
    assert [e["note"] for e in scheduled] == [
        f"Successfully assigned default/big to large (policy kube-default version {version})"
    ]


def test_graceful_shutdown_finishes_binds_in_flight(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    for i in range(4):
        apiserver.create(pod_obj(f"p{i}"))
    apiserver.delay_binds(0.5)
    rs = RunningScheduler(apiserver).start()
    try:
        apiserver.wait_for(lambda: rs.scheduler.stats()["binds_in_flight"] == 4, timeout=10)
    finally:
        rs.stop()  # returns only after the binds in flight answered
    assert rs.scheduler.stats()["binds_in_flight"] == 0
    bound_exactly_once(apiserver, {f"default/p{i}" for i in range(4)})
    assert len(apiserver.events(reason="Scheduled")) == 4  # their events went out too
    apiserver.wait_for(lambda: apiserver.open_watches() == 0)


def test_shutdown_takes_no_new_pods(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(rs.scheduler.has_synced)
    apiserver.create(pod_obj("late"))
    assert apiserver.binding_requests() == []
    assert rs.scheduler.queue.pop(timeout=0) is None  # closed


PROFILES = """
import "kube-default.sched"

policy "zone-a" {
  use kube
  filter in_a { node.labels["zone"] == "a" } reason "node(s) not in zone a"
}

policy "zone-b" {
  use kube
  filter in_b { node.labels["zone"] == "b" } reason "node(s) not in zone b"
}

profile "sched-a" { policies "zone-a" }
profile "sched-b" { policies "zone-b" }
"""


def test_profiles_each_scheduler_name_with_its_policies(apiserver: LoopbackAPIServer) -> None:
    program = program_from(PROFILES)
    for zone in ("a", "b"):
        apiserver.create(node_obj(f"node-{zone}", labels={"zone": zone}))
    for i in range(3):
        apiserver.create(pod_obj(f"a{i}", scheduler="sched-a"))
        apiserver.create(pod_obj(f"b{i}", scheduler="sched-b"))
    apiserver.create(pod_obj("stranger", scheduler=SCHEDULER))
    with RunningScheduler(apiserver, program) as rs:
        assert set(rs.scheduler.scheduler_names) == {"sched-a", "sched-b"}
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 6)
        assert rs.scheduler.events.flush()
    bound = apiserver.bound_nodes()
    assert {bound[f"default/a{i}"] for i in range(3)} == {"node-a"}
    assert {bound[f"default/b{i}"] for i in range(3)} == {"node-b"}
    assert "default/stranger" not in bound
    for event in apiserver.events(reason="Scheduled"):
        name = event["regarding"]["name"]
        assert event["reportingController"] == f"sched-{name[0]}"
        assert f"(policy zone-{name[0]} version {program.version})" in event["note"]


def test_program_is_read_per_cycle(apiserver: LoopbackAPIServer) -> None:
    """A reload between cycles takes effect for the next pod; one cycle uses one program."""
    first = program_from(PROFILES.replace('"sched-a"', f'"{SCHEDULER}"'))
    second = program_from(PROFILES.replace('"sched-b"', f'"{SCHEDULER}"'))
    current = [first]
    apiserver.create(node_obj("node-a", labels={"zone": "a"}))
    apiserver.create(node_obj("node-b", labels={"zone": "b"}))
    apiserver.create(pod_obj("before"))
    with RunningScheduler(apiserver, lambda: current[0], scheduler_names=[SCHEDULER]):
        apiserver.wait_for(lambda: "default/before" in apiserver.bound_nodes())
        current[0] = second
        apiserver.create(pod_obj("after"))
        apiserver.wait_for(lambda: "default/after" in apiserver.bound_nodes())
    assert apiserver.bound_nodes() == {"default/before": "node-a", "default/after": "node-b"}


def test_hooks_observe_the_loop(apiserver: LoopbackAPIServer) -> None:
    seen: dict[str, list] = {"attempt": [], "stage": [], "queue": [], "bind": []}
    hooks = SchedulerHooks(
        on_attempt=lambda r, p, s: seen["attempt"].append((r, p)),
        on_stage=lambda stage, s: seen["stage"].append(stage),
        on_queue=lambda depths: seen["queue"].append(dict(depths)),
        on_bind=lambda n: seen["bind"].append(n),
    )
    apiserver.create(node_obj("n1", cpu="1"))
    apiserver.create(pod_obj("fits"))
    apiserver.create(pod_obj("too-big", cpu="4"))
    options = replace(FAST, housekeeping_interval=0.05)
    with RunningScheduler(apiserver, hooks=hooks, options=options):
        apiserver.wait_for(lambda: "default/fits" in apiserver.bound_nodes())
        apiserver.wait_for(lambda: ("unschedulable", SCHEDULER) in seen["attempt"])
        apiserver.wait_for(
            lambda: {"unschedulable": 1, "active": 0, "backoff": 0, "gated": 0} in seen["queue"]
        )
    assert ("scheduled", SCHEDULER) in seen["attempt"]
    assert {"filter_score", "bind", "e2e"} <= set(seen["stage"])
    assert 1 in seen["bind"] and seen["bind"][-1] == 0


def test_a_gated_pod_is_not_tried_until_its_gates_are_removed(
    apiserver: LoopbackAPIServer,
) -> None:
    """As kube-scheduler's SchedulingGates: no attempt, no event, no condition patch while a
    gate is left (the API server shows the pod SchedulingGated); bound once none is."""
    apiserver.create(node_obj("n1", cpu="4"))
    gated = pod_obj("held", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    apiserver.create(gated)
    apiserver.create(pod_obj("free", cpu="1"))
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: "default/free" in apiserver.bound_nodes())
        apiserver.wait_for(lambda: rs.scheduler.queue.where("default/held") == "gated")
        assert rs.scheduler.stats()["gated"] == 1
        assert rs.scheduler.events.flush()
        assert apiserver.events(regarding="held") == []
        assert apiserver.requests(name="held", verb="patch") == []
        current = apiserver.get("pods", "default", "held")
        assert current is not None
        current["spec"]["schedulingGates"] = []  # the gate's owner lets it go
        apiserver.update(current)
        apiserver.wait_for(lambda: apiserver.bound_nodes().get("default/held") == "n1")


def test_a_pod_with_resource_claims_is_told_to_use_kube_scheduler(
    apiserver: LoopbackAPIServer,
) -> None:
    """Dynamic resource allocation needs kube-scheduler's allocation of each claim: a pod
    bound without it would never start, so it is not bound, and the event says why."""
    apiserver.create(node_obj("n1", cpu="4"))
    claimed = pod_obj("dra", cpu="1")
    claimed["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    apiserver.create(claimed)
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: bool(apiserver.events(reason="FailedScheduling")))
        assert rs.scheduler.events.flush()
    (event,) = apiserver.events(reason="FailedScheduling", regarding="dra")
    assert event["note"].startswith(
        "pod default/dra uses dynamic resource allocation (spec.resourceClaims: gpu), which "
        "policyengine does not allocate: schedule it with kube-scheduler (schedulerName: "
        "default-scheduler) (policy "
    )
    assert apiserver.bound_nodes() == {}


@pytest.mark.parametrize("fate", ["deleted", "bound by someone else"])
def test_pending_pod_that_goes_away_leaves_the_queue(
    apiserver: LoopbackAPIServer, fate: str
) -> None:
    apiserver.create(node_obj("small", cpu="1"))
    apiserver.create(pod_obj("big", cpu="4"))
    with RunningScheduler(apiserver) as rs:
        apiserver.wait_for(lambda: rs.scheduler.queue.where("default/big") == "unschedulable")
        if fate == "deleted":
            apiserver.delete("pods", "default", "big")
        else:
            apiserver.bind("default", "big", "small")
        apiserver.wait_for(lambda: rs.scheduler.queue.where("default/big") is None)
        assert rs.scheduler.stats()["unschedulable"] == 0
    assert apiserver.binding_requests() == []


@pytest.mark.parametrize("freeze", [False, True])
def test_heap_is_frozen_after_sync_only_when_asked(
    apiserver: LoopbackAPIServer, freeze: bool
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(pod_obj("p"))
    gc.unfreeze()
    threshold = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        options = replace(FAST, freeze_heap=freeze)
        with RunningScheduler(apiserver, options=options):
            apiserver.wait_for(lambda: apiserver.bound_nodes() == {"default/p": "n1"}, timeout=10)
            assert (gc.get_freeze_count() > 0) is freeze
            assert (gc.get_threshold()[0] == heap.YOUNG) is freeze
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
