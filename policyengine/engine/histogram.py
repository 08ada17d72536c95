"""kube-scheduler's one-line summary of why a pod fits nowhere.

``0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint
{gpu: maintenance}.`` Each node contributes the reasons of the first filter that rejected it
(a resource filter may give several); identical reasons are counted, and the
``COUNT REASON`` entries are sorted as strings, exactly as kube-scheduler prints them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from policyengine.engine.decision import Rejection, first_rejection_groups


def reason_histogram(infeasible: Mapping[str, Sequence[Rejection]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for rejection, names in first_rejection_groups(infeasible):
        for reason in dict.fromkeys(rejection.reasons):
            counts[reason] += len(names)
    return counts


def histogram_line(
    num_nodes: int, infeasible: Mapping[str, Sequence[Rejection]], extra: Iterable[str] = ()
) -> str:
    counts = reason_histogram(infeasible)
    entries = sorted(f"{count} {reason}" for reason, count in counts.items())
    line = f"0/{num_nodes} nodes are available"
    parts = [", ".join(entries)] if entries else []
    parts.extend(extra)
    return line + (
        "".join(f": {p}." if i == 0 else f" {p}." for i, p in enumerate(parts)) if parts else "."
    )
