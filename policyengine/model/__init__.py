"""The model layer: Kubernetes objects as plain, immutable data with kube-scheduler's semantics.

Public facade: the names the language bindings (``schedlib``) and the engine use. Submodules
each hold one concern (see their docstrings); import from here unless you need a detail.
This package imports only the standard library, PyYAML, ``policyengine.diagnostics`` and
``policyengine.quantity``.
"""

from __future__ import annotations

from policyengine.model.errors import ModelError
from policyengine.model.fit_error import NodeStatus, fit_error_message, preemption_message
from policyengine.model.frozen import FrozenDict
from policyengine.model.gpu import GpuInfo, gpu_info
from policyengine.model.kube_profile import CycleResult, run_cycle
from policyengine.model.labels import LabelSelector, Selector, SelectorError, compile_selector
from policyengine.model.node_selectors import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    RequiredNodeAffinity,
    required_node_affinity,
)
from policyengine.model.objects import (
    Affinity,
    Container,
    ContainerImage,
    ContainerPort,
    Namespace,
    Node,
    NodeAffinity,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from policyengine.model.parse import parse_namespace, parse_node, parse_pod
from policyengine.model.plugins import (
    DEFAULT_CONFIG,
    DEFAULT_WEIGHTS,
    FILTER_PLUGINS,
    KUBE_1_28,
    SCORE_PLUGINS,
    Plugin,
    SchedulerConfig,
)
from policyengine.model.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, qos_class
from policyengine.model.resources import (
    is_compressible,
    is_extended_resource,
    is_gpu_resource,
    pod_non_zero_requests,
    pod_requests,
    to_units,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo, snapshot_from_objects
from policyengine.model.snapshot_io import LoadedObjects, load_snapshot, parse_snapshot_text
from policyengine.model.taints import Taint, Toleration
from policyengine.model.topology import Topology, TopologyConfig, topology_of

__all__ = [
    "BEST_EFFORT",
    "BURSTABLE",
    "DEFAULT_CONFIG",
    "DEFAULT_WEIGHTS",
    "FILTER_PLUGINS",
    "GUARANTEED",
    "KUBE_1_28",
    "SCORE_PLUGINS",
    "Affinity",
    "ClusterSnapshot",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "CycleResult",
    "FrozenDict",
    "GpuInfo",
    "LabelSelector",
    "LoadedObjects",
    "ModelError",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeInfo",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeStatus",
    "Plugin",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodInfo",
    "PreferredSchedulingTerm",
    "RequiredNodeAffinity",
    "SchedulerConfig",
    "Selector",
    "SelectorError",
    "Taint",
    "Toleration",
    "Topology",
    "TopologyConfig",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
    "compile_selector",
    "fit_error_message",
    "gpu_info",
    "is_compressible",
    "is_extended_resource",
    "is_gpu_resource",
    "load_snapshot",
    "parse_namespace",
    "parse_node",
    "parse_pod",
    "parse_snapshot_text",
    "pod_non_zero_requests",
    "pod_requests",
    "preemption_message",
    "qos_class",
    "required_node_affinity",
    "run_cycle",
    "snapshot_from_objects",
    "to_units",
    "topology_of",
]
