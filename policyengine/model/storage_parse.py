"""Reading the storage kinds from Kubernetes YAML/JSON dicts, with errors naming the field.

``PersistentVolume``, ``PersistentVolumeClaim`` (core/v1) and ``StorageClass``, ``CSINode``,
``CSIDriver``, ``CSIStorageCapacity`` (storage.k8s.io/v1) become ``model.storage`` objects. A
malformed field raises ``ModelError`` naming the object and the field, as ``model.parse`` does
for nodes and pods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from policyengine.model.errors import ModelError
from policyengine.model.node_selectors import NodeSelector
from policyengine.model.parse import (
    _bool,
    _Ctx,
    _int,
    _list,
    _map,
    _metadata,
    _node_selector_term,
    _resources,
    _str,
    _string_map,
    _strings,
    parse_label_selector,
)
from policyengine.model.storage import (
    ANN_MIGRATED_PLUGINS,
    ANN_STORAGE_CLASS,
    FILESYSTEM,
    IMMEDIATE,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSINodeDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    TopologyTerm,
)
from policyengine.quantity import QuantityError, parse_quantity

STORAGE_KINDS = frozenset(
    {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
    }
)

# The in-tree and CSI sources a PersistentVolume may name (the key present in its spec).
_PV_SOURCES = (
    "csi",
    "local",
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cinder",
    "rbd",
    "iscsi",
    "nfs",
    "fc",
    "cephfs",
    "portworxVolume",
    "vsphereVolume",
    "flexVolume",
    "glusterfs",
)
_PV_HANDLES = {
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "azureDisk": "diskURI",
    "cinder": "volumeID",
    "portworxVolume": "volumeID",
}


def _storage(ctx: _Ctx, value: Any, path: str) -> Fraction | None:
    """``<path>.storage`` of a resource list, or None when absent."""
    found = _resources(ctx, value, path)
    return found.get("storage")


def _class_name(ctx: _Ctx, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    annotations = _string_map(ctx, meta.get("annotations"), "metadata.annotations")
    if ANN_STORAGE_CLASS in annotations:
        return annotations[ANN_STORAGE_CLASS]
    return _str(ctx, spec.get("storageClassName"), "spec.storageClassName")


def _deletion(meta: Mapping[str, Any]) -> str | None:
    value = meta.get("deletionTimestamp")
    return None if value is None else str(value)


def _volume_mode(ctx: _Ctx, spec: Mapping[str, Any]) -> str:
    mode = _str(ctx, spec.get("volumeMode"), "spec.volumeMode") or FILESYSTEM
    if mode not in (FILESYSTEM, "Block"):
        raise ctx.fail("spec.volumeMode", f"must be Filesystem or Block, got {mode!r}")
    return mode


def parse_pv(obj: Mapping[str, Any], source: str | None = None) -> PersistentVolume:
    ctx, meta = _metadata(obj, "PersistentVolume", source)
    spec = _map(ctx, obj.get("spec"), "spec")
    status = _map(ctx, obj.get("status"), "status")
    affinity = None
    raw_affinity = _map(ctx, spec.get("nodeAffinity"), "spec.nodeAffinity")
    if raw_affinity.get("required") is not None:
        path = "spec.nodeAffinity.required"
        required = _map(ctx, raw_affinity.get("required"), path)
        terms = _list(ctx, required.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
        affinity = NodeSelector(
            tuple(
                _node_selector_term(ctx, t, f"{path}.nodeSelectorTerms[{i}]")
                for i, t in enumerate(terms)
            )
        )
    claim_ref = None
    if spec.get("claimRef") is not None:
        ref = _map(ctx, spec.get("claimRef"), "spec.claimRef")
        claim_ref = ClaimRef(
            namespace=_str(ctx, ref.get("namespace"), "spec.claimRef.namespace"),
            name=_str(ctx, ref.get("name"), "spec.claimRef.name"),
            uid=_str(ctx, ref.get("uid"), "spec.claimRef.uid"),
        )
    kind = next((k for k in _PV_SOURCES if spec.get(k) is not None), "")
    driver = handle = ""
    if kind == "csi":
        csi = _map(ctx, spec.get("csi"), "spec.csi")
        driver = _str(ctx, csi.get("driver"), "spec.csi.driver")
        handle = _str(ctx, csi.get("volumeHandle"), "spec.csi.volumeHandle")
        if not driver:
            raise ctx.fail("spec.csi.driver", "is required")
    elif kind in _PV_HANDLES:
        src = _map(ctx, spec.get(kind), f"spec.{kind}")
        handle = _str(ctx, src.get(_PV_HANDLES[kind]), f"spec.{kind}.{_PV_HANDLES[kind]}")
    return PersistentVolume(
        name=ctx.name or "",
        uid=_str(ctx, meta.get("uid"), "metadata.uid"),
        labels=_string_map(ctx, meta.get("labels"), "metadata.labels"),
        annotations=_string_map(ctx, meta.get("annotations"), "metadata.annotations"),
        capacity=_storage(ctx, spec.get("capacity"), "spec.capacity"),
        access_modes=_strings(ctx, spec.get("accessModes"), "spec.accessModes"),
        volume_mode=_volume_mode(ctx, spec),
        storage_class=_class_name(ctx, meta, spec),
        node_affinity=affinity,
        claim_ref=claim_ref,
        phase=_str(ctx, status.get("phase"), "status.phase"),
        deletion_timestamp=_deletion(meta),
        source=kind,
        csi_driver=driver,
        csi_handle=handle,
        resource_version=_str(ctx, meta.get("resourceVersion"), "metadata.resourceVersion"),
    )


def parse_pvc(obj: Mapping[str, Any], source: str | None = None) -> PersistentVolumeClaim:
    ctx, meta = _metadata(obj, "PersistentVolumeClaim", source)
    if ctx.namespace is None:
        ctx.namespace = "default"
    spec = _map(ctx, obj.get("spec"), "spec")
    status = _map(ctx, obj.get("status"), "status")
    resources = _map(ctx, spec.get("resources"), "spec.resources")
    controller = ""
    for i, o in enumerate(_list(ctx, meta.get("ownerReferences"), "metadata.ownerReferences")):
        owner = _map(ctx, o, f"metadata.ownerReferences[{i}]")
        if _bool(ctx, owner.get("controller"), f"metadata.ownerReferences[{i}].controller"):
            controller = _str(ctx, owner.get("uid"), f"metadata.ownerReferences[{i}].uid")
    return PersistentVolumeClaim(
        name=ctx.name or "",
        namespace=ctx.namespace,
        uid=_str(ctx, meta.get("uid"), "metadata.uid"),
        annotations=_string_map(ctx, meta.get("annotations"), "metadata.annotations"),
        access_modes=_strings(ctx, spec.get("accessModes"), "spec.accessModes"),
        request=_storage(ctx, resources.get("requests"), "spec.resources.requests"),
        storage_class=_class_name(ctx, meta, spec),
        volume_name=_str(ctx, spec.get("volumeName"), "spec.volumeName"),
        volume_mode=_volume_mode(ctx, spec),
        selector=parse_label_selector(ctx, spec.get("selector"), "spec.selector"),
        phase=_str(ctx, status.get("phase"), "status.phase"),
        deletion_timestamp=_deletion(meta),
        controller_uid=controller,
        resource_version=_str(ctx, meta.get("resourceVersion"), "metadata.resourceVersion"),
    )


def parse_storage_class(obj: Mapping[str, Any], source: str | None = None) -> StorageClass:
    ctx, _ = _metadata(obj, "StorageClass", source)
    mode = _str(ctx, obj.get("volumeBindingMode"), "volumeBindingMode") or IMMEDIATE
    if mode not in (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER):
        raise ctx.fail(
            "volumeBindingMode", f"must be Immediate or WaitForFirstConsumer, got {mode!r}"
        )
    terms = []
    for i, t in enumerate(_list(ctx, obj.get("allowedTopologies"), "allowedTopologies")):
        path = f"allowedTopologies[{i}]"
        term = _map(ctx, t, path)
        reqs = []
        exprs = _list(ctx, term.get("matchLabelExpressions"), f"{path}.matchLabelExpressions")
        for j, e in enumerate(exprs):
            p = f"{path}.matchLabelExpressions[{j}]"
            expr = _map(ctx, e, p)
            reqs.append(
                (
                    _str(ctx, expr.get("key"), f"{p}.key"),
                    frozenset(_strings(ctx, expr.get("values"), f"{p}.values")),
                )
            )
        terms.append(TopologyTerm(tuple(reqs)))
    return StorageClass(
        name=ctx.name or "",
        provisioner=_str(ctx, obj.get("provisioner"), "provisioner"),
        volume_binding_mode=mode,
        allowed_topologies=tuple(terms),
    )


def parse_csi_node(obj: Mapping[str, Any], source: str | None = None) -> CSINode:
    ctx, meta = _metadata(obj, "CSINode", source)
    spec = _map(ctx, obj.get("spec"), "spec")
    drivers = []
    for i, d in enumerate(_list(ctx, spec.get("drivers"), "spec.drivers")):
        path = f"spec.drivers[{i}]"
        raw = _map(ctx, d, path)
        allocatable = _map(ctx, raw.get("allocatable"), f"{path}.allocatable")
        count = _int(ctx, allocatable.get("count"), f"{path}.allocatable.count")
        if count is not None and count < 0:
            raise ctx.fail(f"{path}.allocatable.count", f"must not be negative, got {count}")
        drivers.append(
            CSINodeDriver(
                name=_str(ctx, raw.get("name"), f"{path}.name"),
                node_id=_str(ctx, raw.get("nodeID"), f"{path}.nodeID"),
                topology_keys=_strings(ctx, raw.get("topologyKeys"), f"{path}.topologyKeys"),
                allocatable_count=count,
            )
        )
    annotations = _string_map(ctx, meta.get("annotations"), "metadata.annotations")
    migrated = annotations.get(ANN_MIGRATED_PLUGINS, "")
    return CSINode(
        name=ctx.name or "",
        drivers=tuple(drivers),
        migrated_plugins=frozenset(p for p in migrated.split(",") if p),
    )


def parse_csi_driver(obj: Mapping[str, Any], source: str | None = None) -> CSIDriver:
    ctx, _ = _metadata(obj, "CSIDriver", source)
    spec = _map(ctx, obj.get("spec"), "spec")
    attach = spec.get("attachRequired")
    return CSIDriver(
        name=ctx.name or "",
        storage_capacity=_bool(ctx, spec.get("storageCapacity"), "spec.storageCapacity"),
        attach_required=True if attach is None else _bool(ctx, attach, "spec.attachRequired"),
    )


def _quantity(ctx: _Ctx, value: Any, path: str) -> Fraction | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ctx.fail(path, str(exc)) from None


def parse_csi_storage_capacity(
    obj: Mapping[str, Any], source: str | None = None
) -> CSIStorageCapacity:
    ctx, _ = _metadata(obj, "CSIStorageCapacity", source)
    return CSIStorageCapacity(
        name=ctx.name or "",
        namespace=ctx.namespace or "default",
        storage_class=_str(ctx, obj.get("storageClassName"), "storageClassName"),
        node_topology=parse_label_selector(ctx, obj.get("nodeTopology"), "nodeTopology"),
        capacity=_quantity(ctx, obj.get("capacity"), "capacity"),
        maximum_volume_size=_quantity(ctx, obj.get("maximumVolumeSize"), "maximumVolumeSize"),
    )


PARSERS: dict[str, Callable[[Mapping[str, Any], str | None], Any]] = {
    "PersistentVolume": parse_pv,
    "PersistentVolumeClaim": parse_pvc,
    "StorageClass": parse_storage_class,
    "CSINode": parse_csi_node,
    "CSIDriver": parse_csi_driver,
    "CSIStorageCapacity": parse_csi_storage_capacity,
}


def parse_storage_object(obj: Mapping[str, Any], source: str | None = None) -> Any:
    """The model object of one storage-kind dict; raises ``ModelError``."""
    kind = obj.get("kind")
    parser = PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ModelError(f"{kind!r} is not a storage kind")
    return parser(obj, source)
