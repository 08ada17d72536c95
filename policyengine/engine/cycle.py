"""One scheduling cycle: the governing policy's filters, then its scores, then the choice.

The cycle reads one immutable snapshot and never changes it. Filters run on every node
(no sampling); rules that read nothing per node run once per pod. Scores run on the feasible
nodes, each rule's values are normalised over them (``normalize``), weighted and summed; the
highest total wins and ties are broken by a seeded random choice among the tied nodes in name
order, so a run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.engine.decision import Decision, NodeScore, Rejection
from policyengine.engine.histogram import histogram_line
from policyengine.engine.nodeviews import node_views
from policyengine.engine.normalize import normalize
from policyengine.lang.compiler import CompiledPolicy, CompiledRule, Program
from policyengine.lang.runtime import Env, FilterVerdict, NodeBatch
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView

DEFAULT_PROFILE = "policyengine"


@dataclass(frozen=True)
class CycleOptions:
    """``all_filters``: evaluate every filter on every node (what ``filter`` and ``explain``
    show); otherwise stop at a node's first rejection, as kube-scheduler does."""

    all_filters: bool = True
    scheduler_name: str | None = None


def profile_for(program: Program, pod: Pod, scheduler_name: str | None = None) -> str:
    """The profile a pod runs under: its own schedulerName when a profile has that name."""
    if scheduler_name:
        return scheduler_name
    if pod.scheduler_name in program.profiles:
        return pod.scheduler_name
    if DEFAULT_PROFILE in program.profiles:
        return DEFAULT_PROFILE
    return next(iter(program.profiles), DEFAULT_PROFILE)


def governing_policy(
    program: Program, pod_view: PodView, context: CycleContext, profile: str
) -> CompiledPolicy | None:
    return program.governing_policy(profile, Env({"pod": pod_view}, context))


def schedule(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    options: CycleOptions = CycleOptions(),
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Decision:
    pod_view = PodView(pod)
    context = CycleContext(snapshot, pod_view, config, topology)
    pod_env = Env({"pod": pod_view}, context)
    profile = profile_for(program, pod, options.scheduler_name)
    policy = program.governing_policy(profile, pod_env)
    nodes = snapshot.nodes
    if policy is None:
        return Decision(
            pod=pod.key,
            policy=None,
            version=program.version,
            node=None,
            num_nodes=len(nodes),
            message=f"no policy of profile {profile} matches the pod",
        )
    errors: list[str] = []
    batch = NodeBatch(pod_env, {"node": node_views(snapshot, topology)})
    rows, infeasible = _filter(policy, nodes, batch, options, errors)
    feasible = [nodes[row].name for row in rows]
    context.feasible = tuple(nodes[row] for row in rows)
    scores = _score(policy, feasible, batch.take(rows), errors)
    ranking = tuple(sorted(feasible, key=lambda name: (-scores[name].total, name)))
    chosen = _select(ranking, scores, rng)
    if chosen is None:
        message = histogram_line(len(nodes), infeasible)
    else:
        message = (
            f"scheduled on {chosen} by policy {policy.name} (score {_fmt(scores[chosen].total)})"
        )
    return Decision(
        pod=pod.key,
        policy=policy.name,
        version=program.version,
        node=chosen,
        num_nodes=len(nodes),
        feasible=tuple(feasible),
        infeasible=infeasible,
        scores=scores,
        ranking=ranking,
        message=message,
        errors=tuple(dict.fromkeys(errors)),
    )


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _filter(
    policy: CompiledPolicy,
    nodes: Sequence[NodeInfo],
    batch: NodeBatch,
    options: CycleOptions,
    errors: list[str],
) -> tuple[list[int], dict[str, tuple[Rejection, ...]]]:
    """Each filter over all the nodes still in the running, rule by rule.

    Without ``all_filters`` a node leaves the running at its first rejection, so every node
    sees exactly the rules it would see node by node. Errors are reported in node order, then
    rule order, as a node-by-node loop would meet them.
    """
    rejections: dict[int, list[Rejection]] = {}
    found: list[tuple[int, int, str]] = []
    alive: list[int] = list(range(len(nodes)))
    for index, rule in enumerate(policy.filters):
        if not alive:
            break
        sub = batch if len(alive) == batch.size else batch.take(alive)
        verdicts = _filter_many(rule, sub)
        made: dict[tuple[tuple[str, ...], object], Rejection] = {}
        survivors: list[int] = []
        for row, verdict in zip(alive, verdicts, strict=True):
            if verdict.passed and verdict.error is None:
                survivors.append(row)
                continue
            if verdict.error is not None:
                found.append((row, index, str(verdict.error)))
                if verdict.passed:
                    survivors.append(row)
                    continue
            # Thousands of nodes fail for the same reasons: one (frozen) Rejection serves them.
            key = (verdict.reasons, verdict.error)
            rejection = made.get(key)
            if rejection is None:
                rejection = made[key] = _rejection(rule, verdict)
            rejections.setdefault(row, []).append(rejection)
            if options.all_filters:
                survivors.append(row)
        if options.all_filters:
            continue
        alive = survivors
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    feasible = [row for row in range(len(nodes)) if row not in rejections]
    infeasible = {nodes[row].name: tuple(rejections[row]) for row in sorted(rejections)}
    return feasible, infeasible


def _filter_many(rule: CompiledRule, batch: NodeBatch) -> list[FilterVerdict]:
    if rule.filter_many is not None:
        return rule.filter_many(batch)
    return [rule.filter(batch.env_at(i)) for i in range(batch.size)]


def _rejection(rule: CompiledRule, verdict: FilterVerdict) -> Rejection:
    return Rejection(
        rule.qualified_name, tuple(verdict.reasons), str(verdict.error) if verdict.error else None
    )


def _score(
    policy: CompiledPolicy,
    feasible: list[str],
    batch: NodeBatch,
    errors: list[str],
) -> dict[str, NodeScore]:
    raw: dict[str, list[float | None]] = {}
    normalised: dict[str, list[float]] = {}
    for rule in policy.scores:
        if rule.score_many is not None:
            results = rule.score_many(batch)
        else:
            results = [rule.score(batch.env_at(i)) for i in range(batch.size)]
        values: list[float | None] = []
        for result in results:
            if result.error is not None:
                errors.append(str(result.error))
            values.append(result.value)
        raw[rule.qualified_name] = values
        normalised[rule.qualified_name] = normalize(rule.normalize or "none", values)
    names = [rule.qualified_name for rule in policy.scores]
    weights = [rule.weight for rule in policy.scores]
    raw_columns = [raw[name] for name in names]
    normal_columns = [normalised[name] for name in names]
    scores: dict[str, NodeScore] = {}
    for index, node in enumerate(feasible):
        per_rule = {name: column[index] for name, column in zip(names, normal_columns, strict=True)}
        total = sum(weight * per_rule[name] for name, weight in zip(names, weights, strict=True))
        scores[node] = NodeScore(
            total=total,
            rules=per_rule,
            raw={name: column[index] for name, column in zip(names, raw_columns, strict=True)},
        )
    return scores


def _select(
    ranking: tuple[str, ...], scores: dict[str, NodeScore], rng: random.Random
) -> str | None:
    if not ranking:
        return None
    best = scores[ranking[0]].total
    tied = [name for name in ranking if scores[name].total == best]
    return tied[0] if len(tied) == 1 else rng.choice(tied)
