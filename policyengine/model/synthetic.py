"""Deterministic synthetic clusters, as ``kubectl get nodes,pods -A -o yaml`` would print them.

The demo, the benchmarks and many tests need clusters shaped like the ones policyengine is
for: thousands of nodes, several GPU models behind a ``dedicated=gpu`` taint, NVLink domains,
racks and zones, and a mix of web services, inference replicas, training jobs, gangs and
best-effort batch pods, some already running and some pending. Real snapshots are large,
private and never the same twice; these are generated from a seed, so a benchmark number or a
test expectation refers to exactly one cluster.

Objects are plain dicts in the API's wire shape rather than model objects, on purpose: they go
through the same parser as a real snapshot, tests can edit them before parsing, and
``to_kubectl_yaml`` writes them as a file for ``policyengine simulate --cluster FILE``.

Determinism: every random decision comes from one ``random.Random(seed)`` and only from its
``random()`` method, whose sequence Python guarantees across versions (``choice``, ``shuffle``
and ``randint`` carry no such promise). Nothing iterates a set or depends on string hashing.

Running pods are placed by the generator itself, never beyond a node's allocatable cpu,
memory, ephemeral storage, GPUs or pod count, and respecting their own taints, node
selectors, GPU model and hostname anti-affinity. Pending pods are only described; whether
they fit is the scheduler's question (the ``demo`` preset includes some that fit nowhere).

Use: ``objects = generate(demo(), seed=1)``; ``text = to_kubectl_yaml(objects)``; or
``python -m policyengine.model.synthetic demo --seed 1 -o demo.yaml``.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import math
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from policyengine.model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint
from policyengine.quantity import format_quantity, parse_quantity

# Label and annotation keys the generated objects carry (and the shipped policies read).
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
RACK = "topology.kubernetes.io/rack"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MEMORY = "nvidia.com/gpu.memory"
GPU_COUNT = "nvidia.com/gpu.count"
GPU_FAMILY = "nvidia.com/gpu.family"
GPU_CLIQUE = "nvidia.com/gpu.clique"
NVIDIA_GPU = "nvidia.com/gpu"
WORKLOAD_KIND = "workload.ai/kind"
TRAINING_JOB = "training.ai/job"
GPU_MODEL_ANNOTATION = "gpu.ai/model"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_GROUP_API = "scheduling.x-k8s.io/v1alpha1"

# Workload kinds (the value of the ``workload.ai/kind`` label).
SERVICE = "service"
INFERENCE = "inference"
TRAINING = "training"
BATCH = "batch"
KINDS = (SERVICE, INFERENCE, TRAINING, BATCH)

DEFAULT_SCHEDULER = "policyengine"  # the profile in policies/profiles.sched
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
# Taints the node lifecycle controller adds after pods were already running there; they do
# not stop the generator from having placed pods on such nodes earlier.
_LIFECYCLE_TAINTS = (_UNSCHEDULABLE_TAINT, _UNREACHABLE_TAINT)

_PROXY_IMAGE = "registry.example.com/mesh/proxy:1.21"  # the sidecar of templates that want one
# The alphabet Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

_GI = 1024**3
_MI = 1024**2
_KI = 1024


# ------------------------------------------------------------------------------ the spec

GPU_TAINT = Taint("dedicated", "gpu", NO_SCHEDULE)  # keeps CPU-only pods off GPU nodes


@dataclass(frozen=True, slots=True)
class NodeShape:
    """A machine type: what a node of it has before kubelet reservations."""

    instance_type: str
    cpu: int  # cores
    memory_gi: int
    share: float = 1.0  # relative share among the CPU node shapes
    ephemeral_gi: int = 200
    pods: int = 110


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A GPU node type, labelled as NVIDIA GPU feature discovery labels it."""

    product: str  # nvidia.com/gpu.product
    short: str  # used in node names: gpu-h100-0007
    family: str  # nvidia.com/gpu.family
    memory_mib: int  # nvidia.com/gpu.memory, per GPU
    compute: tuple[int, int]
    gpus_per_node: int
    shape: NodeShape
    share: float = 1.0  # relative share among the GPU nodes
    nvlink: bool = True  # NVLink-switch systems carry nvidia.com/gpu.clique
    mig_capable: bool = False


# Known machines. Memory values are what GFD reports (MiB, a little under the marketing size).
H100 = GpuModel(
    product="NVIDIA-H100-80GB-HBM3",
    short="h100",
    family="hopper",
    memory_mib=81559,
    compute=(9, 0),
    gpus_per_node=8,
    shape=NodeShape("p5.48xlarge", cpu=192, memory_gi=2048, ephemeral_gi=3500),
    mig_capable=True,
)
A100 = GpuModel(
    product="NVIDIA-A100-SXM4-80GB",
    short="a100",
    family="ampere",
    memory_mib=81920,
    compute=(8, 0),
    gpus_per_node=8,
    shape=NodeShape("p4de.24xlarge", cpu=96, memory_gi=1152, ephemeral_gi=3500),
    mig_capable=True,
)
L4 = GpuModel(
    product="NVIDIA-L4",
    short="l4",
    family="ada-lovelace",
    memory_mib=23034,
    compute=(8, 9),
    gpus_per_node=4,
    shape=NodeShape("g6.12xlarge", cpu=48, memory_gi=192, ephemeral_gi=1000),
    nvlink=False,  # PCIe cards: no NVLink domain
)
L4_X8 = replace(
    L4, gpus_per_node=8, shape=NodeShape("g6.48xlarge", cpu=192, memory_gi=768, ephemeral_gi=2000)
)

