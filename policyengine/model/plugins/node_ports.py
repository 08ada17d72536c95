"""NodePorts: a pod's host ports must be free on the node (same protocol and port, on the same
host IP or either side binding 0.0.0.0)."""

from __future__ import annotations

from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import (
    WILDCARD_IP,
    ClusterSnapshot,
    HostPort,
    NodeInfo,
    pod_host_ports,
)

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"


@dataclass(frozen=True, slots=True)
class FilterState:
    wanted: tuple[HostPort, ...]


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    return FilterState(pod_host_ports(pod))


def conflicts(used: frozenset[HostPort] | dict[HostPort, int], wanted: HostPort) -> bool:
    ip, protocol, port = wanted
    if ip == WILDCARD_IP:
        return any(p == port and proto == protocol for (_, proto, p) in used)
    return (WILDCARD_IP, protocol, port) in used or (ip, protocol, port) in used


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if not state.wanted or not node.used_ports:
        return []
    for hp in state.wanted:
        if conflicts(node.used_ports, hp):
            return [REASON]
    return []


PLUGIN = Plugin(
    NAME,
    "node_ports",
    None,
    0,
    prepare_filter=prepare_filter,
    filter=filter,
    resolvable_reasons=frozenset({REASON}),
)
