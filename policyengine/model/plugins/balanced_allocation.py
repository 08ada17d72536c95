"""NodeResourcesBalancedAllocation: favour nodes whose cpu and memory utilisation (after the
pod) are close to each other: ``(1 - std(fractions)) * 100``, in float64 like kube.

Uses the real requests (not the non-zero variant). Since Kubernetes 1.33 a pod requesting none
of the resources is skipped (every node 0); ``SchedulerConfig.balanced_skips_best_effort=False``
restores the v1.28 behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.model.normalize import MAX_NODE_SCORE
from policyengine.model.objects import Pod
from policyengine.model.overcommit import Overcommits
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.plugins.node_resources_fit import (
    allocatable_and_requested,
    pod_score_requests,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

NAME = "NodeResourcesBalancedAllocation"
WEIGHT = 1


@dataclass(frozen=True, slots=True)
class ScoreState:
    resources: tuple[tuple[str, int], ...]  # (name, pod request)
    overcommit: Overcommits = ()  # the policy's, for this pod (model.overcommit)


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState | None:
    requests = pod_score_requests(pod, config.balanced_resources, non_zero=False)
    if config.balanced_skips_best_effort and not any(requests):
        return None
    return ScoreState(
        tuple(zip(config.balanced_resources, requests, strict=True)), config.overcommit
    )


def balanced_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions = []
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fractions.append(min(float(req) / float(alloc), 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / float(len(fractions))
        total = 0.0
        for f in fractions:
            total = total + (f - mean) * (f - mean)
        std = math.sqrt(total / float(len(fractions)))
    return math.trunc((1 - std) * float(MAX_NODE_SCORE))


def score(state: ScoreState, node: NodeInfo) -> int:
    requested = []
    allocatable = []
    for name, request in state.resources:
        alloc, req = allocatable_and_requested(
            node, name, request, use_requested=True, overcommit=state.overcommit
        )
        if alloc == 0:
            requested.append(0)
            allocatable.append(0)
            continue
        requested.append(req)
        allocatable.append(alloc)
    return balanced_score(requested, allocatable)


PLUGIN = Plugin(
    NAME,
    None,
    "balanced_allocation",
    WEIGHT,
    prepare_score=prepare_score,
    score=score,
    normalize=None,
)
