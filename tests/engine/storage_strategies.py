"""Hypothesis strategies for storage: claims, volumes, classes and CSINodes of a small cluster,
and the volumes of a pod, for the tests holding the fast path equal to the reference.

Claim names are drawn from a few, so pods share claims, miss them, and find them bound, lost,
being deleted or waiting for their first consumer; volumes are local (pinned to a node), zonal
or unpinned, of a few sizes, some in-tree EBS disks; CSINodes set attach limits, of the EBS CSI
driver too, and some name the in-tree EBS plugin as migrated. ``mixed_volumes`` adds volumes pinned
to a host by terms that may ask for more (a zone, a label to exist, a term that never
matches).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from policyengine.model.snapshot_io import parse_objects
from policyengine.model.storage import StorageObjects

CLAIMS = ["c0", "c1", "c2", "c3", "missing"]
CLASSES = ["wffc", "local", "imm"]
DRIVER = "csi.example.com"
EBS = "ebs.csi.aws.com"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def _class(name: str, provisioner: str, mode: str, zones: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones:
        out["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "zone", "values": zones}]}]
    return out


@st.composite
def storage(draw: st.DrawFn, node_names: list[str]) -> StorageObjects:
    items: list[dict[str, Any]] = [
        _class("wffc", DRIVER, "WaitForFirstConsumer", draw(st.sampled_from([None, ["a"]]))),
        _class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer", None),
        _class("imm", DRIVER, "Immediate", None),
    ]
    for index in range(draw(st.integers(0, 4))):
        spec: dict[str, Any] = {
            "capacity": {"storage": draw(st.sampled_from(["1Gi", "5Gi", "10G", "10Gi"]))},
            "accessModes": [draw(st.sampled_from(["ReadWriteOnce", "ReadWriteOncePod"]))],
            "storageClassName": draw(st.sampled_from(["wffc", "local"])),
        }
        if draw(st.integers(0, 3)) == 0:  # an in-tree disk, counted as EBS's CSI driver
            spec["awsElasticBlockStore"] = {"volumeID": f"aws://a/vol-{index}"}
        else:
            spec["csi"] = {"driver": DRIVER, "volumeHandle": f"h{index}"}
        pin = draw(st.sampled_from(["none", "host", "zone"]))
        if pin != "none":
            key, value = (
                ("kubernetes.io/hostname", draw(st.sampled_from(node_names)))
                if pin == "host"
                else ("zone", draw(st.sampled_from(["a", "b"])))
            )
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    ]
                }
            }
        if draw(st.integers(0, 3)) == 0:  # named by a claim (prebound, or bound)
            spec["claimRef"] = {"namespace": "default", "name": draw(st.sampled_from(CLAIMS))}
        labels = {}
        if draw(st.integers(0, 3)) == 0:
            labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(["a", "b", "a__b"]))
        items.append(
            {
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv{index}", "labels": labels},
                "spec": spec,
                "status": {"phase": "Available"},
            }
        )
    pv_names = [i["metadata"]["name"] for i in items if i["kind"] == "PersistentVolume"]
    for name in CLAIMS[:4]:
        if draw(st.integers(0, 7)) == 0:
            continue  # the claim is missing
        meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"u-{name}"}
        spec = {
            "accessModes": [draw(st.sampled_from(["ReadWriteOnce", "ReadWriteOncePod"]))],
            "resources": {"requests": {"storage": draw(st.sampled_from(["1Gi", "10Gi"]))}},
            "storageClassName": draw(st.sampled_from([*CLASSES, "wffc"])),
        }
        status = {"phase": "Pending"}
        state = draw(
            st.sampled_from(
                ["unbound", "unbound", "bound", "bound", "bound", "deleting", "selected"]
            )
        )
        if state == "bound" and pv_names:
            spec["volumeName"] = draw(st.sampled_from([*pv_names, "ghost"]))
            meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            status = {"phase": "Bound"}
        elif state == "deleting":
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        elif state == "selected":
            meta["annotations"] = {
                "volume.kubernetes.io/selected-node": draw(st.sampled_from(node_names))
            }
        items.append(
            {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status}
        )
    for name in node_names:
        if draw(st.booleans()):
            node_meta: dict[str, Any] = {"name": name}
            if draw(st.booleans()):  # the in-tree EBS plugin migrated here
                node_meta["annotations"] = {MIGRATED: "kubernetes.io/aws-ebs"}
            drivers = [
                {"name": DRIVER, "nodeID": name, "allocatable": {"count": draw(st.integers(0, 2))}}
            ]
            if draw(st.booleans()):
                count = draw(st.integers(0, 2))
                drivers.append({"name": EBS, "nodeID": name, "allocatable": {"count": count}})
            items.append({"kind": "CSINode", "metadata": node_meta, "spec": {"drivers": drivers}})
    return parse_objects([{"kind": "List", "items": items}], "storage").storage


@st.composite
def volumes(draw: st.DrawFn, always: bool = False) -> list[dict[str, Any]]:
    """A pod's ``spec.volumes``: mostly none (unless ``always``), else claims, an ephemeral
    volume or a disk."""
    if not always and draw(st.integers(0, 2)) != 0:
        return []
    out: list[dict[str, Any]] = []
    # "missing" is drawn rarely: a pod rejected whole tells little about the other filters.
    names = st.sampled_from([*CLAIMS[:4], *CLAIMS[:4], CLAIMS[4]])
    for index, claim in enumerate(draw(st.lists(names, max_size=2, unique=True))):
        out.append({"name": f"v{index}", "persistentVolumeClaim": {"claimName": claim}})
    if draw(st.integers(0, 5)) == 0:
        out.append(
            {"name": "pd", "gcePersistentDisk": {"pdName": "disk", "readOnly": draw(st.booleans())}}
        )
    if draw(st.integers(0, 5)) == 0:  # the disk of an in-tree volume, or another
        out.append(
            {
                "name": "ebs",
                "awsElasticBlockStore": {"volumeID": draw(st.sampled_from(["vol-0", "vol-9"]))},
            }
        )
    if draw(st.integers(0, 7)) == 0:
        out.append({"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    out.append({"name": "tmp", "emptyDir": {}})
    return out


def term(draw: st.DrawFn, host: str) -> dict[str, Any]:
    expressions = [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]
    extra = draw(st.sampled_from(["none", "zone", "disk", "bad"]))
    if extra == "zone":
        expressions.append({"key": "zone", "operator": "In", "values": ["a"]})
    elif extra == "disk":
        expressions.append({"key": "disk", "operator": "Exists"})
    elif extra == "bad":
        expressions.append({"key": "zone", "operator": "Gt", "values": ["x"]})
    return {"matchExpressions": expressions}


@st.composite
def mixed_volumes(draw: st.DrawFn, node_names: list[str]) -> list[Any]:
    """Volumes of the claims' classes pinned to hosts by terms that may ask for more."""
    items = []
    for index in range(draw(st.integers(0, 3))):
        terms = [
            term(draw, draw(st.sampled_from(node_names))) for _ in range(draw(st.integers(1, 2)))
        ]
        items.append(
            {
                "kind": "PersistentVolume",
                "metadata": {"name": f"mixed{index}"},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
                    "storageClassName": draw(st.sampled_from(["wffc", "local"])),
                    "csi": {"driver": "csi.example.com", "volumeHandle": f"m{index}"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": terms}},
                },
                "status": {"phase": "Available"},
            }
        )
    return list(parse_objects([{"kind": "List", "items": items}], "pvs").storage.pvs.values())
