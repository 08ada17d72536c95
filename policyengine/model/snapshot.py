"""An immutable cluster snapshot: nodes, the pods on each, and the indexes scheduling needs.

Every scheduling cycle reads one ``ClusterSnapshot`` and never sees it change. The scheduler's
"assume" step and the watch loop's updates produce *new* snapshots by structural sharing: only
the touched ``NodeInfo`` is rebuilt (its sums updated incrementally, not recomputed), the other
``NodeInfo`` objects are shared, and so are the node and pod maps (``SharedMap``: the parent's
map plus the few entries changed since, instead of a copy of thousands). Each ``NodeInfo``
carries a ``generation`` so that callers can cache per-node results and recompute only nodes
that changed.

Per node it keeps what kube-scheduler's ``NodeInfo`` keeps: the pods, their summed requests
(exact, in kube's integer units, and the non-zero cpu/memory variant used for scoring), the used
host ports, the pods with (anti-)affinity. Per cluster: how many nodes hold each image (for
ImageLocality's spread factor), namespace labels (for namespace selectors), and which nodes
host pods with affinity or required anti-affinity.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from policyengine.model.cached import cached_property
from policyengine.model.errors import ModelError, object_ref
from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.gpu_devices import GpuDemand, Grant, NodeGpus
from policyengine.model.gpu_share import node_devices, pod_demand, pod_gpu_grants
from policyengine.model.load import DEFAULT_MAX_AGE, NO_LOAD, NodeLoad, NodeMetrics, resolve_loads
from policyengine.model.objects import Namespace, Node, Pod, ResourceList
from policyengine.model.pdb import PodDisruptionBudget
from policyengine.model.pod_affinity import PodAffinityTerms, compile_pod_affinity
from policyengine.model.podgroup import PodGroup
from policyengine.model.resources import (
    CPU,
    MEMORY,
    PODS,
    add_resources,
    add_units,
    pod_non_zero_requests,
    pod_requests,
    to_units,
)
from policyengine.model.shared_map import SharedMap
from policyengine.model.shared_rows import SharedRows
from policyengine.model.storage import NO_STORAGE, StorageObjects
from policyengine.model.workloads import NO_WORKLOADS, Workload, WorkloadIndex

_generation = itertools.count(1)
_new_object = object.__new__

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# A used host port: (hostIP with "" spelled 0.0.0.0, protocol, port)
HostPort = tuple[str, str, int]
WILDCARD_IP = "0.0.0.0"


def normalized_image_name(name: str) -> str:
    """kube's image key: a name without a tag gets ``:latest``."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The host ports a pod occupies (app containers and sidecars; hostPort > 0 only)."""
    out = []
    for c in (*pod.containers, *(c for c in pod.init_containers if c.is_sidecar)):
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip or WILDCARD_IP, p.protocol or "TCP", p.host_port))
    return tuple(out)


@dataclass(frozen=True)
class PodInfo:
    """A pod and what the snapshot derives from it once."""

    pod: Pod
    requests: ResourceList
    units: FrozenDict[str, int]
    non_zero_cpu: int  # milli-CPU
    non_zero_memory: int  # bytes
    host_ports: tuple[HostPort, ...]

    @property
    def key(self) -> str:
        return self.pod.key

    @cached_property
    def affinity_terms(self) -> PodAffinityTerms:
        return compile_pod_affinity(self.pod)

    @cached_property
    def gpu_demand(self) -> GpuDemand:
        return pod_demand(self.pod, self.requests)

    @cached_property
    def gpu_grants(self) -> tuple[Grant, ...] | None:
        return pod_gpu_grants(self.pod)


# What ``make_pod_info`` derives from a pod's requests, by the identity of its request sum:
# ``pod_requests`` hands pods of one template one object (found by the value of what it reads
# of the pod), so pods sharing it share their non-zero sums and integer units too, derived
# once per template. Each entry holds that object, so its id names it while the entry is kept.
_POD_FACTS: dict[int, tuple[Any, ...]] = {}
_POD_FACTS_KEPT = 4096


