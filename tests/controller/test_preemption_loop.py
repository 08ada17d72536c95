"""Preemption in the loop, against the loopback API server: the preemptor is nominated, exactly
the chosen victims are deleted gracefully and told why, and the preemptor is bound once they
are gone (the server's ``terminate_bound_pods_after`` plays the kubelet)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller.hooks import SchedulerHooks
from policyengine.controller.preemption import disruption_condition
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.podgroup import POD_GROUP_LABEL
from policyengine.schedlib import default_schema
from tests.controller.builders import KUBE_DEFAULT, RunningScheduler, node_obj, pod_obj


def nominated(server: LoopbackAPIServer, name: str) -> str | None:
    obj = server.get("pods", "default", name) or {}
    return (obj.get("status") or {}).get("nominatedNodeName")


def test_a_preempting_pod_evicts_exactly_the_chosen_victims_then_binds(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(terminate_bound_pods_after=1.0)
    server.create(node_obj("n1", cpu="4"))
    server.create(node_obj("n2", cpu="4"))
    # n1: one low-priority pod is enough to free; n2: two pods of higher priority.
    server.create(pod_obj("low-a", cpu="2", priority=1, node="n1"))
    server.create(pod_obj("keep-b", cpu="2", priority=50, node="n1"))
    server.create(pod_obj("mid-c", cpu="2", priority=20, node="n2"))
    server.create(pod_obj("mid-d", cpu="2", priority=20, node="n2"))
    server.create(pod_obj("urgent", cpu="2", priority=100, uid="urgent-uid"))
    seen: list[tuple[str, str, int]] = []
    hooks = SchedulerHooks(on_preemption=lambda *observed: seen.append(observed))
    with RunningScheduler(server, hooks=hooks) as rs:
        server.wait_for(lambda: server.bound_nodes().get("default/urgent") == "n1", timeout=20)
        assert rs.scheduler.events.flush()
    # The preemption, then (while low-a terminates) attempts that wait for it.
    assert seen[0] == ("pod", "preempted", 1)
    assert set(seen[1:]) <= {("pod", "waiting", 0)}
    deletes = server.requests(verb="delete", resource="pods")
    assert [r.name for r in deletes] == ["low-a"]
    assert server.get("pods", "default", "low-a") is None
    # Before its deletion the victim is marked, as kube's preemption marks it (the condition
    # a later cycle reads to wait for it instead of preempting again).
    (marked,) = server.requests(verb="patch", resource="pods", subresource="status", name="low-a")
    assert marked.headers["content-type"] == "application/strategic-merge-patch+json"
    (condition,) = marked.body["status"]["conditions"]
    assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "policyengine: preempting to accommodate a higher priority pod",
    }
    low_a = server.requests(name="low-a")
    assert low_a.index(marked) < low_a.index(deletes[0])
    for survivor in ("keep-b", "mid-c", "mid-d"):
        assert server.get("pods", "default", survivor) is not None
    assert nominated(server, "urgent") == "n1"
    (event,) = server.events(reason="Preempted")
    assert event["regarding"]["name"] == "low-a"
    assert event["note"] == "Preempted by pod urgent-uid on node n1"
    # As kube-scheduler records it: about the victim, related to the preemptor.
    assert event["related"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "urgent",
        "uid": "urgent-uid",
        "apiVersion": "v1",
    }
    assert (event["type"], event["action"]) == ("Normal", "Preempting")
    failed = server.events(reason="FailedScheduling", regarding="urgent")
    assert failed and failed[0]["note"].startswith("0/2 nodes are available: 2 Insufficient cpu. (")


def test_a_victim_already_terminating_is_waited_for_not_deleted_again(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    """kube's executor sends nothing for a victim whose deletion has started: no condition,
    no DELETE, no event. The preemptor is nominated and binds once the victim is gone."""
    server = apiserver_factory()
    server.create(node_obj("n1", cpu="4"))
    server.create(pod_obj("low-a", cpu="2", priority=1, node="n1"))
    server.create(pod_obj("keep-b", cpu="2", priority=50, node="n1"))
    server.delete("pods", "default", "low-a", grace_period_seconds=None)  # its owner's doing
    server.create(pod_obj("urgent", cpu="2", priority=100, uid="urgent-uid"))
    with RunningScheduler(server) as rs:
        server.wait_for(lambda: nominated(server, "urgent") == "n1", timeout=20)
        assert rs.scheduler.events.flush()
        assert server.requests(name="low-a") == []
        assert server.events(reason="Preempted") == []
        server.finish_pod_deletions()  # the kubelet is done with it
        server.wait_for(lambda: server.bound_nodes().get("default/urgent") == "n1", timeout=20)


def test_a_victim_the_server_will_not_delete_is_preempted_again_after_a_backoff(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(terminate_bound_pods_after=0.5)
    server.create(node_obj("n1", cpu="4"))
    server.create(pod_obj("low-a", cpu="2", priority=1, node="n1"))
    server.create(pod_obj("keep-b", cpu="2", priority=50, node="n1"))
    server.create(pod_obj("urgent", cpu="2", priority=100, uid="urgent-uid"))
    server.fail_next(1, code=500, verb="delete", resource="pods", name="low-a")
    with RunningScheduler(server) as rs:
        server.wait_for(lambda: server.bound_nodes().get("default/urgent") == "n1", timeout=20)
        assert rs.scheduler.events.flush()
    codes = [r.status for r in server.requests(verb="delete", resource="pods", name="low-a")]
    assert codes == [500, 200]
    # Told once, for the deletion that went through.
    (event,) = server.events(reason="Preempted")
    assert event["regarding"]["name"] == "low-a"


def test_a_pod_without_lower_priority_victims_preempts_nothing(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(terminate_bound_pods_after=0.5)
    server.create(node_obj("n1", cpu="2"))
    server.create(pod_obj("equal", cpu="2", priority=100, node="n1"))
    server.create(pod_obj("waiting", cpu="2", priority=100))
    with RunningScheduler(server) as rs:
        server.wait_for(lambda: bool(server.events(reason="FailedScheduling")), timeout=10)
        assert rs.scheduler.events.flush()
    assert server.requests(verb="delete", resource="pods") == []
    assert nominated(server, "waiting") is None
    (event,) = server.events(reason="FailedScheduling", regarding="waiting")
    assert event["note"].startswith(
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.. ("
    )


def test_a_victim_whose_budget_allows_no_disruption_is_spared(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(terminate_bound_pods_after=0.5)
    server.create(node_obj("n1", cpu="4"))
    server.create(node_obj("n2", cpu="4"))
    server.create(pod_obj("db-0", cpu="4", priority=1, node="n1", labels={"app": "db"}))
    server.create(pod_obj("batch", cpu="4", priority=20, node="n2"))
    server.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    server.create(pod_obj("urgent", cpu="2", priority=100, uid="urgent-uid"))
    with RunningScheduler(server):
        server.wait_for(lambda: server.bound_nodes().get("default/urgent") == "n2", timeout=20)
    assert [r.name for r in server.requests(verb="delete", resource="pods")] == ["batch"]
    assert server.get("pods", "default", "db-0") is not None


RACK = "topology.kubernetes.io/rack"
GANG_POLICY = """
import "kube-default.sched"

