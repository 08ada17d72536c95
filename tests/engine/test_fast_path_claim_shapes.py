"""Pods whose claims wait for their first consumer share the storage builtins' results by the
claims' shapes, and still decide as the reference evaluator.

A StatefulSet's replicas each have claims of their own, alike in class and size: the storage
builtins key such pods by their claims' shapes (``schedlib.storage``), so that one pod's
results serve the next. Here several pods with claims of a few shapes are placed one after
another through one class cache, their volume decisions assumed (each placed claim then names
its node), while the cluster's storage moves between cycles the ways that could make a shared
result wrong: a capacity shrinks, a class's topology narrows, a CSINode's attach limit
changes, a volume of a claim's class appears, another pod's claim is bound, a running pod's
claim comes to hold the same volume. Some pods share a claim with running pods (attached
already: keyed by their own names), some carry an in-tree disk beside their claims.

The tables make each such move between two pods alike, at a node the first pod left alone, so
that a key missing any of its parts decides the second pod wrongly there: each part of the
keys, taken out, fails one of their rows.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.volumes import assume_volumes
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.snapshot_io import parse_objects
from policyengine.model.storage import ClaimRef, CSIDriver, PersistentVolume, StorageObjects
from policyengine.model.storage_log import KEPT
from tests.engine.strategies import compiled
from tests.model.builders import make_node, make_pod, snapshot
from tests.model.storage_builders import relisted

POLICY = 'import "kube-default.sched"\n'
DRIVER = "csi.example.com"
TRACKED = "tracked.example.com"  # a driver whose capacity is tracked
EBS = "ebs.csi.aws.com"
# (class, size) of the pending pods' claims: few, so that pods share shapes.
SHAPES = [("prov", "1Gi"), ("prov", "10Gi"), ("tracked", "5Gi"), ("ebs", "1Gi"), ("local", "1Gi")]
RUNNING_CLAIMS = ["r0", "r1"]
# How the storage moves between two cycles, the likelier the more often listed.
MOVES = [
    *("capacity", "limit", "bind", "running") * 3,
    *("topology", "driver") * 2,
    "volume",
    "none",
]


def _objects(items: list[dict[str, Any]]) -> StorageObjects:
    return parse_objects([{"kind": "List", "items": items}], "storage").storage


def _class(name: str, provisioner: str, zones: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if zones:
        out["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "zone", "values": zones}]}]
    return out


def _capacity(name: str, zone: str, size: str) -> dict[str, Any]:
    return {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": "tracked",
        "nodeTopology": {"matchLabels": {"zone": zone}},
        "capacity": size,
    }


def _claim(name: str, cls: str, size: str) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": cls,
        },
        "status": {"phase": "Pending"},
    }


def _volume(name: str, cls: str, host: str | None, claim: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": cls,
        "csi": {"driver": DRIVER, "volumeHandle": f"h-{name}"},
    }
    if host is not None:
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
    if claim is not None:
        spec["claimRef"] = {"namespace": "default", "name": claim, "uid": f"u-{claim}"}
    phase = "Available" if claim is None else "Bound"
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"phase": phase},
    }


@st.composite
def _storage(
    draw: st.DrawFn, hosts: list[str], pending: int, shapes: list[tuple[str, str]]
) -> StorageObjects:
    items: list[dict[str, Any]] = [
        _class("prov", DRIVER, draw(st.sampled_from([None, ["a"], ["a", "b"]]))),
        _class("tracked", TRACKED, None),
        _class("ebs", "kubernetes.io/aws-ebs", None),
        _class("local", "kubernetes.io/no-provisioner", None),
        {"kind": "CSIDriver", "metadata": {"name": TRACKED}, "spec": {"storageCapacity": True}},
    ]
    for index, zone in enumerate(["a", "b"]):
        items.append(_capacity(f"cap{index}", zone, draw(st.sampled_from(["1Gi", "8Gi"]))))
    for index in range(draw(st.integers(0, 2))):  # local volumes: the local class's claims wait
        items.append(_volume(f"local{index}", "local", draw(st.sampled_from(hosts))))
    for name in RUNNING_CLAIMS:
        cls, size = draw(st.sampled_from(SHAPES))
        items.append(_claim(name, cls, size))
    for pod in range(pending):
        for index in range(2):
            cls, size = draw(st.sampled_from(shapes))
            items.append(_claim(f"p{pod}-{index}", cls, size))
    for host in hosts:
        if draw(st.integers(0, 5)) == 0:
            continue
        meta: dict[str, Any] = {"name": host}
        if draw(st.booleans()):  # the in-tree EBS plugin migrated here
            meta["annotations"] = {
                "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"
            }
        drivers = [
            {"name": name, "nodeID": host, "allocatable": {"count": draw(st.integers(0, 3))}}
            for name in (DRIVER, TRACKED, EBS)
            if draw(st.integers(0, 2))
        ]
        items.append({"kind": "CSINode", "metadata": meta, "spec": {"drivers": drivers}})
    return _objects(items)


@st.composite
def _nodes(draw: st.DrawFn) -> list[Any]:
    """Nodes that take any pod but for their storage: whether a result kept for a shape is
    still right shows at every one of them."""
    out = []
    for index in range(draw(st.integers(2, 5))):
        labels = {"kubernetes.io/hostname": f"n{index}"}
        zone = draw(st.sampled_from([None, "a", "b", "b"]))
        if zone is not None:
            labels["zone"] = zone
        out.append(make_node(f"n{index}", labels=labels, pods=draw(st.integers(2, 6))))
    return out


def _claim_volume(name: str, claim: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


@st.composite
def _pending_volumes(draw: st.DrawFn, pod: int) -> list[dict[str, Any]]:
    out = [_claim_volume("data", f"p{pod}-0")]
    if draw(st.booleans()):
        out.append(_claim_volume("logs", f"p{pod}-1"))
    if draw(st.integers(0, 7)) == 0:  # a claim running pods hold already
        out.append(_claim_volume("shared", draw(st.sampled_from(RUNNING_CLAIMS))))
    if draw(st.integers(0, 7)) == 0:
        out.append({"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}})
    return out


def _moved(draw: st.DrawFn, snap: ClusterSnapshot, hosts: list[str]) -> ClusterSnapshot:
    """The storage moved one way that could make a result shared across cycles wrong."""
    storage = snap.storage
    move = draw(st.sampled_from(MOVES))
    if move == "capacity":
        index = draw(st.integers(0, 1))
        size = draw(st.sampled_from(["1Gi", "8Gi"]))
        cap = _objects([_capacity(f"cap{index}", "ab"[index], size)])
        storage = storage.with_capacity(cap.capacities[0])
    elif move == "topology":
        zones = draw(st.sampled_from([None, ["a"], ["b"]]))
        storage = storage.with_class(_objects([_class("prov", DRIVER, zones)]).classes["prov"])
    elif move == "limit":
        host = draw(st.sampled_from(hosts))
        drivers = [
            {"name": name, "nodeID": host, "allocatable": {"count": draw(st.integers(0, 2))}}
            for name in (DRIVER, TRACKED, EBS)
        ]
        node = _objects(
            [{"kind": "CSINode", "metadata": {"name": host}, "spec": {"drivers": drivers}}]
        )
        storage = storage.with_csi_node(node.csi_nodes[host])
    elif move == "volume":  # a volume of a provisioned class: its claims no longer fresh
        cls = draw(st.sampled_from(["prov", "tracked"]))
        host = draw(st.sampled_from([None, *hosts]))
        pv = _objects([_volume(f"new-{len(storage.pvs)}", cls, host)]).pvs
        storage = storage.with_pv(next(iter(pv.values())))
    elif move in ("bind", "running"):  # the PV controller binds a claim
        name = draw(st.sampled_from(RUNNING_CLAIMS if move == "running" else list(storage.pvcs)))
        claim = storage.pvcs.get(name if "/" in name else f"default/{name}")
        if claim is not None and not claim.volume_name:
            pv_name = f"bound-{claim.name}"
            pv = _objects([_volume(pv_name, claim.storage_class, None, claim.name)]).pvs[pv_name]
            annotations = claim.annotations.with_item("pv.kubernetes.io/bind-completed", "yes")
            storage = storage.with_pv(pv).with_pvc(
                replace(claim, volume_name=pv_name, annotations=annotations, phase="Bound")
            )
    elif move == "driver":  # the tracked driver stops (or starts) tracking capacity
        tracked = storage.csi_drivers.get(TRACKED)
        if tracked is not None:
            storage = storage.with_csi_driver(
                replace(tracked, storage_capacity=not tracked.storage_capacity)
            )
    return snap if storage is snap.storage else snap.with_storage(storage)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pods_alike_in_their_claims_decide_as_the_reference(data: st.DataObject) -> None:
    program = compiled(POLICY)
    cluster_nodes = data.draw(_nodes())
    hosts = [n.name for n in cluster_nodes]
    pending = data.draw(st.integers(3, 8))
    # One or two shapes a run: the pods after the first meet results kept for their shape.
    shapes = data.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2, unique=True))
    running = [
        make_pod(
            f"run{i}",
            node_name=data.draw(st.sampled_from(hosts)),
            volumes=[_claim_volume("data", RUNNING_CLAIMS[i % len(RUNNING_CLAIMS)])],
        )
        for i in range(data.draw(st.integers(0, 3)))
    ]
    storage = data.draw(_storage(hosts, pending, shapes))
    snap = snapshot(cluster_nodes, running).with_storage(storage)
    rng = random.Random(data.draw(st.integers(0, 5)))
    options = CycleOptions(all_filters=data.draw(st.booleans()), cache=ClassCache())
    for index in range(pending):
        pod = make_pod(f"pending{index}", volumes=data.draw(_pending_volumes(index)))
        state = rng.getstate()
        decision = schedule(program, pod, snap, rng, options)
        replay = random.Random()
        replay.setstate(state)
        assert differences(decision, reference_decision(program, pod, snap, replay)) == []
        if decision.node is not None:
            snap = assume_volumes(
                snap.with_pod(pod, decision.node), decision.node, decision.volumes
            )
        snap = _moved(data.draw, snap, hosts)


# --- one move between two pods alike, each a way a result kept for the shape could go wrong --


def _base_storage(limits: dict[str, int]) -> list[dict[str, Any]]:
    """The classes, the tracked driver, 8Gi of capacity in each zone, each host's CSINode
    with ``limits`` per driver, and the claims of the table's pods (``p0``, ``p1``: ``prov``
    1Gi; ``t0``, ``t1``: ``tracked`` 5Gi, ``t9`` 9Gi; ``l0``, ``l1``: ``local`` 1Gi) and of the running
    pods (``r0``: ``other`` 1Gi, provisioned by the driver of ``prov``; ``r1``: ``prov``)."""
    items: list[dict[str, Any]] = [
        _class("prov", DRIVER, None),
        _class("other", DRIVER, None),
        _class("tracked", TRACKED, None),
        _class("local", "kubernetes.io/no-provisioner", None),
        {"kind": "CSIDriver", "metadata": {"name": TRACKED}, "spec": {"storageCapacity": True}},
        _capacity("cap0", "a", "8Gi"),
        _capacity("cap1", "b", "8Gi"),
    ]
    for name, cls, size in [
        *(("p0", "prov", "1Gi"), ("p1", "prov", "1Gi")),
        *(("r0", "other", "1Gi"), ("r1", "prov", "1Gi")),
        *(("t0", "tracked", "5Gi"), ("t1", "tracked", "5Gi"), ("t9", "tracked", "9Gi")),
        *(("l0", "local", "1Gi"), ("l1", "local", "1Gi")),
    ]:
        items.append(_claim(name, cls, size))
    for host in ("n0", "n1", "n2"):
        drivers = [
            {"name": d, "nodeID": host, "allocatable": {"count": count}}
            for d, count in limits.items()
        ]
        items.append({"kind": "CSINode", "metadata": {"name": host}, "spec": {"drivers": drivers}})
    return items


def _csi_node(host: str, **limits: int) -> Any:
    drivers = [
        {
            "name": {"prov": DRIVER, "tracked": TRACKED}[d],
            "nodeID": host,
            "allocatable": {"count": n},
        }
        for d, n in limits.items()
    ]
    found = _objects(
        [{"kind": "CSINode", "metadata": {"name": host}, "spec": {"drivers": drivers}}]
    )
    return found.csi_nodes[host]


def _bound_elsewhere(storage: StorageObjects) -> StorageObjects:
    """The running pod's claim ``r0`` bound by the PV controller to a volume of the tracked
    driver: its node now attaches one volume of that driver, one fewer of ``prov``'s."""
    claim = storage.pvcs["default/r0"]
    pv = _objects([_volume("pv-r0", "other", None, "r0")]).pvs["pv-r0"]
    pv = replace(pv, csi_driver=TRACKED)
    annotations = claim.annotations.with_item("pv.kubernetes.io/bind-completed", "yes")
    return storage.with_pv(pv).with_pvc(
        replace(claim, volume_name="pv-r0", annotations=annotations, phase="Bound")
    )


