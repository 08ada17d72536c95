"""Kubernetes objects as plain, immutable data: the fields scheduling reads, nothing else.

These are not API clients' models: no defaulting machinery, no round-tripping. ``parse``
builds them from YAML/JSON dicts (applying the few API-server defaults that change
scheduling), and everything above the model reads them. Labels and annotations are kept raw
(``FrozenDict``) so that PodGroup/gang conventions can be read from them later. Quantities are
exact ``Fraction`` values in base units (cores, bytes, devices).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from policyengine.model.cached import cached_property
from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import LabelSelector
from policyengine.model.node_selectors import NodeSelector, PreferredSchedulingTerm
from policyengine.model.taints import Taint, Toleration
from policyengine.model.volumes import STORAGE_SOURCES, Volume

ResourceList = FrozenDict[str, Fraction]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_NAMESPACE = "default"

# whenUnsatisfiable
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
# nodeAffinityPolicy / nodeTaintsPolicy
HONOR = "Honor"
IGNORE = "Ignore"
# container restartPolicy that makes an init container a sidecar
RESTART_ALWAYS = "Always"


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    requests: ResourceList = field(default=EMPTY)
    limits: ResourceList = field(default=EMPTY)
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str | None = None  # "Always" on an init container: a sidecar
    # In-place resize (InPlacePodVerticalScaling): what the kubelet reports the container
    # holds — the larger of its status.resources.requests and allocatedResources — when its
    # status carries resources; None otherwise (``model.resources``).
    status_requests: ResourceList | None = None

    @property
    def is_sidecar(self) -> bool:
        return self.restart_policy == RESTART_ALWAYS


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """Used for both ``podAffinity`` and ``podAntiAffinity``."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()
    has_preferred: bool = False  # the field was present (even if empty)


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class NodeCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Node:
    name: str
    labels: FrozenDict[str, str] = field(default=EMPTY)
    annotations: FrozenDict[str, str] = field(default=EMPTY)
    uid: str = ""
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    allocatable: ResourceList = field(default=EMPTY)
    capacity: ResourceList = field(default=EMPTY)
    images: tuple[ContainerImage, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()
    resource_version: str = ""

    def condition(self, type_: str) -> NodeCondition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None

    @property
    def ready(self) -> bool:
        c = self.condition("Ready")
        return c is not None and c.status == "True"


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str = DEFAULT_NAMESPACE
    uid: str = ""
    labels: FrozenDict[str, str] = field(default=EMPTY)
    annotations: FrozenDict[str, str] = field(default=EMPTY)
    node_name: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList | None = None
    pod_requests: ResourceList | None = None  # spec.resources.requests (pod-level resources)
    pod_limits: ResourceList | None = None
    node_selector: FrozenDict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    host_network: bool = False
    deletion_timestamp: str | None = None
    # spec.schedulingGates' names: while any is left the pod is not scheduled (kube's
    # SchedulingGates PreEnqueue); gates are set at creation and only ever removed.
    scheduling_gates: tuple[str, ...] = ()
    # spec.resourceClaims' names: devices from dynamic resource allocation (DRA), which the
    # scheduler must allocate; policyengine does not (``dra_message``).
    resource_claims: tuple[str, ...] = ()
    # status.conditions holds DisruptionTarget=True for reason PreemptionByScheduler: a
    # scheduler chose the pod as a preemption victim before deleting it.
    preempted_by_scheduler: bool = False
    # status.conditions says PodResizePending with reason Infeasible: a requested resize will
    # not happen, so the containers' status resources count instead of their spec.
    resize_infeasible: bool = False
    owner_references: tuple[FrozenDict[str, object], ...] = ()
    phase: str = ""
    status_qos_class: str = ""
    nominated_node_name: str = ""
    resource_version: str = ""
    creation_timestamp: str = ""  # RFC 3339, UTC: orders the scheduling queue among equals
    # spec.volumes, as the storage plugins read them (``model.volumes``).
    volumes: tuple[Volume, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_assigned(self) -> bool:
        """Running (or at least bound): ``spec.nodeName`` is set."""
        return bool(self.node_name)

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def gated_message(self) -> str:
        """kube-scheduler's word for a gated pod (its SchedulingGates PreEnqueue status), empty
        when the pod has no gate left: ``waiting for scheduling gates: [a b]``."""
        if not self.scheduling_gates:
            return ""
        return f"waiting for scheduling gates: [{' '.join(self.scheduling_gates)}]"

    @property
    def dra_message(self) -> str:
        """Why the pod is not placed when it asks for devices through dynamic resource
        allocation (empty when it does not): kube-scheduler's DynamicResources plugin allocates
        each claim from the cluster's ResourceSlices at scheduling time, and a pod bound
        without that allocation never starts."""
        if not self.resource_claims:
            return ""
        return (
            f"pod {self.key} uses dynamic resource allocation (spec.resourceClaims: "
            f"{', '.join(self.resource_claims)}), which policyengine does not allocate: "
            "schedule it with kube-scheduler (schedulerName: default-scheduler)"
        )

    @property
    def terminating_by_preemption(self) -> bool:
        """Going away because a scheduler preempted it (kube's ``podTerminatingByPreemption``):
        a preemptor nominated to its node waits for it rather than preempting again."""
        return self.deletion_timestamp is not None and self.preempted_by_scheduler

    @cached_property
    def uses_storage(self) -> bool:
        """Whether a volume of the pod is one the storage plugins read (a claim, an in-tree
        disk): for the others they do nothing."""
        return any(v.kind in STORAGE_SOURCES for v in self.volumes)

    @cached_property
    def pod_affinity(self) -> PodAffinity | None:
        return self.affinity.pod_affinity if self.affinity else None

    @cached_property
    def pod_anti_affinity(self) -> PodAffinity | None:
        return self.affinity.pod_anti_affinity if self.affinity else None

    @cached_property
    def node_affinity(self) -> NodeAffinity | None:
        return self.affinity.node_affinity if self.affinity else None

    @cached_property
    def has_pod_affinity_constraints(self) -> bool:
        """kube's ``PodsWithAffinity`` membership: any pod (anti-)affinity stanza at all."""
        return self.pod_affinity is not None or self.pod_anti_affinity is not None

    @cached_property
    def has_required_anti_affinity(self) -> bool:
        return self.pod_anti_affinity is not None and bool(self.pod_anti_affinity.required)

    def with_node_name(self, node_name: str) -> Pod:
        """This pod with ``spec.nodeName`` set (the scheduler's assume step). A copy of the
        instance dict, not ``dataclasses.replace`` (which re-runs ``__init__`` over all 28
        fields): the derived values cached on it read other fields, never the node name."""
        copied = object.__new__(Pod)
        state = self.__dict__.copy()
        state["node_name"] = node_name
        object.__setattr__(copied, "__dict__", state)
        return copied

    def with_binding(
        self,
        node_name: str,
        resource_version: str,
        annotations: FrozenDict[str, str] | None = None,
    ) -> Pod:
        """This pod as the watch shows it once bound: ``spec.nodeName`` and
        ``metadata.resourceVersion`` set, and ``metadata.annotations`` when given (a Binding
        carrying GPU assignments), nothing else (``controller.echo``). A copy of the
        instance dict as in ``with_node_name``; no derived value reads the resource version
        or the annotations either."""
        copied = object.__new__(Pod)
        state = self.__dict__.copy()
        state["node_name"] = node_name
        state["resource_version"] = resource_version
        if annotations is not None:
            state["annotations"] = annotations
        object.__setattr__(copied, "__dict__", state)
        return copied


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: FrozenDict[str, str] = field(default=EMPTY)
