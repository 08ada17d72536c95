"""One scheduling cycle: the governing policy's filters, then its scores, then the choice.

The cycle reads one immutable snapshot and never changes it. Filters run on every node
(no sampling); rules that read nothing per node run once per pod. Scores run on the feasible
nodes, each rule's values are normalised over them (``normalize``), weighted and summed; the
highest total wins and ties are broken by a seeded random choice among the tied nodes in name
order, so a run is reproducible.

Pods of one class (the same filter share keys: ``fastpath.sharekeys``) mostly meet a cluster
that changed in a few rows since the last of them: the pods placed meanwhile. Such a cycle
(first rejection only) runs the incremental pass (``fastpath.incremental``) from the class's
last one; whenever that pass gives up, the cycle runs the full pass (``fastpath.fullpass``), as
the first pod of a class does. The choice never sorts the ranking unless it is read
(``Names``): it needs just the best rows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from operator import itemgetter
from typing import Any

import numpy as np

from policyengine.engine.absent_nodes import reported
from policyengine.engine.decision import (
    Decision,
    Names,
    Rejection,
    RejectionTable,
    ScoreTable,
)
from policyengine.engine.fastpath import fullpass, governors, incremental
from policyengine.engine.fastpath.classes import ClassCache, ClassEntry
from policyengine.engine.fastpath.columns import next_stamp
from policyengine.engine.fastpath.idle import (
    IdleTests,
    WithIdleRules,
    idle_tests,
    unscored,
    zero_at,
)
from policyengine.engine.fastpath.nodeviews import Frame, node_frame
from policyengine.engine.fastpath.sharekeys import PolicyPlan, policy_plan
from policyengine.engine.gpu_placement import choose_devices, device_choice_for
from policyengine.engine.histogram import histogram_line
from policyengine.engine.overcommit import policy_config
from policyengine.engine.profiles import profile_for
from policyengine.engine.selection import pick_by_key, pick_by_values
from policyengine.engine.volumes import pod_volumes
from policyengine.lang.compiler import CompiledSelect, Program
from policyengine.lang.evaluators import NodeBatch
from policyengine.lang.runtime import Env
from policyengine.model.gpu_devices import Grant
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.resources import share_requests
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView


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
    # Another scheduler allocates the pod's dynamic resource claims (the extender behind
    # kube-scheduler): the policy decides the rest. Otherwise such a pod is not placed.
    claims_allocated_elsewhere: bool = False
    # What cycles of one run share (a simulation, a scheduler, an extender: each owns one),
    # so a pod's class meets its columns again. None: nothing is kept between calls.
    cache: ClassCache | None = field(default=None, compare=False, repr=False)
    # The pods learned GPU shapes are drawn from (``model.fragmentation.Workload``: a replay's
    # arrivals so far); None: the GPU pods running in the snapshot.
    workload: Any = None


def schedule(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    options: CycleOptions = CycleOptions(),
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Decision:
    """One scheduling cycle: ``pod`` decided on ``snapshot`` by the policy that governs it.

    The stages are kube-scheduler's: filter every node, score the feasible ones, choose the
    best total (ties by ``rng``). Each of the first two runs incrementally when it can — from
    the last cycle of the pod's class in ``options.cache``, looking again only at the rows
    that changed — and over every row otherwise (``engine.fastpath`` is the map). The snapshot
    is only read; the decision names the node, or says why none fits.
    """
    pod_view = PodView(pod)
    context = CycleContext(snapshot, pod_view, config, topology)
    pod_env = Env({"pod": pod_view}, context)
    profile = profile_for(program, pod, options.scheduler_name)
    classes = options.cache if options.cache is not None else ClassCache()
    class_key = classes.class_of(pod)
    policy = governors.governing_policy(program, profile, pod_env, classes, class_key)
    # The node count, not ``snapshot.nodes``: the tuple of a snapshot derived by an assume
    # is built when read (a copy of 5,000 references), and a steady cycle reads rows only.
    num_nodes = len(snapshot)
    if policy is None:
        return Decision(
            pod=pod.key,
            policy=None,
            version=program.version,
            node=None,
            num_nodes=num_nodes,
            message=f"no policy of profile {profile} matches the pod",
        )
    if pod.resource_claims and not options.claims_allocated_elsewhere:
        # Devices only kube-scheduler's DynamicResources plugin allocates (``Pod.dra_message``).
        return Decision(
            pod.key, policy.name, program.version, None, num_nodes, message=pod.dra_message
        )
    config = context.config = policy_config(policy, pod, config)
    context.workload = options.workload
    context.device_choice = device_choice_for(policy, pod, pod_env)
    full_plan = policy_plan(policy)
    frame = node_frame(snapshot, topology)
    context.views = frame.views
    cache_refs = classes.refs(program, policy, topology, config)
    context.alike = classes.alike(class_key, config)
    if context.alike is not None:
        # A class's pods have equal containers, init containers, pod-level requests and
        # overhead (``pod_class`` compares them): their effective requests are computed once.
        share_requests(pod, context.alike.setdefault(_REQUESTS_MEMO, {}))
    idle = idle_tests(full_plan)
    plan = idle.active(pod_env)  # the full plan less the rules this pod leaves idle
    entry = classes.checkout(cache_refs, plan, pod, pod_view, context, frame, class_key)
    errors: list[str] = []
    batch = NodeBatch(pod_env, {"node": frame.views})
    state_key: Hashable | None = None
    state: incremental.State | None = None
    if not options.all_filters:  # ``filter`` and ``explain`` want every rejection: no state
        state_key = classes.state_key(entry)
        if state_key is not None:
            state = classes.take_state(state_key, cache_refs)

    # Filter: incrementally from the class's last cycle, else over every row.
    feasible_mask, infeasible, first_rejected_by, changed = _filter_stage(
        entry, batch, context, state, errors, options
    )
    inside: np.ndarray | None = None
    if options.candidates is not None:
        inside = _inside(entry.names, options.candidates)
        feasible_mask, infeasible = _outside(entry.names, feasible_mask, infeasible, options)
    count = int(np.count_nonzero(feasible_mask))
    context.feasible = _FeasibleNodes(snapshot, feasible_mask, count)

    # Score: incrementally where the filter stage was, else every feasible row.
    classes.score_columns(entry, pod_view, context)
    scored = None
    if state is not None and changed is not None:
        changed.update(incremental.moved_inside(state.inside, inside))
        scoring = incremental.scoring_state(state, entry, changed, feasible_mask, inside)
        scored = incremental.score_rows(entry, batch, context, *scoring, feasible_mask)
    if scored is None:
        scored = fullpass.score_all(entry, feasible_mask, batch, context, errors)
    totals, stats, normalisers = scored
    rows = cache(partial(np.flatnonzero, feasible_mask))  # most decisions never read them
    table = _score_table(entry, full_plan, plan, idle, frame, rows, count, totals, normalisers)
    classes.checkin(entry)
    if state_key is not None and first_rejected_by is not None:
        kept = incremental.State(
            frame.log,
            frame.seq,
            frame.size,
            next_stamp(),
            tuple(entry.filters),
            tuple(column.epoch for column in entry.filters),
            first_rejected_by,
            feasible_mask,
            tuple(entry.scores),
            tuple(column.epoch for column in entry.scores),
            stats,
            totals,
            inside,
        )
        kept.others = incremental.others(state, kept)
        classes.put_state(state_key, cache_refs, kept, 3 * frame.size * (1 + len(kept.others)))

    # Choose.
    if policy.select is not None and count > 1:
        chosen, best = _choose_by_key(policy.select, feasible_mask, totals, entry, pod_env, rng)
    else:
        chosen, best = _choose(feasible_mask, count, totals, entry, rng)
    if chosen is None:
        counted = reported(infeasible, context, (rule.name for rule in policy.filters))
        message = histogram_line(num_nodes, counted)
    else:
        best = best if policy.scores else 0
        message = f"scheduled on {chosen} by policy {policy.name} (score {_fmt(best)})"
    names = entry.names
    ranks = entry.ranks if count > 1 else None
    return Decision(
        pod=pod.key,
        policy=policy.name,
        version=program.version,
        node=chosen,
        num_nodes=num_nodes,
        feasible=table._nodes,
        infeasible=infeasible,
        scores=table,
        ranking=Names(lambda: _ranking(names, rows(), totals, ranks), count),
        message=message,
        errors=tuple(dict.fromkeys(errors)),
        gpu_devices=_devices(context, snapshot, chosen, pod),
        volumes=pod_volumes(pod, snapshot, chosen, config, context) or None if chosen else None,
    )


def _filter_stage(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    state: incremental.State | None,
    errors: list[str],
    options: CycleOptions,
) -> tuple[np.ndarray, Mapping[str, tuple[Rejection, ...]], np.ndarray | None, set[int] | None]:
    """The feasible rows, the rejections, each row's first rejecting filter (-1: none; None
    when every filter ran on every row) and the rows looked at again (None: every row)."""
    if options.all_filters:
        feasible_mask, infeasible = fullpass.filter_all(entry, batch, context, errors)
        return feasible_mask, infeasible, None, None
    changed: set[int] | None = None
    first_rejected_by: np.ndarray | None = None
    prepared: list[bool] = []  # columns the incremental attempt brought to their keys
    if state is not None:
        changed = incremental.changed_rows(state, entry)
        if changed is not None:
            first_rejected_by = incremental.filter_rows(
                entry, batch, context, state, changed, prepared
            )
            if first_rejected_by is None:
                changed = None
    if first_rejected_by is None:
        first_rejected_by = fullpass.filter_first(entry, batch, context, errors, prepared)
    feasible_mask = first_rejected_by < 0
    count = int(np.count_nonzero(feasible_mask))
    rejections = fullpass.first_rejections(entry, first_rejected_by, count)
    return feasible_mask, rejections, first_rejected_by, changed


def _score_table(
    entry: ClassEntry,
    full_plan: PolicyPlan,
    plan: PolicyPlan,
    idle: IdleTests,
    frame: Frame,
    rows: Callable[[], np.ndarray],
    count: int,
    totals: np.ndarray,
    normalisers: Sequence[Callable[[np.ndarray], np.ndarray]],
) -> ScoreTable:
    """The decision's score table over every score rule of the policy, the idle ones listed
    back with no score anywhere; it borrows the columns' arrays (``Column.lend``)."""
    names = entry.names
    values: Sequence[np.ndarray] = [column.values for column in entry.scores]
    scored_at: Sequence[np.ndarray] = [column.scored for column in entry.scores]
    if plan is not full_plan:
        at = idle.positions(plan)
        raw, none = unscored(frame.size)
        normalisers = WithIdleRules(normalisers, at, zero_at)
        values, scored_at = WithIdleRules(values, at, raw), WithIdleRules(scored_at, at, none)
    table = ScoreTable(
        Names(lambda: tuple(names[rows()].tolist()), count),
        rows,
        totals,
        [rule.rule.qualified_name for rule in full_plan.scores],
        normalisers,
        values,
        scored_at,
    )
    for column in entry.scores:
        column.lend(table)
    return table