def _churned(storage: StorageObjects) -> StorageObjects:
    """``storage`` after more claim updates than a lineage's change log keeps
    (``storage_log.KEPT``): what changed since an older storage can no longer be told."""
    claim = storage.pvcs["default/l1"]
    for version in range(KEPT + 1):
        storage = storage.with_pvc(replace(claim, resource_version=str(version)))
    return storage


# name: (the attach limit per driver on every host, the first pod's claim and the zone it is
# sent to, the move, the second pod's claim, the nodes it may go to). The move acts at a node
# the first pod left alone, so a result kept from the first pod's cycle would be wrong there.
MOVES_BETWEEN = {
    "capacity shrinks in a zone": (
        {TRACKED: 3},
        ("t0", "b"),
        lambda s: s.with_capacity(_objects([_capacity("cap0", "a", "1Gi")]).capacities[0]),
        "t1",
        ["n2"],
    ),
    "the second pod's claim is larger than any capacity": (
        {TRACKED: 3},
        ("t0", "b"),
        lambda s: s,
        "t9",
        [],
    ),
    "the class narrows its topology": (
        {DRIVER: 3},
        ("p0", "b"),
        lambda s: s.with_class(_objects([_class("prov", DRIVER, ["b"])]).classes["prov"]),
        "p1",
        ["n2"],
    ),
    "the claims' driver starts tracking capacity (none is published for the class)": (
        {DRIVER: 3},
        ("p0", "b"),
        lambda s: s.with_csi_driver(CSIDriver(DRIVER, storage_capacity=True)),
        "p1",
        [],
    ),
    "the claims' class moves to another driver": (
        {DRIVER: 3, TRACKED: 0},
        ("p0", "b"),
        lambda s: s.with_class(_objects([_class("prov", TRACKED, None)]).classes["prov"]),
        "p1",
        [],
    ),
    "a node's attach limit drops": (
        {DRIVER: 3},
        ("p0", "b"),
        lambda s: s.with_csi_node(_csi_node("n1", prov=1)).with_csi_node(_csi_node("n0", prov=0)),
        "p1",
        ["n1", "n2"],
    ),
    "a running pod's claim is bound to another driver's volume": (
        {DRIVER: 2, TRACKED: 1},
        ("p0", "b"),
        _bound_elsewhere,
        "p1",
        ["n0", "n1", "n2"],
    ),
    "the storage is listed anew (another lineage) with that claim bound": (
        {DRIVER: 2, TRACKED: 1},
        ("p0", "b"),
        lambda s: relisted(_bound_elsewhere(s)),
        "p1",
        ["n0", "n1", "n2"],
    ),
    "the storage moved past what its change log keeps, that claim bound on the way": (
        {DRIVER: 2, TRACKED: 1},
        ("p0", "b"),
        lambda s: _churned(_bound_elsewhere(s)),
        "p1",
        ["n0", "n1", "n2"],
    ),
    "a volume of the claims' class appears": (
        {DRIVER: 3},
        ("l0", None),
        lambda s: s.with_pv(_objects([_volume("pv-l", "local", "n1")]).pvs["pv-l"]),
        "l1",
        ["n1"],
    ),
    "the second pod's claim is attached already": (
        {DRIVER: 2},
        ("p0", "b"),
        lambda s: s,
        "r1",
        ["n0", "n1", "n2"],
    ),
}


