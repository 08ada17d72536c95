"""Gangs in the scheduler loop, end to end: PodGroups and labelled pods on the loopback server,
the real ``kubernetes`` client, and assertions on what the server saw (bindings, events, the
PodGroup's status). Waits end in ``pytest.fail`` with what was seen; nothing is timed.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.hooks import SchedulerHooks
from policyengine.controller.metrics import Metrics
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.podgroup import POD_GROUP_LABEL
from policyengine.schedlib import default_schema
from tests.controller.builders import (
    FAST,
    KUBE_DEFAULT,
    RunningScheduler,
    node_obj,
    pod_obj,
    podgroup,
    wait_until,
)

RACK = "topology.kubernetes.io/rack"
PG = ("scheduling.x-k8s.io", "v1alpha1")
GANG_FAST = replace(FAST, gang_timeout=1.0, podgroup_crd_recheck=0.3)

GANG_POLICY = """
import "kube-default.sched"

# gang-rack: kube-scheduler's rules per member, every gang inside one rack.
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


@functools.cache
def gang_program() -> Program:
    texts = {"kube-default.sched": KUBE_DEFAULT.read_text(), "gang.sched": GANG_POLICY}
    result = compile_texts(texts, default_schema())
    assert result.program is not None, [str(d) for d in result.diagnostics]
    return result.program


def racks(server: LoopbackAPIServer, layout: dict[str, int], cpu: str = "4") -> None:
    """``layout``: rack name -> number of nodes (each ``cpu`` CPUs)."""
    for rack, count in layout.items():
        for i in range(count):
            server.create(node_obj(f"{rack}-n{i}", cpu=cpu, labels={RACK: rack}))


def member(name: str, gang: str, cpu: str = "1") -> dict[str, Any]:
    return pod_obj(name, cpu=cpu, labels={POD_GROUP_LABEL: gang})


def bound(server: LoopbackAPIServer, gang: str) -> dict[str, str]:
    """``{pod key: node}`` of the gang's bound members."""
    members = {
        f"default/{p['metadata']['name']}"
        for p in server.list("pods")
        if (p["metadata"].get("labels") or {}).get(POD_GROUP_LABEL) == gang
    }
    return {k: n for k, n in server.bound_nodes().items() if k in members}


def rack_of(server: LoopbackAPIServer, node: str) -> str:
    obj = server.get("nodes", None, node)
    assert obj is not None
    return str(obj["metadata"]["labels"][RACK])


def racks_used(server: LoopbackAPIServer, placement: dict[str, str]) -> set[str]:
    return {rack_of(server, node) for node in placement.values()}


def notes(server: LoopbackAPIServer, reason: str, name: str) -> list[str]:
    return [e["note"] for e in server.events(reason=reason, regarding=name)]


def status(server: LoopbackAPIServer, name: str) -> dict[str, Any]:
    obj = server.get("podgroups", "default", name) or {}
    return dict(obj.get("status") or {})


def test_a_16_pod_gang_created_over_seconds_binds_all_together_in_one_rack(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"r1": 4, "r2": 4})  # 16 one-CPU members fit either rack, not 17
    apiserver.create(podgroup("train", 16, timeout=60))  # no report while members arrive
    core = client.CoreV1Api(apiserver.api_client())
    with RunningScheduler(apiserver, gang_program(), options=GANG_FAST) as rs:
        wait_until(
            "the PodGroup in the cache",
            lambda: rs.scheduler.podgroups.has_synced(),
            rs.scheduler.stats,
        )
        for i in range(16):
            if i:
                time.sleep(0.2)  # members trickle in, as a job controller creates them
            core.create_namespaced_pod("default", member(f"w{i:02}", "train"))
            assert apiserver.bindings() == [], f"a member was bound before member {i + 1} existed"
        wait_until(
            "16 bindings", lambda: len(bound(apiserver, "train")) == 16, apiserver.bound_nodes
        )
        assert rs.scheduler.events.flush()
        assert rs.scheduler.podgroup_status.flush()
        wait_until(
            "the Scheduled status",
            lambda: status(apiserver, "train").get("phase") == "Scheduled",
            lambda: status(apiserver, "train"),
        )
    created = [
        r
        for r in apiserver.requests(verb="create", resource="pods", subresource="")
        if r.body["metadata"]["name"] == "w15"
    ]
    binds = apiserver.binding_requests()
    assert len(created) == 1 and len(binds) == 16
    assert min(b.time for b in binds) >= created[0].time  # nothing before the 16th member
    placement = bound(apiserver, "train")
    assert len(racks_used(apiserver, placement)) == 1
    assert Counter(f"{b.namespace}/{b.name}" for b in apiserver.bindings()) == Counter(
        set(placement)
    )
    final = status(apiserver, "train")
    assert final["scheduled"] == 16
    (condition,) = final["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Scheduled",
        "True",
        "Scheduled",
    )
    assert len(apiserver.events(reason="Scheduled")) == 16


