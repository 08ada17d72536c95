"""The runtime objects behind ``pod`` and ``node``: thin, lazily computed views over the model.

The language reads attributes through the getters declared in ``records``; these views give
those getters one place to find each value and compute the costly ones (effective requests,
QoS class, allocated resources) once, on first use, per view. A pod view lives for a whole
scheduling cycle; a node view per (cycle, node).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import cached_property
from typing import Any

from policyengine.model import gpu as model_gpu
from policyengine.model import topology as model_topology
from policyengine.model.objects import Node, Pod
from policyengine.model.qos import qos_class
from policyengine.model.resources import NVIDIA_GPU, PODS, add_resources, pod_requests
from policyengine.model.taints import TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE, Taint, tolerates

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

    @property
    def node_selector(self) -> Mapping[str, str]:
        return self.pod.node_selector or {}

    def __repr__(self) -> str:
        return f"PodView({self.pod.key})"


class NodeView:
    """What the language sees as ``node``: the node, plus what the pods on it already use.

    ``requested`` is the sum of the effective requests of the pods on the node (the assumed
    ones included) and ``pod_count`` their number; ``info`` is the snapshot's own record of
    the node, which the builtins that reproduce kube-scheduler's plugins read.
    """

    def __init__(self, node: Node, requested: Mapping[str, Fraction], pod_count: int, info: Any = None,
                 topology: model_topology.TopologyConfig | None = None):
        self.node = node
        self._requested = requested
        self.pod_count = pod_count
        self.info = info
        self._topology_config = topology

    @cached_property
    def allocatable(self) -> ResourceMap:
        return ResourceMap(self.node.allocatable)

    @cached_property
    def capacity(self) -> ResourceMap:
        return ResourceMap(self.node.capacity)

    @cached_property
    def allocated(self) -> ResourceMap:
        return ResourceMap(self._requested)

    @cached_property
    def free(self) -> ResourceMap:
        return ResourceMap(add_resources(self.node.allocatable, self._requested, sign=-1))

    @cached_property
    def max_pods(self) -> int:
        return int(self.node.allocatable.get(PODS, 0))

    @cached_property
    def images(self) -> list[str]:
        return [name for image in self.node.images for name in image.names]

    @cached_property
    def gpu(self) -> model_gpu.GpuInfo:
        return model_gpu.gpu_info(self.node, self._requested)

    @cached_property
    def topology(self) -> model_topology.Topology:
        return model_topology.topology_of(self.node, self._topology_config)

    def __repr__(self) -> str:
        return f"NodeView({self.node.name})"
