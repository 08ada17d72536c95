"""NodeVolumeLimits: a node attaches at most so many volumes of each CSI driver.

The limit of a driver is its CSINode ``allocatable.count``, else the node's allocatable
``attachable-volumes-csi-<driver>``. The pod's new unique volumes (by driver and handle) are
added to those the node's pods already use, each counted once. A claim counts through its
bound volume's CSI source, else (unbound, or its volume missing) through its class's
provisioner as a volume of its own. In-tree volumes (a bound PV's source, a class's in-tree
provisioner, an inline ``gcePersistentDisk``, ``awsElasticBlockStore``, ``azureDisk``,
``cinder`` or ``portworxVolume``) count as the CSI driver they are migrated to, under the
translated volume handle, where ``storage_migration.limits_migrated`` says the node migrated
them. Inline ``csi:`` volumes are not counted, as in kube-scheduler. The separate in-tree
limit plugins (EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits) left the default
profile in v1.31 and kube-scheduler in v1.32: there are none here.
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
from policyengine.model.storage_migration import (
    BY_PLUGIN,
    PLUGINS,
    UNCOUNTED_PROVISIONERS,
    TranslationError,
    inline_handle,
    limits_migrated,
    pv_handle,
)
from policyengine.model.volume_binder import owned
from policyengine.model.volumes import EPHEMERAL, Volume, claim_name

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
ATTACH_LIMIT_PREFIX = "attachable-volumes-"

# What one volume counts as: (driver/handle, the limit's key).
Attachable = dict[str, str]
# What of a node decides how the pod's own volumes count there: whether it has a CSINode,
# and the plugins that CSINode names as migrated.
MigrationKey = tuple[bool, frozenset[str]]


@dataclass(frozen=True)
class FilterState:
    skip: bool
    pod: Pod | None = None
    storage: StorageObjects | None = None
    # The pod's own volumes by the one thing of the node they read (``migration_key``).
    new_volumes: dict[MigrationKey, Attachable | str] = field(
        default_factory=dict, compare=False, hash=False
    )
    needs_annotation: bool = False  # ``SchedulerConfig.limits_migration_needs_annotation``


SKIP = FilterState(skip=True)


def needs_check(pod: Pod) -> bool:
    """kube's PreFilter: a claim, an ephemeral volume or an inline migratable in-tree volume."""
    return any(v.uses_claim or v.kind in PLUGINS for v in pod.volumes)


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    if not needs_check(pod) or not snapshot.storage.known:
        return SKIP
    return FilterState(
        False, pod, snapshot.storage, needs_annotation=config.limits_migration_needs_annotation
    )


_NONE_MIGRATED: frozenset[str] = frozenset()


def migration_key(csi_node: CSINode | None) -> MigrationKey:
    if csi_node is None:
        return False, _NONE_MIGRATED
    return True, csi_node.migrated_plugins


def _add(out: Attachable, driver: str, handle: str) -> None:
    if driver and handle:
        out[f"{driver}/{handle}"] = csi_attach_limit_key(driver)


def _from_class(
    storage: StorageObjects,
    csi_node: CSINode | None,
    claim: PersistentVolumeClaim,
    needs_annotation: bool,
) -> tuple[str, str]:
    if not claim.storage_class:
        return "", ""
    cls = storage.classes.get(claim.storage_class)
    if cls is None:
        return "", ""
    # Not a real handle: the claim is one volume of its own until bound.
    handle = f"\x00claim:{claim.namespace}/{claim.name}"
    plugin = BY_PLUGIN.get(cls.provisioner)
    if plugin is not None:
        if not limits_migrated(csi_node, plugin, needs_annotation):
            return "", ""
        return plugin.driver, handle
    if cls.provisioner in UNCOUNTED_PROVISIONERS:
        return "", ""
    return cls.provisioner, handle


def _claim_driver(
    storage: StorageObjects,
    csi_node: CSINode | None,
    claim: PersistentVolumeClaim,
    needs_annotation: bool,
) -> tuple[str, str]:
    if not claim.volume_name:
        return _from_class(storage, csi_node, claim, needs_annotation)
    pv = storage.pvs.get(claim.volume_name)
    if pv is None:
        return _from_class(storage, csi_node, claim, needs_annotation)
    if pv.csi_driver:
        return pv.csi_driver, pv.csi_handle
    plugin = pv.in_tree
    if plugin is None or not limits_migrated(csi_node, plugin, needs_annotation):
        return "", ""
    try:
        return plugin.driver, pv_handle(pv, plugin)
    except TranslationError:
        return "", ""  # kube does not count a volume it cannot translate


