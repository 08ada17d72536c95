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
from policyengine.engine.normalize import normalize
from policyengine.lang.compiler import CompiledPolicy, CompiledRule, Program
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView

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
    views = {info.name: NodeView(info, topology) for info in nodes}
    envs = {name: pod_env.derive(node=view) for name, view in views.items()}
    feasible, infeasible = _filter(policy, nodes, envs, options, errors)
    context.feasible = tuple(snapshot.node(name) for name in feasible)
    scores = _score(policy, feasible, envs, errors)
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
    envs: dict[str, Env],
    options: CycleOptions,
    errors: list[str],
) -> tuple[list[str], dict[str, tuple[Rejection, ...]]]:
    once: dict[int, Rejection | None] = {}
    feasible: list[str] = []
    infeasible: dict[str, tuple[Rejection, ...]] = {}
    for info in nodes:
        env = envs[info.name]
        rejections: list[Rejection] = []
        for index, rule in enumerate(policy.filters):
            if not rule.per_node and index in once:
                rejection = once[index]
            else:
                rejection = _run_filter(rule, env, errors)
                if not rule.per_node:
                    once[index] = rejection
            if rejection is not None:
                rejections.append(rejection)
                if not options.all_filters:
                    break
        if rejections:
            infeasible[info.name] = tuple(rejections)
        else:
            feasible.append(info.name)
    return feasible, infeasible


def _run_filter(rule: CompiledRule, env: Env, errors: list[str]) -> Rejection | None:
    verdict = rule.filter(env)
    if verdict.error is not None:
        errors.append(str(verdict.error))
    if verdict.passed:
        return None
    return Rejection(
        rule.qualified_name, tuple(verdict.reasons), str(verdict.error) if verdict.error else None
    )


def _score(
    policy: CompiledPolicy,
    feasible: list[str],
    node_envs: dict[str, Env],
    errors: list[str],
) -> dict[str, NodeScore]:
    envs = [node_envs[name] for name in feasible]
    raw: dict[str, list[float | None]] = {}
    normalised: dict[str, list[float]] = {}
    for rule in policy.scores:
        values: list[float | None] = []
        once: tuple[float | None] | None = None
        for env in envs:
            if not rule.per_node and once is not None:
                values.append(once[0])
                continue
            result = rule.score(env)
            if result.error is not None:
                errors.append(str(result.error))
            values.append(result.value)
            if not rule.per_node:
                once = (result.value,)
        raw[rule.qualified_name] = values
        normalised[rule.qualified_name] = normalize(rule.normalize or "none", values)
    scores: dict[str, NodeScore] = {}
    for index, name in enumerate(feasible):
        per_rule = {
            rule.qualified_name: normalised[rule.qualified_name][index] for rule in policy.scores
        }
        total = sum(rule.weight * per_rule[rule.qualified_name] for rule in policy.scores)
        scores[name] = NodeScore(
            total=total,
            rules=per_rule,
            raw={rule.qualified_name: raw[rule.qualified_name][index] for rule in policy.scores},
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