def test_a_gang_too_large_for_any_rack_binds_none_and_is_reported_once(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"r1": 2, "r2": 2})  # 8 CPUs a rack; the gang needs 12 in one
    apiserver.create(podgroup("big", 12, timeout=1))
    for i in range(12):
        apiserver.create(member(f"b{i:02}", "big"))
    attempts: Counter[str] = Counter()
    lock = threading.Lock()

    def on_gang_attempt(result: str, seconds: float) -> None:
        with lock:
            attempts[result] += 1

    hooks = SchedulerHooks(on_gang_attempt=on_gang_attempt)
    program = gang_program()
    with RunningScheduler(apiserver, program, options=GANG_FAST, hooks=hooks) as rs:
        wait_until(
            "the PodGroup's Pending status",
            lambda: bool(status(apiserver, "big").get("conditions")),
            lambda: status(apiserver, "big"),
        )
        before = attempts["unschedulable"]
        # Another attempt (a node joins, in no rack): the same verdict, not reported again.
        apiserver.create(node_obj("loose", cpu="64"))
        wait_until("another attempt", lambda: attempts["unschedulable"] > before, attempts.copy)
        assert rs.scheduler.events.flush()
        assert rs.scheduler.podgroup_status.flush()
    reason = (
        "not placed within 1s (scheduleTimeoutSeconds): gang default/big cannot be placed: "
        "12 members must fit together in one rack: 2 rack domain(s) too small."
    )
    assert apiserver.bindings() == []
    for i in range(12):
        assert notes(apiserver, "FailedScheduling", f"b{i:02}") == [
            f"{reason} (policy gang-rack version {program.version})"
        ]
    final = status(apiserver, "big")
    assert (final["phase"], final["scheduled"]) == ("Pending", 0)
    (condition,) = final["conditions"]
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert condition["message"] == reason
    assert len(apiserver.requests(verb="patch", resource="podgroups", subresource="status")) == 1


def test_a_member_deleted_after_binding_leaves_the_gang_in_place_and_a_replacement_joins(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"r1": 2, "r2": 2})
    apiserver.create(podgroup("job", 4))
    for i in range(4):
        apiserver.create(member(f"m{i}", "job"))
    with RunningScheduler(apiserver, gang_program(), options=GANG_FAST) as rs:
        wait_until("4 bound", lambda: len(bound(apiserver, "job")) == 4, apiserver.bound_nodes)
        (home,) = racks_used(apiserver, bound(apiserver, "job"))
        apiserver.delete("pods", "default", "m0", grace_period_seconds=0)
        wait_until(
            "the deletion seen",
            lambda: rs.scheduler.cache.pod("default/m0") is None,
            rs.scheduler.cache.assumed,
        )
        # The scheduler goes on: a plain pod is placed, the gang has nothing waiting.
        apiserver.create(pod_obj("solo", cpu="1"))
        wait_until(
            "solo bound", lambda: "default/solo" in apiserver.bound_nodes(), rs.scheduler.stats
        )
        assert rs.scheduler.gangs.waiting() == {}
        apiserver.create(member("m4", "job"))
        wait_until(
            "the replacement bound",
            lambda: "default/m4" in apiserver.bound_nodes(),
            rs.scheduler.gangs.waiting,
        )
    placement = bound(apiserver, "job")
    assert sorted(placement) == ["default/m1", "default/m2", "default/m3", "default/m4"]
    assert racks_used(apiserver, placement) == {home}
    assert len(apiserver.binding_requests()) == 6  # 4 + solo + the replacement