@pytest.mark.parametrize(
    ("limits", "first", "move", "second", "feasible"), MOVES_BETWEEN.values(), ids=MOVES_BETWEEN
)
def test_a_result_kept_for_a_shape_follows_the_storage(
    limits: dict[str, int],
    first: tuple[str, str | None],
    move: Any,
    second: str,
    feasible: list[str],
) -> None:
    storage = _objects(_base_storage(limits))
    assert _second_pod_feasible(storage, first, move, second) == feasible


def _local_volumes(limits: dict[str, int], hosts: str, taken: str = "") -> StorageObjects:
    """The table's storage with a local volume pinned to each of ``hosts`` (``"01"``: n0 and
    n1), those of ``taken`` named by another claim already."""
    items = _base_storage(limits)
    for index in hosts:
        claim = "elsewhere" if index in taken else None
        items.append(_volume(f"pv-n{index}", "local", f"n{index}", claim))
    return _objects(items)


def _taken(storage: StorageObjects, name: str, claim: str | None) -> StorageObjects:
    """Volume ``name`` named by ``claim`` (None: released, available again)."""
    ref = None if claim is None else ClaimRef("default", claim, f"u-{claim}")
    phase = "Available" if claim is None else "Bound"
    return storage.with_pv(replace(storage.pvs[name], claim_ref=ref, phase=phase))


