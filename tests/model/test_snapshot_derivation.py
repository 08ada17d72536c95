"""A snapshot derived step by step (assume, forget, node added or replaced) equals the one
built afresh from the same nodes and pods.

The assume step shares what it can with the parent instead of copying it: the node and pod
maps (``SharedMap``), the node tuple (copied from the parent's when that one was built), a
NodeInfo built without the dataclass ``__init__``, request sums that skip Fraction arithmetic
where the result is the same, and ``Pod.with_node_name`` copying the instance dict. Hypothesis
drives chains of derivations (reading ``nodes`` at some steps, so both ways of building it
run) and holds every derived snapshot equal, field for field and in node order, to
``ClusterSnapshot.build``, while the snapshots before it keep what they had.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model import shared_map, shared_rows
from policyengine.model.cached import cached_property
from policyengine.model.objects import Pod
from policyengine.model.resources import (
    CPU,
    MEMORY,
    aggregate_container_requests,
    pod_non_zero_requests,
    to_units,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import StorageObjects
from tests.model.builders import container, make_node, make_pod, pod_affinity, snapshot, term

REQUESTS = [
    {},
    {"cpu": "250m", "memory": "1Gi"},
    {"cpu": "1", "nvidia.com/gpu": "2"},
    {"cpu": "1500m", "ephemeral-storage": "1Gi"},
    {"memory": "100Mi"},
]
PORTS = [(), ({"containerPort": 80, "hostPort": 8080},), ({"containerPort": 53, "hostPort": 53},)]
AFFINITY = [
    {},
    {"affinity": {"podAntiAffinity": pod_affinity(required=[term({"app": "x"}, "zone")])}},
]


def _node(name: str, variant: int) -> Any:
    return make_node(name, labels={"v": str(variant)}, extra={"nvidia.com/gpu": "8"})


def _state(info: NodeInfo) -> tuple[Any, ...]:
    return (
        info.node,
        [p.pod for p in info.pods],
        dict(info.requested),
        [type(v) for v in info.requested.values()],
        dict(info.requested_units),
        info.non_zero_cpu,
        info.non_zero_memory,
        dict(info.used_ports),
        info.load,
        dict(info.allocatable_units),
        [p.key for p in info.pods_with_affinity],
        [p.key for p in info.pods_with_required_anti_affinity],
    )


def _assert_equal(snap: ClusterSnapshot, nodes: list[Any], pods: list[Pod]) -> None:
    fresh = ClusterSnapshot.build(nodes, pods)
    assert list(snap.node_infos) == list(fresh.node_infos)
    assert [_state(info) for info in snap.nodes] == [_state(info) for info in fresh.nodes]
    assert all(a is b for a, b in zip(snap.nodes, snap.node_infos.values(), strict=True))
    assert len(snap.rows) == len(snap.nodes)
    assert all(snap.rows[row] is info for row, info in enumerate(snap.nodes))
    assert dict(snap.pod_nodes) == dict(fresh.pod_nodes) and snap.pod_nodes == fresh.pod_nodes
    assert len(snap) == len(fresh) and snap.node_names == fresh.node_names
    assert sorted(p.key for p in snap.pods()) == sorted(p.key for p in pods)
    # The sums from the pods' own requests, summed here without the snapshot's caches.
    for info in snap.nodes:
        mine = [dataclasses.replace(p) for p in pods if p.node_name == info.name]
        exact = [aggregate_container_requests(p.containers, p.init_containers) for p in mine]
        assert dict(info.requested) == {
            k: v for k in {k for e in exact for k in e} if (v := sum(e.get(k, 0) for e in exact))
        }
        non_zero = [pod_non_zero_requests(p) for p in mine]
        assert info.non_zero_cpu == sum(to_units(CPU, n.get(CPU, 0)) for n in non_zero)
        assert info.non_zero_memory == sum(to_units(MEMORY, n.get(MEMORY, 0)) for n in non_zero)
    for pod in pods:
        assert snap.pod(pod.key) == pod
        assert pod.key in snap.pod_nodes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_derived_snapshots_equal_the_snapshot_built_afresh(data: st.DataObject) -> None:
    fold = data.draw(st.sampled_from([2, 64]))  # 2: the maps and rows fold their changes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shared_map, "_FOLD", fold)
        patch.setattr(shared_rows, "_FOLD", fold)
        _derive_and_compare(data)


def _derive_and_compare(data: st.DataObject) -> None:
    count = data.draw(st.integers(1, 5))
    nodes = [_node(f"n{i}", 0) for i in range(count)]
    pods: list[Pod] = []
    snap = ClusterSnapshot.build(nodes)
    history: list[tuple[ClusterSnapshot, list[Any], list[Pod]]] = []
    for step in range(data.draw(st.integers(1, 14))):
        action = data.draw(st.sampled_from(["assume", "assume", "forget", "node", "add node"]))
        if action == "forget" and pods:
            pod = pods.pop(data.draw(st.integers(0, len(pods) - 1)))
            snap = snap.without_pod(pod.key)
        elif action == "node":
            at = data.draw(st.integers(0, len(nodes) - 1))
            nodes[at] = _node(nodes[at].name, step + 1)
            snap = snap.with_node(nodes[at])
        elif action == "add node":
            nodes.append(_node(f"n{len(nodes)}", 0))
            snap = snap.with_node(nodes[-1])
        else:
            target = data.draw(st.sampled_from(nodes)).name
            pod = make_pod(
                f"p{step}",
                labels={"app": "x"},
                containers=[
                    container(
                        "c",
                        data.draw(st.sampled_from(REQUESTS)),
                        ports=data.draw(st.sampled_from(PORTS)),
                    )
                ],
                **data.draw(st.sampled_from(AFFINITY)),
            )
            snap = snap.with_pod(pod, target)
            pods.append(dataclasses.replace(pod, node_name=target))
        if data.draw(st.booleans()):
            # Built now, the next derivation copies it; left unbuilt, it walks the node map.
            assert snap.nodes is snap.nodes
            snap.node_positions  # noqa: B018 (carried to the next derivation)
            # Each node's pod lists with (anti-)affinity, carried by the next assume.
            snap.nodes_with_affinity_pods  # noqa: B018
            snap.nodes_with_required_anti_affinity_pods  # noqa: B018
        if data.draw(st.booleans()):
            # Read as rows, the next derivation shares them (read before or after the tuple).
            assert snap.rows is snap.rows
        history.append((snap, list(nodes), list(pods)))
    for derived, its_nodes, its_pods in history:
        _assert_equal(derived, its_nodes, its_pods)


@pytest.mark.parametrize(
    ("copy", "changes"),
    [
        (lambda pod: pod.with_node_name("n1"), {"node_name": "n1"}),
        (lambda pod: pod.with_binding("n1", "42"), {"node_name": "n1", "resource_version": "42"}),
        (lambda pod: pod.with_binding("", ""), {"node_name": "", "resource_version": ""}),
    ],
    ids=["node_name=n1", "node_name=n1 resource_version=42", "node_name='' resource_version=''"],
)
def test_dict_copies_equal_replace_with_their_derived_values(
    copy: Any, changes: dict[str, str]
) -> None:
    # Pod.with_node_name (assume) and Pod.with_binding (the watch's echo of a binding).
    pod = make_pod(
        "p",
        containers=[container("c", {"cpu": "1"})],
        **AFFINITY[1],
    )
    pod = dataclasses.replace(pod, resource_version="7")
    cached = [name for name, value in vars(Pod).items() if isinstance(value, cached_property)]
    assert cached  # read on the original, so the copy starts with them
    for name in cached:
        getattr(pod, name)
    placed = copy(pod)
    expected = dataclasses.replace(pod, **changes)
    assert placed == expected and pod.node_name == "" and pod.resource_version == "7"
    assert all(getattr(placed, name) == value for name, value in changes.items())
    assert type(placed) is Pod and placed is not pod
    for name in cached:
        assert getattr(placed, name) == getattr(expected, name), name
    assert {f.name: getattr(placed, f.name) for f in dataclasses.fields(Pod)} == {
        f.name: getattr(expected, f.name) for f in dataclasses.fields(Pod)
    }
    assert hash(placed) == hash(expected)


def test_request_sums_stay_exact_fractions() -> None:
    nodes = [make_node("a")]
    pods = [
        make_pod(f"p{i}", containers=[container("c", {"cpu": cpu, "memory": "1Gi"})])
        for i, cpu in enumerate(["250m", "1", "333m", "1"])
    ]
    snap = ClusterSnapshot.build(nodes)
    for pod in pods:
        snap = snap.with_pod(pod, "a")
    info = snap.node("a")
    assert info.requested == {"cpu": Fraction(2583, 1000), "memory": Fraction(4 * 1024**3)}
    assert all(type(v) is Fraction for v in info.requested.values())
    for pod in pods:
        snap = snap.without_pod(pod.key)
    assert snap.node("a").requested == {}


def test_fast_constructors_set_every_field_in_order() -> None:
    # ``NodeInfo._derived``, ``make_pod_info`` and ``ClusterSnapshot._replace_node`` fill the
    # instance dict themselves: a field added to the dataclass must be added there too, or it
    # would read its class default.
    snap = ClusterSnapshot.build([_node("a", 0)])
    derived = snap.with_pod(make_pod("p", containers=[container("c", {"cpu": "1"})]), "a")
    info = derived.node("a")
    for obj in (derived, info, info.pods[0]):
        names = [f.name for f in dataclasses.fields(obj)]  # type: ignore[arg-type]
        assert [k for k in vars(obj) if k in names] == names, type(obj).__name__


def test_a_snapshot_with_other_storage_keeps_what_its_nodes_gave() -> None:
    base = snapshot([make_node("n0"), make_node("n1")], [])
    _ = base.nodes, base.node_positions
    placed = base.with_pod(make_pod("p"), "n1")
    _ = placed.nodes
    derived = placed.with_storage(StorageObjects())
    assert derived.nodes is placed.nodes
    assert derived.derivation == placed.derivation == (base.generation, "n1")
    assert derived.generation != placed.generation
    assert derived.storage == StorageObjects() and placed.storage is base.storage
