"""The nodes of a synthetic cluster as the API returns them: capacity, labels, taints,
conditions and images, laid out over zones, racks and NVLink domains.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policyengine.model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from policyengine.quantity import parse_quantity
from policyengine.synthetic.randomness import Clock, Rand, apportion
from policyengine.synthetic.spec import (
    GI,
    GPU_CLIQUE,
    GPU_COUNT,
    GPU_FAMILY,
    GPU_MEMORY,
    GPU_PRODUCT,
    HOSTNAME,
    INSTANCE_TYPE,
    KI,
    LIFECYCLE_TAINTS,
    MI,
    NVIDIA_GPU,
    RACK,
    REGION,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
    ZONE,
    ClusterSpec,
    GpuModel,
    NodeShape,
)

# ------------------------------------------------------------------------------ nodes


def _node_resources(shape: NodeShape, gpus: int) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity and allocatable as kubelet reports them (kube-reserved and eviction held back)."""
    memory_ki = shape.memory_gi * GI // KI * 985 // 1000  # firmware and kernel keep some
    ephemeral_ki = shape.ephemeral_gi * GI // KI
    reserved_cpu_m = 70 + 10 * shape.cpu  # grows with the machine, as managed k8s sizes it
    reserved_memory_ki = (1 * GI + 100 * MI) // KI + memory_ki // 50
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
        "ephemeral-storage": str(ephemeral_ki * KI * 9 // 10),
        "memory": f"{memory_ki - reserved_memory_ki}Ki",
    }
    if gpus:
        capacity[NVIDIA_GPU] = allocatable[NVIDIA_GPU] = str(gpus)
    return capacity, allocatable


def resource_units(resources: Mapping[str, str], round_up: bool = False) -> list[int]:
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
class NodeState:
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
    shape_counts = apportion([s.share for s in spec.cpu_shapes], spec.cpu_nodes)
    i = 0
    for shape, count in zip(spec.cpu_shapes, shape_counts, strict=True):
        for _ in range(count):
            out.append((None, shape, i % spec.racks, ""))
            i += 1
    # GPU nodes come in NVLink domains of consecutive nodes of one model, each domain inside
    # one rack (and so one zone), as NVLink-switch systems are cabled.
    model_counts = apportion([m.share for m in spec.gpu_models], spec.gpu_nodes)
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


def make_nodes(spec: ClusterSpec, rand: Rand, clock: Clock) -> list[NodeState]:
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
    nodes: list[NodeState] = []
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
            taints.append({"effect": NO_SCHEDULE, "key": UNSCHEDULABLE_TAINT, "timeAdded": stamp})
        if i in not_ready:
            for effect in (NO_SCHEDULE, NO_EXECUTE):
                taints.append({"effect": effect, "key": UNREACHABLE_TAINT, "timeAdded": stamp})
        if (shape, gpus) not in resources:
            capacity, allocatable = _node_resources(shape, gpus)
            resources[shape, gpus] = (capacity, allocatable, resource_units(allocatable))
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
            if t["effect"] in (NO_SCHEDULE, NO_EXECUTE) and t["key"] not in LIFECYCLE_TAINTS
        )
        nodes.append(
            NodeState(
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


def image_entry(name: str, size: int) -> dict[str, Any]:
    repo = name.rsplit(":", 1)[0]
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {"names": [f"{repo}@sha256:{digest}", name], "sizeBytes": size}
