"""Builders for the storage plugins' table tests: volumes, claims, classes, CSINodes."""

from __future__ import annotations

from typing import Any

from policyengine.model.parse import parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.snapshot_io import parse_objects
from policyengine.model.storage import EMPTY_STORAGE, StorageObjects
from tests.model.builders import make_node, pod_dict

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def affinity(key: str, *values: str) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
            ]
        }
    }


def pv(
    name: str,
    size: str = "10Gi",
    *,
    cls: str = "",
    claim: str | None = None,
    node_affinity: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    csi: tuple[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        **spec,
    }
    if claim is not None:
        body["claimRef"] = {"namespace": "default", "name": claim}
    if node_affinity is not None:
        body["nodeAffinity"] = node_affinity
    if csi is not None:
        body["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": body,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    size: str = "5Gi",
    *,
    cls: str | None = None,
    volume: str = "",
    bound: bool = False,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    notes = dict(annotations or {})
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "yes"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "volumeName": volume,
    }
    if cls is not None:
        spec["storageClassName"] = cls
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "annotations": notes, **meta},
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def storage_class(
    name: str, provisioner: str = "kubernetes.io/no-provisioner", *, wait: bool = True, **more: Any
) -> dict[str, Any]:
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate",
        **more,
    }


def csi_node(name: str, **counts: int | None) -> dict[str, Any]:
    drivers = []
    for driver, count in counts.items():
        entry: dict[str, Any] = {"name": driver.replace("_", "."), "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        drivers.append(entry)
    return {"kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": drivers}}


def claims(*names: str) -> list[dict[str, Any]]:
    return [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)
    ]


def pod(name: str = "p", volumes: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
    return parse_pod(pod_dict(name, volumes=volumes or [], **kwargs))


def cluster(
    nodes: list[Any],
    pods: list[Any] = (),
    storage: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> ClusterSnapshot:
    """A cluster whose storage is known to be ``storage`` (nothing, when empty)."""
    loaded = parse_objects([{"kind": "List", "items": list(storage)}], "storage")
    known = loaded.storage if loaded.storage_objects else EMPTY_STORAGE
    return ClusterSnapshot.build(nodes, pods, storage=known)


def node(name: str, labels: dict[str, str] | None = None, **kwargs: Any) -> Any:
    return make_node(name, labels={HOSTNAME: name, **(labels or {})}, **kwargs)


def relisted(storage: StorageObjects) -> StorageObjects:
    """The same objects as a storage of its own, built afresh rather than derived from
    ``storage`` (as a relist builds it)."""
    return StorageObjects.build(
        storage.pvs.values(),
        storage.pvcs.values(),
        storage.classes.values(),
        storage.csi_nodes.values(),
        storage.csi_drivers.values(),
        storage.capacities,
    )