def _devices(
    context: CycleContext, snapshot: ClusterSnapshot, chosen: str | None, pod: Pod
) -> tuple[Grant, ...]:
    if chosen is None:
        return ()
    # The demand reads the pod's annotations and requests alone: pods alike share it.
    demand = context.prepared(("gpu_demand",), lambda: pod_demand(pod), pod_only=True)
    return choose_devices(snapshot, chosen, pod, demand, context.device_choice)


class _FeasibleNodes(Sequence[NodeInfo]):
    """``CycleContext.feasible``: the feasible ``NodeInfo``s, gathered only when a plugin's
    PreScore reads more than their number."""

    __slots__ = ("_count", "_items", "_mask", "_rows", "_snapshot")

    def __init__(self, snapshot: ClusterSnapshot, mask: np.ndarray, count: int):
        self._snapshot = snapshot
        self._mask = mask
        self._count = count
        self._items: tuple[NodeInfo, ...] | None = None
        self._rows: np.ndarray | None = None

    def _get(self) -> tuple[NodeInfo, ...]:
        if self._items is None:
            self._items = _pick(self._snapshot.nodes, self._feasible_rows())
        return self._items

    def _feasible_rows(self) -> np.ndarray:
        rows = self._rows
        if rows is None:
            rows = self._rows = self._mask.nonzero()[0]
            rows.flags.writeable = False  # handed to every PreScore that gathers at them
        return rows

    def rows_in(self, snapshot: ClusterSnapshot) -> np.ndarray | None:
        """The rows of ``snapshot.nodes`` holding these nodes, in order (None: they are
        another snapshot's): what a columnar PreScore gathers at, without looking them up."""
        return self._feasible_rows() if snapshot is self._snapshot else None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        return self._get()[index]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._get())


