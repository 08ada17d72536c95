"""The pod QoS class (Guaranteed, Burstable, BestEffort) exactly as Kubernetes computes it.

Only cpu and memory count, and only positive quantities. BestEffort: no such request or limit
anywhere. Guaranteed: every container (init containers included) sets positive cpu and memory
limits, and the summed requests equal the summed limits for each resource. With pod-level
resources (``spec.resources``) those decide instead of the containers. Everything else is
Burstable. Requests default to limits at parse time, as the API server does, so a container
with only limits is Guaranteed.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from policyengine.model.objects import Pod

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

_QOS_RESOURCES = ("cpu", "memory")


def _positive(resources: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {k: v for k, v in resources.items() if k in _QOS_RESOURCES and v > 0}


def qos_class(pod: Pod) -> str:
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    sources: list[tuple[Mapping[str, Fraction], Mapping[str, Fraction], bool]]
    if pod.pod_requests is not None or pod.pod_limits is not None:
        sources = [(pod.pod_requests or {}, pod.pod_limits or {}, pod.pod_limits is not None)]
    else:
        sources = [(c.requests, c.limits, True) for c in (*pod.containers, *pod.init_containers)]
    for reqs, lims, check_limits in sources:
        for k, v in _positive(reqs).items():
            requests[k] = requests.get(k, 0) + v
        found = _positive(lims)
        for k, v in found.items():
            limits[k] = limits.get(k, 0) + v
        if check_limits and not all(r in found for r in _QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for k, v in requests.items():
            if limits.get(k) != v:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