def _second_volume(storage: StorageObjects, host: str) -> StorageObjects:
    """Another local volume pinned to ``host``."""
    return storage.with_pv(_objects([_volume(f"pv-{host}-2", "local", host)]).pvs[f"pv-{host}-2"])


# name: (the local volumes' hosts, those taken already, the move, the nodes the second pod may
# go to). The first pod (a local claim) is sent to zone b (n2), the second's claim is alike.
LOCAL_MOVES = {
    "a node's volume is taken by another claim": (
        "012",
        "",
        lambda s: _taken(s, "pv-n1", "elsewhere"),
        ["n0"],
    ),
    "a node's volume is released": (
        "012",
        "1",
        lambda s: _taken(s, "pv-n1", None),
        ["n0", "n1"],
    ),
    "a volume pinned to no node appears": (
        "02",
        "",
        lambda s: s.with_pv(_objects([_volume("pv-any", "local", None)]).pvs["pv-any"]),
        ["n0", "n1", "n2"],
    ),
    "nothing moves: the first pod took the volume of its node": (
        "012",
        "",
        lambda s: s,
        ["n0", "n1"],
    ),
}


@pytest.mark.parametrize(
    ("hosts", "taken", "move", "feasible"), LOCAL_MOVES.values(), ids=LOCAL_MOVES
)
def test_a_result_kept_for_claims_matched_to_local_volumes_follows_them(
    hosts: str, taken: str, move: Any, feasible: list[str]
) -> None:
    storage = _local_volumes({DRIVER: 3}, hosts, taken)
    assert _second_pod_feasible(storage, ("l0", "b"), move, "l1") == feasible