policy "gang-rack" {
  use kube
  gang {
    within rack required
  }
}

profile "policyengine" {
  policies "gang-rack"
}
"""


def gang_program() -> Program:
    texts = {"kube-default.sched": KUBE_DEFAULT.read_text(), "gang.sched": GANG_POLICY}
    result = compile_texts(texts, default_schema())
    assert result.program is not None, [str(d) for d in result.diagnostics]
    return result.program


@pytest.mark.parametrize("refused", [False, True])
def test_a_gang_that_fits_nowhere_frees_the_cheapest_rack_and_binds_there(
    apiserver_factory: Callable[..., LoopbackAPIServer], refused: bool
) -> None:
    """``refused``: the API server turns down one victim's deletion once; the gang searches
    again after its backoff and gets the same rack."""
    server = apiserver_factory(terminate_bound_pods_after=1.0)
    if refused:
        server.fail_next(1, code=500, verb="delete", resource="pods", name="r2-low0")
    for rack, priority in (("r1", 10), ("r2", 5)):
        for i in range(2):
            server.create(node_obj(f"{rack}-n{i}", cpu="4", labels={RACK: rack}))
            server.create(
                pod_obj(f"{rack}-low{i}", cpu="3", priority=priority, node=f"{rack}-n{i}")
            )
    server.create(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": 2},
        }
    )
    for i in range(2):
        labels = {POD_GROUP_LABEL: "train"}
        server.create(pod_obj(f"w{i}", cpu="3", priority=100, labels=labels))
    with RunningScheduler(server, gang_program()) as rs:
        server.wait_for(
            lambda: (
                {server.bound_nodes().get(f"default/w{i}") for i in range(2)} == {"r2-n0", "r2-n1"}
            ),
            timeout=20,
        )
        assert rs.scheduler.events.flush()
    deletes = server.requests(verb="delete", resource="pods")
    assert sorted({r.name for r in deletes}) == ["r2-low0", "r2-low1"]
    codes = [r.status for r in deletes if r.name == "r2-low0"]
    assert codes == ([500, 200] if refused else [200])
    for survivor in ("r1-low0", "r1-low1"):
        assert server.get("pods", "default", survivor) is not None
    notes = sorted(e["note"] for e in server.events(reason="Preempted"))
    assert notes == ["Preempted by pod group default/train in rack/r2"] * 2
    # Related to one member of the gang (its first pending one), the same for every victim.
    related = {
        (e["related"]["kind"], e["related"]["name"]) for e in server.events(reason="Preempted")
    }
    assert len(related) == 1 and related <= {("Pod", "w0"), ("Pod", "w1")}
    assert {nominated(server, f"w{i}") for i in range(2)} == {"r2-n0", "r2-n1"}


NOW = dt.datetime(2026, 12, 4, 17, 0, 0, tzinfo=dt.UTC)
MARK = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "s: preempting to accommodate a higher priority pod",
}


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (None, {**MARK, "lastTransitionTime": "2026-12-04T17:00:00Z"}),
        ({"status": {}}, {**MARK, "lastTransitionTime": "2026-12-04T17:00:00Z"}),
        # Already says so: nothing to patch (kube's UpdatePodCondition reports no change).
        ({"status": {"conditions": [{**MARK, "lastTransitionTime": "t0"}]}}, None),
        # True for another reason: rewritten, its transition time kept (the status held).
        (
            {"status": {"conditions": [{**MARK, "reason": "X", "lastTransitionTime": "t0"}]}},
            {**MARK, "lastTransitionTime": "t0"},
        ),
        # False before: a transition now.
        (
            {"status": {"conditions": [{**MARK, "status": "False", "lastTransitionTime": "t0"}]}},
            {**MARK, "lastTransitionTime": "2026-12-04T17:00:00Z"},
        ),
        # A pod with a generation: the condition says which one it observed.
        (
            {"metadata": {"generation": 3}},
            {**MARK, "lastTransitionTime": "2026-12-04T17:00:00Z", "observedGeneration": 3},
        ),
        (
            {
                "metadata": {"generation": 3},
                "status": {"conditions": [{**MARK, "lastTransitionTime": "t0"}]},
            },
            {**MARK, "lastTransitionTime": "t0", "observedGeneration": 3},
        ),
        # Conditions of other types are not ours to touch, nor read.
        (
            {"status": {"conditions": ["junk", {"type": "Ready", "status": "True"}]}},
            {**MARK, "lastTransitionTime": "2026-12-04T17:00:00Z"},
        ),
    ],
    ids=[
        "no-pod",
        "no-conditions",
        "already-marked",
        "other-reason",
        "was-false",
        "generation",
        "generation-already-marked",
        "other-condition-types",
    ],
)
def test_the_disruption_condition_is_written_only_when_it_changes(
    current: dict[str, Any] | None, expected: dict[str, Any] | None
) -> None:
    assert disruption_condition("s", current, NOW) == expected