CPU_SHAPES = (
    NodeShape("m6i.2xlarge", cpu=8, memory_gi=32, share=0.35),
    NodeShape("m6i.4xlarge", cpu=16, memory_gi=64, share=0.35),
    NodeShape("c6i.8xlarge", cpu=32, memory_gi=64, share=0.15),
    NodeShape("r6i.8xlarge", cpu=32, memory_gi=256, share=0.15),
)


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """One kind of pod in a workload mix, as its controller would create it.

    ``weight`` is the template's share of the mix it appears in. Pods of a template carry
    ``app: <name>`` (or ``<name>-<k>`` when ``apps`` > 1 splits it into several deployments of
    the same shape, which matters for spread and anti-affinity selectors). Templates with
    ``group_sizes`` come in groups (training jobs: ``training.ai/job``; with ``gang`` also a
    ``scheduling.x-k8s.io/pod-group`` label and a PodGroup), each group's size drawn from it.
    """

    name: str
    kind: str = SERVICE
    weight: float = 1.0
    namespace: str = "default"
    cpu: str | None = None  # requests; None and None makes a BestEffort pod
    memory: str | None = None
    gpus: int = 0
    ephemeral_storage: str | None = None
    guaranteed: bool = False  # limits equal to requests
    gpu_model: str | None = None  # annotation gpu.ai/model
    node_selector: tuple[tuple[str, str], ...] = ()
    zone_spread: bool = False  # maxSkew 1 over zones, DoNotSchedule
    hostname_anti_affinity: bool = False  # required, one replica per node
    tolerate_gpu_taint: bool | None = None  # None: when the pod asks for GPUs
    priority: int = 0
    priority_class: str = ""
    group_sizes: tuple[int, ...] = ()
    gang: bool = False
    apps: int = 1
    sidecar: bool = False  # a small proxy container beside the main one
    image: str = ""
    image_mb: int = 300

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"template {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.weight < 0 or self.gpus < 0 or self.apps < 1:
            raise ValueError(f"template {self.name}: weight, gpus and apps must not be negative")
        if self.gang and not self.group_sizes:
            raise ValueError(f"template {self.name}: a gang needs group_sizes")
        if any(s < 1 for s in self.group_sizes):
            raise ValueError(f"template {self.name}: group sizes must be positive")

    @property
    def tolerates_gpu_taint(self) -> bool:
        return self.gpus > 0 if self.tolerate_gpu_taint is None else self.tolerate_gpu_taint


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """What to generate. Counts are exact; shares and fractions are apportioned exactly too."""

    cpu_nodes: int
    gpu_nodes: int
    gpu_models: tuple[GpuModel, ...] = (H100, A100, L4)
    cpu_shapes: tuple[NodeShape, ...] = CPU_SHAPES
    region: str = "us-east-1"
    zones: tuple[str, ...] = ("us-east-1a", "us-east-1b", "us-east-1c")
    racks: int = 30  # rack r sits in zone r % len(zones)
    nvlink_domain_size: int = 8  # nodes per nvidia.com/gpu.clique (one rack each)
    gpu_taint: Taint | None = GPU_TAINT
    gpu_taint_fraction: float = 1.0  # of GPU nodes
    maintenance_fraction: float = 0.02  # of all nodes: maintenance=scheduled:PreferNoSchedule
    cordoned: int = 2
    not_ready: int = 0
    running_pods: int = 0
    pending_pods: int = 0
    running_mix: tuple[PodTemplate, ...] = ()
    pending_mix: tuple[PodTemplate, ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER
    start: str = "2025-01-06T08:00:00Z"  # creation time of the first node
    kubelet_version: str = "v1.28.7"

    def __post_init__(self) -> None:
        if self.cpu_nodes < 0 or self.gpu_nodes < 0:
            raise ValueError("node counts must not be negative")
        if self.gpu_nodes and not self.gpu_models:
            raise ValueError("GPU nodes need at least one GPU model")
        if self.cpu_nodes and not self.cpu_shapes:
            raise ValueError("CPU nodes need at least one node shape")
        if not self.zones or self.racks < 1 or self.nvlink_domain_size < 1:
            raise ValueError("a cluster needs a zone, a rack and a positive NVLink domain size")
        for name in ("gpu_taint_fraction", "maintenance_fraction"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.cordoned + self.not_ready > self.num_nodes:
            raise ValueError("more cordoned and not-ready nodes than nodes")
        if self.running_pods < 0 or self.pending_pods < 0:
            raise ValueError("pod counts must not be negative")
        for count, mix, name in (
            (self.running_pods, self.running_mix, "running_mix"),
            (self.pending_pods, self.pending_mix, "pending_mix"),
        ):
            if count and not any(t.weight > 0 for t in mix):
                raise ValueError(f"{name} needs a template with a positive weight")

    @property
    def num_nodes(self) -> int:
        return self.cpu_nodes + self.gpu_nodes


# ------------------------------------------------------------------------- randomness


class _Rand:
    """Only ``Random.random()`` is promised to repeat across Python versions; build on it."""

    __slots__ = ("_random",)

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed).random

    def below(self, n: int) -> int:
        return int(self._random() * n)

    def between(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)

    def choice(self, items: Sequence[Any]) -> Any:
        return items[self.below(len(items))]

    def shuffle(self, items: list[Any]) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, n: int, k: int) -> list[int]:
        """``k`` distinct indices of ``range(n)``, in increasing order."""
        pool = list(range(n))
        for i in range(min(k, n)):
            j = i + self.below(n - i)
            pool[i], pool[j] = pool[j], pool[i]
        return sorted(pool[:k])

    def uuid(self) -> str:
        """A version-4 UUID string; built by hand, ``uuid.UUID`` is the generator's hot spot."""
        r = self._random
        h = f"{int(r() * (1 << 52)):013x}{int(r() * (1 << 52)):013x}{int(r() * (1 << 24)):06x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def suffix(self, length: int = 5) -> str:
        return "".join(_SUFFIX_ALPHABET[self.below(27)] for _ in range(length))


def _apportion(weights: Sequence[float], total: int) -> list[int]:
    """Integer counts summing to ``total`` in proportion to ``weights`` (largest remainder)."""
    wsum = sum(weights)
    if total <= 0 or wsum <= 0:
        return [0] * len(weights)
    quotas = [w * total / wsum for w in weights]
    counts = [math.floor(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


class _Clock:
    """Creation times and resource versions, strictly increasing in creation order."""

    def __init__(self, start: str) -> None:
        self.now = calendar.timegm(time.strptime(start, "%Y-%m-%dT%H:%M:%SZ"))
        self.version = 1000

    def tick(self, seconds: int) -> tuple[str, str]:
        self.now += max(seconds, 1)
        self.version += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now)), str(self.version)


# ------------------------------------------------------------------------------ nodes