def test_pods_with_two_claims_matched_to_local_volumes_count_each_nodes_volumes() -> None:
    """Two claims of a pod take two volumes of a node: a second volume appearing on a node
    that had one opens it, though a volume was found there before as after."""
    items = _base_storage({DRIVER: 3})
    items += [_claim(name, "local", "1Gi") for name in ("l0b", "l1b")]
    volumes = [("0", ""), ("1", ""), ("1", "-2"), ("2", ""), ("2", "-2")]
    items += [_volume(f"pv-n{h}{suffix}", "local", f"n{h}") for h, suffix in volumes]
    storage = _objects(items)
    found = _second_pod_feasible(
        storage, (("l0", "l0b"), "b"), lambda s: _second_volume(s, "n0"), ("l1", "l1b")
    )
    assert found == ["n0", "n1"]


def _second_pod_feasible(
    storage: StorageObjects,
    first: tuple[str | tuple[str, ...], str | None],
    move: Any,
    second: str | tuple[str, ...],
) -> list[str]:
    """The nodes the second of two pods may go to, each decided as the reference decides,
    the first pod (its claim, the zone it is sent to) placed and ``move`` made in between,
    through one class cache."""
    program = compiled(POLICY)
    cluster = [
        make_node(host, labels={"kubernetes.io/hostname": host, "zone": zone}, pods=10)
        for host, zone in (("n0", "a"), ("n1", "a"), ("n2", "b"))
    ]
    # Two running pods on n0 attach claims r0 and r1 (volumes of prov's driver while unbound).
    running = [
        make_pod(f"run{i}", node_name="n0", volumes=[_claim_volume("data", f"r{i}")])
        for i in range(2)
    ]
    snap = snapshot(cluster, running).with_storage(storage)
    options = CycleOptions(cache=ClassCache())
    claims, zone = first
    selector = {"zone": zone} if zone else {}
    pods = [
        make_pod("first", volumes=_claim_volumes(claims), node_selector=selector),
        make_pod("second", volumes=_claim_volumes(second)),
    ]
    for index, pod in enumerate(pods):
        decision = schedule(program, pod, snap, random.Random(0), options)
        assert differences(decision, reference_decision(program, pod, snap, random.Random(0))) == []
        if decision.node is not None:
            snap = assume_volumes(
                snap.with_pod(pod, decision.node), decision.node, decision.volumes
            )
        if index == 0:
            snap = snap.with_storage(move(snap.storage))
    return sorted(decision.feasible)