def _ranking(
    names: np.ndarray, rows: np.ndarray, totals: np.ndarray, ranks: np.ndarray | None
) -> tuple[str, ...]:
    if len(rows) < 2 or ranks is None:
        return tuple(names[rows].tolist())
    order = np.lexsort((ranks[rows], -totals[rows]))
    return tuple(names[rows[order]].tolist())


def _choose(
    feasible: np.ndarray,
    count: int,
    totals: np.ndarray,
    entry: ClassEntry,
    rng: random.Random,
) -> tuple[str | None, float]:
    """The best of the ``count`` feasible nodes and its total: ties (in name order) broken by
    ``rng`` as a list of the ranking's tied prefix would be, without sorting the ranking."""
    if not count:
        return None, 0
    names = entry.names
    if count == 1:  # the one feasible row
        row = int(feasible.argmax())
        return str(names[row]), float(totals[row])
    # Infeasible rows mostly total 0: when the best of every row is positive and only
    # feasible rows reach it, it is the best feasible total, without masking every row.
    best = float(totals.max())
    tied = totals == best
    ties = int(np.count_nonzero(tied)) if best > 0 and math.isfinite(best) else 0
    if not ties or int(np.count_nonzero(tied & feasible)) != ties:
        masked = np.where(feasible, totals, -math.inf)
        best = float(masked.max())
        if not math.isfinite(best):  # NaN or infinite totals: the sorted ranking decides
            rows = np.flatnonzero(feasible)
            ranking = _ranking(names, rows, totals, entry.ranks)
            order = np.lexsort((entry.ranks[rows], -totals[rows]))
            ordered = totals[rows[order]]
            return _select(ranking, ordered, rng), float(ordered[0])
        tied = masked == best
        ties = int(np.count_nonzero(tied))
    if ties == 1:
        return str(names[int(tied.argmax())]), best
    if type(rng) is random.Random:
        # ``choice`` of the tied names in name order is the ``_randbelow(n)``-th of them; the
        # plain generator's ``choice`` is exactly that, so the k-th is found without sorting
        # thousands of tied rows. Rows in name order (a prefix of them ranked as they stand)
        # need not even be ranked; otherwise the rows are read in name order (``_name_order``).
        k = rng._randbelow(ties)  # type: ignore[attr-defined]
        in_order, by_name = _name_order(entry.ranks)
        if not tied[in_order:].any():
            return str(names[tied.nonzero()[0][k]]), best
        return str(names[by_name[tied[by_name].nonzero()[0][k]]]), best
    at = tied.nonzero()[0]
    return rng.choice(names[at[np.argsort(entry.ranks[at], kind="stable")]].tolist()), best


