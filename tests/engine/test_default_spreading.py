"""System default topology spreading on the fast path decides as the reference.

A pod without constraints of its own is spread by hostname and zone over the pods a selector
derived from its Services and controller selects (``model.workloads``). That selector reads
the pod's owner name, which a pod's class leaves out, and the cluster's Services, which the
pod does not carry: pods alike may be spread by different selectors, and a Service created
between two cycles changes the next one's. Hypothesis draws clusters (some nodes without a
zone label, scored by hostname alone), Services and ReplicaSets, and pods stamped from
templates owned by one ReplicaSet or another, placed, forgotten and re-placed while Services
come and go; every decision equals the reference evaluator's, and the kept PreScore state the
plugin's own walk.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Pod
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.workloads import parse_workload
from policyengine.schedlib.topology_filters import PREPARE_SCORES
from tests.engine.agreement import decide_as_the_reference, incremental
from tests.engine.strategies import compiled
from tests.model.builders import HOSTNAME, ZONE, make_node, make_pod

KUBE_ONLY = (
    'import "kube-default.sched"\npolicy "p" {\n  use kube\n}\n'
    'profile "policyengine" {\n  policies "p"\n}\n'
)
APPS = ["web", "db"]
REPLICA_SETS = {"web-1": "web", "web-2": "web", "db-1": "db"}


def node(index: int, zone: str | None) -> Any:
    labels = {HOSTNAME: f"n{index}"}
    if zone is not None:
        labels[ZONE] = zone
    return make_node(f"n{index}", labels=labels, pods=8)


def service(name: str, app: str) -> Any:
    return parse_workload(
        {
            "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"app": app}},
        }
    )


def replica_set(name: str, app: str) -> Any:
    return parse_workload(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app, "rs": name}}},
        }
    )


def owned_by(pod: Pod, rs: str | None) -> Pod:
    if rs is None:
        return pod
    ref = FrozenDict(
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs, "controller": True}
    )
    return dataclasses.replace(pod, owner_references=(ref,))


@st.composite
def template(draw: st.DrawFn, index: int) -> Pod:
    app = draw(st.sampled_from(APPS))
    # The ReplicaSet's "rs" label is left off at times: its selector then matches none of them.
    labels = {"app": app}
    if draw(st.booleans()):
        labels["rs"] = draw(st.sampled_from(sorted(REPLICA_SETS)))
    extra: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        extra["node_selector"] = {ZONE: draw(st.sampled_from(["a", "b"]))}
    return make_pod(f"t{index}", labels=labels, requests={"cpu": "100m"}, **extra)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_default_spreading_decides_as_the_reference(data: st.DataObject) -> None:
    options = incremental()
    program = compiled(KUBE_ONLY)
    zones = st.sampled_from(["a", "b", "c", None])
    count = data.draw(st.integers(2, 6))
    snap = ClusterSnapshot.build(
        [node(i, data.draw(zones)) for i in range(count)],
        workloads=[replica_set(name, app) for name, app in REPLICA_SETS.items()],
    )
    shapes = [data.draw(template(i)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    placed: list[str] = []
    for index in range(data.draw(st.integers(3, 10))):
        action = data.draw(st.sampled_from(["place", "place", "place", "forget", "service"]))
        if action == "forget" and placed:
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
            continue
        if action == "service":
            app = data.draw(st.sampled_from(APPS))
            if snap.workloads.get("Service", "default", app) is None:
                snap = snap.with_workload(service(app, app))
            else:
                snap = snap.without_workload("Service", "default", app)
            continue
        shape = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        owner = data.draw(st.sampled_from([None, *sorted(REPLICA_SETS), "gone"]))
        pod = owned_by(dataclasses.replace(shape, name=f"pod-{index}", uid=f"u{index}"), owner)
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        some = [info for info in snap.nodes if data.draw(st.booleans())]
        prepare = PLUGINS_BY_NAME["PodTopologySpread"].prepare_score
        assert prepare is not None
        for feasible in (snap.nodes, some):
            kept = PREPARE_SCORES["PodTopologySpread"](pod, snap, feasible, DEFAULT_CONFIG)
            assert kept == prepare(pod, snap, feasible, DEFAULT_CONFIG)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
            placed.append(pod.key)


def test_pods_alike_owned_by_different_replica_sets_spread_by_their_own() -> None:
    # Same labels and spec, different owners: one's ReplicaSet selects the pods on n0, the
    # other's selects none; each must be spread by its own selector, not its class's.
    options = incremental()
    program = compiled(KUBE_ONLY)
    web1 = make_pod("w", labels={"app": "web", "rs": "web-1"}, node_name="n0")
    snap = ClusterSnapshot.build(
        [node(0, "a"), node(1, "a")],
        [web1, dataclasses.replace(web1, name="w2", uid="w2")],
        workloads=[replica_set(name, app) for name, app in REPLICA_SETS.items()],
    )
    template = make_pod("t", labels={"app": "web", "rs": "web-1"}, requests={"cpu": "100m"})
    chosen = []
    for owner in ("web-1", "web-2", "web-1"):
        pod = owned_by(dataclasses.replace(template, name=f"p-{owner}"), owner)
        decision = decide_as_the_reference(program, pod, snap, random.Random(0), options)
        chosen.append(decision.node)
    # web-1's selector counts the two pods on n0, so n1 wins; web-2's ReplicaSet selects
    # {app: web, rs: web-2}, which no pod carries: no spreading, a tie by the other scores.
    assert chosen[0] == "n1" and chosen[2] == "n1"