def _node_resources(shape: NodeShape, gpus: int) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity and allocatable as kubelet reports them (kube-reserved and eviction held back)."""
    memory_ki = shape.memory_gi * _GI // _KI * 985 // 1000  # firmware and kernel keep some
    ephemeral_ki = shape.ephemeral_gi * _GI // _KI
    reserved_cpu_m = 70 + 10 * shape.cpu  # grows with the machine, as managed k8s sizes it
    reserved_memory_ki = (1 * _GI + 100 * _MI) // _KI + memory_ki // 50
    capacity = {
        "cpu": str(shape.cpu),
        "ephemeral-storage": f"{ephemeral_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{memory_ki}Ki",
        "pods": str(shape.pods),
    }
    allocatable = {
        **capacity,
        "cpu": f"{shape.cpu * 1000 - reserved_cpu_m}m",
        "ephemeral-storage": str(ephemeral_ki * _KI * 9 // 10),
        "memory": f"{memory_ki - reserved_memory_ki}Ki",
    }
    if gpus:
        capacity[NVIDIA_GPU] = allocatable[NVIDIA_GPU] = str(gpus)
    return capacity, allocatable


def _units(resources: Mapping[str, str], round_up: bool = False) -> list[int]:
    """[milli-cpu, memory bytes, ephemeral bytes, gpus, pods]: the generator's ledger order.

    Requests round up and allocatable down, so that the ledger errs on the safe side.
    """
    rnd = math.ceil if round_up else math.floor
    return [
        rnd(parse_quantity(resources.get("cpu", "0")) * 1000),
        rnd(parse_quantity(resources.get("memory", "0"))),
        rnd(parse_quantity(resources.get("ephemeral-storage", "0"))),
        int(resources.get(NVIDIA_GPU, "0")),
        int(resources.get("pods", "0")),
    ]


@dataclass(slots=True)
class _NodeState:
    """A generated node and what the running pods placed on it have used so far."""

    obj: dict[str, Any]
    name: str
    zone: int
    ip: str
    pod_prefix: str
    labels: dict[str, str]
    blocking_taints: tuple[tuple[str, str], ...]  # (key, value) of NoSchedule/NoExecute
    gpu_product: str
    gpus: int
    free: list[int]
    images: dict[str, int] = field(default_factory=dict)
    next_ip: int = 2


def _conditions(ready: bool, stamp: str) -> list[dict[str, Any]]:
    if not ready:
        return [
            {
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
                "message": "Kubelet stopped posting node status.",
                "reason": "NodeStatusUnknown",
                "status": "Unknown",
                "type": t,
            }
            for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
        ]
    healthy = (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    )
    out = [
        {
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "message": message,
            "reason": reason,
            "status": "False",
            "type": t,
        }
        for t, reason, message in healthy
    ]
    out.append(
        {
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "message": "kubelet is posting ready status",
            "reason": "KubeletReady",
            "status": "True",
            "type": "Ready",
        }
    )
    return out


def _node_layout(spec: ClusterSpec) -> list[tuple[GpuModel | None, NodeShape, int, str]]:
    """Per node, in output order: (GPU model or None, shape, rack, clique label or "")."""
    out: list[tuple[GpuModel | None, NodeShape, int, str]] = []
    shape_counts = _apportion([s.share for s in spec.cpu_shapes], spec.cpu_nodes)
    i = 0
    for shape, count in zip(spec.cpu_shapes, shape_counts, strict=True):
        for _ in range(count):
            out.append((None, shape, i % spec.racks, ""))
            i += 1
    # GPU nodes come in NVLink domains of consecutive nodes of one model, each domain inside
    # one rack (and so one zone), as NVLink-switch systems are cabled.
    model_counts = _apportion([m.share for m in spec.gpu_models], spec.gpu_nodes)
    domain = 0
    for model, count in zip(spec.gpu_models, model_counts, strict=True):
        for start in range(0, count, spec.nvlink_domain_size):
            rack = domain % spec.racks
            clique = f"{_fabric_uuid(spec, domain)}.{domain}" if model.nvlink else ""
            for _ in range(min(spec.nvlink_domain_size, count - start)):
                out.append((model, model.shape, rack, clique))
            domain += 1
    return out


def _fabric_uuid(spec: ClusterSpec, domain: int) -> str:
    # Derived, not drawn, so that adding CPU nodes does not relabel every NVLink domain.
    digest = hashlib.sha256(f"{spec.region}/nvlink/{domain}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _make_nodes(spec: ClusterSpec, rand: _Rand, clock: _Clock) -> list[_NodeState]:
    layout = _node_layout(spec)
    n = len(layout)
    gpu_indices = [i for i, (m, *_rest) in enumerate(layout) if m is not None]
    gpu_tainted = {
        gpu_indices[i]
        for i in rand.sample(len(gpu_indices), round(spec.gpu_taint_fraction * len(gpu_indices)))
    }
    maintenance = set(rand.sample(n, round(spec.maintenance_fraction * n)))
    troubled = rand.sample(n, spec.cordoned + spec.not_ready)
    order = list(range(len(troubled)))
    rand.shuffle(order)
    cordoned = {troubled[k] for k in order[: spec.cordoned]}
    not_ready = {troubled[k] for k in order[spec.cordoned :]}

    width = max(4, len(str(n)))
    counters: dict[str, int] = {}
    resources: dict[tuple[NodeShape, int], tuple[dict[str, str], dict[str, str], list[int]]] = {}
    nodes: list[_NodeState] = []
    for i, (model, shape, rack, clique) in enumerate(layout):
        kind = model.short if model else "cpu"
        counters[kind] = counters.get(kind, 0) + 1
        name = (
            f"gpu-{kind}-{counters[kind]:0{width}d}" if model else f"cpu-{counters[kind]:0{width}d}"
        )
        zone_index = rack % len(spec.zones)
        zone = spec.zones[zone_index]
        stamp, version = clock.tick(rand.between(5, 90))
        labels = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            HOSTNAME: name,
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            INSTANCE_TYPE: shape.instance_type,
            REGION: spec.region,
            RACK: f"rack-{rack:03d}",
            ZONE: zone,
        }
        gpus = model.gpus_per_node if model else 0
        if model:
            labels.update(
                {
                    "nvidia.com/cuda.driver.major": "535",
                    "nvidia.com/cuda.driver.minor": "161",
                    "nvidia.com/cuda.driver.rev": "08",
                    "nvidia.com/cuda.runtime.major": "12",
                    "nvidia.com/cuda.runtime.minor": "2",
                    "nvidia.com/gpu.compute.major": str(model.compute[0]),
                    "nvidia.com/gpu.compute.minor": str(model.compute[1]),
                    GPU_COUNT: str(gpus),
                    GPU_FAMILY: model.family,
                    "nvidia.com/gpu.machine": shape.instance_type,
                    GPU_MEMORY: str(model.memory_mib),
                    "nvidia.com/gpu.present": "true",
                    GPU_PRODUCT: model.product,
                    "nvidia.com/gpu.replicas": "1",
                    "nvidia.com/gpu.sharing-strategy": "none",
                    "nvidia.com/mig.capable": "true" if model.mig_capable else "false",
                }
            )
            if clique:
                labels[GPU_CLIQUE] = clique
        taints: list[dict[str, Any]] = []
        if i in gpu_tainted and spec.gpu_taint is not None:
            t = spec.gpu_taint
            taints.append({"effect": t.effect, "key": t.key, "value": t.value})
        if i in maintenance:
            taints.append(
                {"effect": PREFER_NO_SCHEDULE, "key": "maintenance", "value": "scheduled"}
            )
        if i in cordoned:
            taints.append({"effect": NO_SCHEDULE, "key": _UNSCHEDULABLE_TAINT, "timeAdded": stamp})
        if i in not_ready:
            for effect in (NO_SCHEDULE, NO_EXECUTE):
                taints.append({"effect": effect, "key": _UNREACHABLE_TAINT, "timeAdded": stamp})
        if (shape, gpus) not in resources:
            capacity, allocatable = _node_resources(shape, gpus)
            resources[shape, gpus] = (capacity, allocatable, _units(allocatable))
        capacity, allocatable, free = resources[shape, gpus]
        # Addresses are unique up to 16,384 nodes; nothing reads them but people.
        ip = f"172.{16 + ((i + 1) >> 16)}.{((i + 1) >> 8) & 255}.{(i + 1) & 255}"
        pod_prefix = f"10.{64 + ((i >> 8) & 63)}.{i & 255}"
        node_spec: dict[str, Any] = {
            "podCIDR": f"{pod_prefix}.0/24",
            "podCIDRs": [f"{pod_prefix}.0/24"],
            "providerID": f"synthetic:///{zone}/{name}",
        }
        if taints:
            node_spec["taints"] = taints
        if i in cordoned:
            node_spec["unschedulable"] = True
        obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
                "creationTimestamp": stamp,
                "labels": labels,
                "name": name,
                "resourceVersion": version,
                "uid": rand.uuid(),
            },
            "spec": node_spec,
            "status": {
                "addresses": [
                    {"address": ip, "type": "InternalIP"},
                    {"address": name, "type": "Hostname"},
                ],
                "allocatable": dict(allocatable),
                "capacity": dict(capacity),
                "conditions": _conditions(i not in not_ready, stamp),
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": rand.uuid(),
                    "containerRuntimeVersion": "containerd://1.7.13",
                    "kernelVersion": "6.5.0-1017-aws",
                    "kubeProxyVersion": spec.kubelet_version,
                    "kubeletVersion": spec.kubelet_version,
                    "machineID": rand.uuid().replace("-", ""),
                    "operatingSystem": "linux",
                    "osImage": "Ubuntu 22.04.4 LTS",
                    "systemUUID": rand.uuid(),
                },
            },
        }
        blocking = tuple(
            (t["key"], t.get("value", ""))
            for t in taints
            if t["effect"] in (NO_SCHEDULE, NO_EXECUTE) and t["key"] not in _LIFECYCLE_TAINTS
        )
        nodes.append(
            _NodeState(
                obj=obj,
                name=name,
                zone=zone_index,
                ip=ip,
                pod_prefix=pod_prefix,
                labels=labels,
                blocking_taints=blocking,
                gpu_product=model.product if model else "",
                gpus=gpus,
                free=list(free),
                images={
                    "registry.k8s.io/pause:3.9": 321_520,
                    f"registry.k8s.io/kube-proxy:{spec.kubelet_version}": 28_960_000,
                },
            )
        )
    return nodes


def _image_entry(name: str, size: int) -> dict[str, Any]:
    repo = name.rsplit(":", 1)[0]
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {"names": [f"{repo}@sha256:{digest}", name], "sizeBytes": size}


# ------------------------------------------------------------------------------- pods


@dataclass(slots=True)
class _Shape:
    """What a template turns into, computed once per template."""

    template: PodTemplate
    containers: list[tuple[str, dict[str, str], dict[str, str]]]  # name, requests, limits
    need: list[int]  # ledger units, pods = 1
    qos: str
    image: str
    tolerations: tuple[tuple[tuple[str, Any], ...], ...]


def _pod_shape(t: PodTemplate, spec: ClusterSpec) -> _Shape:
    requests: dict[str, str] = {}
    if t.cpu is not None:
        requests["cpu"] = t.cpu
    if t.memory is not None:
        requests["memory"] = t.memory
    if t.ephemeral_storage is not None:
        requests["ephemeral-storage"] = t.ephemeral_storage
    limits: dict[str, str] = {}
    if t.guaranteed:
        limits = {k: v for k, v in requests.items() if k in ("cpu", "memory")}
    elif t.memory is not None:
        limits["memory"] = t.memory  # the common "limit memory, not cpu" pattern
    if t.gpus:
        # Extended resources must be given as limits; requests must then equal them.
        requests[NVIDIA_GPU] = limits[NVIDIA_GPU] = str(t.gpus)
    containers = [("main", requests, limits)]
    if t.sidecar and requests:
        side = {"cpu": "100m", "memory": "128Mi"}
        containers.append(("proxy", side, dict(side) if t.guaranteed else {"memory": "128Mi"}))
    total = [0, 0, 0, 0, 1]
    for _, req, _lim in containers:
        for k, v in enumerate(_units(req, round_up=True)[:4]):
            total[k] += v
    return _Shape(
        t, containers, total, _qos(containers), t.image or _default_image(t), _tolerations(t, spec)
    )


def _qos(containers: Sequence[tuple[str, Mapping[str, str], Mapping[str, str]]]) -> str:
    """The status.qosClass the API server would record; only cpu and memory count."""
    keys = ("cpu", "memory")
    if not any(k in r for _, req, lim in containers for r in (req, lim) for k in keys):
        return "BestEffort"
    if all(k in lim and req.get(k, lim[k]) == lim[k] for _, req, lim in containers for k in keys):
        return "Guaranteed"
    return "Burstable"


def _default_image(t: PodTemplate) -> str:
    return {
        SERVICE: f"registry.example.com/web/{t.name}:1.4.2",
        INFERENCE: f"nvcr.io/nvidia/tritonserver:24.01-py3-{t.name}",
        TRAINING: f"nvcr.io/nvidia/pytorch:24.01-py3-{t.name}",
        BATCH: f"registry.example.com/batch/{t.name}:2.0.1",
    }[t.kind]


@dataclass(slots=True)
class _Unit:
    """Pods created together: one pod, or the workers of a job or gang."""

    template: PodTemplate
    size: int
    app: str
    group: str  # job / gang name, "" for single pods


class _Names:
    """Per-template app, ReplicaSet and job names, shared by the running and pending pods."""

    def __init__(self, rand: _Rand) -> None:
        self.rand = rand
        self.app_counter: dict[str, int] = {}
        self.job_counter: dict[str, int] = {}
        self.replica_sets: dict[str, tuple[str, str]] = {}  # app -> (hash, uid)
        self.jobs: dict[str, str] = {}  # job -> uid
        self.used: set[tuple[str, str]] = set()

    def app(self, t: PodTemplate) -> str:
        if t.apps == 1:
            return t.name
        k = self.app_counter.get(t.name, 0)
        self.app_counter[t.name] = k + 1
        return f"{t.name}-{k % t.apps}"

    def job(self, t: PodTemplate) -> str:
        k = self.job_counter.get(t.name, 0) + 1
        self.job_counter[t.name] = k
        return f"{t.name}-{k:04d}"

    def replica_set(self, app: str) -> tuple[str, str]:
        if app not in self.replica_sets:
            self.replica_sets[app] = (self.rand.suffix(10), self.rand.uuid())
        return self.replica_sets[app]

    def owner_uid(self, job: str) -> str:
        if job not in self.jobs:
            self.jobs[job] = self.rand.uuid()
        return self.jobs[job]

    def unique(self, namespace: str, make: Callable[[], str]) -> str:
        name = make()
        for _ in range(3):  # random suffixes collide now and then; redraw
            if (namespace, name) not in self.used:
                break
            name = make()
        while (namespace, name) in self.used:  # a fixed name taken (templates named alike)
            name = f"{name}-{self.rand.suffix()}"
        self.used.add((namespace, name))
        return name


def _group_size(sizes: tuple[int, ...], left: int, rand: _Rand) -> int:
    """A drawn group size, bent so that the template's last group is not left undersized."""
    lo, hi = min(sizes), max(sizes)
    if left <= hi:
        return left  # the last group; smaller than ``lo`` only if the quota itself is
    size = rand.choice(sizes)
    return size if left - size >= lo else left - lo