def _choose_by_key(
    select: CompiledSelect,
    feasible: np.ndarray,
    totals: np.ndarray,
    entry: ClassEntry,
    pod_env: Env,
    rng: random.Random,
) -> tuple[str | None, float]:
    """``_choose`` under the policy's ``select``: the tied rows ordered by its key
    (``selection.pick_by_key``); totals that are not finite are left to ``_choose``."""
    masked = np.where(feasible, totals, -math.inf)
    best = float(masked.max())
    if not math.isfinite(best):
        return _choose(feasible, int(np.count_nonzero(feasible)), totals, entry, rng)
    rows = np.flatnonzero(masked == best)
    if len(rows) == 1:
        return str(entry.names[int(rows[0])]), best
    rows = rows[np.argsort(entry.ranks[rows], kind="stable")]
    if select.by_name:  # ``ranks`` are the names' order, and names are unique
        return str(entry.names[int(rows[0] if select.mode == "lowest" else rows[-1])]), best
    views = entry.frame.views
    at = rows.tolist()
    if select.many is not None:
        try:
            values = select.many(NodeBatch(pod_env, {"node": [views[row] for row in at]}))
            if len(values) == len(at):
                names = [str(entry.names[row]) for row in at]
                return pick_by_values(select.mode, names, list(values), rng), best
        except Exception:  # the key node by node then, failures ranked last
            pass
    candidates = [(str(entry.names[row]), pod_env.derive(node=views[row])) for row in at]
    return pick_by_key(select.mode, candidates, select.key, rng), best


