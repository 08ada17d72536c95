"""The storage kinds read from snapshots: fields kept, defaults applied, errors naming the field."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.kube_profile import run_cycle
from policyengine.model.parse import parse_pod
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.model.storage import (
    ANN_STORAGE_CLASS,
    WAIT_FOR_FIRST_CONSUMER,
    csi_attach_limit_key,
)
from policyengine.model.volumes import AWS_EBS, EPHEMERAL, PVC, RBD, claim_name

GI = 1024**3


def _pv(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], **spec},
        "status": {"phase": "Available"},
    }


def _pvc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c1", "namespace": "ns"},
        "spec": {"resources": {"requests": {"storage": "5Gi"}}, **spec},
    }


def _objects(*items: dict[str, Any]) -> Any:
    return parse_objects([{"kind": "List", "items": list(items)}], "snap.yaml")


def test_every_storage_kind_is_read_without_a_warning() -> None:
    loaded = _objects(
        _pv(
            csi={"driver": "d", "volumeHandle": "h"},
            storageClassName="fast",
            claimRef={"namespace": "ns", "name": "c1", "uid": "u1"},
            nodeAffinity={
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": ["n1"],
                                }
                            ]
                        }
                    ]
                }
            },
        ),
        _pvc(storageClassName="fast", accessModes=["ReadWriteOncePod"]),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "d",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}
            ],
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {
                "name": "n1",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "a,b"},
            },
            "spec": {"drivers": [{"name": "d", "nodeID": "x", "allocatable": {"count": 3}}]},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "d"},
            "spec": {"storageCapacity": True},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "fast",
            "nodeTopology": {"matchLabels": {"zone": "a"}},
            "capacity": "20Gi",
        },
    )
    assert loaded.warnings == ()
    storage = loaded.storage
    pv = storage.pvs["pv1"]
    assert pv.capacity == 10 * GI and pv.csi_driver == "d" and pv.csi_handle == "h"
    assert pv.local_node_names == ("n1",)
    assert pv.reaches({"kubernetes.io/hostname": "n1"})
    assert not pv.reaches({"kubernetes.io/hostname": "n2"})
    claim = storage.claim("ns", "c1")
    assert claim is not None and claim.request == 5 * GI and not claim.fully_bound
    assert storage.classes["fast"].volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
    assert storage.classes["fast"].allows({"zone": "b"})
    assert not storage.classes["fast"].allows({"zone": "c"})
    assert storage.is_delay_binding(claim)
    assert storage.csi_nodes["n1"].drivers[0].allocatable_count == 3
    assert storage.csi_nodes["n1"].migrated_plugins == {"a", "b"}
    assert storage.csi_drivers["d"].storage_capacity
    assert storage.capacities[0].fits(20 * GI) and not storage.capacities[0].fits(21 * GI)
    assert storage.capacities[0].reaches({"zone": "a"})
    assert storage.pvs_by_class["fast"] == (pv,)


def test_list_kinds_of_storage_objects_are_read() -> None:
    loaded = parse_objects([{"kind": "PersistentVolumeList", "items": [_pv()]}], "pv.yaml")
    assert list(loaded.storage.pvs) == ["pv1"] and not loaded.warnings


def test_the_beta_class_annotation_wins_over_the_field() -> None:
    raw = _pvc(storageClassName="b")
    raw["metadata"]["annotations"] = {ANN_STORAGE_CLASS: "a"}
    claim = _objects(raw).storage.claim("ns", "c1")
    assert claim is not None and claim.storage_class == "a"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (_pv(capacity={"storage": "lots"}), "PersistentVolume pv1: spec.capacity.storage:"),
        (_pv(volumeMode="Weird"), "PersistentVolume pv1: spec.volumeMode: must be Filesystem"),
        (_pv(csi={"volumeHandle": "h"}), "PersistentVolume pv1: spec.csi.driver: is required"),
        (_pvc(accessModes="ReadWriteOnce"), "PersistentVolumeClaim ns/c1: spec.accessModes:"),
        (
            {"kind": "StorageClass", "metadata": {"name": "s"}, "volumeBindingMode": "Later"},
            "StorageClass s: volumeBindingMode: must be Immediate or WaitForFirstConsumer",
        ),
        (
            {
                "kind": "CSINode",
                "metadata": {"name": "n"},
                "spec": {"drivers": [{"name": "d", "allocatable": {"count": "x"}}]},
            },
            "CSINode n: spec.drivers[0].allocatable.count: expected an integer",
        ),
        (
            {"kind": "CSIStorageCapacity", "metadata": {"name": "c"}, "capacity": "1Zz"},
            "CSIStorageCapacity c: capacity:",
        ),
        ({"kind": "PersistentVolume", "metadata": {}}, "metadata.name: is required"),
    ],
    ids=[
        "pv-capacity",
        "pv-volume-mode",
        "pv-csi-driver",
        "pvc-access-modes",
        "class-binding-mode",
        "csinode-count",
        "capacity-quantity",
        "no-name",
    ],
)
def test_malformed_fields_name_the_object_and_field(item: dict[str, Any], expected: str) -> None:
    with pytest.raises(ModelError) as caught:
        _objects(item)
    assert expected in str(caught.value)


def test_pod_volumes_are_read() -> None:
    pod = parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "b", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "c", "awsElasticBlockStore": {"volumeID": "v", "readOnly": True}},
                    {"name": "d", "rbd": {"image": "i", "monitors": ["m"]}},
                    {"name": "e", "emptyDir": {}},
                ],
            },
        }
    )
    kinds = [v.kind for v in pod.volumes]
    assert kinds == [PVC, EPHEMERAL, AWS_EBS, RBD, "emptyDir"]
    assert [claim_name(pod.name, v) for v in pod.volumes[:2]] == ["data", "p-b"]
    assert pod.volumes[2].read_only and pod.volumes[3].pool == "rbd"


def test_a_claim_volume_without_a_claim_name_is_an_error() -> None:
    with pytest.raises(ModelError, match=r"spec.volumes\[0\].persistentVolumeClaim.claimName"):
        parse_pod(
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c"}],
                    "volumes": [{"name": "a", "persistentVolumeClaim": {}}],
                },
            }
        )


def test_the_snapshot_holds_the_storage_objects() -> None:
    loaded = _objects(_pv(), {"kind": "Node", "metadata": {"name": "n1"}})
    snapshot, _, _ = snapshot_from_objects(loaded.nodes, loaded.pods, storage=loaded.storage)
    assert "pv1" in snapshot.storage.pvs
    assert snapshot.without_node("n1").storage is snapshot.storage
    pv = snapshot.storage.pvs["pv1"]
    assert pv.capacity == Fraction(10 * GI)


def test_long_csi_driver_names_get_a_hashed_limit_key() -> None:
    assert csi_attach_limit_key("ebs.csi.aws.com") == "attachable-volumes-csi-ebs.csi.aws.com"
    long = "a-very-long-csi-driver-name.storage.example.com"
    key = csi_attach_limit_key(long)
    assert key.startswith("attachable-volumes-csi-" + long[:23]) and len(key) == 23 + 23 + 16


def test_a_snapshot_without_storage_objects_leaves_claims_alone() -> None:
    claimed = parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        }
    )
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"pods": "9"}}}
    loaded = _objects(node)
    assert not loaded.storage.known
    snapshot, _, warnings = snapshot_from_objects(loaded.nodes, [claimed], storage=loaded.storage)
    assert warnings == (
        "1 pending pod uses PersistentVolumeClaims or in-tree disks, but the snapshot holds no "
        "storage objects: the storage filters pass them (add pv,pvc,storageclass,csinode,"
        "csidriver,csistoragecapacity to kubectl get)",
    )
    assert run_cycle(claimed, snapshot).feasible == ("n1",)
    known = _objects(node, _pv())
    snapshot, _, warnings = snapshot_from_objects(known.nodes, [claimed], storage=known.storage)
    assert warnings == ()
    assert run_cycle(claimed, snapshot).feasible == ()