def _units_for(mix: Sequence[PodTemplate], total: int, rand: _Rand, names: _Names) -> list[_Unit]:
    counts = _apportion([t.weight for t in mix], total)
    units: list[_Unit] = []
    for t, count in zip(mix, counts, strict=True):
        while count > 0:
            size = _group_size(t.group_sizes, count, rand) if t.group_sizes else 1
            group = names.job(t) if t.group_sizes or t.kind in (TRAINING, BATCH) else ""
            units.append(_Unit(t, size, names.app(t), group))
            count -= size
    return units


def _tolerations(t: PodTemplate, spec: ClusterSpec) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """The pod's tolerations as item tuples; each pod gets its own dicts built from them."""
    out: list[dict[str, Any]] = []
    if t.tolerates_gpu_taint and spec.gpu_taint is not None:
        g = spec.gpu_taint
        out.append({"effect": g.effect, "key": g.key, "operator": "Equal", "value": g.value})
    # What the DefaultTolerationSeconds admission plugin adds to every pod.
    for key in ("node.kubernetes.io/not-ready", _UNREACHABLE_TAINT):
        out.append(
            {"effect": NO_EXECUTE, "key": key, "operator": "Exists", "tolerationSeconds": 300}
        )
    return tuple(tuple(d.items()) for d in out)


