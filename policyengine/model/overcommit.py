"""Overcommit of compressible resources: how much of a node a pod's fit may count on.

CPU is compressible: when the pods on a node want more than it has, the kernel throttles them
and they run slower. Memory, storage and devices are not: running short of them gets pods
killed. So a policy may let the *requests* on a node add up to more than its allocatable cpu
(``overcommit cpu 1.5``), and never anything else (the checker refuses it).

Only Burstable and BestEffort pods overcommit: a Guaranteed pod was promised exactly what it
asked for (its requests equal its limits), so it is fitted against the node's real
allocatable. For the others the fit counts ``allocatable × ratio``, rounded down to kube's
units. With ``max_load L`` the ratio holds on a node only while its measured load of that
resource is at most ``L``; above it, or when the node has no fresh reading (missing or stale),
the node counts at its plain allocatable: without evidence that the node is idle, no
overcommit. The rule is conservative by design: a stale exporter can never make a node look
emptier than its allocatable says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from policyengine.model.load import NodeLoad
from policyengine.model.objects import Pod
from policyengine.model.qos import GUARANTEED, qos_class
from policyengine.model.resources import is_compressible


@dataclass(frozen=True, slots=True)
class Overcommit:
    """``overcommit RESOURCE RATIO [max_load L]`` as the engine applies it."""

    resource: str
    ratio: Fraction
    max_load: Fraction | None = None

    def holds_on(self, load: NodeLoad) -> bool:
        """Whether the ratio applies on a node with this measured load."""
        if self.max_load is None:
            return True
        measured = load.field(self.resource) if self.resource in ("cpu", "memory") else None
        # Through str: the reading 0.8 is the decimal 0.8, not the binary float nearest it.
        return measured is not None and Fraction(str(measured)) <= self.max_load


Overcommits = tuple[Overcommit, ...]


def overcommits_for(
    pod: Pod, ratios: Mapping[str, float], max_loads: Mapping[str, float] | None = None
) -> Overcommits:
    """What applies to ``pod``: nothing for a Guaranteed pod or an incompressible resource
    (the checker refuses those; this is the engine's own guard), ratios of 1 dropped."""
    if not ratios or qos_class(pod) == GUARANTEED:
        return ()
    bounds = max_loads or {}
    out = []
    for resource in sorted(ratios):
        ratio = Fraction(str(ratios[resource]))
        if not is_compressible(resource) or ratio <= 1:
            continue
        bound = bounds.get(resource)
        out.append(Overcommit(resource, ratio, None if bound is None else Fraction(str(bound))))
    return tuple(out)


def overcommit_ratio(resource: str, load: NodeLoad, overcommits: Overcommits) -> Fraction | None:
    """The ratio that applies to ``resource`` on a node with ``load`` (None: no overcommit)."""
    for rule in overcommits:
        if rule.resource == resource and rule.holds_on(load):
            return rule.ratio
    return None


def effective_allocatable(
    allocatable: int, resource: str, load: NodeLoad, overcommits: Overcommits
) -> int:
    """``allocatable`` (kube units) as the fit counts it for a pod under ``overcommits``."""
    ratio = overcommit_ratio(resource, load, overcommits)
    return allocatable if ratio is None else math.floor(allocatable * ratio)