def _claim_volumes(claims: str | tuple[str, ...]) -> list[dict[str, Any]]:
    named = (claims,) if isinstance(claims, str) else claims
    return [_claim_volume(f"data{i}", claim) for i, claim in enumerate(named)]


def test_a_volume_naming_the_claim_keeps_the_pod_to_where_it_reaches() -> None:
    """A volume naming the second pod's claim (prebound) is the only one it may take."""
    items = _base_storage({DRIVER: 3})
    items += [_volume(f"pv-n{h}", "local", f"n{h}") for h in "012"]
    items.append(_volume("pv-pre", "local", "n0", "l1"))
    found = _second_pod_feasible(_objects(items), ("l0", "b"), lambda s: s, "l1")
    assert found == ["n0"]


def _zoned_volume(name: str, host: str, zone: str) -> PersistentVolume:
    """A local volume pinned to ``host`` by a term that asks for ``zone`` as well."""
    spec = _volume(name, "local", host)
    term = spec["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    term["matchExpressions"].append({"key": "zone", "operator": "In", "values": [zone]})
    return _objects([spec]).pvs[name]


def test_a_volume_pinned_by_more_than_its_host_is_read_at_every_cycle() -> None:
    """A volume whose term asks more of a node than its hostname (here its zone) is matched
    by that term: changed to reach the node, it opens it."""
    storage = _local_volumes({DRIVER: 3}, "02").with_pv(_zoned_volume("pv-n1", "n1", "b"))
    found = _second_pod_feasible(
        storage, ("l0", "b"), lambda s: s.with_pv(_zoned_volume("pv-n1", "n1", "a")), "l1"
    )
    assert found == ["n0", "n1"]


def test_pods_with_claims_of_two_classes_follow_each_class_volumes() -> None:
    """Two claims of classes of their own, each matched to a node's volume of its class: a
    volume of the second class taken on a node closes it, though one of the first is still
    found there."""
    items = _base_storage({DRIVER: 3})
    items.append(_class("local2", "kubernetes.io/no-provisioner", None))
    items += [_claim(name, "local2", "1Gi") for name in ("l0b", "l1b")]
    for host in "012":
        items.append(_volume(f"pv-n{host}", "local", f"n{host}"))
        items.append(_volume(f"pv2-n{host}", "local2", f"n{host}"))
    found = _second_pod_feasible(
        _objects(items),
        (("l0", "l0b"), "b"),
        lambda s: _taken(s, "pv2-n1", "elsewhere"),
        ("l1", "l1b"),
    )
    assert found == ["n0"]
