"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter; preferred terms score.

PreFilter: when every required term pins ``metadata.name In [...]`` only those nodes are looked
at, and terms whose names cannot intersect reject the pod outright. Score: the summed weights
of the preferred terms a node matches, normalised by the maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.model.node_selectors import (
    CompiledPreferredTerms,
    RequiredNodeAffinity,
    compile_preferred,
    required_node_affinity,
)
from policyengine.model.normalize import default_normalize
from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin, PreFilterResult
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

NAME = "NodeAffinity"
WEIGHT = 2
REASON = "node(s) didn't match Pod's node affinity/selector"
REASON_CONFLICT = "pod affinity terms conflict"


def pod_required_affinity(pod: Pod) -> RequiredNodeAffinity:
    na = pod.node_affinity
    return required_node_affinity(pod.node_selector, na.required if na else None)


@dataclass(frozen=True, slots=True)
class FilterState:
    required: RequiredNodeAffinity
    skip: bool
    prefilter: PreFilterResult | None


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    na = pod.node_affinity
    required = na.required if na else None
    state_required = pod_required_affinity(pod)
    skip = required is None and pod.node_selector is None
    prefilter = None
    names = state_required.named_nodes
    if names is not None:
        prefilter = (
            PreFilterResult(node_names=names)
            if names
            else PreFilterResult(rejection=REASON_CONFLICT)
        )
    return FilterState(state_required, skip, prefilter)


def prefilter_result(state: FilterState) -> PreFilterResult | None:
    return state.prefilter


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    if state.required.matches(node.node.labels, node.node.name):
        return []
    return [REASON]


@dataclass(frozen=True, slots=True)
class ScoreState:
    preferred: CompiledPreferredTerms


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState | None:
    na = pod.node_affinity
    if na is None or not na.has_preferred:
        return None
    return ScoreState(compile_preferred(na.preferred))


def score(state: ScoreState, node: NodeInfo) -> int:
    return state.preferred.score(node.node.labels, node.node.name)


def normalize(state: ScoreState, node_names: Sequence[str], scores: list[int]) -> list[int]:
    return default_normalize(scores)


PLUGIN = Plugin(
    NAME,
    "node_affinity",
    "node_affinity",
    WEIGHT,
    prepare_filter=prepare_filter,
    filter=filter,
    prepare_score=prepare_score,
    score=score,
    normalize=normalize,
    prefilter_result=prefilter_result,
)
