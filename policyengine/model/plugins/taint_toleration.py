"""TaintToleration: NoSchedule/NoExecute taints the pod does not tolerate exclude the node;
each untolerated PreferNoSchedule taint lowers the score (normalised in reverse)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.model.normalize import default_normalize
from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.taints import (
    Toleration,
    count_intolerable_prefer_no_schedule,
    first_untolerated,
    prefer_no_schedule_tolerations,
)

NAME = "TaintToleration"
WEIGHT = 3


def reason(taint_key: str, taint_value: str) -> str:
    return f"node(s) had untolerated taint {{{taint_key}: {taint_value}}}"


@dataclass(frozen=True, slots=True)
class FilterState:
    tolerations: tuple[Toleration, ...]


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    return FilterState(pod.tolerations)


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    taint = first_untolerated(node.node.taints, state.tolerations)
    if taint is None:
        return []
    return [reason(taint.key, taint.value)]


@dataclass(frozen=True, slots=True)
class ScoreState:
    tolerations: tuple[Toleration, ...]


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState:
    return ScoreState(prefer_no_schedule_tolerations(pod.tolerations))


def score(state: ScoreState, node: NodeInfo) -> int:
    return count_intolerable_prefer_no_schedule(node.node.taints, state.tolerations)


def normalize(state: ScoreState, node_names: Sequence[str], scores: list[int]) -> list[int]:
    return default_normalize(scores, reverse=True)


PLUGIN = Plugin(
    NAME,
    "taint_toleration",
    "taint_toleration",
    WEIGHT,
    prepare_filter=prepare_filter,
    filter=filter,
    prepare_score=prepare_score,
    score=score,
    normalize=normalize,
)
