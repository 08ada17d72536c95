"""The vocabulary of a synthetic cluster: node shapes, GPU models, pod templates and the
spec that combines them, plus the label keys the generated objects carry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from policyengine.model.taints import NO_SCHEDULE, Taint

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
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
# Taints the node lifecycle controller adds after pods were already running there; they do
# not stop the generator from having placed pods on such nodes earlier.
LIFECYCLE_TAINTS = (UNSCHEDULABLE_TAINT, UNREACHABLE_TAINT)

PROXY_IMAGE = "registry.example.com/mesh/proxy:1.21"  # the sidecar of templates that want one
# The alphabet Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

GI = 1024**3
MI = 1024**2
KI = 1024


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
    # More constraints, each selecting the template's own app: (topology key, maxSkew,
    # whenUnsatisfiable) spread constraints, and preferred affinity (weight 50, same zone) to
    # the pods of another app.
    spread: tuple[tuple[str, int, str], ...] = ()
    near_app: str = ""
    gpu_share: str = ""  # the policyengine.io/gpu-share annotation (a share of one GPU)

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
    # The objects a cluster holds beside its nodes and pods: the PriorityClasses the pods
    # name, a ReplicaSet for every Deployment's pods and a Service in front of each one of
    # kind service or inference (kube-scheduler's default spreading derives its selectors
    # from those two).
    workload_objects: bool = False

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
