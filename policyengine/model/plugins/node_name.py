"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node."""

from __future__ import annotations

from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


@dataclass(frozen=True, slots=True)
class FilterState:
    node_name: str


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    return FilterState(pod.node_name)


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.node_name and state.node_name != node.name:
        return [REASON]
    return []


PLUGIN = Plugin(NAME, "node_name", None, 0, prepare_filter=prepare_filter, filter=filter)
