"""The runtime objects behind ``pod`` and ``node``: thin, lazily computed views over the model.

The language reads attributes through the getters declared in ``records``; these views give
those getters one place to find each value and compute the costly ones (effective requests,
QoS class, allocated resources) once, on first use, per view. A pod view lives for a whole
scheduling cycle; a node view per (cycle, node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from policyengine.model import gpu as model_gpu
from policyengine.model import topology as model_topology
from policyengine.model.cached import cached_property
from policyengine.model.gpu_devices import GpuDemand
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Node, Pod
from policyengine.model.qos import qos_class
from policyengine.model.resources import NVIDIA_GPU, pod_requests
from policyengine.model.snapshot import NodeInfo
from policyengine.model.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, Taint, tolerates
from policyengine.schedlib import gpu_records

_ZERO = Fraction(0)


class ResourceMap(dict[str, Fraction]):
    """A resource list where a missing resource reads as 0, as Kubernetes treats it."""

    def __missing__(self, key: str) -> Fraction:
        return _ZERO


class PodView:
    """What the language sees as ``pod``."""

    def __init__(self, pod: Pod):
        self.pod = pod

    @cached_property
    def requests(self) -> ResourceMap:
        return ResourceMap(pod_requests(self.pod))

    @cached_property
    def limits(self) -> ResourceMap:
        total: dict[str, Fraction] = {}
        for container in self.pod.containers:
            for name, value in container.limits.items():
                total[name] = total.get(name, _ZERO) + value
        return ResourceMap(total)

    @cached_property
    def qos_class(self) -> str:
        return qos_class(self.pod)

    @cached_property
    def tolerates_unschedulable(self) -> bool:
        return tolerates(self.pod.tolerations, Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE))

    @cached_property
    def host_ports(self) -> list[int]:
        return [
            port.host_port
            for container in (*self.pod.containers, *self.pod.init_containers)
            for port in container.ports
            if port.host_port
        ]

    @cached_property
    def images(self) -> list[str]:
        return [c.image for c in self.pod.containers if c.image]

    @cached_property
    def gpu_count(self) -> int:
        return int(self.requests[NVIDIA_GPU])

    @cached_property
    def gpu_demand(self) -> GpuDemand:
        return pod_demand(self.pod)

    @cached_property
    def gpu_request(self) -> gpu_records.GpuRequestRecord:
        return gpu_records.request_record(self.gpu_demand)

    @property
    def node_selector(self) -> Mapping[str, str]:
        return self.pod.node_selector or {}

    def __repr__(self) -> str:
        return f"PodView({self.pod.key})"


class NodeView:
    """What the language sees as ``node``: the snapshot's record of the node and its pods.

    ``info`` is the model's ``NodeInfo`` (the node, the pods on it with the assumed ones, their
    summed requests), which the builtins reproducing kube-scheduler's plugins read directly.
    """

    def __init__(
        self,
        info: NodeInfo,
        topology: model_topology.TopologyConfig = model_topology.DEFAULT_TOPOLOGY,
    ):
        self.info = info
        self.node: Node = info.node
        self._topology_config = topology

    @property
    def pod_count(self) -> int:
        return len(self.info.pods)

    @cached_property
    def allocatable(self) -> ResourceMap:
        return ResourceMap(self.node.allocatable)

    @cached_property
    def capacity(self) -> ResourceMap:
        return ResourceMap(self.node.capacity)

    @cached_property
    def allocated(self) -> ResourceMap:
        return ResourceMap(self.info.requested)

    @cached_property
    def free(self) -> ResourceMap:
        return ResourceMap(self.info.free)

    @cached_property
    def max_pods(self) -> int:
        return self.info.allowed_pod_number

    @cached_property
    def images(self) -> list[str]:
        return [name for image in self.node.images for name in image.names]

    @cached_property
    def gpu(self) -> NodeGpu:
        info = model_gpu.gpu_info(self.node)
        allocated = int(self.info.requested.get(NVIDIA_GPU, 0))
        key = (info.product, info.family, info.memory_mib, info.allocatable, allocated)
        found = _NODE_GPUS.get((*key, info.mig_strategy))
        if found is None:
            if len(_NODE_GPUS) >= 4096:
                _NODE_GPUS.clear()
            found = _NODE_GPUS[(*key, info.mig_strategy)] = NodeGpu(
                product=info.product,
                family=info.family,
                memory=Fraction(info.memory_mib * 1024 * 1024),
                count=info.allocatable,
                allocated=allocated,
                free=info.allocatable - allocated,
                mig_strategy=info.mig_strategy,
            )
        return found

    @cached_property
    def gpus(self) -> list[gpu_records.GpuDeviceRecord]:
        return gpu_records.device_records(self.info.gpus)

    @cached_property
    def topology(self) -> model_topology.Topology:
        return model_topology.topology_of(self.node, self._topology_config)

    def __repr__(self) -> str:
        return f"NodeView({self.node.name})"


# One (immutable) NodeGpu per distinct value: thousands of nodes share one, and the first pod
# reading ``node.gpu`` builds it for every node at once.
_NODE_GPUS: dict[tuple[object, ...], NodeGpu] = {}


@dataclass(frozen=True, slots=True)
class NodeGpu:
    product: str
    family: str
    memory: Fraction
    count: int
    allocated: int
    free: int
    mig_strategy: str
