"""The cluster's storage objects as plain data, and the indexes the storage plugins read.

PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities decide where a pod with volumes may run (``model.plugins.volume_*``).
Each is kept as a frozen object holding only what scheduling reads. ``StorageObjects`` holds
them all, indexed by the keys the plugins look up (a claim by ``namespace/name``, a volume by
name, the volumes of each class), and is replaced whole, never changed: the scheduler's
*assume* of a pod's volume decisions gives a new one (``with_pv``, ``with_pvc``). A snapshot
without any storage object does not know the cluster's storage (``StorageObjects.known``): the
plugins leave its pods alone.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from policyengine.model.cached import cached_property
from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import LabelSelector
from policyengine.model.node_selectors import CompiledTerm, NodeSelector
from policyengine.model.storage_log import Change, Place, between, root, step
from policyengine.model.storage_migration import (
    PLUGINS,
    InTreePlugin,
    TranslationError,
    binding_migrated,
    translated_affinity,
)

# Annotations kube's PV controller and scheduler read and write.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"  # wins over storageClassName
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"

IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
FILESYSTEM = "Filesystem"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

# Phases
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"

CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
_RESOURCE_NAME_MAX = 63


def csi_attach_limit_key(driver: str) -> str:
    """The node allocatable key of a CSI driver's attach limit (kube's
    ``GetCSIAttachLimitKey``): ``attachable-volumes-csi-<driver>``, or, when that is too long
    for a resource name, the driver's first 23 characters and 16 hex digits of its SHA-1."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= _RESOURCE_NAME_MAX:
        digest = hashlib.sha1(driver.encode(), usedforsecurity=False).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def quantity_value(q: Fraction | None) -> int:
    """A quantity as kube's ``Quantity.Value()`` reads it: whole units, rounded up."""
    return 0 if q is None else math.ceil(q)


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True)
class PersistentVolume:
    name: str
    uid: str = ""
    labels: FrozenDict[str, str] = field(default=EMPTY)
    annotations: FrozenDict[str, str] = field(default=EMPTY)
    capacity: Fraction | None = None  # spec.capacity.storage, bytes
    access_modes: tuple[str, ...] = ()
    volume_mode: str = FILESYSTEM
    storage_class: str = ""  # the beta annotation, else spec.storageClassName
    node_affinity: NodeSelector | None = None  # spec.nodeAffinity.required
    claim_ref: ClaimRef | None = None
    phase: str = ""
    deletion_timestamp: str | None = None
    source: str = ""  # the volume source's key: csi, local, hostPath, gcePersistentDisk, ...
    csi_driver: str = ""
    csi_handle: str = ""  # the CSI volumeHandle, or the in-tree disk's name
    resource_version: str = ""

    @cached_property
    def size(self) -> int:
        """``spec.capacity.storage`` in whole bytes (kube's ``Value()``)."""
        return quantity_value(self.capacity)

    @cached_property
    def access_mode_set(self) -> frozenset[str]:
        return frozenset(self.access_modes)

    @cached_property
    def pinned_hosts(self) -> frozenset[str] | None:
        """The hostnames the volume can only be reached from (every required term asks for
        one of them), or None when some term asks for no hostname."""
        if self.node_affinity is None or not self.node_affinity.terms:
            return None
        for term in self.node_affinity.terms:
            if not any(
                r.key == HOSTNAME_LABEL and r.operator == "In" for r in term.match_expressions
            ):
                return None
        return frozenset(self.local_node_names)

    @cached_property
    def purely_pinned(self) -> bool:
        """Whether every required term asks for nothing but ``kubernetes.io/hostname In``
        (and parses): the volume then reaches exactly the nodes whose hostname is one of its
        ``pinned_hosts``, whatever their other labels."""
        affinity = self.node_affinity
        if affinity is None or not affinity.terms:
            return False
        if any(t.error is not None for t in self.affinity_terms or ()):
            return False  # a term that never matches: the hostname alone does not tell
        return all(
            not term.match_fields
            and bool(term.match_expressions)
            and all(r.key == HOSTNAME_LABEL and r.operator == "In" for r in term.match_expressions)
            for term in affinity.terms
        )

    @cached_property
    def affinity_terms(self) -> tuple[CompiledTerm, ...] | None:
        return None if self.node_affinity is None else self.node_affinity.compile()

    def reaches(self, node_labels: Mapping[str, str]) -> bool:
        """kube's ``CheckNodeAffinity``: the required terms (ORed) match the node's labels
        (a volume without node affinity reaches every node). Only labels are read, as kube
        does: a ``matchFields`` term never matches."""
        terms = self.affinity_terms
        if terms is None:
            return True
        return any(t.matches(node_labels, "") for t in terms)

    @cached_property
    def in_tree(self) -> InTreePlugin | None:
        """The migrated in-tree plugin of the volume's source (``storage_migration``); None
        for a CSI volume and for sources no CSI driver took over."""
        return None if self.csi_driver else PLUGINS.get(self.source)

    @cached_property
    def _migrated_terms(self) -> tuple[CompiledTerm, ...] | TranslationError | None:
        plugin = self.in_tree
        assert plugin is not None
        try:
            affinity = translated_affinity(self, plugin)
        except TranslationError as problem:
            return problem
        return None if affinity is None else affinity.compile()

    def reaches_on(self, node_labels: Mapping[str, str], csi_node: CSINode | None) -> bool:
        """``reaches`` as VolumeBinding checks a bound volume on a node with ``csi_node``:
        an in-tree volume whose plugin the CSINode names as migrated is read as translated
        to its CSI driver (``storage_migration.translated_affinity``). Raises
        ``TranslationError`` when the volume does not translate."""
        plugin = self.in_tree
        if plugin is None or not binding_migrated(csi_node, plugin):
            return self.reaches(node_labels)
        terms = self._migrated_terms
        if isinstance(terms, TranslationError):
            raise terms
        if terms is None:
            return True
        return any(t.matches(node_labels, "") for t in terms)

    def bound_to(self, claim: PersistentVolumeClaim) -> bool:
        """kube's ``IsVolumeBoundToClaim``: the claimRef names the claim (and its uid, if set)."""
        ref = self.claim_ref
        if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
            return False
        return not ref.uid or ref.uid == claim.uid

    @cached_property
    def local_node_names(self) -> tuple[str, ...]:
        """The hostnames a volume is pinned to (kube's ``GetLocalPersistentVolumeNodeNames``):
        per required term the intersection of its ``kubernetes.io/hostname In`` values, the
        union over the terms; empty when nothing pins it."""
        if self.node_affinity is None:
            return ()
        result: set[str] = set()
        for term in self.node_affinity.terms:
            names: set[str] | None = None
            for r in term.match_expressions:
                if r.key == HOSTNAME_LABEL and r.operator == "In":
                    names = set(r.values) if names is None else names & set(r.values)
            result |= names or set()
        return tuple(sorted(result))


HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class PersistentVolumeClaim:
    name: str
    namespace: str
    uid: str = ""
    annotations: FrozenDict[str, str] = field(default=EMPTY)
    access_modes: tuple[str, ...] = ()
    request: Fraction | None = None  # spec.resources.requests.storage, bytes
    storage_class: str = ""  # the beta annotation, else spec.storageClassName
    volume_name: str = ""
    volume_mode: str = FILESYSTEM
    selector: LabelSelector | None = None
    phase: str = ""
    deletion_timestamp: str | None = None
    controller_uid: str = ""  # the uid of the owner reference with controller: true
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """kube's ``isPVCFullyBound``: a volume named and the PV controller's bind completed."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations

    @property
    def selected_node(self) -> str | None:
        return self.annotations.get(ANN_SELECTED_NODE)


@dataclass(frozen=True, slots=True)
class TopologyTerm:
    """One ``allowedTopologies`` term: every (key, values) requirement must hold."""

    requirements: tuple[tuple[str, frozenset[str]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) in values for key, values in self.requirements)


@dataclass(frozen=True)
class StorageClass:
    name: str
    provisioner: str = ""
    volume_binding_mode: str = IMMEDIATE
    allowed_topologies: tuple[TopologyTerm, ...] = ()

    def allows(self, labels: Mapping[str, str]) -> bool:
        """kube's ``MatchTopologySelectorTerms``: no terms allow every node."""
        return not self.allowed_topologies or any(
            t.matches(labels) for t in self.allowed_topologies
        )

    @property
    def can_provision(self) -> bool:
        return bool(self.provisioner) and self.provisioner != NO_PROVISIONER


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str = ""
    topology_keys: tuple[str, ...] = ()
    allocatable_count: int | None = None


