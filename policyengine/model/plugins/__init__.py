"""kube-scheduler's default plugins as pure functions, in the default profile's order.

``FILTER_PLUGINS`` is the order kube-scheduler runs filters (the first failing one names the
node's reason); ``SCORE_PLUGINS`` carries the default weights (TaintToleration 3; NodeAffinity,
PodTopologySpread, InterPodAffinity 2; NodeResourcesFit, BalancedAllocation, ImageLocality 1).
"""

from __future__ import annotations

from policyengine.model.plugins import (
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from policyengine.model.plugins.base import (
    UNSCHEDULABLE,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    Plugin,
    PreFilterResult,
)
from policyengine.model.plugins.config import DEFAULT_CONFIG, KUBE_1_28, SchedulerConfig

FILTER_PLUGINS: tuple[Plugin, ...] = (
    node_unschedulable.PLUGIN,
    node_name.PLUGIN,
    taint_toleration.PLUGIN,
    node_affinity.PLUGIN,
    node_ports.PLUGIN,
    node_resources_fit.PLUGIN,
    volume_restrictions.PLUGIN,
    node_volume_limits.PLUGIN,
    volume_binding.PLUGIN,
    volume_zone.PLUGIN,
    pod_topology_spread.PLUGIN,
    inter_pod_affinity.PLUGIN,
)

SCORE_PLUGINS: tuple[Plugin, ...] = (
    taint_toleration.PLUGIN,
    node_affinity.PLUGIN,
    pod_topology_spread.PLUGIN,
    inter_pod_affinity.PLUGIN,
    node_resources_fit.PLUGIN,
    balanced_allocation.PLUGIN,
    image_locality.PLUGIN,
)

PLUGINS_BY_NAME: dict[str, Plugin] = {p.name: p for p in (*FILTER_PLUGINS, *SCORE_PLUGINS)}
PLUGINS_BY_RULE: dict[str, Plugin] = {
    **{p.filter_rule: p for p in FILTER_PLUGINS if p.filter_rule},
    **{p.score_rule: p for p in SCORE_PLUGINS if p.score_rule},
}
DEFAULT_WEIGHTS: dict[str, int] = {p.name: p.weight for p in SCORE_PLUGINS}

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_WEIGHTS",
    "FILTER_PLUGINS",
    "KUBE_1_28",
    "PLUGINS_BY_NAME",
    "PLUGINS_BY_RULE",
    "SCORE_PLUGINS",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_AND_UNRESOLVABLE",
    "Plugin",
    "PreFilterResult",
    "SchedulerConfig",
]