def make_pod_info(pod: Pod) -> PodInfo:
    requests = pod_requests(pod)
    facts = _POD_FACTS.get(id(requests))
    if facts is None or facts[0] is not requests:
        non_zero = pod_non_zero_requests(pod)
        facts = (
            requests,
            FrozenDict({k: u for k, v in requests.items() if (u := to_units(k, v)) != 0}),
            to_units(CPU, non_zero.get(CPU, 0)),
            to_units(MEMORY, non_zero.get(MEMORY, 0)),
        )
        if len(_POD_FACTS) >= _POD_FACTS_KEPT:
            _POD_FACTS.clear()
        _POD_FACTS[id(requests)] = facts
    # Built without the frozen dataclass ``__init__`` (see ``NodeInfo._derived``).
    info = _new_object(PodInfo)
    object.__setattr__(
        info,
        "__dict__",
        {
            "pod": pod,
            "requests": requests,
            "units": facts[1],
            "non_zero_cpu": facts[2],
            "non_zero_memory": facts[3],
            "host_ports": pod_host_ports(pod),
        },
    )
    return info


@dataclass(frozen=True)
class NodeInfo:
    """One node and the pods assigned to it (read-only)."""

    node: Node
    pods: tuple[PodInfo, ...] = ()
    requested: ResourceList = field(default=EMPTY)
    requested_units: FrozenDict[str, int] = field(default=EMPTY)
    non_zero_cpu: int = 0
    non_zero_memory: int = 0
    used_ports: FrozenDict[HostPort, int] = field(default=EMPTY)
    generation: int = 0
    load: NodeLoad = NO_LOAD  # measured load, already judged fresh (model.load)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def labels(self) -> FrozenDict[str, str]:
        return self.node.labels

    @cached_property
    def allocatable_units(self) -> FrozenDict[str, int]:
        return FrozenDict({k: to_units(k, v) for k, v in self.node.allocatable.items()})

    @property
    def allowed_pod_number(self) -> int:
        return self.allocatable_units.get(PODS, 0)

    @cached_property
    def free(self) -> ResourceList:
        """Allocatable minus requested, exact (may be negative when over-committed)."""
        out = dict(self.node.allocatable)
        for k, v in self.requested.items():
            out[k] = out.get(k, 0) - v
        return FrozenDict(out)

    @cached_property
    def pods_with_affinity(self) -> tuple[PodInfo, ...]:
        return tuple(p for p in self.pods if p.pod.has_pod_affinity_constraints)

    @cached_property
    def pods_with_volumes(self) -> tuple[PodInfo, ...]:
        """The pods that name volumes: the only ones whose volumes NodeVolumeLimits counts
        (a node without any is judged by its limits alone, ``schedlib.storage_batch``)."""
        return tuple(p for p in self.pods if p.pod.volumes)

    @cached_property
    def pods_with_required_anti_affinity(self) -> tuple[PodInfo, ...]:
        return tuple(p for p in self.pods if p.pod.has_required_anti_affinity)

    @cached_property
    def lowest_priority(self) -> int | None:
        """The lowest priority among the node's pods (None: no pods): preemption finds no
        victim on a node whose pods all rank at or above the preemptor, without a dry run."""
        return min((p.pod.priority for p in self.pods), default=None)

    @cached_property
    def image_names(self) -> frozenset[str]:
        return frozenset(n for img in self.node.images for n in img.names)

    @cached_property
    def image_sizes(self) -> FrozenDict[str, int]:
        sizes: dict[str, int] = {}
        for img in self.node.images:
            for n in img.names:
                sizes[n] = img.size_bytes
        return FrozenDict(sizes)

    @cached_property
    def gpus(self) -> NodeGpus:
        """Per-device GPU state (``model.gpu_devices``), carried over incrementally by
        ``with_pod``/``without_pod`` once computed."""
        state = NodeGpus.of(node_devices(self.node))
        if state.uses:
            for p in self.pods:
                state = state.with_pod(p.key, p.gpu_demand, p.gpu_grants)
        return state

    def _carry_node_facts(self, derived: NodeInfo) -> NodeInfo:
        """Give ``derived`` (the same Node object) what this one derived from the node alone,
        as ``functools.cached_property`` stores it: the assume step need not redo it."""
        known = self.__dict__
        for name in _NODE_FACTS:
            if name in known:
                derived.__dict__[name] = known[name]
        return derived

    def _carry_gpus(
        self, derived: NodeInfo, added: PodInfo | None, removed: str | None
    ) -> NodeInfo:
        # Only when this node's state was computed: otherwise the derived node computes its own.
        state = self.__dict__.get("gpus")
        if state is not None and state.uses:
            if added is not None:
                state = state.with_pod(added.key, added.gpu_demand, added.gpu_grants)
            if removed is not None:
                state = state.without_pod(removed)
            derived.__dict__["gpus"] = state
        elif state is not None:
            derived.__dict__["gpus"] = state
        return derived

    def pod_index(self, key: str) -> int:
        for i, p in enumerate(self.pods):
            if p.key == key:
                return i
        return -1

    # -- derivations (each returns a new NodeInfo) -------------------------------------

    def _derived(
        self,
        pods: tuple[PodInfo, ...],
        requested: ResourceList,
        requested_units: FrozenDict[str, int],
        non_zero_cpu: int,
        non_zero_memory: int,
        used_ports: FrozenDict[HostPort, int],
    ) -> NodeInfo:
        """A NodeInfo of this node with other pods, built without the dataclass ``__init__``
        (a frozen one sets each of its nine fields through ``object.__setattr__``: the assume
        step's largest part after the sums). The same fields, in the same order."""
        derived = _new_object(NodeInfo)
        object.__setattr__(
            derived,
            "__dict__",
            {
                "node": self.node,
                "pods": pods,
                "requested": requested,
                "requested_units": requested_units,
                "non_zero_cpu": non_zero_cpu,
                "non_zero_memory": non_zero_memory,
                "used_ports": used_ports,
                "generation": next(_generation),
                "load": self.load,
            },
        )
        return derived

    def with_pod(self, info: PodInfo) -> NodeInfo:
        ports = self.used_ports
        if info.host_ports:
            counts = dict(ports)
            for hp in info.host_ports:
                counts[hp] = counts.get(hp, 0) + 1
            ports = FrozenDict(counts)
        derived = self._derived(
            (*self.pods, info),
            add_resources(self.requested, info.requests),
            add_units(self.requested_units, info.units),
            self.non_zero_cpu + info.non_zero_cpu,
            self.non_zero_memory + info.non_zero_memory,
            ports,
        )
        # The pod lists with (anti-)affinity, when known here, are these plus the new pod
        # (``_carry_node_index`` reads them on every assume).
        known = self.__dict__
        extended = derived.__dict__
        if "pods_with_affinity" in known:
            more = (info,) if info.pod.has_pod_affinity_constraints else ()
            extended["pods_with_affinity"] = known["pods_with_affinity"] + more
        if "pods_with_required_anti_affinity" in known:
            more = (info,) if info.pod.has_required_anti_affinity else ()
            extended["pods_with_required_anti_affinity"] = (
                known["pods_with_required_anti_affinity"] + more
            )
        if "lowest_priority" in known:
            lowest = known["lowest_priority"]
            priority = info.pod.priority
            extended["lowest_priority"] = priority if lowest is None else min(lowest, priority)
        return self._carry_gpus(self._carry_node_facts(derived), info, None)

    def without_pod(self, key: str) -> NodeInfo:
        i = self.pod_index(key)
        if i < 0:
            raise KeyError(key)
        info = self.pods[i]
        ports = self.used_ports
        if info.host_ports:
            counts = dict(ports)
            for hp in info.host_ports:
                left = counts.get(hp, 0) - 1
                if left > 0:
                    counts[hp] = left
                else:
                    counts.pop(hp, None)
            ports = FrozenDict(counts)
        derived = self._derived(
            self.pods[:i] + self.pods[i + 1 :],
            add_resources(self.requested, info.requests, -1),
            add_units(self.requested_units, info.units, -1),
            self.non_zero_cpu - info.non_zero_cpu,
            self.non_zero_memory - info.non_zero_memory,
            ports,
        )
        return self._carry_gpus(self._carry_node_facts(derived), None, key)

    def with_node(self, node: Node) -> NodeInfo:
        return replace(self, node=node, generation=next(_generation))

    def with_load(self, load: NodeLoad) -> NodeInfo:
        return self if load == self.load else replace(self, load=load, generation=next(_generation))


