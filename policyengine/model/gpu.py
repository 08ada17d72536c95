"""GPU attributes of a node, read from NVIDIA GPU feature discovery labels and allocatable.

GFD labels every GPU node (``nvidia.com/gpu.product``, ``gpu.memory`` in MiB, ``gpu.count``,
``gpu.family``, ``mig.strategy``, ...). Policies compare these, so every attribute has a sane
value when a label is absent or malformed: empty strings, 0, ``"none"``, and the GPU count
falls back to the node's ``nvidia.com/gpu`` allocatable. MIG slices (``nvidia.com/mig-1g.10gb``)
are read from allocatable, where the device plugin advertises them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import parse_go_int
from policyengine.model.objects import Node
from policyengine.model.resources import MIG_PREFIX, NVIDIA_GPU, to_units

PRODUCT = "nvidia.com/gpu.product"
MEMORY = "nvidia.com/gpu.memory"
COUNT = "nvidia.com/gpu.count"
FAMILY = "nvidia.com/gpu.family"
MACHINE = "nvidia.com/gpu.machine"
COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"
COMPUTE_MINOR = "nvidia.com/gpu.compute.minor"
DRIVER_MAJOR = "nvidia.com/cuda.driver.major"
DRIVER_MINOR = "nvidia.com/cuda.driver.minor"
DRIVER_REV = "nvidia.com/cuda.driver.rev"
RUNTIME_MAJOR = "nvidia.com/cuda.runtime.major"
RUNTIME_MINOR = "nvidia.com/cuda.runtime.minor"
MIG_CAPABLE = "nvidia.com/mig.capable"
MIG_STRATEGY = "nvidia.com/mig.strategy"
REPLICAS = "nvidia.com/gpu.replicas"
SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
CLIQUE = "nvidia.com/gpu.clique"


def _int_label(labels: Mapping[str, str], key: str, default: int = 0) -> int:
    value = labels.get(key)
    parsed = parse_go_int(value) if value is not None else None
    return default if parsed is None or parsed < 0 else parsed


@dataclass(frozen=True, slots=True)
class GpuInfo:
    product: str = ""
    memory_mib: int = 0  # per GPU
    count: int = 0  # physical GPUs (label, else allocatable nvidia.com/gpu)
    allocatable: int = 0  # nvidia.com/gpu the device plugin advertises (replicas included)
    family: str = ""
    machine: str = ""
    compute_major: int = 0
    compute_minor: int = 0
    driver_version: str = ""
    cuda_runtime_version: str = ""
    mig_capable: bool = False
    mig_strategy: str = "none"
    mig_devices: FrozenDict[str, int] = field(default=EMPTY)  # "1g.10gb" -> allocatable slices
    replicas: int = 1
    sharing_strategy: str = "none"
    clique: str = ""

    @property
    def has_gpu(self) -> bool:
        return self.count > 0 or self.allocatable > 0 or bool(self.mig_devices)

    @property
    def total_memory_mib(self) -> int:
        return self.memory_mib * self.count


def _version(labels: Mapping[str, str], *keys: str) -> str:
    parts = [labels[k] for k in keys if k in labels]
    return ".".join(parts) if parts and keys[0] in labels else ""


_LABELS_READ = (
    PRODUCT,
    MEMORY,
    COUNT,
    FAMILY,
    MACHINE,
    COMPUTE_MAJOR,
    COMPUTE_MINOR,
    DRIVER_MAJOR,
    DRIVER_MINOR,
    DRIVER_REV,
    RUNTIME_MAJOR,
    RUNTIME_MINOR,
    MIG_CAPABLE,
    MIG_STRATEGY,
    REPLICAS,
    SHARING_STRATEGY,
    CLIQUE,
)
# GpuInfo by what ``_gpu_info`` reads of a node: thousands of nodes share one shape, and the
# first pod reading ``node.gpu`` pays for every node at once.
_KNOWN: dict[tuple[object, ...], GpuInfo] = {}
_KNOWN_MAX = 4096


def gpu_info(node: Node) -> GpuInfo:
    labels = node.labels
    alloc = node.allocatable
    key = (
        tuple(map(labels.get, _LABELS_READ)),
        alloc.get(NVIDIA_GPU),
        *(item for item in alloc.items() if item[0].startswith(MIG_PREFIX)),
    )
    found = _KNOWN.get(key)
    if found is None:
        if len(_KNOWN) >= _KNOWN_MAX:
            _KNOWN.clear()
        found = _KNOWN[key] = _gpu_info(node)
    return found


def _gpu_info(node: Node) -> GpuInfo:
    # Reads only the labels in _LABELS_READ and the nvidia.com/gpu and MIG allocatable
    # entries: ``gpu_info``'s key. A label read here must be added there.
    labels = node.labels
    alloc = node.allocatable
    allocatable = to_units(NVIDIA_GPU, alloc[NVIDIA_GPU]) if NVIDIA_GPU in alloc else 0
    replicas = max(_int_label(labels, REPLICAS, 1), 1)
    count = _int_label(labels, COUNT, -1)
    if count < 0:
        count = allocatable // replicas if allocatable else 0
    mig = {
        name[len(MIG_PREFIX) :]: to_units(name, q)
        for name, q in alloc.items()
        if name.startswith(MIG_PREFIX)
    }
    return GpuInfo(
        product=labels.get(PRODUCT, ""),
        memory_mib=_int_label(labels, MEMORY),
        count=count,
        allocatable=allocatable,
        family=labels.get(FAMILY, ""),
        machine=labels.get(MACHINE, ""),
        compute_major=_int_label(labels, COMPUTE_MAJOR),
        compute_minor=_int_label(labels, COMPUTE_MINOR),
        driver_version=_version(labels, DRIVER_MAJOR, DRIVER_MINOR, DRIVER_REV),
        cuda_runtime_version=_version(labels, RUNTIME_MAJOR, RUNTIME_MINOR),
        mig_capable=labels.get(MIG_CAPABLE, "").lower() == "true",
        mig_strategy=labels.get(MIG_STRATEGY, "none") or "none",
        mig_devices=FrozenDict(mig) if mig else EMPTY,
        replicas=replicas,
        sharing_strategy=labels.get(SHARING_STRATEGY, "none") or "none",
        clique=labels.get(CLIQUE, ""),
    )