class MissingClaim(Exception):
    """A claim of the pod being scheduled is missing or not its own (the message says)."""


class Untranslatable(MissingClaim):
    """An inline in-tree volume that does not translate to CSI: an error whichever pod has
    it."""


def attachable(
    pod: Pod,
    storage: StorageObjects,
    csi_node: CSINode | None,
    new_pod: bool,
    out: Attachable,
    needs_annotation: bool = False,
) -> None:
    """Add the volumes ``pod`` attaches on a node with ``csi_node`` to ``out`` (kube's
    ``filterAttachableVolumes``): a missing claim is the new pod's error, another pod's skip;
    an inline volume that does not translate is an error for either."""
    for v in pod.volumes:
        if not v.uses_claim:
            _inline(v, csi_node, out, needs_annotation)
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
        _add(out, *_claim_driver(storage, csi_node, claim, needs_annotation))


def _inline(v: Volume, csi_node: CSINode | None, out: Attachable, needs_annotation: bool) -> None:
    plugin = PLUGINS.get(v.kind)
    if plugin is None or not limits_migrated(csi_node, plugin, needs_annotation):
        return
    try:
        handle = inline_handle(v.kind, v.handle)
    except TranslationError as problem:
        raise Untranslatable(f"converting volume({v.name}) from inline to csi: {problem}") from None
    _add(out, plugin.driver, handle)


# Each node's limits by the identity of its Node and CSINode objects, which a snapshot's
# derivations share (an assumed pod changes neither): worked out once, not per cycle. Each
# entry holds the two objects, so their ids name them while it is kept.
_LIMITS: dict[tuple[int, int], tuple[object, object, dict[str, int]]] = {}
_LIMITS_KEPT = 16384


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


def pod_volumes(state: FilterState, csi_node: CSINode | None) -> Attachable | str:
    """The volumes the pod attaches on a node with ``csi_node`` (worked out once per
    migration key); a string for an error about its claims."""
    assert state.pod is not None and state.storage is not None
    migrated = migration_key(csi_node)
    kept = state.new_volumes.get(migrated)
    if kept is None:
        found: Attachable = {}
        try:
            attachable(state.pod, state.storage, csi_node, True, found, state.needs_annotation)
        except MissingClaim as problem:
            kept = state.new_volumes[migrated] = str(problem)
        else:
            kept = state.new_volumes[migrated] = found
    return kept


def node_volumes(
    node: NodeInfo, storage: StorageObjects, csi_node: CSINode | None, needs_annotation: bool
) -> Attachable | str:
    """The volumes ``node``'s pods attach (a claim missing skipped); a string for an inline
    volume of theirs that does not translate."""
    attached: Attachable = {}
    for info in node.pods_with_volumes:
        try:
            attachable(info.pod, storage, csi_node, False, attached, needs_annotation)
        except Untranslatable as problem:
            return str(problem)
        except MissingClaim:
            continue
    return attached


def attached_counts(attached: Attachable) -> dict[str, int]:
    """How many volumes of each limit's key ``attached`` holds."""
    counts: dict[str, int] = {}
    for key in attached.values():
        counts[key] = counts.get(key, 0) + 1
    return counts


def exceeded(state: FilterState, node: NodeInfo) -> Exceeded | str | None:
    """The first limit the pod would pass on ``node``; a string for an error about its claims;
    None when it fits."""
    if state.skip or state.pod is None or state.storage is None:
        return None
    storage = state.storage
    csi_node = storage.csi_nodes.get(node.name)
    limits = volume_limits(node, csi_node)
    kept = pod_volumes(state, csi_node)
    if isinstance(kept, str):
        return kept
    if not kept or not limits:
        return None
    attached = node_volumes(node, storage, csi_node, state.needs_annotation)
    if isinstance(attached, str):
        return attached
    # A volume already attached is not attached again.
    new_count = attached_counts({k: v for k, v in kept.items() if k not in attached})
    attached_count = attached_counts(attached)
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