# NodeInfo's cached properties that read only ``node`` (carried by ``_carry_node_facts``).
_NODE_FACTS = ("allocatable_units", "image_names", "image_sizes")

_NODE_INDEXES = (
    ("nodes_with_affinity_pods", "pods_with_affinity"),
    ("nodes_with_required_anti_affinity_pods", "pods_with_required_anti_affinity"),
)


def _carry_node_index(
    parent: ClusterSnapshot, derived: ClusterSnapshot, old: NodeInfo, new: NodeInfo
) -> None:
    """Give ``derived`` (``parent`` with node ``old`` replaced by ``new`` in place) the
    parent's computed node lists, edited for that node, in node order as computed afresh."""
    for listing, pods in _NODE_INDEXES:
        known = parent.__dict__.get(listing)
        if known is None:
            continue
        wanted = bool(getattr(new, pods))
        had = bool(getattr(old, pods))
        if not wanted and not had:
            edited = known  # the usual assume: a pod without (anti-)affinity
        else:
            # The list is in node order: the node's place is found by bisection, not a scan
            # of the list (thousands of nodes once many pods with affinity run).
            order = parent.node_positions
            at = bisect.bisect_left(known, order[new.name], key=lambda info: order[info.name])
            if at < len(known) and known[at] is old:
                rest = known[at + 1 :]
                edited = (*known[:at], new, *rest) if wanted else known[:at] + rest
            elif wanted:
                edited = (*known[:at], new, *known[at:])
            else:
                edited = known
        derived.__dict__[listing] = edited  # as functools.cached_property stores it
    if "node_positions" in parent.__dict__:  # the same nodes, in the same order
        derived.__dict__["node_positions"] = parent.__dict__["node_positions"]


