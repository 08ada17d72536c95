"""kube-scheduler's one-line summary of why a pod fits nowhere.

``0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint
{gpu: maintenance}.`` A storage plugin's rejection of the whole pod, every node's one reason,
is printed alone, as kube-scheduler prints a PreFilter's. Each node contributes the reasons of the first filter that rejected it
(a resource filter may give several); identical reasons are counted, and the
``COUNT REASON`` entries are sorted as strings, exactly as kube-scheduler prints them. A
policy's own reason holding ", " is quoted, or two entries would read as one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from policyengine.engine.decision import Rejection, first_rejection_groups
from policyengine.model.prefilter import is_pod_rejection


def reason_histogram(infeasible: Mapping[str, Sequence[Rejection]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for rejection, names in first_rejection_groups(infeasible):
        for reason in dict.fromkeys(rejection.reasons):
            counts[reason] += len(names)
    return counts


def _entry(reason: str) -> str:
    """A reason as the line shows it: quoted when it holds ", " (a policy's own reason may;
    kube-scheduler's never do), so that entries stay apart."""
    if ", " not in reason:
        return reason
    return '"' + reason.replace("\\", "\\\\").replace('"', '\\"') + '"'


def histogram_line(
    num_nodes: int, infeasible: Mapping[str, Sequence[Rejection]], extra: Iterable[str] = ()
) -> str:
    counts = reason_histogram(infeasible)
    entries = sorted(f"{count} {_entry(reason)}" for reason, count in counts.items())
    if len(counts) == 1:
        # A storage plugin's PreFilter rejected the pod: kube-scheduler prints the message
        # alone (``model.prefilter``).
        ((reason, count),) = counts.items()
        if count == num_nodes and is_pod_rejection(reason):
            entries = [reason]
    line = f"0/{num_nodes} nodes are available"
    parts = [", ".join(entries)] if entries else []
    parts.extend(extra)
    return line + (
        "".join(f": {p}." if i == 0 else f" {p}." for i, p in enumerate(parts)) if parts else "."
    )
