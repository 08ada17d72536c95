"""NodeVolumeLimits' groups kept between cycles (``schedlib.volume_rows``) follow every change
that moves a node's answer: the storage changes below replace what running pods' claims read
(their volume's driver and handle, the claim itself, its class, a node's CSINode), and after
each one the columnar form, reading the kept groups, must give every node exactly the plugin's
reasons. Pending pods share claims with the running ones, so rows where a pod's own volume is
attached already are met too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.plugins import node_volume_limits
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.storage import (
    CSINode,
    CSINodeDriver,
    PersistentVolumeClaim,
    StorageObjects,
)
from policyengine.schedlib import storage_batch, volume_rows
from tests.engine.storage_strategies import CLAIMS, DRIVER, storage, volumes
from tests.engine.strategies import volume_cluster
from tests.model.builders import make_node, make_pod, pod_on, snapshot

Change = Callable[[StorageObjects], StorageObjects]


def _rebound(name: str, volume: str) -> Change:
    def change(objects: StorageObjects) -> StorageObjects:
        claim = objects.pvcs.get(f"default/{name}")
        return objects if claim is None else objects.with_pvc(replace(claim, volume_name=volume))

    return change


def _rehandled(volume: str, handle: str) -> Change:
    def change(objects: StorageObjects) -> StorageObjects:
        pv = objects.pvs.get(volume)
        if pv is None:
            return objects
        return objects.with_pv(replace(pv, csi_driver=DRIVER, csi_handle=handle, source="csi"))

    return change


def _limited(node: str, count: int) -> Change:
    def change(objects: StorageObjects) -> StorageObjects:
        driver = CSINodeDriver(DRIVER, node, allocatable_count=count)
        return objects.with_csi_node(CSINode(node, (driver,)))

    return change


def _reclassed(name: str) -> Change:
    def change(objects: StorageObjects) -> StorageObjects:
        cls = objects.classes.get("wffc")
        assert cls is not None
        return objects.with_class(replace(cls, name=name, provisioner="other.example.com"))

    return change


@st.composite
def changes(draw: st.DrawFn, names: list[str]) -> Change:
    claim = st.sampled_from(CLAIMS[:4])
    volume = st.sampled_from(["pv0", "pv1", "pv2", "ghost"])
    return draw(
        st.one_of(
            st.builds(_rebound, claim, volume),
            st.builds(_rehandled, volume, st.sampled_from(["h0", "h1", "shared"])),
            st.builds(lambda c: lambda s: s.without_pvc(f"default/{c}"), claim),
            st.builds(lambda v: lambda s: s.without_pv(v), volume),
            st.builds(_limited, st.sampled_from(names), st.integers(0, 2)),
            st.builds(_reclassed, st.sampled_from(["wffc", "local"])),
        )
    )


def _form_equals_the_plugin(pod: Any, snap: ClusterSnapshot) -> None:
    state = node_volume_limits.prepare_filter(pod, snap)
    infos = list(snap.nodes)
    expected = [node_volume_limits.filter(state, info) for info in infos]
    with mock.patch.object(storage_batch, "_FEW", 0):
        assert list(storage_batch.FORMS["NodeVolumeLimits"](state, infos, snap)) == expected
    if not state.skip:
        # What the kept groups hold is what groups built afresh would.
        kept = volume_rows._KEPT[0]
        assert _held(kept) == _held(volume_rows.LimitRows.build(snap, snap.storage, False))


def _held(rows: volume_rows.LimitRows) -> tuple[Any, ...]:
    group_of = {code: group for group, code in rows.groups.items()}
    groups = [group_of.get(code) for code in rows.codes.tolist()]
    # No emptied entry is kept.
    assert all(rows.holders.values()) and all(rows.readers.values())
    return groups, rows.holders, rows.readers


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kept_groups_follow_every_storage_change(data: st.DataObject) -> None:
    cluster_nodes, running = data.draw(volume_cluster(6, 8))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, running).with_storage(data.draw(storage(names)))
    pending = make_pod("pending", volumes=data.draw(volumes(always=True)))
    _form_equals_the_plugin(pending, snap)
    for step, change in enumerate(data.draw(st.lists(changes(names), max_size=5))):
        snap = snap.with_storage(change(snap.storage))
        _form_equals_the_plugin(pending, snap)
        # Placing a pod changes its node's row alone, and the groups follow that too.
        if data.draw(st.booleans()):
            placed = make_pod(f"placed{step}", volumes=data.draw(volumes(always=True)))
            snap = snap.with_pod(placed, data.draw(st.sampled_from(names)))
            _form_equals_the_plugin(pending, snap)


def test_a_row_is_looked_at_again_only_when_its_claims_change() -> None:
    """The kept groups are followed, not rebuilt, when the storage derives from theirs."""
    cluster = snapshot(
        [make_node(f"n{i}") for i in range(3)],
        [pod_on("n0", "a", volumes=[_claim("c0")]), pod_on("n1", "b")],
    )
    base = StorageObjects.build(pvcs=[PersistentVolumeClaim("c0", "default")])
    snap = cluster.with_storage(base)
    kept = volume_rows.LimitRows.build(snap, base, False)
    assert kept.readers[("pvc", "default/c0")] == {0}
    looked: list[int] = []
    with mock.patch.object(kept, "look_at", lambda row, info: looked.append(row)):
        later = base.with_pvc(PersistentVolumeClaim("c1", "default"))
        assert kept.follow(snap.with_storage(later), later)
        assert looked == []
        latest = later.with_pvc(PersistentVolumeClaim("c0", "default", volume_name="pv0"))
        assert kept.follow(snap.with_storage(latest), latest)
        assert looked == [0]
        looked.clear()
        assert kept.follow(snap.with_storage(base), base)  # back: the claim differs again
        assert looked == [0]
        apart = StorageObjects.build(pvcs=[PersistentVolumeClaim("c0", "default")])
        assert not kept.follow(snap.with_storage(apart), apart)  # unrelated: rebuild


def _claim(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}
