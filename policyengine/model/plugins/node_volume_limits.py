"""NodeVolumeLimits: a node attaches at most so many volumes of each CSI driver.

The limit of a driver is its CSINode ``allocatable.count``, else the node's allocatable
``attachable-volumes-csi-<driver>``. The pod's new unique volumes (by driver and handle) are
added to those the node's pods already use, each counted once. A claim counts through its
bound volume's CSI source, else (unbound, or its volume missing) through its class's
provisioner as a volume of its own; in-tree disks count as their CSI driver where the node
says the plugin is migrated. Inline ``csi:`` volumes are not counted, as in kube-scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import (
    CSINode,
    PersistentVolumeClaim,
    StorageObjects,
    csi_attach_limit_key,
    quantity_value,
)
from policyengine.model.volume_binder import owned
from policyengine.model.volumes import (
    AWS_EBS,
    AZURE_DISK,
    CINDER,
    EPHEMERAL,
    GCE_PD,
    Volume,
    claim_name,
)

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
ATTACH_LIMIT_PREFIX = "attachable-volumes-"

# In-tree plugins whose volumes count as a CSI driver's once migrated on the node: the
# plugin's name, its provisioner name and the driver.
_MIGRATABLE = {
    GCE_PD: ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    AWS_EBS: ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    AZURE_DISK: ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    CINDER: ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
}
_MIGRATED_DRIVER = dict(_MIGRATABLE.values())

# What one volume counts as: (driver/handle, the limit's key).
Attachable = dict[str, str]


@dataclass(frozen=True)
class FilterState:
    skip: bool
    pod: Pod | None = None
    storage: StorageObjects | None = None
    # The pod's own volumes by the in-tree plugins the node's CSINode says are migrated, the
    # one thing of the node they read.
    new_volumes: dict[frozenset[str], Attachable | str] = field(
        default_factory=dict, compare=False, hash=False
    )


SKIP = FilterState(skip=True)


def needs_check(pod: Pod) -> bool:
    return any(v.uses_claim or v.kind in _MIGRATABLE for v in pod.volumes)


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    if not needs_check(pod) or not snapshot.storage.known:
        return SKIP
    return FilterState(False, pod, snapshot.storage)


def _migrated(csi_node: CSINode | None, plugin: str) -> bool:
    return csi_node is not None and plugin in csi_node.migrated_plugins


def _add(out: Attachable, driver: str, handle: str) -> None:
    if driver and handle:
        out[f"{driver}/{handle}"] = csi_attach_limit_key(driver)


def _from_class(
    storage: StorageObjects, csi_node: CSINode | None, claim: PersistentVolumeClaim
) -> tuple[str, str]:
    if not claim.storage_class:
        return "", ""
    cls = storage.classes.get(claim.storage_class)
    if cls is None:
        return "", ""
    # Not a real handle: the claim is one volume of its own until bound.
    handle = f"\x00claim:{claim.namespace}/{claim.name}"
    if cls.provisioner in _MIGRATED_DRIVER:
        if not _migrated(csi_node, cls.provisioner):
            return "", ""
        return _MIGRATED_DRIVER[cls.provisioner], handle
    return cls.provisioner, handle


def _claim_driver(
    storage: StorageObjects, csi_node: CSINode | None, claim: PersistentVolumeClaim
) -> tuple[str, str]:
    if not claim.volume_name:
        return _from_class(storage, csi_node, claim)
    pv = storage.pvs.get(claim.volume_name)
    if pv is None:
        return _from_class(storage, csi_node, claim)
    if pv.csi_driver:
        return pv.csi_driver, pv.csi_handle
    migratable = _MIGRATABLE.get(pv.source)
    if migratable is None or not _migrated(csi_node, migratable[0]):
        return "", ""
    return migratable[1], pv.csi_handle


class MissingClaim(Exception):
    """A claim of the pod being scheduled is missing or not its own (the message says)."""


def attachable(
    pod: Pod, storage: StorageObjects, csi_node: CSINode | None, new_pod: bool, out: Attachable
) -> None:
    """Add the volumes ``pod`` attaches on a node with ``csi_node`` to ``out`` (kube's
    ``filterAttachableVolumes``): a missing claim is the new pod's error, another pod's skip."""
    for v in pod.volumes:
        if not v.uses_claim:
            _inline(v, csi_node, out)
            continue
        name = claim_name(pod.name, v)
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            if new_pod:
                raise MissingClaim(
                    f"looking up PVC {pod.namespace}/{name}: "
                    f'persistentvolumeclaim "{name}" not found'
                )
            continue
        if v.kind == EPHEMERAL and not owned(pod, claim):
            raise MissingClaim(
                f"PVC {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        _add(out, *_claim_driver(storage, csi_node, claim))


def _inline(v: Volume, csi_node: CSINode | None, out: Attachable) -> None:
    migratable = _MIGRATABLE.get(v.kind)
    if migratable is not None and _migrated(csi_node, migratable[0]):
        _add(out, migratable[1], v.handle)


# Each node's limits by the identity of its Node and CSINode objects, which a snapshot's
# derivations share (an assumed pod changes neither): worked out once, not per cycle. Each
# entry holds the two objects, so their ids name them while it is kept.
_LIMITS: dict[tuple[int, int], tuple[object, object, dict[str, int]]] = {}
_LIMITS_KEPT = 16384


_NONE_MIGRATED: frozenset[str] = frozenset()


def volume_limits(node: NodeInfo, csi_node: CSINode | None) -> dict[str, int]:
    """The node's attach limits by key: its allocatable ``attachable-volumes-*``, overridden
    by the CSINode's per-driver ``allocatable.count``."""
    key = (id(node.node), id(csi_node))
    kept = _LIMITS.get(key)
    if kept is not None and kept[0] is node.node and kept[1] is csi_node:
        return kept[2]
    limits = _limits(node, csi_node)
    if len(_LIMITS) >= _LIMITS_KEPT:
        _LIMITS.clear()
    _LIMITS[key] = (node.node, csi_node, limits)
    return limits


