"""One scheduling cycle of kube-scheduler's default profile, run over the model's plugins.

This is the reference the engine and ``policies/kube-default.sched`` are held to: PreFilter
(a node-name restriction or an outright rejection), Filter with the first failing plugin naming
each node's reason, PreScore/Score/NormalizeScore over the feasible nodes, the default weights,
and the FailedScheduling message when nothing fits. Scoring is skipped with a single feasible
node, as kube-scheduler does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyengine.model.fit_error import (
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    NodeStatus,
    fit_error_message,
    preemption_message,
)
from policyengine.model.objects import Pod
from policyengine.model.plugins import (
    DEFAULT_CONFIG,
    FILTER_PLUGINS,
    SCORE_PLUGINS,
    Plugin,
    SchedulerConfig,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo


@dataclass(frozen=True)
class CycleResult:
    pod: Pod
    feasible: tuple[str, ...]
    statuses: Mapping[str, NodeStatus]  # the rejected nodes
    raw_scores: Mapping[str, Mapping[str, int]] = field(
        default_factory=dict
    )  # plugin -> node -> raw
    scores: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # normalised × weight
    totals: Mapping[str, int] = field(default_factory=dict)
    prefilter_message: str | None = None
    message: str | None = None  # FailedScheduling, when nothing fits

    @property
    def top_nodes(self) -> tuple[str, ...]:
        if not self.feasible:
            return ()
        if not self.totals:
            return self.feasible
        best = max(self.totals.values())
        return tuple(n for n in self.feasible if self.totals[n] == best)


def prepare_filters(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig, plugins: Sequence[Plugin]
) -> list[tuple[Plugin, Any]]:
    return [
        (p, p.prepare_filter(pod, snapshot, config))
        for p in plugins
        if p.prepare_filter and p.filter
    ]


def run_filters(states: Sequence[tuple[Plugin, Any]], node: NodeInfo) -> NodeStatus | None:
    """The first failing plugin's status for ``node``, or ``None`` if it passes them all."""
    for plugin, state in states:
        assert plugin.filter is not None
        reasons = plugin.filter(state, node)
        if reasons:
            return NodeStatus(plugin.name, plugin.code(reasons), tuple(reasons))
    return None


def run_cycle(
    pod: Pod,
    snapshot: ClusterSnapshot,
    config: SchedulerConfig = DEFAULT_CONFIG,
    *,
    filter_plugins: Sequence[Plugin] = FILTER_PLUGINS,
    score_plugins: Sequence[Plugin] = SCORE_PLUGINS,
    weights: Mapping[str, int] | None = None,
    score_single_node: bool = False,
    explain_preemption: bool = True,
) -> CycleResult:
    states = prepare_filters(pod, snapshot, config, filter_plugins)
    candidates: Sequence[NodeInfo] = snapshot.nodes
    for plugin, state in states:
        if plugin.prefilter_result is None:
            continue
        result = plugin.prefilter_result(state)
        if result is None:
            continue
        if result.rejection is not None:
            rejected = NodeStatus(plugin.name, UNSCHEDULABLE_AND_UNRESOLVABLE, (result.rejection,))
            all_rejected = {n.name: rejected for n in snapshot.nodes}
            post = preemption_message(pod, snapshot, all_rejected) if explain_preemption else None
            return CycleResult(
                pod,
                (),
                all_rejected,
                prefilter_message=result.rejection,
                message=fit_error_message(
                    snapshot.num_nodes,
                    all_rejected,
                    prefilter_message=result.rejection,
                    postfilter_message=post,
                ),
            )
        if result.node_names is not None:
            candidates = [n for n in candidates if n.name in result.node_names]

    feasible: list[NodeInfo] = []
    statuses: dict[str, NodeStatus] = {}
    for node in candidates:
        status = run_filters(states, node)
        if status is None:
            feasible.append(node)
        else:
            statuses[node.name] = status

    if not feasible:
        post = None
        if explain_preemption:

            def refilter(p: Pod, snap: ClusterSnapshot, n: NodeInfo) -> NodeStatus | None:
                return run_filters(prepare_filters(p, snap, config, filter_plugins), n)

            post = preemption_message(
                pod,
                snapshot,
                statuses,
                refilter,
                absent_nodes_unresolvable=config.prefilter_absent_nodes_unresolvable,
            )
        return CycleResult(
            pod,
            (),
            statuses,
            message=fit_error_message(snapshot.num_nodes, statuses, postfilter_message=post),
        )

    names = [n.name for n in feasible]
    if len(feasible) == 1 and not score_single_node:
        return CycleResult(pod, tuple(names), statuses)

    weights = weights or {p.name: p.weight for p in score_plugins}
    raw: dict[str, dict[str, int]] = {}
    final: dict[str, dict[str, int]] = {}
    totals = dict.fromkeys(names, 0)
    for plugin in score_plugins:
        assert plugin.prepare_score is not None and plugin.score is not None
        state = plugin.prepare_score(pod, snapshot, feasible, config)
        if state is None:
            values = [0] * len(feasible)
            raw[plugin.name] = dict(zip(names, values, strict=True))
        else:
            values = [plugin.score(state, n) for n in feasible]
            raw[plugin.name] = dict(zip(names, values, strict=True))
            if plugin.normalize is not None:
                values = plugin.normalize(state, names, values)
        weight = weights.get(plugin.name, plugin.weight)
        final[plugin.name] = {n: v * weight for n, v in zip(names, values, strict=True)}
        for n, v in final[plugin.name].items():
            totals[n] += v
    return CycleResult(pod, tuple(names), statuses, raw, final, totals)