@dataclass(frozen=True)
class CSINode:
    name: str  # the node's name
    drivers: tuple[CSINodeDriver, ...] = ()
    migrated_plugins: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CSIDriver:
    name: str
    storage_capacity: bool = False
    attach_required: bool = True


@dataclass(frozen=True)
class CSIStorageCapacity:
    name: str
    namespace: str
    storage_class: str
    node_topology: LabelSelector | None = None
    capacity: Fraction | None = None
    maximum_volume_size: Fraction | None = None

    def fits(self, size: int) -> bool:
        """kube's ``capacitySufficient``: maximumVolumeSize when given, else capacity."""
        limit = self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity
        return limit is not None and quantity_value(limit) >= size

    def reaches(self, labels: Mapping[str, str]) -> bool:
        """kube's ``nodeHasAccess``: no topology reaches no node; an invalid one neither."""
        if self.node_topology is None:
            return False
        try:
            return self.node_topology.matches(labels)
        except ValueError:
            return False


@dataclass(frozen=True)
class StorageObjects:
    """Every storage object of a snapshot, indexed; replaced whole on any change."""

    pvs: FrozenDict[str, PersistentVolume] = field(default=EMPTY)
    pvcs: FrozenDict[str, PersistentVolumeClaim] = field(default=EMPTY)  # "namespace/name"
    classes: FrozenDict[str, StorageClass] = field(default=EMPTY)
    csi_nodes: FrozenDict[str, CSINode] = field(default=EMPTY)
    csi_drivers: FrozenDict[str, CSIDriver] = field(default=EMPTY)
    capacities: tuple[CSIStorageCapacity, ...] = ()
    # False: nobody said what storage the cluster has (a snapshot of nodes and pods only, an
    # extender's request): the storage plugins then pass every pod rather than report its
    # claims missing. A snapshot holding storage objects, and the watches, know.
    known: bool = True

    @staticmethod
    def build(
        pvs: Iterable[PersistentVolume] = (),
        pvcs: Iterable[PersistentVolumeClaim] = (),
        classes: Iterable[StorageClass] = (),
        csi_nodes: Iterable[CSINode] = (),
        csi_drivers: Iterable[CSIDriver] = (),
        capacities: Iterable[CSIStorageCapacity] = (),
    ) -> StorageObjects:
        return StorageObjects(
            FrozenDict({v.name: v for v in pvs}),
            FrozenDict({c.key: c for c in pvcs}),
            FrozenDict({c.name: c for c in classes}),
            FrozenDict({n.name: n for n in csi_nodes}),
            FrozenDict({d.name: d for d in csi_drivers}),
            tuple(capacities),
        )

    def __bool__(self) -> bool:
        return bool(
            self.pvs
            or self.pvcs
            or self.classes
            or self.csi_nodes
            or self.csi_drivers
            or self.capacities
        )

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.pvcs.get(f"{namespace}/{name}")

    @cached_property
    def pvs_by_class(self) -> Mapping[str, tuple[PersistentVolume, ...]]:
        """The volumes of each class, in name order (kube's PV cache indexed by class; the
        name order makes its choice between equal volumes reproducible)."""
        step = self.__dict__.pop("_pvs_step", None)
        if step is not None:
            patched = _replaced_in_class(*step)
            if patched is not None:
                return patched
        out: dict[str, list[PersistentVolume]] = {}
        for name in sorted(self.pvs):
            pv = self.pvs[name]
            out.setdefault(pv.storage_class, []).append(pv)
        return {k: tuple(v) for k, v in out.items()}

    def is_delay_binding(self, claim: PersistentVolumeClaim) -> bool:
        """kube's ``IsDelayBindingMode``: the claim's class exists and waits for the first
        consumer (no class, or a class not found, binds immediately)."""
        cls = self.classes.get(claim.storage_class) if claim.storage_class else None
        return cls is not None and cls.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    # -- derivations ------------------------------------------------------------------

    @cached_property
    def place(self) -> Place:
        """This storage's lineage and place on it (``storage_log``): a storage not derived
        from another starts a lineage."""
        return root()

    def changes_since(self, older: StorageObjects) -> set[Change] | None:
        """The (kind, key) of each object replaced on the way from ``older`` to this one;
        None when that is not known (this one does not derive from ``older`` in one line)."""
        return between(older.place, self.place)

    def _derived(self, out: StorageObjects, kind: str, key: str) -> StorageObjects:
        out.__dict__["place"] = step(self.place, (kind, key))
        return out

    def with_pv(self, pv: PersistentVolume) -> StorageObjects:
        out = replace(self, pvs=self.pvs.with_item(pv.name, pv))
        known = self.__dict__.get("pvs_by_class")
        if known is not None:
            # An assume replaces a volume by one naming its claim: the index is patched from
            # this one's, not sorted anew (it holds the index only until then, no chain).
            out.__dict__["_pvs_step"] = (known, self.pvs.get(pv.name), pv)
        return self._derived(out, "pv", pv.name)

    def without_pv(self, name: str) -> StorageObjects:
        if name not in self.pvs:
            return self
        return self._derived(replace(self, pvs=self.pvs.without(name)), "pv", name)

    def with_pvc(self, pvc: PersistentVolumeClaim) -> StorageObjects:
        out = self._same_pvs(replace(self, pvcs=self.pvcs.with_item(pvc.key, pvc)))
        return self._derived(out, "pvc", pvc.key)

    def _same_pvs(self, out: StorageObjects) -> StorageObjects:
        """``out`` (holding this one's volumes) with the volumes' index already built here."""
        known = self.__dict__.get("pvs_by_class")
        if known is not None:
            out.__dict__["pvs_by_class"] = known
        return out

    def without_pvc(self, key: str) -> StorageObjects:
        if key not in self.pvcs:
            return self
        return self._derived(replace(self, pvcs=self.pvcs.without(key)), "pvc", key)

    def with_class(self, cls: StorageClass) -> StorageObjects:
        out = replace(self, classes=self.classes.with_item(cls.name, cls))
        return self._derived(out, "class", cls.name)

    def without_class(self, name: str) -> StorageObjects:
        if name not in self.classes:
            return self
        return self._derived(replace(self, classes=self.classes.without(name)), "class", name)

    def with_csi_node(self, node: CSINode) -> StorageObjects:
        out = replace(self, csi_nodes=self.csi_nodes.with_item(node.name, node))
        return self._derived(out, "csinode", node.name)

    def without_csi_node(self, name: str) -> StorageObjects:
        if name not in self.csi_nodes:
            return self
        out = replace(self, csi_nodes=self.csi_nodes.without(name))
        return self._derived(out, "csinode", name)

    def with_csi_driver(self, driver: CSIDriver) -> StorageObjects:
        out = replace(self, csi_drivers=self.csi_drivers.with_item(driver.name, driver))
        return self._derived(out, "csidriver", driver.name)

    def without_csi_driver(self, name: str) -> StorageObjects:
        if name not in self.csi_drivers:
            return self
        out = replace(self, csi_drivers=self.csi_drivers.without(name))
        return self._derived(out, "csidriver", name)

    def with_capacity(self, capacity: CSIStorageCapacity) -> StorageObjects:
        kept = tuple(
            c
            for c in self.capacities
            if (c.namespace, c.name) != (capacity.namespace, capacity.name)
        )
        out = replace(self, capacities=(*kept, capacity))
        return self._derived(out, "capacity", f"{capacity.namespace}/{capacity.name}")

    def without_capacity(self, namespace: str, name: str) -> StorageObjects:
        kept = tuple(c for c in self.capacities if (c.namespace, c.name) != (namespace, name))
        if len(kept) == len(self.capacities):
            return self
        return self._derived(replace(self, capacities=kept), "capacity", f"{namespace}/{name}")


def _replaced_in_class(
    known: Mapping[str, tuple[PersistentVolume, ...]],
    old: PersistentVolume | None,
    new: PersistentVolume,
) -> Mapping[str, tuple[PersistentVolume, ...]] | None:
    """``known`` with ``old`` replaced by ``new`` in its place, when both are of one class;
    None otherwise (the index is then built anew)."""
    if old is None or old.storage_class != new.storage_class:
        return None
    volumes = known.get(new.storage_class, ())
    at = bisect.bisect_left(volumes, new.name, key=_NAME)
    if at >= len(volumes) or volumes[at] is not old:
        return None
    out = dict(known)
    out[new.storage_class] = (*volumes[:at], new, *volumes[at + 1 :])
    return out


_NAME = operator.attrgetter("name")


NO_STORAGE = StorageObjects(known=False)  # what a snapshot without storage objects holds
EMPTY_STORAGE = StorageObjects()  # known to hold nothing
