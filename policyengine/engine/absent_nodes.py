"""The nodes a PreFilter left out, as kube-scheduler's FailedScheduling line counts them.

NodeAffinity's PreFilter names the only nodes kube-scheduler filters when every term of the
pod's required node affinity picks nodes by ``metadata.name`` (a DaemonSet's pods), and
VolumeBinding's when the pod's bound local volumes pin it; with both, the nodes both name (none:
the pod is rejected whole, ``... simultaneously``). kube-scheduler runs no filter on the other
nodes. v1.28 leaves them out of its line; since
v1.31 each counts as ``node(s) didn't satisfy plugin(s) [NodeAffinity]`` (the plugins that
named nodes, sorted; ``SchedulerConfig.prefilter_absent_nodes_unresolvable``). The engine
still evaluates them (``filter`` and ``explain`` show why they fail: node affinity, or the
volumes), but the line is kube-scheduler's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from policyengine.engine.decision import Rejection
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.functions import node_affinity_node_names
from policyengine.schedlib.storage import volume_binding_node_names

# The policy's filter rule that stands for each plugin (kube-default's names): a policy
# without it has no such PreFilter.
_RULES = (("node_affinity", "NodeAffinity"), ("volume_binding", "VolumeBinding"))


def unsatisfied(plugins: Iterable[str]) -> str:
    """How kube-scheduler since v1.31 reports a node the PreFilters of ``plugins`` left out."""
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def reported(
    infeasible: Mapping[str, Sequence[Rejection]],
    context: CycleContext,
    filters: Iterable[str],
) -> Mapping[str, Sequence[Rejection]]:
    """The rejections the FailedScheduling line counts (``filters``: the names of the policy's
    filter rules)."""
    present = set(filters)
    restricting: list[tuple[str, str, frozenset[str]]] = []
    for rule, plugin in _RULES:
        if rule not in present:
            continue
        if plugin == "NodeAffinity":
            kept = node_affinity_node_names(context)
        else:
            kept = volume_binding_node_names(context) if context.pod.pod.uses_storage else None
        if kept is not None:
            restricting.append((rule, plugin, kept))
    if not restricting:
        return infeasible
    kept = frozenset.intersection(*(names for _, _, names in restricting))
    plugins = [plugin for _, plugin, _ in restricting]
    rule = restricting[0][0]
    if not kept and len(restricting) > 1:
        # No node named by all: kube-scheduler rejects the pod in PreFilter, with no count.
        whole = (Rejection(rule, (f"{unsatisfied(plugins)} simultaneously",)),)
        return dict.fromkeys(infeasible, whole)
    absent = context.config.prefilter_absent_nodes_unresolvable
    status = (Rejection(rule, (unsatisfied(plugins),)),)
    out: dict[str, Sequence[Rejection]] = {}
    for name, rejections in infeasible.items():
        if name in kept:
            out[name] = rejections
        elif absent:
            out[name] = status
    return out
