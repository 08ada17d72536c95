"""One scheduling cycle decided by the reference evaluator alone, and how it differs from the
engine's.

A faster evaluator is only worth its speed if it decides exactly as the reference evaluator
that ``explain`` uses (``policyengine.lang.reference``). ``reference_decision`` runs one cycle
with nothing but that evaluator — every rule walked over its syntax tree, on every node, with
a fresh context — and ``differences`` compares it with the engine's decision for the same pod
against the same snapshot: the same feasible nodes (and the same first rejection, with its
reasons, on the others), the same raw, normalised and total scores, and the same chosen node
when the tie-break rng starts from the same state. It is deliberately plain and slow: the
benchmarks' agreement check and the fast path's property test both use it.

The governing policy is picked by the program's compiled ``match``: the check is about
filter and score rules, the part the fast path changes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from policyengine.engine.decision import Decision
from policyengine.engine.gpu_placement import device_choice_for
from policyengine.engine.normalize import normalize
from policyengine.engine.overcommit import policy_config
from policyengine.engine.profiles import profile_for
from policyengine.engine.selection import pick_by_key
from policyengine.lang.compiler import Program
from policyengine.lang.reference import evaluate, reference_filter, reference_score
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.kept import nothing_kept
from policyengine.schedlib.views import NodeView, PodView


@dataclass(frozen=True)
class ReferenceDecision:
    policy: str | None
    feasible: tuple[str, ...]
    first_rejection: dict[str, str]  # infeasible node -> the first filter rule that rejected it
    raw: dict[str, dict[str, float | None]]  # node -> rule -> value before normalisation
    normalised: dict[str, dict[str, float]]
    totals: dict[str, float]
    node: str | None
    # infeasible node -> the reasons of its first rejection
    first_reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)


def reference_decision(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    candidates: frozenset[str] | None = None,
    candidates_reason: str = "node(s) outside the gang's topology domain",
    workload: Any = None,
) -> ReferenceDecision:
    """One cycle for ``pod`` with the reference evaluator only (module docstring), with none
    of the caches the builtins keep across cycles (``schedlib.kept``): what it decides is read
    from ``snapshot`` alone, not from sums the fast path kept.

    ``candidates``: a gang member's cycle (``CycleOptions.candidates``): a node passing every
    filter outside them is rejected by ``gang_domain`` with ``candidates_reason``."""
    with nothing_kept():
        return _decide(
            program, pod, snapshot, rng, topology, config, candidates, candidates_reason, workload
        )


def _decide(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    topology: TopologyConfig,
    config: SchedulerConfig,
    candidates: frozenset[str] | None,
    candidates_reason: str,
    workload: Any,
) -> ReferenceDecision:
    pod_view = PodView(pod)
    context = CycleContext(snapshot, pod_view, config, topology)
    policy = program.governing_policy(profile_for(program, pod), Env({"pod": pod_view}, context))
    if policy is None:
        return ReferenceDecision(None, (), {}, {}, {}, {}, None)
    if pod.resource_claims:  # as ``engine.cycle``: not placed, no node evaluated
        return ReferenceDecision(policy.name, (), {}, {}, {}, {}, None)
    context.config = policy_config(policy, pod, config)
    context.workload = workload
    context.device_choice = device_choice_for(policy, pod, Env({"pod": pod_view}, context))
    envs = {
        info.name: Env({"pod": pod_view, "node": NodeView(info, topology)}, context)
        for info in snapshot.nodes
    }
    feasible: list[str] = []
    rejected: dict[str, str] = {}
    reasons: dict[str, tuple[str, ...]] = {}
    for name, env in envs.items():
        for rule in policy.filters:
            verdict = reference_filter(rule, env)
            if not verdict.passed:
                rejected[name] = rule.qualified_name
                reasons[name] = tuple(verdict.reasons)
                break
        else:
            if candidates is not None and name not in candidates:
                rejected[name] = "gang_domain"
                reasons[name] = (candidates_reason,)
                continue
            feasible.append(name)
    context.feasible = tuple(snapshot.node(name) for name in feasible)
    raw: dict[str, dict[str, float | None]] = {name: {} for name in feasible}
    normalised: dict[str, dict[str, float]] = {name: {} for name in feasible}
    for rule in policy.scores:
        values = [reference_score(rule, envs[name]).value for name in feasible]
        for name, value, scaled in zip(
            feasible, values, normalize(rule.normalize or "none", values), strict=True
        ):
            raw[name][rule.qualified_name] = value
            normalised[name][rule.qualified_name] = scaled
    totals = {
        name: sum(rule.weight * normalised[name][rule.qualified_name] for rule in policy.scores)
        for name in feasible
    }
    ranking = sorted(feasible, key=lambda name: (-totals[name], name))
    chosen = None
    if ranking:
        tied = [name for name in ranking if totals[name] == totals[ranking[0]]]
        select = policy.select
        if select is not None and len(tied) > 1 and program.checked is not None:
            checked = program.checked
            chosen = pick_by_key(
                select.mode,
                [(name, envs[name]) for name in tied],
                lambda env: evaluate(select.source.key, env, checked),  # type: ignore[arg-type]
                rng,
            )
        else:
            chosen = tied[0] if len(tied) == 1 else rng.choice(tied)
    return ReferenceDecision(
        policy.name, tuple(feasible), rejected, raw, normalised, totals, chosen, reasons
    )


def differences(engine: Decision, reference: ReferenceDecision) -> list[str]:
    """What the engine decided differently from the reference; empty when they agree."""
    problems: list[str] = []
    if engine.policy != reference.policy:
        problems.append(f"policy {engine.policy} != reference {reference.policy}")
    if set(engine.feasible) != set(reference.feasible):
        extra = sorted(set(engine.feasible) - set(reference.feasible))[:3]
        missing = sorted(set(reference.feasible) - set(engine.feasible))[:3]
        problems.append(f"feasible sets differ (engine only: {extra}, reference only: {missing})")
    for name, rule in reference.first_rejection.items():
        got = engine.infeasible.get(name)
        if got and got[0].rule != rule:
            problems.append(f"{name} rejected by {got[0].rule}, reference {rule}")
            break
        wanted = reference.first_reasons.get(name)
        if got and wanted is not None and got[0].reasons != wanted:
            problems.append(f"{name}: reasons {got[0].reasons} != reference {wanted}")
            break
    for name in reference.feasible:
        score = engine.scores.get(name)
        if score is None:
            continue
        if dict(score.raw) != reference.raw[name]:
            problems.append(f"{name}: raw scores {dict(score.raw)} != {reference.raw[name]}")
            break
        if dict(score.rules) != reference.normalised[name]:
            problems.append(
                f"{name}: normalised {dict(score.rules)} != {reference.normalised[name]}"
            )
            break
        if score.total != reference.totals[name]:
            problems.append(f"{name}: total {score.total} != {reference.totals[name]}")
            break
    if engine.node != reference.node:
        problems.append(f"chose {engine.node}, reference {reference.node}")
    return problems
