"""The shape every kube-scheduler plugin module has, and the status codes of filter reasons.

A plugin is a few pure functions (no plugin object holds state between pods):

* ``prepare_filter(pod, snapshot, config) -> state`` once per pod (PreFilter),
* ``filter(state, node_info) -> list[str]`` per node: the failure reasons, empty = passes,
* ``prepare_score(pod, snapshot, feasible, config) -> state | None`` once per pod (PreScore;
  ``None`` means kube's *Skip*: every node scores 0 and nothing is normalised),
* ``score(state, node_info) -> int`` per feasible node: the raw score before NormalizeScore,
* ``normalize(state, node_names, scores) -> list[int]`` over the feasible nodes.

Reasons are kube's exact strings. Whether a failure can be resolved by preemption
(``Unschedulable``) or not (``UnschedulableAndUnresolvable``) is a property of the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from policyengine.model.objects import Pod
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

UNSCHEDULABLE = "Unschedulable"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """What a PreFilter decided for the whole cycle (only NodeAffinity produces one).

    ``node_names``: only these nodes are evaluated (``None`` = all). ``rejection``: the pod
    fits nowhere, with this message.
    """

    node_names: frozenset[str] | None = None
    rejection: str | None = None


PrepareFilter = Callable[[Pod, ClusterSnapshot, SchedulerConfig], Any]
Filter = Callable[[Any, NodeInfo], list[str]]
PrepareScore = Callable[[Pod, ClusterSnapshot, Sequence[NodeInfo], SchedulerConfig], Any]
Score = Callable[[Any, NodeInfo], int]
Normalize = Callable[[Any, Sequence[str], list[int]], list[int]]


@dataclass(frozen=True, slots=True)
class Plugin:
    """One kube-scheduler plugin as functions; ``None`` where it has no such extension point."""

    name: str  # kube's plugin name, e.g. "NodeResourcesFit"
    filter_rule: str | None  # snake_case rule name in kube-default.sched
    score_rule: str | None
    weight: int  # default score weight (0 = not a score plugin)
    prepare_filter: PrepareFilter | None = None
    filter: Filter | None = None
    prepare_score: PrepareScore | None = None
    score: Score | None = None
    normalize: Normalize | None = None
    prefilter_result: Callable[[Any], PreFilterResult | None] | None = None
    resolvable_reasons: frozenset[str] = frozenset()  # reasons preemption might fix
    always_resolvable: bool = False  # every failure of this plugin might be fixed by preemption

    def code(self, reasons: Sequence[str]) -> str:
        """kube's status code for this plugin's failure."""
        if self.always_resolvable or (
            reasons and all(r in self.resolvable_reasons for r in reasons)
        ):
            return UNSCHEDULABLE
        return UNSCHEDULABLE_AND_UNRESOLVABLE