def test_a_late_member_joins_the_placed_gangs_rack(apiserver: LoopbackAPIServer) -> None:
    racks(apiserver, {"r1": 2, "r2": 2})
    apiserver.create(podgroup("job", 3))
    for i in range(3):
        apiserver.create(member(f"m{i}", "job"))
    with RunningScheduler(apiserver, gang_program(), options=GANG_FAST):
        wait_until("3 bound", lambda: len(bound(apiserver, "job")) == 3, apiserver.bound_nodes)
        (home,) = racks_used(apiserver, bound(apiserver, "job"))
        # The other rack is emptier, so a pod on its own would go there; a member does not.
        apiserver.create(member("m3", "job"))
        wait_until(
            "the late member bound",
            lambda: "default/m3" in apiserver.bound_nodes(),
            apiserver.bound_nodes,
        )
    assert racks_used(apiserver, bound(apiserver, "job")) == {home}


def test_two_gangs_competing_for_one_rack_one_gets_it_whole_the_other_nothing(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"big": 4, "small": 1})  # 16 CPUs and 4: one 12-member gang fits
    for gang in ("a", "b"):
        apiserver.create(podgroup(gang, 12))
    for i in range(12):
        for gang in ("a", "b"):
            apiserver.create(member(f"{gang}{i:02}", gang))
    with RunningScheduler(apiserver, gang_program(), options=GANG_FAST) as rs:
        wait_until(
            "one gang bound",
            lambda: 12 in (len(bound(apiserver, "a")), len(bound(apiserver, "b"))),
            apiserver.bound_nodes,
        )
        winner = "a" if len(bound(apiserver, "a")) == 12 else "b"
        loser = "b" if winner == "a" else "a"
        wait_until(
            "the loser's attempt",
            lambda: rs.scheduler.gangs.waiting().get(f"default/{loser}", "") != "",
            rs.scheduler.gangs.waiting,
        )
        assert bound(apiserver, loser) == {}
        assert racks_used(apiserver, bound(apiserver, winner)) == {"big"}
        # The winner finishes: the loser gets the rack, whole.
        for i in range(12):
            apiserver.delete("pods", "default", f"{winner}{i:02}", grace_period_seconds=0)
        wait_until(
            "the loser bound",
            lambda: len(bound(apiserver, loser)) == 12,
            rs.scheduler.gangs.waiting,
        )
    assert racks_used(apiserver, bound(apiserver, loser)) == {"big"}
    assert len(apiserver.binding_requests()) == 24