def node_info_from(node: Node, pods: Iterable[Pod] = ()) -> NodeInfo:
    info = NodeInfo(node=node, generation=next(_generation))
    for pod in pods:
        info = info.with_pod(make_pod_info(pod))
    return info


def _count_images(counts: dict[str, int], names: Iterable[str], sign: int) -> None:
    for n in names:
        c = counts.get(n, 0) + sign
        if c > 0:
            counts[n] = c
        else:
            counts.pop(n, None)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Nodes by name (in insertion order) with their pods; immutable, cheap to derive from."""

    # A derived snapshot's maps are ``SharedMap``s sharing their parent's (``_replace_node``).
    node_infos: FrozenDict[str, NodeInfo] | SharedMap[str, NodeInfo] = field(default=EMPTY)
    namespaces: FrozenDict[str, FrozenDict[str, str]] = field(default=EMPTY)
    image_node_counts: FrozenDict[str, int] = field(default=EMPTY)
    pod_nodes: FrozenDict[str, str] | SharedMap[str, str] = field(default=EMPTY)  # pod -> node
    generation: int = 0
    pod_groups: FrozenDict[str, PodGroup] = field(default=EMPTY)  # "ns/name" -> PodGroup
    pdbs: FrozenDict[str, PodDisruptionBudget] = field(default=EMPTY)  # "ns/name" -> budget
    # PVs, PVCs, classes, CSINodes, CSIDrivers, capacities (``model.storage``).
    storage: StorageObjects = NO_STORAGE
    # Services and controllers, which default topology spreading derives selectors from.
    workloads: WorkloadIndex = field(default=NO_WORKLOADS)

    # -- construction ----------------------------------------------------------------

    @staticmethod
    def build(
        nodes: Iterable[Node],
        pods: Iterable[Pod] = (),
        namespaces: Iterable[Namespace] = (),
        pod_groups: Iterable[PodGroup] = (),
        pdbs: Iterable[PodDisruptionBudget] = (),
        workloads: Iterable[Workload] = (),
        storage: StorageObjects = NO_STORAGE,
    ) -> ClusterSnapshot:
        """A snapshot from nodes and *assigned* pods; raises ``ModelError`` on bad input."""
        by_node: dict[str, list[Pod]] = {}
        node_list = list(nodes)
        names = set()
        for n in node_list:
            if n.name in names:
                raise ModelError(
                    f"{object_ref('Node', None, n.name)}: defined twice in the snapshot"
                )
            names.add(n.name)
            by_node[n.name] = []
        pod_nodes: dict[str, str] = {}
        for p in pods:
            if not p.node_name:
                raise ModelError(
                    f"{object_ref('Pod', p.namespace, p.name)}: has no spec.nodeName; only assigned pods belong in a snapshot"
                )
            if p.node_name not in by_node:
                raise ModelError(
                    f"{object_ref('Pod', p.namespace, p.name)}: spec.nodeName: node {p.node_name!r} is not in the snapshot"
                )
            if p.key in pod_nodes:
                raise ModelError(
                    f"{object_ref('Pod', p.namespace, p.name)}: defined twice in the snapshot"
                )
            pod_nodes[p.key] = p.node_name
            by_node[p.node_name].append(p)
        infos = {n.name: node_info_from(n, by_node[n.name]) for n in node_list}
        counts: dict[str, int] = {}
        for info in infos.values():
            _count_images(counts, info.image_names, 1)
        return ClusterSnapshot(
            node_infos=FrozenDict(infos),
            namespaces=FrozenDict({ns.name: ns.labels for ns in namespaces}),
            image_node_counts=FrozenDict(counts),
            pod_nodes=FrozenDict(pod_nodes),
            generation=next(_generation),
            pod_groups=FrozenDict({g.key: g for g in pod_groups}),
            pdbs=FrozenDict({b.key: b for b in pdbs}),
            storage=storage,
            workloads=WorkloadIndex.build(workloads),
        )

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.node_infos)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.nodes)

    def __contains__(self, node_name: object) -> bool:
        return node_name in self.node_infos

    @cached_property
    def nodes(self) -> tuple[NodeInfo, ...]:
        known = self.__dict__
        if "rows" in known:
            known.pop("_nodes_from", None)
            return known["rows"].flat()  # type: ignore[no-any-return]
        # A snapshot derived by replacing one node of a parent whose tuple was built copies
        # that tuple (a C copy of its pointers) instead of walking the node map, which reads
        # every entry of a large dict: half the cost, paid once per assumed pod.
        step = known.pop("_nodes_from", None)
        if step is not None:
            parent_nodes, at, info = step
            items = list(parent_nodes)
            items[at] = info
            return tuple(items)
        return tuple(self.node_infos.values())

    @cached_property
    def rows(self) -> SharedRows[NodeInfo]:
        """``nodes`` as rows shared with the snapshot this one was derived from
        (``model.shared_rows``): what keeps results per row between cycles reads a few rows
        of each snapshot, and a derived snapshot's rows cost no copy of its parent's."""
        step = self.__dict__.pop("_rows_from", None)
        if step is not None:
            parent_rows, at, info = step
            return parent_rows.with_row(at, info)  # type: ignore[no-any-return]
        return SharedRows(self.nodes)

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(self.node_infos)

    def node(self, name: str) -> NodeInfo:
        return self.node_infos[name]

    def get(self, name: str) -> NodeInfo | None:
        return self.node_infos.get(name)

    @property
    def num_nodes(self) -> int:
        return len(self.node_infos)

    def pods(self) -> Iterator[Pod]:
        for info in self.nodes:
            for p in info.pods:
                yield p.pod

    def pod(self, key: str) -> Pod | None:
        node = self.pod_nodes.get(key)
        if node is None:
            return None
        info = self.node_infos[node]
        return info.pods[info.pod_index(key)].pod

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of a namespace; unknown namespaces get the label the API server always sets."""
        labels = self.namespaces.get(namespace)
        if labels is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        if NAMESPACE_NAME_LABEL not in labels:
            return {**labels, NAMESPACE_NAME_LABEL: namespace}
        return labels

    @cached_property
    def node_positions(self) -> Mapping[str, int]:
        """Each node's position in ``nodes``."""
        return {name: at for at, name in enumerate(self.node_infos)}

    @cached_property
    def nodes_with_affinity_pods(self) -> tuple[NodeInfo, ...]:
        return tuple(n for n in self.nodes if n.pods_with_affinity)

    @cached_property
    def nodes_with_required_anti_affinity_pods(self) -> tuple[NodeInfo, ...]:
        return tuple(n for n in self.nodes if n.pods_with_required_anti_affinity)

    @cached_property
    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod on a node (None: no pods): a preemptor ranking at or
        below it finds no victim anywhere. Carried on by ``with_pod``."""
        found = [n.lowest_priority for n in self.nodes if n.pods]
        return min((p for p in found if p is not None), default=None)

    @property
    def derivation(self) -> tuple[int, str] | None:
        """``(parent's generation, node name)`` when this snapshot's nodes are its parent's with
        that one node's ``NodeInfo`` replaced in place (same rows, same order; ``with_storage``
        keeps the step, its nodes being the very same); None otherwise. Callers
        keeping per-row results follow these steps back to a generation they saw instead of
        comparing every node (``schedlib.domains``)."""
        return self.__dict__.get("_derivation")

    def image_num_nodes(self, image_name: str) -> int:
        return self.image_node_counts.get(image_name, 0)

    # -- derivations (structural sharing) --------------------------------------------
    # ``_replace_node`` carries the affinity node lists over (``_carry_node_index``): a
    # scheduler assumes one pod per cycle, and rescanning every node for them each time cost
    # InterPodAffinity's PreFilter and PreScore more than their own work.

    def _replace_node(
        self,
        info: NodeInfo,
        pod_nodes: SharedMap[str, str] | None = None,
        images: Mapping[str, int] | None = None,
    ) -> ClusterSnapshot:
        old = self.node_infos.get(info.name)
        # Built without the frozen dataclass ``__init__`` (as ``NodeInfo._derived``): the same
        # fields, in the same order.
        derived = _new_object(ClusterSnapshot)
        object.__setattr__(
            derived,
            "__dict__",
            {
                "node_infos": SharedMap.of(self.node_infos).with_item(info.name, info),
                "namespaces": self.namespaces,
                "image_node_counts": (
                    self.image_node_counts if images is None else FrozenDict(images)
                ),
                "pod_nodes": self.pod_nodes if pod_nodes is None else pod_nodes,
                "generation": next(_generation),
                "pod_groups": self.pod_groups,
                "pdbs": self.pdbs,
                "storage": self.storage,
                "workloads": self.workloads,
            },
        )
        if old is not None:
            _carry_node_index(self, derived, old, info)
            derived.__dict__["_derivation"] = (self.generation, info.name)
            known = self.__dict__
            positions = known.get("node_positions")
            at = None if positions is None else positions.get(info.name)
            if at is not None:
                # Held only until ``rows`` or ``nodes`` is read (see there).
                if "rows" in known and known["rows"][at] is old:
                    derived.__dict__["_rows_from"] = (known["rows"], at, info)
                if "nodes" in known and known["nodes"][at] is old:
                    derived.__dict__["_nodes_from"] = (known["nodes"], at, info)
        return derived

    def with_pod(self, pod: Pod, node_name: str | None = None) -> ClusterSnapshot:
        """The scheduler's *assume*: ``pod`` is on ``node_name`` (default ``pod.node_name``)."""
        target = node_name or pod.node_name
        if not target:
            raise ValueError(f"pod {pod.key} has no node to be placed on")
        if target not in self.node_infos:
            raise KeyError(f"node {target!r} is not in the snapshot")
        if pod.key in self.pod_nodes:
            raise ValueError(f"pod {pod.key} is already on node {self.pod_nodes[pod.key]!r}")
        if pod.node_name != target:
            pod = pod.with_node_name(target)
        info = self.node_infos[target].with_pod(make_pod_info(pod))
        pod_nodes = SharedMap.of(self.pod_nodes).with_item(pod.key, target)
        derived = self._replace_node(info, pod_nodes=pod_nodes)
        if "lowest_priority" in self.__dict__:  # a pod added can only lower it
            lowest = self.__dict__["lowest_priority"]
            priority = pod.priority
            derived.__dict__["lowest_priority"] = (
                priority if lowest is None else min(lowest, priority)
            )
        return derived

    def without_pod(self, key: str) -> ClusterSnapshot:
        """Forget an assigned pod (deleted, or an assumption undone)."""
        node = self.pod_nodes.get(key)
        if node is None:
            raise KeyError(f"pod {key} is not in the snapshot")
        info = self.node_infos[node].without_pod(key)
        return self._replace_node(info, pod_nodes=SharedMap.of(self.pod_nodes).without(key))

    def with_updated_pod(self, pod: Pod) -> ClusterSnapshot:
        """Add or replace an assigned pod (a watch ADDED/MODIFIED event)."""
        snap = self.without_pod(pod.key) if pod.key in self.pod_nodes else self
        return snap.with_pod(pod)

    def with_node(self, node: Node) -> ClusterSnapshot:
        """Add a node, or replace a node's object while keeping its pods."""
        old = self.node_infos.get(node.name)
        counts = dict(self.image_node_counts)
        if old is None:
            info = node_info_from(node)
        else:
            info = old.with_node(node)
            _count_images(counts, old.image_names, -1)
        _count_images(counts, info.image_names, 1)
        return self._replace_node(info, images=counts)

    def without_node(self, name: str) -> ClusterSnapshot:
        """Remove a node and the pods assigned to it."""
        old = self.node_infos[name]
        infos = dict(self.node_infos)
        del infos[name]
        counts = dict(self.image_node_counts)
        _count_images(counts, old.image_names, -1)
        pod_nodes = (
            {k: v for k, v in self.pod_nodes.items() if v != name} if old.pods else self.pod_nodes
        )
        return ClusterSnapshot(
            node_infos=FrozenDict(infos),
            namespaces=self.namespaces,
            image_node_counts=FrozenDict(counts),
            pod_nodes=FrozenDict(pod_nodes),
            generation=next(_generation),
            pod_groups=self.pod_groups,
            pdbs=self.pdbs,
            storage=self.storage,
            workloads=self.workloads,
        )

    def with_loads(self, loads: Mapping[str, NodeLoad]) -> ClusterSnapshot:
        """Every node's measured load replaced (a node absent from ``loads`` has none); only the
        nodes whose load changed get a new ``NodeInfo``, so per-node caches keep the others."""
        infos = {
            name: info.with_load(loads.get(name, NO_LOAD)) for name, info in self.node_infos.items()
        }
        if all(infos[name] is info for name, info in self.node_infos.items()):
            return self
        return replace(self, node_infos=FrozenDict(infos), generation=next(_generation))

    def with_namespace(self, namespace: Namespace) -> ClusterSnapshot:
        return replace(
            self,
            namespaces=self.namespaces.with_item(namespace.name, namespace.labels),
            generation=next(_generation),
        )

    def pod_group(self, key: str) -> PodGroup | None:
        """The PodGroup ``namespace/name`` (a gang's definition), if the snapshot has it."""
        return self.pod_groups.get(key)

    def with_pod_group(self, group: PodGroup) -> ClusterSnapshot:
        """Add or replace a PodGroup (a watch ADDED/MODIFIED event)."""
        return replace(
            self,
            pod_groups=self.pod_groups.with_item(group.key, group),
            generation=next(_generation),
        )

    def without_pod_group(self, key: str) -> ClusterSnapshot:
        """Forget a PodGroup (deleted); unknown keys leave the snapshot as it is."""
        if key not in self.pod_groups:
            return self
        return replace(self, pod_groups=self.pod_groups.without(key), generation=next(_generation))

    def with_pdb(self, pdb: PodDisruptionBudget) -> ClusterSnapshot:
        """Add or replace a PodDisruptionBudget (a watch ADDED/MODIFIED event)."""
        return replace(self, pdbs=self.pdbs.with_item(pdb.key, pdb), generation=next(_generation))

    def without_pdb(self, key: str) -> ClusterSnapshot:
        """Forget a PodDisruptionBudget (deleted); unknown keys leave the snapshot as it is."""
        if key not in self.pdbs:
            return self
        return replace(self, pdbs=self.pdbs.without(key), generation=next(_generation))

    def with_storage(self, storage: StorageObjects) -> ClusterSnapshot:
        """The same nodes and pods with other storage objects (a watch event on a PV, a PVC,
        ...; an assumed pod's volume decisions). Nodes keep their ``NodeInfo``s."""
        if storage is self.storage:
            return self
        derived = replace(self, storage=storage, generation=next(_generation))
        # The very same nodes: what was derived of them (the node tuple, positions and lists,
        # and the step from the parent that per-row caches follow) holds for it too, rather
        # than being built anew for every pod whose volume decisions are assumed.
        mine = derived.__dict__
        for name, value in self.__dict__.items():
            if name not in mine:
                mine[name] = value
        return derived

    def with_workload(self, workload: Workload) -> ClusterSnapshot:
        """Add or replace a Service or controller (a watch ADDED/MODIFIED event); the snapshot
        itself when nothing default spreading reads of it changed."""
        index = self.workloads.with_workload(workload)
        if index is self.workloads:
            return self
        return replace(self, workloads=index, generation=next(_generation))

    def without_workload(self, kind: str, namespace: str, name: str) -> ClusterSnapshot:
        """Forget a Service or controller (deleted); unknown ones leave the snapshot as it is."""
        index = self.workloads.without(kind, namespace, name)
        if index is self.workloads:
            return self
        return replace(self, workloads=index, generation=next(_generation))

    def requested_total(self) -> ResourceList:
        total: dict[str, Fraction] = {}
        for info in self.node_infos.values():
            for k, v in info.requested.items():
                total[k] = total.get(k, 0) + v
        return FrozenDict(total)


