"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) admits only pods that tolerate
the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""

from __future__ import annotations

from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.taints import tolerates_unschedulable

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"


@dataclass(frozen=True, slots=True)
class FilterState:
    tolerates: bool


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    return FilterState(tolerates_unschedulable(pod.tolerations))


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if node.node.unschedulable and not state.tolerates:
        return [REASON]
    return []


PLUGIN = Plugin(NAME, "node_unschedulable", None, 0, prepare_filter=prepare_filter, filter=filter)