def test_without_the_podgroup_crd_members_wait_with_one_clear_event_until_it_is_installed(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(uninstalled_groups=("scheduling.x-k8s.io",))
    racks(server, {"r1": 1})
    server.create(podgroup("g", 2))  # stored, not served until the CRD is installed
    for name in ("g0", "g1"):
        server.create(member(name, "g"))
    server.create(pod_obj("plain"))
    program = gang_program()
    with RunningScheduler(server, program, options=GANG_FAST) as rs:
        wait_until(
            "plain bound", lambda: "default/plain" in server.bound_nodes(), server.bound_nodes
        )
        wait_until(
            "the members' events",
            lambda: all(notes(server, "FailedScheduling", n) for n in ("g0", "g1")),
            lambda: server.events(reason="FailedScheduling"),
        )
        assert rs.scheduler.podgroups.installed is False
        assert set(server.bound_nodes()) == {"default/plain"}
        server.install_group("scheduling.x-k8s.io")
        wait_until(
            "the gang bound", lambda: len(bound(server, "g")) == 2, rs.scheduler.gangs.waiting
        )
    expected = (
        "gang default/g: the PodGroup CRD podgroups.scheduling.x-k8s.io is not installed "
        f"(policy gang-rack version {program.version})"
    )
    for name in ("g0", "g1"):
        assert notes(server, "FailedScheduling", name) == [expected]


def test_a_podgroup_created_after_its_pods_gates_them_until_it_exists(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"r1": 1})
    for name in ("p0", "p1"):
        apiserver.create(member(name, "late"))
    program = gang_program()
    with RunningScheduler(apiserver, program, options=GANG_FAST) as rs:
        wait_until(
            "the not-found report",
            lambda: all(notes(apiserver, "FailedScheduling", n) for n in ("p0", "p1")),
            lambda: apiserver.events(),
        )
        assert apiserver.bindings() == []
        apiserver.create(podgroup("late", 2))
        wait_until(
            "the gang bound", lambda: len(bound(apiserver, "late")) == 2, rs.scheduler.gangs.waiting
        )
    assert notes(apiserver, "FailedScheduling", "p0") == [
        "not placed within 1s (scheduleTimeoutSeconds): gang default/late: PodGroup default/late "
        f"not found (policy gang-rack version {program.version})"
    ]


def test_a_failed_member_bind_is_retried_into_the_same_rack(apiserver: LoopbackAPIServer) -> None:
    racks(apiserver, {"r1": 2, "r2": 2})
    apiserver.create(podgroup("job", 6))
    for i in range(6):
        apiserver.create(member(f"m{i}", "job"))
    apiserver.fail_next(2, code=500, verb="create", resource="pods", subresource="binding")
    metrics = Metrics()
    with RunningScheduler(
        apiserver, gang_program(), options=GANG_FAST, hooks=metrics.hooks()
    ) as rs:
        wait_until("6 bound", lambda: len(bound(apiserver, "job")) == 6, rs.scheduler.gangs.waiting)
        wait_until(
            "no assumption left",
            lambda: rs.scheduler.cache.assumed() == {},
            rs.scheduler.cache.assumed,
        )
    assert len(racks_used(apiserver, bound(apiserver, "job"))) == 1
    assert Counter(r.status for r in apiserver.binding_requests()) == {201: 6, 500: 2}
    text = metrics.render().decode()
    assert 'policyengine_gang_attempts_total{result="bind_failed"} 1.0' in text
    assert 'policyengine_gang_attempts_total{result="scheduled"} 1.0' in text


def test_a_late_member_that_does_not_fit_the_gangs_rack_waits_for_room_there(
    apiserver: LoopbackAPIServer,
) -> None:
    racks(apiserver, {"r1": 1, "r2": 1})  # 4 CPUs a rack; two 2-CPU members fill one
    apiserver.create(podgroup("job", 2))
    for i in range(2):
        apiserver.create(member(f"m{i}", "job", cpu="2"))
    with RunningScheduler(apiserver, gang_program(), options=GANG_FAST) as rs:
        wait_until("2 bound", lambda: len(bound(apiserver, "job")) == 2, apiserver.bound_nodes)
        (home,) = racks_used(apiserver, bound(apiserver, "job"))
        other = "r2" if home == "r1" else "r1"
        apiserver.create(member("m2", "job", cpu="2"))  # the other rack is empty: not for it
        wait_until(
            "the late member's verdict",
            lambda: rs.scheduler.gangs.waiting().get("default/job", "") != "",
            rs.scheduler.gangs.waiting,
        )
        assert rs.scheduler.gangs.waiting() == {
            "default/job": f"0/2 nodes are available: 1 Insufficient cpu, "
            f"1 node(s) outside the gang's rack {home}."
        }
        assert "default/m2" not in apiserver.bound_nodes()
        apiserver.delete("pods", "default", "m0", grace_period_seconds=0)  # room at home
        wait_until(
            "m2 bound", lambda: "default/m2" in apiserver.bound_nodes(), rs.scheduler.gangs.waiting
        )
    assert rack_of(apiserver, apiserver.bound_nodes()["default/m2"]) == home != other