# The last ranks looked at, with what ``_name_order`` made of them.
_last_order: tuple[np.ndarray, int, np.ndarray] | None = None


def _name_order(ranks: np.ndarray) -> tuple[int, np.ndarray]:
    """How many first rows are in name order (``ranks[:n] == arange(n)``: among them the
    k-th in name order is the k-th in row order), and the rows in name order (their inverse
    permutation). Ranks are kept while the names stay, so both are made once for many
    cycles."""
    global _last_order
    last = _last_order
    if last is not None and last[0] is ranks:
        return last[1], last[2]
    off = np.flatnonzero(ranks != np.arange(len(ranks)))
    count = int(off[0]) if len(off) else len(ranks)
    rows = np.empty(len(ranks), np.int64)
    rows[ranks] = np.arange(len(ranks))
    _last_order = (ranks, count, rows)
    return count, rows


def _outside(
    names: np.ndarray,
    feasible: np.ndarray,
    infeasible: Mapping[str, tuple[Rejection, ...]],
    options: CycleOptions,
) -> tuple[np.ndarray, Mapping[str, tuple[Rejection, ...]]]:
    """Feasible nodes outside ``options.candidates`` become infeasible (rule ``gang_domain``)."""
    inside = _inside(names, options.candidates or frozenset())
    out = feasible & ~inside
    if not out.any():
        return feasible, infeasible
    extra = names[out].tolist()
    rejection = (Rejection("gang_domain", (options.candidates_reason,)),)

    def build() -> dict[str, tuple[Rejection, ...]]:
        return {**infeasible, **dict.fromkeys(extra, rejection)}

    return feasible & inside, RejectionTable(build, len(infeasible) + len(extra))


# The last candidate set's mask over the frame's names (never written to): a gang's members
# tried in one domain share both objects, so it is built once per domain, not once per member.
_last_inside: tuple[np.ndarray, frozenset[str], np.ndarray] | None = None


def _inside(names: np.ndarray, wanted: frozenset[str]) -> np.ndarray:
    global _last_inside
    last = _last_inside
    if last is not None and last[0] is names and last[1] is wanted:
        return last[2]
    inside = np.fromiter((name in wanted for name in names.tolist()), bool, len(names))
    _last_inside = (names, wanted, inside)
    return inside


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _pick(nodes: Sequence[NodeInfo], rows: np.ndarray) -> tuple[NodeInfo, ...]:
    if len(rows) == 0:
        return ()
    if len(rows) == len(nodes):
        return tuple(nodes)
    picked = itemgetter(*rows.tolist())(nodes)
    return picked if len(rows) > 1 else (picked,)


# --- keys ------------------------------------------------------------------------------------

_REQUESTS_MEMO = object()  # where ``CycleContext.alike`` keeps its pods' ``pod_requests``


# --- filters ---------------------------------------------------------------------------------


# --- scores ----------------------------------------------------------------------------------


def _select(ranking: Sequence[str], totals: np.ndarray, rng: random.Random) -> str | None:
    """The best node; ties (a prefix of the ranking) broken by ``rng`` as a list would be."""
    if not ranking:
        return None
    tied = int(np.count_nonzero(totals == totals[0]))
    return ranking[0] if tied == 1 else rng.choice(list(ranking[:tied]))
