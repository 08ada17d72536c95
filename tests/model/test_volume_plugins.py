"""The storage plugins, table by table, on the cases kube-scheduler's own plugin tests hold.

Each row is a small cluster (nodes, placed pods, storage objects) and a pod, and what the
plugin says: its PreFilter's rejection of the whole pod, or its reasons on one node.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.plugins import KUBE_1_28
from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.plugins import volume_binding as binding
from policyengine.model.plugins import volume_restrictions as restrictions
from policyengine.model.plugins import volume_zone as zone
from policyengine.model.volume_binder import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    NOT_ENOUGH_SPACE,
    PV_NOT_EXIST,
    UNBOUND_IMMEDIATE,
)
from tests.model.storage_builders import (
    HOSTNAME,
    ZONE,
    affinity,
    claims,
    cluster,
    csi_node,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)

GCE = {"name": "d", "gcePersistentDisk": {"pdName": "foo"}}
GCE_OTHER = {"name": "d", "gcePersistentDisk": {"pdName": "bar"}}
GCE_RO = {"name": "d", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
EBS = {"name": "d", "awsElasticBlockStore": {"volumeID": "foo"}}
EBS_OTHER = {"name": "d", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"name": "d", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}}
RBD_OTHER_MONITORS = {"name": "d", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}}
ISCSI = {"name": "d", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.x:t1"}}
ISCSI_OTHER = {"name": "d", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.x:t1"}}


def _filter(plugin: Any, incoming: Any, snap: Any, at: str = "n1") -> list[str] | str:
    """The PreFilter's rejection (a string) or the Filter's reasons on node ``at``."""
    state = plugin.prepare_filter(incoming, snap)
    result = plugin.prefilter_result(state) if plugin.PLUGIN.prefilter_result else None
    if result is not None and result.rejection is not None:
        return result.rejection
    return plugin.filter(state, snap.node(at))


# --- VolumeRestrictions ---------------------------------------------------------------------

DISKS = [
    pytest.param([], [], [], id="nothing"),
    pytest.param([], [GCE], [], id="gce-one-state"),
    pytest.param([GCE], [GCE], [restrictions.DISK_CONFLICT], id="gce-same-state"),
    pytest.param([GCE_OTHER], [GCE], [], id="gce-different-state"),
    pytest.param([GCE_RO], [GCE_RO], [], id="gce-both-read-only"),
    pytest.param([EBS], [EBS], [restrictions.DISK_CONFLICT], id="ebs-same-state"),
    pytest.param([EBS_OTHER], [EBS], [], id="ebs-different-state"),
    pytest.param([RBD], [RBD], [restrictions.DISK_CONFLICT], id="rbd-same-state"),
    pytest.param([RBD_OTHER_MONITORS], [RBD], [], id="rbd-different-monitors"),
    pytest.param([ISCSI], [ISCSI], [restrictions.DISK_CONFLICT], id="iscsi-same-state"),
    pytest.param([ISCSI_OTHER], [ISCSI], [], id="iscsi-different-state"),
]


@pytest.mark.parametrize(("mine", "theirs", "expected"), DISKS)
def test_disk_conflicts(mine: list[Any], theirs: list[Any], expected: list[str]) -> None:
    snap = cluster([node("n1")], [pod("other", theirs, node_name="n1")])
    assert _filter(restrictions, pod("p", mine), snap) == expected


RWOP = ("ReadWriteOncePod",)
RWX = ("ReadWriteMany",)
ACCESS = [
    pytest.param([], [], [], [], id="nothing"),
    pytest.param(
        ["rwop"], [], [], 'persistentvolumeclaim "rwop" not found', id="failed-to-get-pvc"
    ),
    pytest.param(
        ["rwop"],
        [["rwx"]],
        [pvc("rwop", modes=RWOP), pvc("rwx", modes=RWX)],
        [],
        id="no-access-mode-conflict",
    ),
    pytest.param(
        ["rwop"],
        [["rwop"], ["rwx"]],
        [pvc("rwop", modes=RWOP), pvc("rwx", modes=RWX)],
        [restrictions.RWOP_CONFLICT],
        id="access-mode-conflict",
    ),
]


@pytest.mark.parametrize(("mine", "running", "objects", "expected"), ACCESS)
def test_read_write_once_pod_conflicts(
    mine: list[str], running: list[list[str]], objects: list[Any], expected: Any
) -> None:
    placed = [pod(f"r{i}", claims(*c), node_name="n2") for i, c in enumerate(running)]
    snap = cluster([node("n1"), node("n2")], placed, objects)
    assert _filter(restrictions, pod("p", claims(*mine)), snap) == expected


# --- VolumeZone -----------------------------------------------------------------------------

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
ZONED = [pv("pv-a", labels={ZONE: "us-west1-a"}), pvc("c", volume="pv-a", bound=True)]
ZONES = [
    pytest.param(ZONED, {ZONE: "us-west1-a"}, [], id="label-zone-satisfied"),
    pytest.param(ZONED, {ZONE: "us-west1-b"}, [zone.REASON], id="label-zone-failure"),
    pytest.param(ZONED, {"uselessLabel": "none"}, [], id="node-without-zone-labels"),
    pytest.param(
        [pv("pv-a", labels={ZONE: "us-west1-a__us-west1-b"}), pvc("c", volume="pv-a", bound=True)],
        {ZONE: "us-west1-b"},
        [],
        id="multi-zone-label",
    ),
    pytest.param(
        [pv("pv-a", labels={BETA_ZONE: "us-west1-a"}), pvc("c", volume="pv-a", bound=True)],
        {ZONE: "us-west1-a"},
        [],
        id="beta-label-read-against-ga",
    ),
    pytest.param(
        [pv("pv-a", labels={ZONE: "us-west1-a__"}), pvc("c", volume="pv-a", bound=True)],
        {ZONE: "us-west1-b"},
        [],
        id="malformed-label-ignored",
    ),
    pytest.param(
        [storage_class("wait"), pvc("c", cls="wait")],
        {ZONE: "us-west1-b"},
        [],
        id="unbound-wait-for-first-consumer-skipped",
    ),
    pytest.param(
        [pvc("c", volume="gone", bound=True)],
        {ZONE: "us-west1-a"},
        'persistentvolume "gone" not found',
        id="volume-missing",
    ),
    pytest.param(
        [storage_class("imm", wait=False), pvc("c", cls="imm")],
        {ZONE: "us-west1-a"},
        "PersistentVolume had no name",
        id="unbound-immediate",
    ),
]


@pytest.mark.parametrize(("objects", "labels", "expected"), ZONES)
def test_volume_zone(objects: list[Any], labels: dict[str, str], expected: Any) -> None:
    snap = cluster([node("n1", labels)], [], objects)
    assert _filter(zone, pod("p", claims("c")), snap) == expected


# --- NodeVolumeLimits (CSI) -----------------------------------------------------------------

DRIVER = "ebs.csi.aws.com"


def _csi_claims(*names: str) -> list[Any]:
    out: list[Any] = [storage_class("csi", DRIVER)]
    for name in names:
        out.append(pv(f"pv-{name}", cls="csi", claim=name, csi=(DRIVER, f"h-{name}")))
        out.append(pvc(name, cls="csi", volume=f"pv-{name}", bound=True))
    return out


LIMITS = [
    pytest.param(["a"], [["b"]], 2, [], id="fits-under-the-limit"),
    pytest.param(["a"], [["b", "c"]], 2, [limits.REASON], id="exceeds-the-limit"),
    pytest.param(["b"], [["b", "c"]], 2, [], id="a-volume-already-attached-counts-once"),
    pytest.param(["a", "b"], [["c"]], None, [], id="no-limit-on-the-node"),
    pytest.param(["unbound"], [["b", "c"]], 2, [limits.REASON], id="unbound-claim-counts-by-class"),
    pytest.param(["a"], [["b", "missing"]], 2, [], id="another-pod's-missing-claim-skipped"),
]


@pytest.mark.parametrize(("mine", "running", "count", "expected"), LIMITS)
def test_csi_limits(
    mine: list[str], running: list[list[str]], count: int | None, expected: list[str]
) -> None:
    objects = [*_csi_claims("a", "b", "c"), pvc("unbound", cls="csi")]
    objects.append(csi_node("n1", **{DRIVER: count}))
    placed = [pod(f"r{i}", claims(*c), node_name="n1") for i, c in enumerate(running)]
    snap = cluster([node("n1")], placed, objects)
    assert _filter(limits, pod("p", claims(*mine)), snap) == expected


def test_csi_limits_read_the_node_allocatable_without_a_csinode_count() -> None:
    placed = [pod("r", claims("b"), node_name="n1")]
    attach = {"attachable-volumes-csi-" + DRIVER: "1"}
    snap = cluster([node("n1", extra=attach)], placed, _csi_claims("a", "b"))
    assert _filter(limits, pod("p", claims("a")), snap) == [limits.REASON]


def test_migrated_in_tree_disks_count_as_their_csi_driver() -> None:
    migrated = csi_node("n1", **{DRIVER: 1})
    migrated["metadata"]["annotations"] = {
        "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"
    }
    placed = [pod("r", [EBS_OTHER], node_name="n1")]
    snap = cluster([node("n1")], placed, [migrated])
    assert _filter(limits, pod("p", [EBS]), snap) == [limits.REASON]
    # EBS's migration is GA: any CSINode will do now; v1.28 wanted the annotation.
    not_annotated = cluster([node("n1")], placed, [csi_node("n1", **{DRIVER: 1})])
    assert _filter(limits, pod("p", [EBS]), not_annotated) == [limits.REASON]
    state = limits.prepare_filter(pod("p", [EBS]), not_annotated, KUBE_1_28)
    assert limits.filter(state, not_annotated.node("n1")) == []
    # Without a CSINode nothing migrates.
    attach = {"attachable-volumes-csi-" + DRIVER: "1"}
    no_csinode = cluster([node("n1", extra=attach)], placed, [pvc("unrelated")])
    assert _filter(limits, pod("p", [EBS]), no_csinode) == []


# --- VolumeBinding --------------------------------------------------------------------------

LOCAL_N1 = affinity(HOSTNAME, "n1")
BINDING = [
    pytest.param([], [], id="no-claims"),
    pytest.param(
        [pv("pv", node_affinity=LOCAL_N1, claim="c"), pvc("c", volume="pv", bound=True)],
        [],
        id="bound-volume-reaches-the-node",
    ),
    pytest.param(
        [
            pv("pv", node_affinity=affinity(ZONE, "z2"), claim="c"),
            pvc("c", volume="pv", bound=True),
        ],
        [NODE_CONFLICT],
        id="bound-volume-node-affinity-conflict",
    ),
    pytest.param([pvc("c", volume="gone", bound=True)], [PV_NOT_EXIST], id="bound-volume-missing"),
    pytest.param(
        [storage_class("wait", wait=False), pvc("c", cls="wait")],
        UNBOUND_IMMEDIATE,
        id="unbound-immediate-claim",
    ),
    pytest.param([pvc("c")], UNBOUND_IMMEDIATE, id="claim-without-a-class"),
    pytest.param([pvc("c", cls="nosuch")], UNBOUND_IMMEDIATE, id="claim-of-a-missing-class"),
    pytest.param(
        [storage_class("wait"), pvc("c", cls="wait", volume="pv")],
        UNBOUND_IMMEDIATE,
        id="prebound-claim-not-bound-yet",
    ),
    pytest.param(
        [storage_class("wait"), pv("pv", cls="wait"), pvc("c", cls="wait")], [], id="volume-found"
    ),
    pytest.param(
        [storage_class("wait"), pv("pv", "1Gi", cls="wait"), pvc("c", cls="wait")],
        [BIND_CONFLICT],
        id="volume-too-small-and-no-provisioner",
    ),
    pytest.param(
        [storage_class("wait"), pv("pv", cls="wait", phase="Released"), pvc("c", cls="wait")],
        [BIND_CONFLICT],
        id="volume-not-available",
    ),
    pytest.param(
        [storage_class("wait"), pv("pv", cls="wait", claim="other"), pvc("c", cls="wait")],
        [BIND_CONFLICT],
        id="volume-claimed-by-another",
    ),
    pytest.param(
        [
            storage_class("wait"),
            pv("pv", cls="wait", node_affinity=affinity(HOSTNAME, "n2")),
            pvc("c", cls="wait"),
        ],
        [BIND_CONFLICT],
        id="volume-on-another-node",
    ),
    pytest.param(
        [
            storage_class("wait"),
            pv("pv", cls="wait", modes=("ReadOnlyMany",)),
            pvc("c", cls="wait"),
        ],
        [BIND_CONFLICT],
        id="access-modes-mismatch",
    ),
    pytest.param(
        [storage_class("wait", "csi.example.com"), pvc("c", cls="wait")], [], id="provisioned"
    ),
    pytest.param(
        [
            storage_class(
                "wait",
                "csi.example.com",
                allowedTopologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z2"]}]}],
            ),
            pvc("c", cls="wait"),
        ],
        [BIND_CONFLICT],
        id="provisioning-topology-mismatch",
    ),
    pytest.param(
        [
            storage_class("wait", "csi.example.com"),
            {
                "kind": "CSIDriver",
                "metadata": {"name": "csi.example.com"},
                "spec": {"storageCapacity": True},
            },
            pvc("c", cls="wait"),
        ],
        [NOT_ENOUGH_SPACE],
        id="no-storage-capacity",
    ),
    pytest.param(
        [
            storage_class("wait", "csi.example.com"),
            pvc("c", cls="wait", annotations={"volume.kubernetes.io/selected-node": "n2"}),
        ],
        [BIND_CONFLICT],
        id="provisioning-selected-another-node",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), BINDING)
def test_volume_binding(objects: list[Any], expected: Any) -> None:
    snap = cluster([node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z2"})], [], objects)
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"]
    assert _filter(binding, pod("p", claims(*names)), snap) == expected


def test_the_smallest_fitting_volume_is_chosen_and_a_prebound_one_first() -> None:
    objects = [
        storage_class("wait"),
        pv("big", "100Gi", cls="wait"),
        pv("small", "5Gi", cls="wait"),
        pv("tiny", "1Gi", cls="wait"),
        pvc("c", cls="wait"),
    ]
    snap = cluster([node("n1")], [], objects)
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    found = binding.node_volumes(state, snap.node("n1"))
    assert [b.pv.name for b in found.volumes.static] == ["small"]
    snap = cluster([node("n1")], [], [*objects, pv("mine", "100Gi", cls="wait", claim="c")])
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    found = binding.node_volumes(state, snap.node("n1"))
    assert [b.pv.name for b in found.volumes.static] == ["mine"]


def test_bound_local_volumes_restrict_the_nodes() -> None:
    objects = [pv("pv", node_affinity=LOCAL_N1, claim="c"), pvc("c", volume="pv", bound=True)]
    snap = cluster([node("n1"), node("n2")], [], objects)
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    assert binding.prefilter_result(state) is not None
    assert state.eligible == {"n1"}
    snap = cluster([node("n2")], [], objects)
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    result = binding.prefilter_result(state)
    assert result is not None and result.rejection == 'nodeinfo not found for node name "n1"'


WHOLE_POD = [
    pytest.param([], claims("gone"), 'persistentvolumeclaim "gone" not found', id="missing"),
    pytest.param(
        [],
        [{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-e"',
        id="ephemeral-not-created",
    ),
    pytest.param(
        [pvc("p-e", cls="x")],
        [{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
        "PVC default/p-e was not created for pod default/p (pod is not owner)",
        id="ephemeral-not-owned",
    ),
    pytest.param(
        [pvc("c", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["x"])],
        claims("c"),
        'persistentvolumeclaim "c" is being deleted',
        id="being-deleted",
    ),
]


@pytest.mark.parametrize(("objects", "volumes", "expected"), WHOLE_POD)
def test_volume_binding_rejects_the_whole_pod(
    objects: list[Any], volumes: list[Any], expected: str
) -> None:
    snap = cluster([node("n1")], [], objects)
    assert _filter(binding, pod("p", volumes), snap) == expected


def test_a_lost_claim_names_its_volume() -> None:
    lost = pvc("c", volume="ghost", bound=True)
    lost["status"] = {"phase": "Lost"}
    snap = cluster([node("n1")], [], [lost])
    assert _filter(binding, pod("p", claims("c")), snap) == (
        'persistentvolumeclaim "c" bound to non-existent persistentvolume "ghost"'
    )