def _limits(node: NodeInfo, csi_node: CSINode | None) -> dict[str, int]:
    limits = {
        k: quantity_value(v)
        for k, v in node.node.allocatable.items()
        if k.startswith(ATTACH_LIMIT_PREFIX)
    }
    if csi_node is not None:
        for d in csi_node.drivers:
            if d.allocatable_count is not None:
                limits[csi_attach_limit_key(d.name)] = d.allocatable_count
    return limits


@dataclass(frozen=True, slots=True)
class Exceeded:
    """A driver's limit the pod would pass on a node: the limit's key, the limit, the volumes
    attached already and the pod's new ones."""

    key: str
    limit: int
    attached: int
    new: int


def exceeded(state: FilterState, node: NodeInfo) -> Exceeded | str | None:
    """The first limit the pod would pass on ``node``; a string for an error about its claims;
    None when it fits."""
    if state.skip or state.pod is None or state.storage is None:
        return None
    storage = state.storage
    csi_node = storage.csi_nodes.get(node.name)
    limits = volume_limits(node, csi_node)
    migrated = csi_node.migrated_plugins if csi_node is not None else _NONE_MIGRATED
    kept = state.new_volumes.get(migrated)
    if kept is None:
        found: Attachable = {}
        try:
            attachable(state.pod, storage, csi_node, True, found)
        except MissingClaim as problem:
            kept = state.new_volumes[migrated] = str(problem)
        else:
            kept = state.new_volumes[migrated] = found
    if isinstance(kept, str):
        return kept
    if not kept or not limits:
        return None
    new = dict(kept)
    attached: Attachable = {}
    for info in node.pods:
        if info.pod.volumes:
            try:
                attachable(info.pod, storage, csi_node, False, attached)
            except MissingClaim:
                continue
    attached_count: dict[str, int] = {}
    for unique, key in attached.items():
        new.pop(unique, None)  # a volume already attached is not attached again
        attached_count[key] = attached_count.get(key, 0) + 1
    new_count: dict[str, int] = {}
    for key in new.values():
        new_count[key] = new_count.get(key, 0) + 1
    for key in sorted(new_count):
        limit = limits.get(key)
        if limit is not None and attached_count.get(key, 0) + new_count[key] > limit:
            return Exceeded(key, limit, attached_count.get(key, 0), new_count[key])
    return None


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    found = exceeded(state, node)
    if found is None:
        return []
    if isinstance(found, str):
        return [found]
    return [REASON]


PLUGIN = Plugin(
    NAME,
    "node_volume_limits",
    None,
    0,
    prepare_filter=prepare_filter,
    filter=filter,
    resolvable_reasons=frozenset({REASON}),
)
