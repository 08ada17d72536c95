"""The attribute schema policies are written against: ``pod.*``, ``node.*`` and their parts.

Every attribute is declared once here, with its type, the getter that reads it from the views,
and the sentence the documentation's attribute reference prints. Changing a name here changes the
language, so the names follow Kubernetes' own wherever one exists, in snake_case.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from operator import attrgetter

from policyengine.lang.types import (
    BOOL,
    FLOAT,
    INT,
    QUANTITY,
    STRING,
    Field,
    ListType,
    MapType,
    Nullable,
    RecordType,
    Type,
)
from policyengine.lang.values import Value
from policyengine.schedlib.gpu_records import GPU_DEVICE, GPU_RECORDS, GPU_REQUEST

LABELS = MapType(STRING, STRING, bound=64)
RESOURCES = MapType(STRING, QUANTITY, bound=32, default=Fraction(0))


def _field(
    name: str, type_: Type, getter: Callable[[Value], Value], doc: str, cost: int = 1
) -> Field:
    return Field(name, type_, getter, doc, cost)


def _record(name: str, doc: str, *fields: Field) -> RecordType:
    return RecordType(name, {f.name: f for f in fields}, doc)


TAINT = _record(
    "Taint",
    "A node taint.",
    _field("key", STRING, attrgetter("key"), "The taint key."),
    _field("value", STRING, attrgetter("value"), "The taint value (empty when none)."),
    _field("effect", STRING, attrgetter("effect"), "NoSchedule, PreferNoSchedule or NoExecute."),
)

TOLERATION = _record(
    "Toleration",
    "A pod toleration.",
    _field("key", STRING, attrgetter("key"), "The key tolerated (empty with Exists: every key)."),
    _field("operator", STRING, lambda t: t.operator or "Equal", "Equal or Exists."),
    _field("value", STRING, attrgetter("value"), "The value tolerated (Equal)."),
    _field("effect", STRING, attrgetter("effect"), "The effect tolerated (empty: every effect)."),
)

NODE_GPU = _record(
    "NodeGpu",
    "The node's NVIDIA GPUs, from GPU feature discovery labels and allocatable resources.",
    _field(
        "product",
        STRING,
        attrgetter("product"),
        "nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3 (empty when unknown).",
    ),
    _field(
        "family",
        STRING,
        attrgetter("family"),
        "nvidia.com/gpu.family, e.g. hopper (empty when unknown).",
    ),
    _field(
        "memory",
        QUANTITY,
        attrgetter("memory"),
        "Memory of one GPU in bytes (from nvidia.com/gpu.memory, in MiB).",
    ),
    _field("count", INT, attrgetter("count"), "GPUs the node can allocate (nvidia.com/gpu)."),
    _field("allocated", INT, attrgetter("allocated"), "GPUs requested by the pods on the node."),
    _field("free", INT, attrgetter("free"), "GPUs still free."),
    _field(
        "mig_strategy",
        STRING,
        attrgetter("mig_strategy"),
        "nvidia.com/mig.strategy: none, single or mixed.",
    ),
)

TOPOLOGY = _record(
    "Topology",
    "Where the node stands, from well-known and configured labels; null when the label is absent.",
    _field("zone", Nullable(STRING), attrgetter("zone"), "topology.kubernetes.io/zone."),
    _field("region", Nullable(STRING), attrgetter("region"), "topology.kubernetes.io/region."),
    _field("hostname", Nullable(STRING), attrgetter("hostname"), "kubernetes.io/hostname."),
    _field("rack", Nullable(STRING), attrgetter("rack"), "The rack label (configurable)."),
    _field(
        "nvlink_domain",
        Nullable(STRING),
        attrgetter("nvlink_domain"),
        "The NVLink domain label (configurable).",
    ),
    _field(
        "network_block",
        Nullable(STRING),
        attrgetter("block"),
        "The network block label (configurable).",
    ),
)

NODE_LOAD = _record(
    "NodeLoad",
    "Measured load, from metrics.k8s.io NodeMetrics or load.policyengine.io/* annotations; "
    "a value older than the staleness bound (default 5 minutes) is null, never 0.",
    _field(
        "cpu",
        Nullable(FLOAT),
        attrgetter("cpu"),
        "CPU usage as a fraction of allocatable, 0..1 (null: no fresh reading).",
    ),
    _field(
        "memory",
        Nullable(FLOAT),
        attrgetter("memory"),
        "Memory usage as a fraction of allocatable, 0..1 (null: no fresh reading).",
    ),
    _field(
        "gpu",
        Nullable(FLOAT),
        attrgetter("gpu"),
        "Mean GPU utilisation, 0..1, from load.policyengine.io/gpu (null: no fresh reading).",
    ),
    _field(
        "age",
        Nullable(INT),
        attrgetter("age"),
        "Seconds since the oldest reading shown was taken (null when none is).",
    ),
)

POD = _record(
    "Pod",
    "The pod being scheduled.",
    _field("name", STRING, lambda v: v.pod.name, "metadata.name."),
    _field("namespace", STRING, lambda v: v.pod.namespace, "metadata.namespace."),
    _field("labels", LABELS, lambda v: v.pod.labels, "metadata.labels."),
    _field("annotations", LABELS, lambda v: v.pod.annotations, "metadata.annotations."),
    _field("priority", INT, lambda v: v.pod.priority, "spec.priority (0 when unset)."),
    _field(
        "priority_class", STRING, lambda v: v.pod.priority_class_name, "spec.priorityClassName."
    ),
    _field(
        "qos_class",
        STRING,
        attrgetter("qos_class"),
        "Guaranteed, Burstable or BestEffort, as Kubernetes computes it.",
        cost=2,
    ),
    _field("scheduler_name", STRING, lambda v: v.pod.scheduler_name, "spec.schedulerName."),
    _field(
        "node_name",
        STRING,
        lambda v: v.pod.node_name,
        "spec.nodeName (empty when the pod names no node).",
    ),
    _field("node_selector", LABELS, attrgetter("node_selector"), "spec.nodeSelector."),
    _field(
        "requests",
        RESOURCES,
        attrgetter("requests"),
        "Effective requests as kube-scheduler counts them: containers summed, init containers "
        "and sidecars, pod-level requests, overhead; for a running pod resized in place "
        "(InPlacePodVerticalScaling, on by default since 1.33), each container whose status "
        "reports resources counts the larger of its spec and what it holds "
        "(`status.containerStatuses[].resources.requests`, `allocatedResources`), only what "
        "it holds when the pod's `PodResizePending` condition says `Infeasible`. A missing "
        "resource reads 0.",
        cost=2,
    ),
    _field(
        "limits",
        RESOURCES,
        attrgetter("limits"),
        "Summed container limits; a missing resource reads 0.",
        cost=2,
    ),
    _field(
        "tolerations",
        ListType(TOLERATION, bound=64),
        lambda v: v.pod.tolerations,
        "spec.tolerations.",
    ),
    _field(
        "tolerates_unschedulable",
        BOOL,
        attrgetter("tolerates_unschedulable"),
        "Whether the pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.",
        cost=2,
    ),
    _field(
        "host_ports",
        ListType(INT, bound=64),
        attrgetter("host_ports"),
        "Host ports its containers ask for.",
    ),
    _field("images", ListType(STRING, bound=32), attrgetter("images"), "Container images."),
    _field("gpu_count", INT, attrgetter("gpu_count"), "Whole GPUs requested (nvidia.com/gpu)."),
    _field(
        "gpu_request",
        GPU_REQUEST,
        attrgetter("gpu_request"),
        "The pod's GPU demand per device (see GPU sharing).",
    ),
)

NODE = _record(
    "Node",
    "The node being considered.",
    _field("name", STRING, lambda v: v.node.name, "metadata.name."),
    _field("labels", LABELS, lambda v: v.node.labels, "metadata.labels."),
    _field("annotations", LABELS, lambda v: v.node.annotations, "metadata.annotations."),
    _field("unschedulable", BOOL, lambda v: v.node.unschedulable, "spec.unschedulable (cordoned)."),
    _field("ready", BOOL, lambda v: v.node.ready, "The Ready condition is True."),
    _field("taints", ListType(TAINT, bound=64), lambda v: v.node.taints, "spec.taints."),
    _field(
        "allocatable",
        RESOURCES,
        attrgetter("allocatable"),
        "status.allocatable; a missing resource reads 0.",
    ),
    _field(
        "capacity",
        RESOURCES,
        attrgetter("capacity"),
        "status.capacity; a missing resource reads 0.",
    ),
    _field(
        "allocated",
        RESOURCES,
        attrgetter("allocated"),
        "Requests of the pods on the node (assumed ones included).",
    ),
    _field("free", RESOURCES, attrgetter("free"), "allocatable minus allocated.", cost=2),
    _field("pod_count", INT, attrgetter("pod_count"), "Pods on the node."),
    _field("max_pods", INT, attrgetter("max_pods"), "status.allocatable.pods."),
    _field(
        "images", ListType(STRING, bound=128), attrgetter("images"), "Images present on the node."
    ),
    _field("gpu", NODE_GPU, attrgetter("gpu"), "The node's GPUs.", cost=2),
    _field("topology", TOPOLOGY, attrgetter("topology"), "The node's topology domains.", cost=2),
    _field(
        "gpus",
        ListType(GPU_DEVICE, bound=16),
        attrgetter("gpus"),
        "The node's GPUs one by one, with what is allocated on each (see GPU sharing).",
        cost=4,
    ),
    _field("load", NODE_LOAD, lambda v: v.info.load, "The node's measured load."),
)

RECORDS = (POD, NODE, TAINT, TOLERATION, NODE_GPU, TOPOLOGY, NODE_LOAD, *GPU_RECORDS)

# The ``node.*`` attribute paths whose values come from the Node object alone (its metadata,
# spec and status, and the topology configuration), not from the pods on the node or its
# measured load: the assume step leaves them unchanged. A path covers every longer one.
NODE_STABLE_PATHS: frozenset[tuple[str, ...]] = frozenset(
    {
        ("name",),
        ("labels",),
        ("annotations",),
        ("unschedulable",),
        ("ready",),
        ("taints",),
        ("allocatable",),
        ("capacity",),
        ("max_pods",),
        ("images",),
        ("topology",),
        ("gpu", "product"),
        ("gpu", "family"),
        ("gpu", "memory"),
        ("gpu", "count"),
        ("gpu", "mig_strategy"),
    }
)
