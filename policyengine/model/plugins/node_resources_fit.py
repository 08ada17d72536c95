"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; LeastAllocated
scoring favours nodes with more room left.

Filter reasons, in kube's order: ``Too many pods``, ``Insufficient cpu``, ``Insufficient
memory``, ``Insufficient ephemeral-storage``, then ``Insufficient <name>`` for each extended
resource or hugepage size (sorted by name). Every shortage is reported, not just the first.
Scores use the non-zero requests (100m / 200Mi for containers that request nothing):
``(allocatable - requested) * 100 / allocatable`` per resource, weighted mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.model.normalize import MAX_NODE_SCORE, go_div
from policyengine.model.objects import Pod
from policyengine.model.overcommit import Overcommits, effective_allocatable
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_extended_resource,
    is_scalar_resource,
    pod_non_zero_requests,
    pod_requests,
    to_units,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

NAME = "NodeResourcesFit"
WEIGHT = 1
REASON_TOO_MANY_PODS = "Too many pods"


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


@dataclass(frozen=True, slots=True)
class FilterState:
    cpu: int
    memory: int
    ephemeral: int
    scalars: tuple[tuple[str, int], ...]  # sorted; zero requests dropped, ignored ones dropped
    has_scalar_entries: bool
    overcommit: Overcommits = ()  # the policy's, for this pod (model.overcommit)


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    reqs = pod_requests(pod)
    scalars = []
    has_scalar_entries = False
    for name in sorted(reqs):
        if not is_scalar_resource(name):
            continue
        has_scalar_entries = True
        units = to_units(name, reqs[name])
        if units == 0:
            continue
        if is_extended_resource(name) and (
            name in config.ignored_extended_resources
            or name.split("/", 1)[0] in config.ignored_resource_groups
        ):
            continue
        scalars.append((name, units))
    return FilterState(
        cpu=to_units(CPU, reqs.get(CPU, 0)),
        memory=to_units(MEMORY, reqs.get(MEMORY, 0)),
        ephemeral=to_units(EPHEMERAL_STORAGE, reqs.get(EPHEMERAL_STORAGE, 0)),
        scalars=tuple(scalars),
        has_scalar_entries=has_scalar_entries,
        overcommit=config.overcommit,
    )


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    reasons = []
    if len(node.pods) + 1 > node.allowed_pod_number:
        reasons.append(REASON_TOO_MANY_PODS)
    if not (state.cpu or state.memory or state.ephemeral or state.has_scalar_entries):
        return reasons
    alloc = node.allocatable_units
    used = node.requested_units
    alloc_cpu = alloc.get(CPU, 0)
    if state.overcommit:  # only cpu is compressible, so only cpu can be overcommitted
        alloc_cpu = effective_allocatable(alloc_cpu, CPU, node.load, state.overcommit)
    if state.cpu > 0 and state.cpu > alloc_cpu - used.get(CPU, 0):
        reasons.append(insufficient(CPU))
    if state.memory > 0 and state.memory > alloc.get(MEMORY, 0) - used.get(MEMORY, 0):
        reasons.append(insufficient(MEMORY))
    if state.ephemeral > 0 and state.ephemeral > alloc.get(EPHEMERAL_STORAGE, 0) - used.get(
        EPHEMERAL_STORAGE, 0
    ):
        reasons.append(insufficient(EPHEMERAL_STORAGE))
    for name, units in state.scalars:
        if units > alloc.get(name, 0) - used.get(name, 0):
            reasons.append(insufficient(name))
    return reasons


# ---------------------------------------------------------------- scoring


def allocatable_and_requested(
    node: NodeInfo,
    resource: str,
    pod_request: int,
    *,
    use_requested: bool,
    overcommit: Overcommits = (),
) -> tuple[int, int]:
    """kube's ``calculateResourceAllocatableRequest``: (allocatable, requested incl. the pod).

    ``use_requested`` False reads the non-zero cpu/memory sums (LeastAllocated), True the real
    ones (BalancedAllocation). (0, 0) means "leave this resource out". ``overcommit`` scales
    the allocatable cpu (model.overcommit).
    """
    if pod_request == 0 and is_scalar_resource(resource):
        return 0, 0
    alloc = node.allocatable_units
    if resource == CPU:
        used = node.requested_units.get(CPU, 0) if use_requested else node.non_zero_cpu
        alloc_cpu = alloc.get(CPU, 0)
        if overcommit:
            alloc_cpu = effective_allocatable(alloc_cpu, CPU, node.load, overcommit)
        return alloc_cpu, used + pod_request
    if resource == MEMORY:
        used = node.requested_units.get(MEMORY, 0) if use_requested else node.non_zero_memory
        return alloc.get(MEMORY, 0), used + pod_request
    if resource == EPHEMERAL_STORAGE:
        return alloc.get(EPHEMERAL_STORAGE, 0), node.requested_units.get(
            EPHEMERAL_STORAGE, 0
        ) + pod_request
    if resource in alloc and is_scalar_resource(resource):
        return alloc[resource], node.requested_units.get(resource, 0) + pod_request
    return 0, 0


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


@dataclass(frozen=True, slots=True)
class ScoreState:
    resources: tuple[tuple[str, int, int], ...]  # (name, weight, pod's non-zero request)
    overcommit: Overcommits = ()


def pod_score_requests(pod: Pod, resources: Sequence[str], *, non_zero: bool) -> tuple[int, ...]:
    reqs = pod_non_zero_requests(pod) if non_zero else pod_requests(pod)
    return tuple(to_units(r, reqs.get(r, 0)) for r in resources)


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState:
    names = [r for r, _ in config.fit_score_resources]
    requests = pod_score_requests(pod, names, non_zero=True)
    return ScoreState(
        tuple((r, w, q) for (r, w), q in zip(config.fit_score_resources, requests, strict=True)),
        config.overcommit,
    )


def score(state: ScoreState, node: NodeInfo) -> int:
    total = weights = 0
    for name, weight, request in state.resources:
        alloc, req = allocatable_and_requested(
            node, name, request, use_requested=False, overcommit=state.overcommit
        )
        if alloc == 0:
            continue
        total += least_requested_score(req, alloc) * weight
        weights += weight
    return go_div(total, weights) if weights else 0


PLUGIN = Plugin(
    NAME,
    "node_resources_fit",
    "node_resources_fit",
    WEIGHT,
    prepare_filter=prepare_filter,
    filter=filter,
    prepare_score=prepare_score,
    score=score,
    normalize=None,
    always_resolvable=True,
)
