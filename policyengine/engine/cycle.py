"""One scheduling cycle: the governing policy's filters, then its scores, then the choice.

The cycle reads one immutable snapshot and never changes it. Filters run on every node
(no sampling); rules that read nothing per node run once per pod. Scores run on the feasible
nodes, each rule's values are normalised over them (``normalize``), weighted and summed; the
highest total wins and ties are broken by a seeded random choice among the tied nodes in name
order, so a run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from policyengine.engine.classcache import CACHE, ClassEntry, policy_plan
from policyengine.engine.decision import Decision, Rejection, RejectionTable, ScoreTable
from policyengine.engine.gpu_placement import choose_devices
from policyengine.engine.histogram import histogram_line
from policyengine.engine.nodeviews import node_frame
from policyengine.engine.normalize import normalize_array
from policyengine.engine.overcommit import policy_config
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
    # Gangs: only these nodes may be chosen (one topology domain); the others are rejected
    # after filtering, with ``candidates_reason``. None: every node.
    candidates: frozenset[str] | None = None
    candidates_reason: str = "node(s) outside the gang's topology domain"


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
    config = context.config = policy_config(policy, pod, config)
    plan = policy_plan(policy)
    frame = node_frame(snapshot, topology)
    refs = (program, policy, topology, config)
    entry = CACHE.checkout(refs, plan, pod, pod_view, context, frame)
    errors: list[str] = []
    batch = NodeBatch(pod_env, {"node": frame.views})
    feasible_mask, infeasible = _filter(entry, batch, context, options, errors)
    if options.candidates is not None:
        feasible_mask, infeasible = _outside(entry.names, feasible_mask, infeasible, options)
    rows = np.flatnonzero(feasible_mask)
    context.feasible = _pick(nodes, rows)
    names = entry.names[rows]
    feasible = tuple(names.tolist())
    CACHE.score_columns(entry, pod_view, context)
    totals, scores = _score(entry, rows, feasible, batch, context, errors)
    CACHE.checkin(entry)
    order = np.lexsort((entry.ranks[rows], -totals))
    ranking = tuple(names[order].tolist())
    chosen = _select(ranking, totals[order], rng)
    if chosen is None:
        message = histogram_line(len(nodes), infeasible)
    else:
        best = float(totals[order[0]]) if policy.scores else 0
        message = f"scheduled on {chosen} by policy {policy.name} (score {_fmt(best)})"
    return Decision(
        pod=pod.key,
        policy=policy.name,
        version=program.version,
        node=chosen,
        num_nodes=len(nodes),
        feasible=feasible,
        infeasible=infeasible,
        scores=scores,
        ranking=ranking,
        message=message,
        errors=tuple(dict.fromkeys(errors)),
        gpu_devices=choose_devices(snapshot, chosen, pod) if chosen is not None else (),
    )


def _outside(
    names: np.ndarray,
    feasible: np.ndarray,
    infeasible: Mapping[str, tuple[Rejection, ...]],
    options: CycleOptions,
) -> tuple[np.ndarray, Mapping[str, tuple[Rejection, ...]]]:
    """Feasible nodes outside ``options.candidates`` become infeasible (rule ``gang_domain``)."""
    wanted = options.candidates or frozenset()
    inside = np.fromiter((name in wanted for name in names.tolist()), bool, len(names))
    out = feasible & ~inside
    if not out.any():
        return feasible, infeasible
    extra = names[out].tolist()
    rejection = (Rejection("gang_domain", (options.candidates_reason,)),)

    def build() -> dict[str, tuple[Rejection, ...]]:
        return {**infeasible, **dict.fromkeys(extra, rejection)}

    return feasible & inside, RejectionTable(build, len(infeasible) + len(extra))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _pick(nodes: Sequence[NodeInfo], rows: np.ndarray) -> tuple[NodeInfo, ...]:
    if len(rows) == 0:
        return ()
    if len(rows) == len(nodes):
        return tuple(nodes)
    picked = itemgetter(*rows.tolist())(nodes)
    return picked if len(rows) > 1 else (picked,)


def _filter(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    options: CycleOptions,
    errors: list[str],
) -> tuple[np.ndarray, Mapping[str, tuple[Rejection, ...]]]:
    """Each filter over the nodes still in the running, rule by rule, re-evaluating only the
    rows whose cached verdict is not valid (``classcache``).

    Without ``all_filters`` a node leaves the running at its first rejection, so every node
    sees exactly the rules it would see node by node. Errors are reported in node order, then
    rule order, as a node-by-node loop would meet them.
    """
    size = batch.size
    alive = np.ones(size, bool)
    dead_at = np.full(size, -1, np.int64)
    failed: list[np.ndarray] = []
    found: list[tuple[int, int, str]] = []
    for index, (plan, column) in enumerate(zip(entry.plan.filters, entry.filters, strict=True)):
        if not alive.any():
            break
        key = _STALE_KEY if plan.always else plan.key(context)
        if key is _STALE_KEY or column.key != key:
            column.invalidate()
            column.key = key
        rows = np.flatnonzero(alive & ~column.valid(entry.frame))
        if len(rows):
            wanted = rows.tolist()
            sub = batch if len(wanted) == size else batch.take(wanted)
            column.store(rows, plan.rule, _filter_many(plan.rule, sub), entry.frame)
        hit = alive & column.errored
        if hit.any():
            for row in np.flatnonzero(hit).tolist():
                found.append((row, index, column.error[row]))
        fail = alive & ~column.passed
        if options.all_filters:
            failed.append(fail)
            continue
        dead_at[fail] = index
        alive &= column.passed
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    if options.all_filters:
        return _all_rejections(entry, failed, size)
    return alive, _first_rejections(entry, dead_at)


def _first_rejections(
    entry: ClassEntry, dead_at: np.ndarray
) -> RejectionTable | dict[str, tuple[Rejection, ...]]:
    rows = np.flatnonzero(dead_at >= 0)
    if not len(rows):
        return {}
    # Copied now: the columns change with the next pod of the class, the table is read later.
    names = entry.names[rows]
    rejections = np.empty(len(rows), object)
    rules = dead_at[rows]
    for index in np.unique(rules).tolist():
        at = rules == index
        rejections[at] = entry.filters[index].rejection[rows[at]]

    def build() -> dict[str, tuple[Rejection, ...]]:
        return {name: (r,) for name, r in zip(names.tolist(), rejections.tolist(), strict=True)}

    return RejectionTable(build, len(rows))


def _all_rejections(
    entry: ClassEntry, failed: list[np.ndarray], size: int
) -> tuple[np.ndarray, dict[str, tuple[Rejection, ...]]]:
    any_failed = np.zeros(size, bool)
    for fail in failed:
        any_failed |= fail
    infeasible: dict[str, tuple[Rejection, ...]] = {}
    for row in np.flatnonzero(any_failed).tolist():
        infeasible[entry.names[row]] = tuple(
            entry.filters[index].rejection[row] for index, fail in enumerate(failed) if fail[row]
        )
    return ~any_failed, infeasible


def _filter_many(rule: CompiledRule, batch: NodeBatch) -> list[FilterVerdict]:
    if rule.filter_many is not None:
        return rule.filter_many(batch)
    return [rule.filter(batch.env_at(i)) for i in range(batch.size)]


def _score(
    entry: ClassEntry,
    rows: np.ndarray,
    feasible: tuple[str, ...],
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
) -> tuple[np.ndarray, ScoreTable]:
    """Each score rule's raw values over the feasible nodes (cached rows reused), normalised
    over them every cycle, weighted and summed in rule order as a node-by-node sum would."""
    totals = np.zeros(len(rows))
    names: list[str] = []
    raw: list[np.ndarray] = []
    scored: list[np.ndarray] = []
    normalised: list[np.ndarray] = []
    feasible_mask = np.zeros(batch.size, bool)
    feasible_mask[rows] = True
    for plan, column in zip(entry.plan.scores, entry.scores, strict=True):
        rule = plan.rule
        key = _STALE_KEY if plan.always else plan.key(context)
        if key is _STALE_KEY or column.key != key:
            column.invalidate()
            column.key = key
        todo = np.flatnonzero(feasible_mask & ~column.valid(entry.frame))
        if len(todo):
            wanted = todo.tolist()
            sub = batch if len(wanted) == batch.size else batch.take(wanted)
            if rule.score_many is not None:
                results = rule.score_many(sub)
            else:
                results = [rule.score(sub.env_at(i)) for i in range(sub.size)]
            column.store(todo, results, entry.frame)
        hit = column.errored[rows]
        if hit.any():
            errors.extend(column.error[rows[hit]].tolist())
        values = column.values[rows]
        present = column.scored[rows]
        norm = normalize_array(rule.normalize or "none", values, present)
        totals = totals + rule.weight * norm
        names.append(rule.qualified_name)
        raw.append(values)
        scored.append(present)
        normalised.append(norm)
    return totals, ScoreTable(feasible, totals, names, normalised, raw, scored)


_STALE_KEY = object()


def _select(ranking: tuple[str, ...], totals: np.ndarray, rng: random.Random) -> str | None:
    """The best node; ties (a prefix of the ranking) broken by ``rng`` as a list would be."""
    if not ranking:
        return None
    tied = int(np.count_nonzero(totals == totals[0]))
    return ranking[0] if tied == 1 else rng.choice(list(ranking[:tied]))
