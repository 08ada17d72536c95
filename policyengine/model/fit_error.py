"""The FailedScheduling message: kube-scheduler's reason histogram, byte for byte.

``0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint
{gpu: maintenance}. preemption: 0/5 nodes are available: 5 Preemption is not helpful for
scheduling..`` — every reason of every failed node is counted, the ``"<count> <reason>"``
strings are sorted as strings (so "10 ..." sorts before "2 ..."), and the preemption part, when
present, is appended with its own trailing dot (hence the final ``..``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

UNSCHEDULABLE = "Unschedulable"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """Why one node was rejected: the plugin, kube's status code and the reasons."""

    plugin: str
    code: str
    reasons: tuple[str, ...]

    @property
    def resolvable(self) -> bool:
        return self.code == UNSCHEDULABLE


def histogram(statuses: Mapping[str, NodeStatus]) -> list[str]:
    counts = Counter(r for s in statuses.values() for r in s.reasons)
    return sorted(f"{n} {reason}" for reason, n in counts.items())


def fit_error_message(
    num_all_nodes: int,
    statuses: Mapping[str, NodeStatus],
    *,
    prefilter_message: str | None = None,
    postfilter_message: str | None = None,
) -> str:
    """kube's ``FitError.Error()``."""
    message = f"0/{num_all_nodes} nodes are available:"
    if prefilter_message:
        message += f" {prefilter_message}."
    else:
        parts = histogram(statuses)
        if parts:
            message += f" {', '.join(parts)}."
    if postfilter_message:
        message += f" {postfilter_message}."
    return message


# Re-run the filters for ``pod`` on ``node`` inside ``snapshot``: None if it fits, else a status.
Refilter = Callable[[Pod, ClusterSnapshot, NodeInfo], NodeStatus | None]


def preemption_message(
    pod: Pod,
    snapshot: ClusterSnapshot,
    statuses: Mapping[str, NodeStatus],
    refilter: Refilter | None = None,
    *,
    absent_nodes_unresolvable: bool = True,
) -> str | None:
    """The ``preemption: ...`` part DefaultPreemption adds when it finds no candidate.

    Nodes whose failure preemption cannot fix are "not helpful"; on the others every pod of
    lower priority is removed and the filters run again (``refilter``). Returns ``None`` when
    some node would fit after evicting victims: preemption would then nominate a node instead
    of failing, which is the engine's business.
    """
    if pod.preemption_policy == "Never":
        return f"preemption: {NEVER}"
    results: dict[str, NodeStatus] = {}
    for node in snapshot.nodes:
        status = statuses.get(node.name)
        if status is None and absent_nodes_unresolvable:
            status = NodeStatus("", UNSCHEDULABLE_AND_UNRESOLVABLE, ())
        if status is not None and not status.resolvable:
            results[node.name] = NodeStatus(
                "DefaultPreemption", UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,)
            )
            continue
        victims = [p.key for p in node.pods if p.pod.priority < pod.priority]
        if not victims:
            results[node.name] = NodeStatus(
                "DefaultPreemption", UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,)
            )
            continue
        if refilter is None:
            return None
        reduced = snapshot
        for key in victims:
            reduced = reduced.without_pod(key)
        again = refilter(pod, reduced, reduced.node(node.name))
        if again is None:
            return None
        results[node.name] = again
    return "preemption: " + fit_error_message(len(results), results)