def snapshot_from_objects(
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    namespaces: Iterable[Namespace] = (),
    pod_groups: Iterable[PodGroup] = (),
    node_metrics: Iterable[NodeMetrics] = (),
    now: datetime | None = None,
    load_max_age: timedelta = DEFAULT_MAX_AGE,
    pdbs: Iterable[PodDisruptionBudget] = (),
    workloads: Iterable[Workload] = (),
    storage: StorageObjects = NO_STORAGE,
) -> tuple[ClusterSnapshot, tuple[Pod, ...], tuple[str, ...]]:
    """Split pods into the snapshot (assigned) and the pending ones; warn about strays.

    Returns ``(snapshot, pending_pods, warnings)``. A pod bound to a node the snapshot lacks is
    left out with a warning rather than failing the whole load.
    """
    node_list = list(nodes)
    names = {n.name for n in node_list}
    assigned: list[Pod] = []
    pending: list[Pod] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for p in pods:
        if p.key in seen:
            raise ModelError(
                f"{object_ref('Pod', p.namespace, p.name)}: defined twice in the snapshot"
            )
        seen.add(p.key)
        if not p.node_name:
            pending.append(p)
        elif p.node_name in names:
            assigned.append(p)
        else:
            warnings.append(
                f"{object_ref('Pod', p.namespace, p.name)}: spec.nodeName {p.node_name!r} is not a node "
                "in the snapshot; the pod is ignored"
            )
    if not storage.known:
        claiming = sum(1 for p in pending if p.uses_storage)
        if claiming:
            warnings.append(
                f"{claiming} pending pod{'s' if claiming != 1 else ''} use{'' if claiming != 1 else 's'} "
                "PersistentVolumeClaims or in-tree disks, but the snapshot holds no storage "
                "objects: the storage filters pass them (add pv,pvc,storageclass,csinode,"
                "csidriver,csistoragecapacity to kubectl get)"
            )
    snapshot = ClusterSnapshot.build(
        node_list, assigned, namespaces, pod_groups, pdbs, workloads, storage=storage
    )
    # Load is judged fresh against ``now``, by default the snapshot's own newest reading.
    loads, load_warnings = resolve_loads(node_list, node_metrics, now, load_max_age)
    snapshot = snapshot.with_loads(loads)
    return snapshot, tuple(pending), (*warnings, *load_warnings)