def _pod(
    shape: _Shape,
    unit: _Unit,
    index: int,
    spec: ClusterSpec,
    rand: _Rand,
    names: _Names,
    clock: _Clock,
    node: _NodeState | None,
) -> dict[str, Any]:
    t = shape.template
    stamp, version = clock.tick(rand.between(1, 20) if index == 0 else 1)
    labels = {"app": unit.app, WORKLOAD_KIND: t.kind}
    annotations: dict[str, str] = {}
    owner: dict[str, Any]
    if unit.group:
        labels[TRAINING_JOB if t.kind == TRAINING else "batch.kubernetes.io/job-name"] = unit.group
        if t.gang:
            labels[POD_GROUP_LABEL] = unit.group
        if t.group_sizes:
            name = names.unique(t.namespace, lambda: f"{unit.group}-worker-{index}")
        else:
            name = names.unique(t.namespace, lambda: f"{unit.group}-{rand.suffix()}")
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": unit.group}
    else:
        rs_hash, rs_uid = names.replica_set(unit.app)
        labels["pod-template-hash"] = rs_hash
        rs = f"{unit.app}-{rs_hash}"
        name = names.unique(t.namespace, lambda: f"{rs}-{rand.suffix()}")
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid}
    if "uid" not in owner:
        owner["uid"] = names.owner_uid(unit.group)
    owner["blockOwnerDeletion"] = True
    owner["controller"] = True
    if t.gpu_model:
        annotations[GPU_MODEL_ANNOTATION] = t.gpu_model
    containers = []
    for cname, requests, limits in shape.containers:
        resources: dict[str, Any] = {}
        if limits:
            resources["limits"] = dict(limits)
        if requests:
            resources["requests"] = dict(requests)
        c: dict[str, Any] = {
            "image": shape.image if cname == "main" else _PROXY_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "name": cname,
            "resources": resources,
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        if cname == "main" and t.kind in (SERVICE, INFERENCE):
            c["ports"] = [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
        containers.append(c)
    pod_spec: dict[str, Any] = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": t.priority,
        "restartPolicy": "Always" if t.kind in (SERVICE, INFERENCE) else "OnFailure",
        "schedulerName": spec.scheduler_name,
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [dict(items) for items in shape.tolerations],
    }
    if t.priority_class:
        pod_spec["priorityClassName"] = t.priority_class
    if t.node_selector:
        pod_spec["nodeSelector"] = dict(t.node_selector)
    if t.hostname_anti_affinity:
        pod_spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": unit.app}}, "topologyKey": HOSTNAME}
                ]
            }
        }
    if t.zone_spread:
        pod_spec["topologySpreadConstraints"] = [
            {
                "labelSelector": {"matchLabels": {"app": unit.app}},
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ]
    status: dict[str, Any] = {"phase": "Pending", "qosClass": shape.qos}
    if node is not None:
        pod_spec["nodeName"] = node.name
        ip = f"{node.pod_prefix}.{node.next_ip % 254 + 1}"
        node.next_ip += 1
        status = {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": stamp, "status": "True", "type": c}
                for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "containerID": f"containerd://{hashlib.sha256((name + c['name']).encode()).hexdigest()}",
                    "image": c["image"],
                    "imageID": _image_entry(c["image"], 0)["names"][0],
                    "lastState": {},
                    "name": c["name"],
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": stamp}},
                }
                for c in containers
            ],
            "hostIP": node.ip,
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": shape.qos,
            "startTime": stamp,
        }
    metadata: dict[str, Any] = {
        "creationTimestamp": stamp,
        "labels": labels,
        "name": name,
        "namespace": t.namespace,
        "ownerReferences": [owner],
        "resourceVersion": version,
        "uid": rand.uuid(),
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec,
        "status": status,
    }


# -------------------------------------------------------------------------- placement


class _Placer:
    """Puts running pods on nodes without ever exceeding what a node has left."""

    _PROBES = 12

    def __init__(self, spec: ClusterSpec, nodes: list[_NodeState], rand: _Rand) -> None:
        self.spec = spec
        self.nodes = nodes
        self.rand = rand
        self.by_zone: dict[PodTemplate, list[list[int]]] = {}  # eligible nodes per zone
        self.flat: dict[PodTemplate, list[int]] = {}  # eligible nodes
        self.zone_counts: dict[str, list[int]] = {}  # app -> its pods per zone
        self.hosts: dict[str, set[int]] = {}  # app -> nodes holding one (anti-affinity)
        self.has_cpu_nodes = any(n.gpus == 0 for n in nodes)

    def _eligible(self, t: PodTemplate, n: _NodeState) -> bool:
        gpu_taint = self.spec.gpu_taint
        for key, value in n.blocking_taints:
            tolerated = (
                t.tolerates_gpu_taint
                and gpu_taint is not None
                and (key, value) == (gpu_taint.key, gpu_taint.value)
            )
            if not tolerated:
                return False
        if any(n.labels.get(k) != v for k, v in t.node_selector):
            return False
        if t.gpus:
            return n.gpus >= t.gpus and (t.gpu_model is None or n.gpu_product == t.gpu_model)
        # CPU-only pods stay off GPU nodes while there are other nodes, as operators intend.
        return n.gpus == 0 or not self.has_cpu_nodes

    def _pools(self, t: PodTemplate) -> list[list[int]]:
        if t not in self.by_zone:
            zones: list[list[int]] = [[] for _ in self.spec.zones]
            for i, n in enumerate(self.nodes):
                if self._eligible(t, n):
                    zones[n.zone].append(i)
            self.by_zone[t] = zones
            self.flat[t] = [i for z in zones for i in z]
        return self.by_zone[t] if t.zone_spread else [self.flat[t]]

    def place(self, shape: _Shape, app: str) -> _NodeState | None:
        t = shape.template
        need = shape.need
        nodes = self.nodes
        taken = self.hosts.setdefault(app, set()) if t.hostname_anti_affinity else set()

        def fits(i: int) -> bool:
            free = nodes[i].free
            return i not in taken and all(free[k] >= need[k] for k in range(5))

        counts = self.zone_counts.setdefault(app, [0] * len(self.spec.zones))
        pools = self._pools(t)
        if t.zone_spread:
            # Fill the zone with the fewest replicas first: running pods start out spread.
            pools = [pools[z] for z in sorted(range(len(pools)), key=lambda z: (counts[z], z))]
        for pool in pools:
            chosen = self._probe(pool, fits)
            if chosen is None:
                continue
            node = nodes[chosen]
            for k in range(5):
                node.free[k] -= need[k]
            counts[node.zone] += 1
            if t.hostname_anti_affinity:
                taken.add(chosen)
            node.images[shape.image] = t.image_mb * 1_000_000
            if len(shape.containers) > 1:
                node.images[_PROXY_IMAGE] = 52_000_000
            return node
        return None

    def _probe(self, pool: list[int], fits: Callable[[int], bool]) -> int | None:
        """A random node with room: a few random probes, then a scan from a random start."""
        n = len(pool)
        if n == 0:
            return None
        for _ in range(min(n, self._PROBES)):
            i = pool[self.rand.below(n)]
            if fits(i):
                return i
        start = self.rand.below(n)
        for k in range(n):
            i = pool[(start + k) % n]
            if fits(i):
                return i
        return None


# ------------------------------------------------------------------------- generation


def generate(spec: ClusterSpec, seed: int = 0) -> list[dict[str, Any]]:
    """The cluster as API objects: nodes, then running pods, then pending pods, then PodGroups.

    The same ``spec`` and ``seed`` always give the same objects, in any process. Raises
    ``ValueError`` when ``spec.running_pods`` cannot all be placed without over-committing.
    """
    rand = _Rand(seed)
    clock = _Clock(spec.start)
    nodes = _make_nodes(spec, rand, clock)
    names = _Names(rand)
    shapes: dict[PodTemplate, _Shape] = {}

    def shape_of(t: PodTemplate) -> _Shape:
        if t not in shapes:
            shapes[t] = _pod_shape(t, spec)
        return shapes[t]

    clock.tick(3600)  # the workloads arrive after the nodes
    pod_groups: list[dict[str, Any]] = []

    # Running pods are placed biggest first (first-fit decreasing), so that whole-node
    # training workers are not crowded out by small pods placed before them; they are then
    # created in a shuffled order, as a cluster's history would have it.
    running_units = _units_for(spec.running_mix, spec.running_pods, rand, names)

    def demand(u: int) -> tuple[int, int, int, int]:
        need = shape_of(running_units[u].template).need
        return (-need[3], -need[0], -need[1], u)

    placer = _Placer(spec, nodes, rand)
    hosts: dict[int, list[_NodeState]] = {}
    for u in sorted(range(len(running_units)), key=demand):
        unit = running_units[u]
        hosts[u] = []
        for _ in range(unit.size):
            node = placer.place(shape_of(unit.template), unit.app)
            if node is None:
                raise ValueError(
                    f"cannot place {spec.running_pods} running pods: no node has room for "
                    f"another {unit.template.name!r} pod; lower running_pods or add nodes"
                )
            hosts[u].append(node)
    creation_order = list(range(len(running_units)))
    rand.shuffle(creation_order)
    running: list[dict[str, Any]] = []
    for u in creation_order:
        unit = running_units[u]
        shape = shape_of(unit.template)
        if unit.template.gang:
            pod_groups.append(_pod_group(unit, shape, rand, clock, "Running"))
        for k, node in enumerate(hosts[u]):
            running.append(_pod(shape, unit, k, spec, rand, names, clock, node))

    for n in nodes:  # kubelet lists the images it pulled, largest first
        n.obj["status"]["images"] = [
            _image_entry(name, size)
            for name, size in sorted(n.images.items(), key=lambda kv: (-kv[1], kv[0]))
        ]

    clock.tick(600)
    pending_units = _units_for(spec.pending_mix, spec.pending_pods, rand, names)
    rand.shuffle(pending_units)
    pending: list[dict[str, Any]] = []
    for unit in pending_units:
        shape = shape_of(unit.template)
        if unit.template.gang:
            pod_groups.append(_pod_group(unit, shape, rand, clock, "Pending"))
        for k in range(unit.size):
            pending.append(_pod(shape, unit, k, spec, rand, names, clock, None))
    return [*(n.obj for n in nodes), *running, *pending, *pod_groups]


def _pod_group(
    unit: _Unit, shape: _Shape, rand: _Rand, clock: _Clock, phase: str
) -> dict[str, Any]:
    """The coscheduling PodGroup of a gang, created just before its pods."""
    stamp, version = clock.tick(1)
    need = shape.need
    min_resources = {
        "cpu": format_quantity(Fraction(need[0] * unit.size, 1000)),
        "memory": format_quantity(need[1] * unit.size),
    }
    if need[3]:
        min_resources[NVIDIA_GPU] = str(need[3] * unit.size)
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "creationTimestamp": stamp,
            "generation": 1,
            "name": unit.group,
            "namespace": unit.template.namespace,
            "resourceVersion": version,
            "uid": rand.uuid(),
        },
        "spec": {
            "minMember": unit.size,
            "minResources": min_resources,
            "scheduleTimeoutSeconds": 600,
        },
        "status": {"phase": phase},
    }


# YAML writing. PyYAML's representer takes ~20 s for the basic benchmark's 15,000 objects, so
# the generator writes the small subset of YAML that API objects need itself, in kubectl's
# layout (keys sorted, sequences not indented under their key, double quotes when needed).
# A string is written plain only when no YAML 1.1 or 1.2 reader could take it for anything but
# a string; everything else is quoted (JSON's escapes are valid YAML escapes).
_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./@+: -]*")
_TYPED = re.compile(
    r"""(?x)
    (?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE
      |on|On|ON|off|Off|OFF|null|Null|NULL)$
    | [-+]?[0-9][0-9_:.]*(?:[eE][-+]?[0-9]+)?$
    | 0[xXoObB][0-9a-fA-F_]+$
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
    """
)
# Characters YAML does not allow raw in a double-quoted scalar, or reads as line breaks.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        if (
            _PLAIN.fullmatch(value)
            and not _TYPED.match(value)
            and ": " not in value
            and not value.endswith((" ", ":"))
        ):
            return value
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, Mapping):
        return "{}"  # only empty ones reach here
    if isinstance(value, (list, tuple)):
        return "[]"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as YAML")


def _mapping(d: Mapping[Any, Any], indent: str, out: list[str], lead: str) -> None:
    pad = lead
    for key in sorted(d, key=str):
        value = d[key]
        k = _scalar(key)
        if isinstance(value, Mapping) and value:
            out.append(f"{pad}{k}:")
            _mapping(value, indent + "  ", out, indent + "  ")
        elif isinstance(value, (list, tuple)) and value:
            out.append(f"{pad}{k}:")
            _sequence(value, indent, out, indent)
        else:
            out.append(f"{pad}{k}: {_scalar(value)}")
        pad = indent


def _sequence(items: Sequence[Any], indent: str, out: list[str], lead: str) -> None:
    pad = lead
    for item in items:
        if isinstance(item, Mapping) and item:
            _mapping(item, indent + "  ", out, pad + "- ")
        elif isinstance(item, (list, tuple)) and item:
            _sequence(item, indent + "  ", out, pad + "- ")
        else:
            out.append(f"{pad}- {_scalar(item)}")
        pad = indent


def to_kubectl_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """A ``kind: List`` document laid out as ``kubectl get ... -o yaml`` prints it."""
    doc = {
        "apiVersion": "v1",
        "items": list(objects),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    out: list[str] = []
    _mapping(doc, "", out, "")
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------- presets


def demo() -> ClusterSpec:
    """A mid-size GPU cluster for the demo: 240 CPU and 60 GPU nodes in 3 zones.

    60 GPU nodes: 24 H100 and 18 A100 (8 GPUs, NVLink domains of 8) and 18 L4 (4 GPUs), all
    tainted ``dedicated=gpu:NoSchedule``; 6 nodes under a maintenance PreferNoSchedule taint,
    2 cordoned, 1 not ready. 400 running pods use about 70% of the GPUs, scattered so that
    whole nodes are scarce; 150 pending pods, among them pods no node can ever host (16 GPUs
    per pod, a GPU model the cluster lacks, 600Gi of memory).
    """
    web, serving, training, batch = "web", "ml-serving", "ml-training", "batch"
    frontend = PodTemplate(
        "frontend",
        SERVICE,
        namespace=web,
        cpu="500m",
        memory="512Mi",
        sidecar=True,
        zone_spread=True,
        priority=100,
        priority_class="service",
    )
    api = PodTemplate(
        "api",
        SERVICE,
        namespace=web,
        cpu="1",
        memory="2Gi",
        sidecar=True,
        hostname_anti_affinity=True,
        priority=100,
        priority_class="service",
    )
    checkout = PodTemplate(
        "checkout",
        SERVICE,
        namespace=web,
        cpu="2",
        memory="4Gi",
        zone_spread=True,
        priority=100,
        priority_class="service",
    )
    cache = PodTemplate(
        "cache",
        SERVICE,
        namespace=web,
        cpu="4",
        memory="16Gi",
        guaranteed=True,
        hostname_anti_affinity=True,
        priority=100,
        priority_class="service",
    )
    search = PodTemplate(
        "search",
        SERVICE,
        namespace=web,
        cpu="8",
        memory="32Gi",
        ephemeral_storage="20Gi",
        priority=100,
        priority_class="service",
    )
    etl = PodTemplate("etl", BATCH, namespace=batch, priority=-10, priority_class="batch-low")
    report = PodTemplate(
        "report",
        BATCH,
        namespace=batch,
        cpu="1",
        memory="1Gi",
        priority=-10,
        priority_class="batch-low",
    )
    analytics = PodTemplate(
        "analytics-bigmem",
        BATCH,
        namespace=batch,
        cpu="16",
        memory="600Gi",
        priority=-10,
        priority_class="batch-low",
    )
    llm_chat = PodTemplate(
        "llm-chat",
        INFERENCE,
        namespace=serving,
        cpu="12",
        memory="96Gi",
        gpus=1,
        gpu_model=H100.product,
        zone_spread=True,
        priority=500,
        priority_class="inference",
    )
    embed = PodTemplate(
        "embed",
        INFERENCE,
        namespace=serving,
        cpu="4",
        memory="16Gi",
        gpus=1,
        node_selector=((GPU_PRODUCT, L4.product),),
        priority=500,
        priority_class="inference",
    )
    rerank = PodTemplate(
        "rerank",
        INFERENCE,
        namespace=serving,
        cpu="4",
        memory="32Gi",
        gpus=1,
        priority=500,
        priority_class="inference",
    )
    llm_b200 = PodTemplate(
        "llm-b200",
        INFERENCE,
        namespace=serving,
        cpu="12",
        memory="96Gi",
        gpus=1,
        gpu_model="NVIDIA-B200",  # a model the cluster lacks, asked for both ways
        node_selector=((GPU_PRODUCT, "NVIDIA-B200"),),
        priority=500,
        priority_class="inference",
    )
    pretrain = PodTemplate(
        "pretrain-h100",
        TRAINING,
        namespace=training,
        cpu="96",
        memory="1000Gi",
        ephemeral_storage="500Gi",
        gpus=8,
        guaranteed=True,
        gpu_model=H100.product,
        group_sizes=(4, 8),
        priority=1000,
        priority_class="training",
    )
    finetune = PodTemplate(
        "finetune-a100",
        TRAINING,
        namespace=training,
        cpu="40",
        memory="480Gi",
        gpus=4,
        guaranteed=True,
        gpu_model=A100.product,
        group_sizes=(2, 4),
        priority=1000,
        priority_class="training",
    )
    huge = PodTemplate(
        "train-16gpu",
        TRAINING,
        namespace=training,
        cpu="96",
        memory="1000Gi",
        gpus=16,
        guaranteed=True,
        group_sizes=(2,),
        priority=1000,
        priority_class="training",
    )
    return ClusterSpec(
        cpu_nodes=240,
        gpu_nodes=60,
        gpu_models=(replace(H100, share=0.4), replace(A100, share=0.3), replace(L4, share=0.3)),
        zones=("us-east-1a", "us-east-1b", "us-east-1c"),
        racks=30,
        nvlink_domain_size=8,
        maintenance_fraction=0.02,
        cordoned=2,
        not_ready=1,
        running_pods=400,
        pending_pods=150,
        running_mix=(
            replace(frontend, weight=90),
            replace(api, weight=44),
            replace(checkout, weight=30),
            replace(cache, weight=20),
            replace(search, weight=16),
            replace(etl, weight=50),
            replace(report, weight=26),
            replace(llm_chat, weight=30),
            replace(embed, weight=40),
            replace(rerank, weight=20),
            replace(pretrain, weight=16),
            replace(finetune, weight=18),
        ),
        pending_mix=(
            replace(frontend, weight=24),
            replace(api, weight=12),
            replace(checkout, weight=10),
            replace(search, weight=6),
            replace(etl, weight=12),
            replace(report, weight=6),
            replace(analytics, weight=2),
            replace(llm_chat, weight=14),
            replace(embed, weight=14),
            replace(rerank, weight=8),
            replace(llm_b200, weight=2),
            replace(pretrain, weight=24),
            replace(finetune, weight=12),
            replace(huge, weight=4),
        ),
    )


def _benchmark_templates() -> tuple[PodTemplate, ...]:
    """The 20 templates of the basic and affinity benchmarks: 70% CPU-only, 30% GPU pods.

    GPU weights keep the expected GPU demand of 10,000 pods (about 6,600) under the 8,000 GPUs
    of the 1,000 GPU nodes, so that most pods fit and the benchmark measures placement.
    """
    ns = "bench"
    cpu = [
        ("svc-tiny", "100m", "128Mi"),
        ("svc-small", "250m", "256Mi"),
        ("svc-medium", "500m", "512Mi"),
        ("svc-1c", "1", "1Gi"),
        ("svc-1c4g", "1", "4Gi"),
        ("svc-2c", "2", "2Gi"),
        ("svc-2c8g", "2", "8Gi"),
        ("svc-4c", "4", "8Gi"),
        ("svc-4c16g", "4", "16Gi"),
        ("worker-8c", "8", "16Gi"),
    ]
    out = [PodTemplate(n, SERVICE, weight=5, namespace=ns, cpu=c, memory=m) for n, c, m in cpu]
    out += [
        PodTemplate(
            "db-2c", SERVICE, weight=5, namespace=ns, cpu="2", memory="8Gi", guaranteed=True
        ),
        PodTemplate(
            "cache-1c", SERVICE, weight=5, namespace=ns, cpu="1", memory="2Gi", guaranteed=True
        ),
        PodTemplate("batch-small", BATCH, weight=5, namespace=ns, cpu="500m", memory="1Gi"),
        PodTemplate("batch-besteffort", BATCH, weight=5, namespace=ns),
        PodTemplate("gpu-1", INFERENCE, weight=11, namespace=ns, cpu="4", memory="16Gi", gpus=1),
        PodTemplate(
            "gpu-1-l4",
            INFERENCE,
            weight=7,
            namespace=ns,
            cpu="4",
            memory="16Gi",
            gpus=1,
            node_selector=((GPU_PRODUCT, L4.product),),
        ),
        PodTemplate(
            "gpu-2-a100",
            INFERENCE,
            weight=6,
            namespace=ns,
            cpu="8",
            memory="64Gi",
            gpus=2,
            gpu_model=A100.product,
        ),
        PodTemplate(
            "gpu-4",
            TRAINING,
            weight=3,
            namespace=ns,
            cpu="32",
            memory="256Gi",
            gpus=4,
            priority=1000,
        ),
        PodTemplate(
            "gpu-8-h100",
            TRAINING,
            weight=2,
            namespace=ns,
            cpu="64",
            memory="512Gi",
            gpus=8,
            gpu_model=H100.product,
            priority=1000,
        ),
        PodTemplate(
            "gpu-8",
            TRAINING,
            weight=1,
            namespace=ns,
            cpu="64",
            memory="512Gi",
            gpus=8,
            priority=1000,
        ),
    ]
    return tuple(out)


def basic(num_nodes: int = 5000, num_pods: int = 10_000, *, running_pods: int = 0) -> ClusterSpec:
    """The basic benchmark: 80% CPU nodes, 20% GPU nodes (8 GPUs: H100, A100, L4), 5 zones,
    a rack per 50 nodes, a few tainted nodes; ``num_pods`` pending pods from 20 templates."""
    templates = _benchmark_templates()
    return ClusterSpec(
        cpu_nodes=round(num_nodes * 0.8),
        gpu_nodes=num_nodes - round(num_nodes * 0.8),
        gpu_models=(
            replace(H100, share=0.4),
            replace(A100, share=0.35),
            replace(L4_X8, share=0.25),
        ),
        region="us-east-2",
        zones=tuple(f"us-east-2{c}" for c in "abcde"),
        racks=max(5, num_nodes // 50),
        gpu_taint_fraction=0.0,
        maintenance_fraction=0.01,
        cordoned=max(1, num_nodes // 1000),
        running_pods=running_pods,
        pending_pods=num_pods,
        running_mix=templates,
        pending_mix=templates,
    )


# Which benchmark templates carry which constraint in the affinity scenario: 6 x 5% spread,
# 4 x 5% anti-affinity, all CPU-only services so that the two sets do not overlap.
_SPREAD = ("svc-tiny", "svc-small", "svc-medium", "svc-1c", "svc-2c", "svc-4c")
_ANTI_AFFINITY = ("svc-1c4g", "svc-2c8g", "db-2c", "cache-1c")


def affinity(
    num_nodes: int = 5000, num_pods: int = 10_000, *, running_pods: int = 0, apps: int = 10
) -> ClusterSpec:
    """The basic cluster, with 30% of pods under zone spread and 20% under required hostname
    anti-affinity; each such template is split over ``apps`` deployments."""
    templates = tuple(
        replace(t, zone_spread=True, apps=apps)
        if t.name in _SPREAD
        else replace(t, hostname_anti_affinity=True, apps=apps)
        if t.name in _ANTI_AFFINITY
        else t
        for t in _benchmark_templates()
    )
    return replace(
        basic(num_nodes, num_pods, running_pods=running_pods),
        running_mix=templates,
        pending_mix=templates,
    )


def gang_sizes(min_gang: int, max_gang: int) -> tuple[int, ...]:
    """Sizes from ``min_gang`` doubling up to ``max_gang`` (and ``max_gang`` itself)."""
    if not 1 <= min_gang <= max_gang:
        raise ValueError("gang sizes need 1 <= min_gang <= max_gang")
    sizes = []
    s = min_gang
    while s < max_gang:
        sizes.append(s)
        s *= 2
    sizes.append(max_gang)
    return tuple(sizes)


def gangs(
    num_nodes: int = 1000,
    num_pods: int = 2000,
    *,
    min_gang: int = 8,
    max_gang: int = 64,
    domain_size: int = 8,
) -> ClusterSpec:
    """The gang benchmark: GPU nodes only (60% H100, 40% A100, 8 GPUs each) in NVLink domains
    of ``domain_size`` nodes, and ``num_pods`` pending pods in gangs of ``min_gang`` to
    ``max_gang`` pods, each gang with its PodGroup. Pods ask for 8, 4, 2 or 1 GPUs (10%, 20%,
    30%, 40% of pods): about 65% of the GPUs at the defaults."""
    sizes = gang_sizes(min_gang, max_gang)
    mix = tuple(
        PodTemplate(
            name,
            TRAINING,
            weight=w,
            namespace="training",
            cpu=str(10 * g),
            memory=f"{120 * g}Gi",
            gpus=g,
            guaranteed=True,
            gpu_model=model,
            group_sizes=sizes,
            gang=True,
            priority=1000,
            priority_class="training",
        )
        for name, g, model, w in (
            ("gang-h100-8gpu", 8, H100.product, 10),
            ("gang-a100-4gpu", 4, A100.product, 20),
            ("gang-2gpu", 2, None, 30),
            ("gang-1gpu", 1, None, 40),
        )
    )
    return ClusterSpec(
        cpu_nodes=0,
        gpu_nodes=num_nodes,
        gpu_models=(replace(H100, share=0.6), replace(A100, share=0.4)),
        region="us-west-2",
        zones=tuple(f"us-west-2{c}" for c in "abcde"),
        racks=max(5, num_nodes // (4 * domain_size)),  # four NVLink domains a rack
        nvlink_domain_size=domain_size,
        maintenance_fraction=0.0,
        cordoned=0,
        pending_pods=num_pods,
        pending_mix=mix,
    )


PRESETS: dict[str, Callable[[], ClusterSpec]] = {
    "demo": demo,
    "basic": basic,
    "affinity": affinity,
    "gangs": gangs,
}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m policyengine.model.synthetic PRESET [--seed N] [-o FILE]``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m policyengine.model.synthetic")
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    text = to_kubectl_yaml(generate(PRESETS[args.preset](), args.seed))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
