"""One scheduling cycle: the governing policy's filters, then its scores, then the choice.

The cycle reads one immutable snapshot and never changes it. Filters run on every node
(no sampling); rules that read nothing per node run once per pod. Scores run on the feasible
nodes, each rule's values are normalised over them (``normalize``), weighted and summed; the
highest total wins and ties are broken by a seeded random choice among the tied nodes in name
order, so a run is reproducible.

Pods of one class (the same filter share keys: ``classcache``) mostly meet a cluster that
changed in a few rows since the last of them: the pods placed meanwhile. Such a cycle (first
rejection only) starts from the class's last one (``_State``): its first
rejections, feasible set, totals and each score rule's normalisation facts. It re-examines only
the rows the node frames logged as changed (and rows a cluster key dropped), renormalises a
rule over every row only when its facts moved, and never sorts the ranking unless it is read
(``Names``): the choice needs just the best rows. Whenever anything it relies on may have
moved (a column invalidated or replaced, a key changed, an error, a log that does not reach
back, too many changed rows), it starts over with every row, as the first pod of a class does.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from operator import itemgetter
from typing import Any, overload

import numpy as np

from policyengine.engine.classcache import (
    CACHE,
    ClassEntry,
    Column,
    FilterColumn,
    RulePlan,
    ScoreColumn,
    next_stamp,
    pod_class,
    policy_plan,
)
from policyengine.engine.decision import (
    Decision,
    Names,
    Rejection,
    RejectionGroup,
    RejectionTable,
    ScoreTable,
)
from policyengine.engine.gpu_placement import choose_devices, device_choice_for
from policyengine.engine.histogram import histogram_line
from policyengine.engine.idle import EXACT_WEIGHT, Listed, idle_tests, unscored, zero_at
from policyengine.engine.nodeviews import Frame, NodeViews, node_frame
from policyengine.engine.normalize import (
    Stats,
    apply_stats,
    column_stats,
    normalize,
    unscored_stats,
)
from policyengine.engine.overcommit import policy_config
from policyengine.engine.rowgroups import Copied, determined_now, groups
from policyengine.engine.selection import pick_by_key, pick_by_values
from policyengine.lang.compiler import CompiledPolicy, CompiledRule, CompiledSelect, Program
from policyengine.lang.runtime import Env, FilterVerdict, NodeBatch
from policyengine.model.gpu_devices import Grant
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.resources import share_requests
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
    # Another scheduler allocates the pod's dynamic resource claims (the extender behind
    # kube-scheduler): the policy decides the rest. Otherwise such a pod is not placed.
    claims_allocated_elsewhere: bool = False
    # The pods learned GPU shapes are drawn from (``model.fragmentation.Workload``: a replay's
    # arrivals so far); None: the GPU pods running in the snapshot.
    workload: Any = None


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
    whole = policy_plan(policy)
    frame = node_frame(snapshot, topology)
    refs = CACHE.refs(program, policy, topology, config)
    klass = pod_class(pod)
    context.alike = CACHE.alike(klass, config)
    if context.alike is not None:
        # A class's pods have equal containers, init containers, pod-level requests and
        # overhead (``pod_class`` compares them): their effective requests are computed once.
        share_requests(pod, context.alike.setdefault(_REQUESTS_MEMO, {}))
    tests = idle_tests(whole)
    plan = tests.active(pod_env)
    entry = CACHE.checkout(refs, plan, pod, pod_view, context, frame, klass)
    errors: list[str] = []
    batch = NodeBatch(pod_env, {"node": frame.views})
    state_key: Hashable | None = None
    state: _State | None = None
    if not options.all_filters:
        state_key = CACHE.state_key(entry)
        if state_key is not None:
            state = CACHE.take_state(state_key, refs)
    changed: set[int] | None = None
    infeasible: Mapping[str, tuple[Rejection, ...]]
    dead_at: np.ndarray | None = None
    if options.all_filters:
        feasible_mask, infeasible = _filter_all(entry, batch, context, errors)
    else:
        prepared: list[bool] = []  # columns the incremental attempt brought to their keys
        if state is not None:
            changed = _changed_rows(state, entry)
            if changed is not None:
                dead_at = _filter_rows(entry, batch, context, state, changed, prepared)
                if dead_at is None:
                    changed = None
        if dead_at is None:
            dead_at = _filter_first(entry, batch, context, errors, prepared)
        feasible_mask = dead_at < 0
        infeasible = _first_rejections(entry, dead_at, int(np.count_nonzero(feasible_mask)))
    inside: np.ndarray | None = None
    if options.candidates is not None:
        inside = _inside(entry.names, options.candidates)
        feasible_mask, infeasible = _outside(entry.names, feasible_mask, infeasible, options)
    count = int(np.count_nonzero(feasible_mask))
    context.feasible = _Picked(snapshot, feasible_mask, count)
    CACHE.score_columns(entry, pod_view, context)
    scored = None
    if state is not None and changed is not None:
        changed.update(_moved_inside(state.inside, inside))
        scoring = _scoring_state(state, entry, changed, feasible_mask, inside)
        scored = _score_rows(entry, batch, context, *scoring, feasible_mask)
    if scored is None:
        scored = _score_all(entry, feasible_mask, batch, context, errors)
    totals, stats, normalisers = scored
    rows = cache(partial(np.flatnonzero, feasible_mask))  # most decisions never read them
    names = entry.names
    values: Sequence[np.ndarray] = [column.values for column in entry.scores]
    scored_at: Sequence[np.ndarray] = [column.scored for column in entry.scores]
    if plan is not whole:  # the idle rules are listed with no score anywhere
        at = tests.positions(plan)
        raw, none = unscored(frame.size)
        normalisers = Listed(normalisers, at, zero_at)
        values, scored_at = Listed(values, at, raw), Listed(scored_at, at, none)
    table = ScoreTable(
        Names(lambda: tuple(names[rows()].tolist()), count),
        rows,
        totals,
        [rule.rule.qualified_name for rule in whole.scores],
        normalisers,
        values,
        scored_at,
    )
    for column in entry.scores:
        column.lend(table)
    CACHE.checkin(entry)
    if state_key is not None and dead_at is not None:
        kept = _State(
            frame.log,
            frame.seq,
            frame.size,
            next_stamp(),
            tuple(entry.filters),
            tuple(column.epoch for column in entry.filters),
            dead_at,
            feasible_mask,
            tuple(entry.scores),
            tuple(column.epoch for column in entry.scores),
            stats,
            totals,
            inside,
        )
        kept.others = _others(state, kept)
        CACHE.put_state(state_key, refs, kept, 3 * frame.size * (1 + len(kept.others)))
    if policy.select is not None and count > 1:
        chosen, best = _choose_by_key(policy.select, feasible_mask, totals, entry, pod_env, rng)
    else:
        chosen, best = _choose(feasible_mask, count, totals, entry, rng)
    if chosen is None:
        message = histogram_line(num_nodes, infeasible)
    else:
        best = best if policy.scores else 0
        message = f"scheduled on {chosen} by policy {policy.name} (score {_fmt(best)})"
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
    )


def _devices(
    context: CycleContext, snapshot: ClusterSnapshot, chosen: str | None, pod: Pod
) -> tuple[Grant, ...]:
    if chosen is None:
        return ()
    # The demand reads the pod's annotations and requests alone: pods alike share it.
    demand = context.prepared(("gpu_demand",), lambda: pod_demand(pod), pod_only=True)
    return choose_devices(snapshot, chosen, pod, demand, context.device_choice)


@dataclass(eq=False)
class _State:
    """What a class's last cycle left for its next one: where its frame stands in its views'
    log (not the frame: states of many classes would keep as many frames alive), the stamp
    after its stores (``seen``), the columns it read and their epochs, each row's first
    rejecting filter (-1: feasible), and per score rule the normalisation facts
    (``normalize.column_stats``; None: normalised value by value) with the totals they gave."""

    log: NodeViews | None
    seq: int
    size: int
    seen: int
    filters: tuple[FilterColumn, ...]
    filter_epochs: tuple[int, ...]
    dead_at: np.ndarray
    feasible: np.ndarray
    scores: tuple[ScoreColumn, ...] = ()
    score_epochs: tuple[int, ...] = ()
    stats: list[Stats | None] = field(default_factory=list)
    totals: np.ndarray | None = None
    inside: np.ndarray | None = None  # the gang candidates' rows (None: no candidates)
    # The last states of this filter key whose score columns differ from this one's, by
    # their columns' ids (``_scoring_state``).
    others: dict[tuple[int, ...], _State] = field(default_factory=dict)


# States kept beside a class's last one: classes that filter alike but score apart (pod
# templates with equal requests and different images) take turns on one filter key.
_OTHERS = 4


def _scoring_state(
    state: _State, entry: ClassEntry, changed: set[int], feasible: np.ndarray, inside: Any
) -> tuple[_State, set[int]]:
    """The state to score from and the rows to look at again: ``state`` itself, or, when its
    score columns are not this cycle's, the last state of this cycle's columns kept beside it
    (``others``), with the rows changed since that one and the rows whose feasibility moved."""
    if _same_columns(state.scores, entry.scores):
        return state, changed
    older = state.others.get(tuple(map(id, entry.scores)))
    frame = entry.frame
    if (
        older is None
        or not _same_columns(older.scores, entry.scores)
        or frame.log is None
        or older.log is not frame.log
        or older.size != frame.size
    ):
        return state, changed
    rows = frame.log.changed_since(older.seq, frame)
    if rows is None:
        return state, changed
    rows.update(np.flatnonzero(older.feasible != feasible).tolist())
    rows.update(_moved_inside(older.inside, inside))
    return older, rows


def _others(state: _State | None, kept: _State) -> dict[tuple[int, ...], _State]:
    """What ``kept`` keeps beside it: the states ``state`` kept and ``state`` itself, by their
    score columns, but for ``kept``'s own columns; the most recent few."""
    if state is None:
        return {}
    mine = tuple(map(id, kept.scores))
    out = {key: other for key, other in state.others.items() if key != mine}
    theirs = tuple(map(id, state.scores))
    if theirs != mine and state.totals is not None:
        out.pop(theirs, None)
        out[theirs] = replace(state, others={})
    while len(out) > _OTHERS:
        del out[next(iter(out))]
    return out


class _Picked(Sequence[NodeInfo]):
    """``CycleContext.feasible``: the feasible ``NodeInfo``s, gathered only when a plugin's
    PreScore reads more than their number."""

    __slots__ = ("_count", "_items", "_mask", "_snapshot")

    def __init__(self, snapshot: ClusterSnapshot, mask: np.ndarray, count: int):
        self._snapshot = snapshot
        self._mask = mask
        self._count = count
        self._items: tuple[NodeInfo, ...] | None = None

    def _get(self) -> tuple[NodeInfo, ...]:
        if self._items is None:
            self._items = _pick(self._snapshot.nodes, np.flatnonzero(self._mask))
        return self._items

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


def _moved_inside(was: np.ndarray | None, now: np.ndarray | None) -> list[int]:
    """The rows a change of gang candidates (``_inside``) took in or out since the state's
    cycle: their feasibility may have moved while their rows did not change."""
    if was is now:
        return []
    if was is None or now is None:
        return np.flatnonzero(~(now if was is None else was)).tolist()  # type: ignore[operator]
    return np.flatnonzero(was != now).tolist()


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

_STALE_KEY = object()


def _key(plan: RulePlan, context: CycleContext) -> tuple[Any, np.ndarray | None, bool]:
    """The rule's column key this cycle (its cluster keys' whole parts and whether it reads
    only Node objects), the cluster keys' row parts, and that flag."""
    if plan.always:
        return _STALE_KEY, None, False
    # Keys read only the pod and the configuration (``RulePlan.keys_alike``): kept per class.
    memo = context.alike if plan.keys_alike else None
    if memo is not None:
        kept: tuple[Any, np.ndarray | None, bool] | None = memo.get(plan)
        if kept is not None:
            return kept
    whole, by_row = plan.keys(context)
    stable = plan.stable_now(context)
    found = (whole, stable), by_row, stable
    if memo is not None and by_row is None:
        memo[plan] = found
    return found


def _prepare(plan: RulePlan, column: Column, context: CycleContext) -> bool:
    """Bring ``column`` to this cycle's key (invalidating what it no longer holds); whether
    its rows are valid by Node object."""
    key, by_row, stable = _key(plan, context)
    if key is _STALE_KEY or column.key != key:
        column.invalidate()
        column.key = key
    column.by_row(by_row)
    return stable


def _same_keys(
    plans: Sequence[RulePlan],
    columns: Sequence[Column],
    epochs: Sequence[int],
    context: CycleContext,
    fresh: Sequence[bool] | None = None,
    prepared: list[bool] | None = None,
) -> list[bool] | None:
    """Each rule's stable flag when every column still holds what the class's last cycle read
    (same key, same epoch once the row keys are applied); None otherwise. A ``fresh`` column
    (not the one the last cycle read) is only brought to this cycle's key. ``prepared`` gets
    the stable flags of the first columns brought to this cycle's key (as ``_prepare`` would
    bring them), so that a full pass after a refusal need not take their keys again."""
    stables = []
    for index, (plan, column, epoch) in enumerate(zip(plans, columns, epochs, strict=True)):
        if plan.always:
            return None
        if fresh is not None and fresh[index]:
            try:
                stables.append(_prepare(plan, column, context))
            except Exception:
                return None
            continue
        try:
            key, by_row, stable = _key(plan, context)
        except Exception:  # the full pass meets it where the rule is reached
            return None
        if column.key != key:
            return None
        if by_row is not None or column.row_keys is not None:
            column.by_row(by_row)
        if prepared is not None:
            prepared.append(stable)
        if column.epoch != epoch:
            return None
        stables.append(stable)
    return stables


def _dropped(
    columns: Sequence[Column], seen: int, rows: set[int], limit: int | None = None
) -> set[int] | None:
    """``rows`` with the rows the columns' row keys dropped since stamp ``seen``; None when a
    drop log does not reach back, or (given ``limit``) when that makes more than ``limit``
    rows: counted before any set is built (a zone's count moving drops thousands)."""
    found = []
    for column in columns:
        dropped = column.dropped_since(seen)
        if dropped is None:
            return None
        if len(dropped):
            found.append(dropped)
    if limit is not None and len(rows) > limit:
        return None
    if not found:
        return rows
    if limit is not None:
        if any(len(dropped) > limit for dropped in found):
            return None
        if len(rows) + sum(len(dropped) for dropped in found) > limit:  # they may overlap
            union = np.unique(np.concatenate([np.fromiter(rows, np.int64, len(rows)), *found]))
            return None if len(union) > limit else set(union.tolist())
    return rows.union(*(dropped.tolist() for dropped in found))


def _too_many(rows: set[int], frame: Frame) -> bool:
    """Whether so many rows changed that one pass over every row is the cheaper way."""
    return len(rows) > _limit(frame)


def _limit(frame: Frame) -> int:
    return max(frame.size // 8, _FEW)


_FEW = 32


def _same_columns(kept: Sequence[Column], columns: Sequence[Column]) -> bool:
    return len(kept) == len(columns) and all(a is b for a, b in zip(kept, columns, strict=True))


# --- filters ---------------------------------------------------------------------------------


def _changed_rows(state: _State, entry: ClassEntry) -> set[int] | None:
    """The rows to look at again since ``state``'s cycle; None: every row."""
    frame = entry.frame
    if frame.log is None or state.log is not frame.log or state.size != frame.size:
        return None
    if not _same_columns(state.filters, entry.filters):
        return None
    if any(column.errors for column in entry.filters):
        return None
    return frame.log.changed_since(state.seq, frame)


def _filter_rows(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    state: _State,
    changed: set[int],
    prepared: list[bool] | None = None,
) -> np.ndarray | None:
    """First rejections with ``state``'s for every row but ``changed`` (to which the rows
    the columns' row keys dropped are added); None when that cannot be trusted, or is not
    worth it (``_too_many``). ``prepared``: as ``_same_keys``."""
    plans = entry.plan.filters
    columns = entry.filters
    stables = _same_keys(plans, columns, state.filter_epochs, context, prepared=prepared)
    if stables is None:
        return None
    found = _dropped(columns, state.seen, changed, _limit(entry.frame))
    if found is None or _too_many(found, entry.frame):
        return None
    changed.update(found)
    dead_at = state.dead_at.copy()
    if not changed:
        return dead_at
    rows = np.array(sorted(changed), np.int64)
    dead = np.full(len(rows), -1, np.int64)
    frame = entry.frame
    # The rows still in the running (``live.rows``), their positions in ``rows`` and the
    # frame's identities there, narrowed only when a rule rejects one: few numpy calls per
    # rule. On a few rows a reduction (``.all()``) costs more than the rest of a rule's work,
    # so whole row sets are compared as bytes (``_Rows``).
    at = np.arange(len(rows))
    live = _Rows(rows, frame)
    for index, (plan, column, stable) in enumerate(zip(plans, columns, stables, strict=True)):
        sub = live.rows
        found = column.oids[sub] if stable else column.ids[sub]
        if found.tobytes() != (live.oids_bytes if stable else live.ids_bytes):
            todo = sub[found != (live.oids if stable else live.ids)]
            column.store(todo, plan.rule, _filter_at(plan, column, todo, batch, context), frame)
            if column.errors:
                return None
        ok = column.passed[sub]
        if ok.tobytes() != live.all_true:
            dead[at[~ok]] = index
            at = at[ok]
            live = live.narrowed(ok)
            if not len(at):
                break
    dead_at[rows] = dead
    return dead_at


class _Rows:
    """Some rows of a frame with the frame's identities there, also as bytes: whether a
    column's rows all hold these identities (or all passed) is one bytes comparison."""

    __slots__ = ("all_true", "ids", "ids_bytes", "oids", "oids_bytes", "rows")

    def __init__(self, rows: np.ndarray, frame: Frame | None, ids: Any = None, oids: Any = None):
        self.rows = rows
        self.ids = frame.ids[rows] if frame is not None else ids
        self.oids = frame.oids[rows] if frame is not None else oids
        self.ids_bytes = self.ids.tobytes()
        self.oids_bytes = self.oids.tobytes()
        self.all_true = b"\x01" * len(rows)  # a bool array's bytes where every row is True

    def narrowed(self, keep: np.ndarray) -> _Rows:
        return _Rows(self.rows[keep], None, self.ids[keep], self.oids[keep])


def _filter_first(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
    prepared: Sequence[bool] = (),
) -> np.ndarray:
    """Each filter over the nodes still in the running, re-evaluating only the rows whose
    cached verdict is not valid (``classcache``); each row's first rejecting rule (-1: none).
    The first columns may have been brought to this cycle's keys already (``prepared``: their
    stable flags, from ``_same_keys``).

    A node leaves the running at its first rejection, so every node sees exactly the rules it
    would see node by node. Errors are reported in node order, then rule order, as a
    node-by-node loop would meet them.
    """
    size = batch.size
    alive = np.ones(size, bool)
    dead_at = np.full(size, -1, np.int64)
    found: list[tuple[int, int, str]] = []
    frame = entry.frame
    for index, (plan, column) in enumerate(zip(entry.plan.filters, entry.filters, strict=True)):
        if not alive.any():
            break
        stable = prepared[index] if index < len(prepared) else _prepare(plan, column, context)
        rows = np.flatnonzero(alive & ~column.valid(frame, stable))
        if len(rows):
            column.store(rows, plan.rule, _filter_at(plan, column, rows, batch, context), frame)
        if column.errors:
            for row in np.flatnonzero(alive & column.errored).tolist():
                found.append((row, index, column.error[row]))
        dead_at[alive & ~column.passed] = index
        alive &= column.passed
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    return dead_at


def _filter_all(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
) -> tuple[np.ndarray, dict[str, tuple[Rejection, ...]]]:
    """Every filter on every node (what ``filter`` and ``explain`` show)."""
    size = batch.size
    found: list[tuple[int, int, str]] = []
    failed: list[np.ndarray] = []
    frame = entry.frame
    for index, (plan, column) in enumerate(zip(entry.plan.filters, entry.filters, strict=True)):
        stable = _prepare(plan, column, context)
        rows = np.flatnonzero(~column.valid(frame, stable))
        if len(rows):
            column.store(rows, plan.rule, _filter_at(plan, column, rows, batch, context), frame)
        if column.errors:
            for row in np.flatnonzero(column.errored).tolist():
                found.append((row, index, column.error[row]))
        failed.append(~column.passed)
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    any_failed = np.zeros(size, bool)
    for fail in failed:
        any_failed |= fail
    infeasible: dict[str, tuple[Rejection, ...]] = {}
    for row in np.flatnonzero(any_failed).tolist():
        found_at = [entry.filters[i].rejection(row) for i, fail in enumerate(failed) if fail[row]]
        infeasible[entry.names[row]] = tuple(r for r in found_at if r is not None)
    return ~any_failed, infeasible


def _first_rejections(
    entry: ClassEntry, dead_at: np.ndarray, feasible: int
) -> RejectionTable | dict[str, tuple[Rejection, ...]]:
    """``Decision.infeasible`` built when read, from the columns as they are now (lent: a
    later store copies them) and ``dead_at`` (never changed: the next cycle copies it)."""
    dead = len(dead_at) - feasible
    if not dead:
        return {}
    names = entry.names
    columns = [(column.codes, column.made) for column in entry.filters]

    def build() -> dict[str, tuple[Rejection, ...]]:
        rows = np.flatnonzero(dead_at >= 0)
        out: dict[str, tuple[Rejection, ...]] = {}
        for name, row, index in zip(
            names[rows].tolist(), rows.tolist(), dead_at[rows].tolist(), strict=True
        ):
            codes, made = columns[index]
            rejection = made[codes[row]]
            assert rejection is not None
            out[name] = (rejection,)
        return out

    def groups() -> list[RejectionGroup]:
        rows = np.flatnonzero(dead_at >= 0)
        at_filter = dead_at[rows]
        out: list[RejectionGroup] = []
        # Filter indexes and rejection codes are small counts: bincount finds the distinct
        # ones in one pass (``np.unique`` sorts or hashes).
        for index in np.flatnonzero(np.bincount(at_filter)).tolist():
            where = rows[at_filter == index]
            codes, made = columns[index]
            found = codes[where]
            for code in np.flatnonzero(np.bincount(found)).tolist():
                rejection = made[code]
                assert rejection is not None
                out.append((rejection, names[where[found == code]].tolist()))
        return out

    table = RejectionTable(build, dead, groups)
    for column in entry.filters:
        column.lend(table)
    return table


def _filter_many(rule: CompiledRule, batch: NodeBatch) -> list[FilterVerdict]:
    if rule.filter_many is not None:
        return rule.filter_many(batch)
    return [rule.filter(batch.env_at(i)) for i in range(batch.size)]


def _filter_at(
    plan: RulePlan, column: Column, rows: np.ndarray, batch: NodeBatch, context: CycleContext
) -> Sequence[FilterVerdict]:
    """The rule's verdicts at ``rows`` (of the whole ``batch``): for a rule decided by its
    row key (``rowgroups``), at one row per distinct key, copied to the others."""
    found = None
    if plan.by_rows is not None and determined_now(plan.by_rows, context):
        found = groups(column.row_keys, rows)
    if found is not None:
        first, inverse = found
        some = _filter_many(plan.rule, batch.take(rows[first].tolist()))
        if all(verdict.error is None for verdict in some):  # an error may name its node
            return Copied(some, inverse)
    wanted = rows.tolist()
    return _filter_many(plan.rule, batch if len(wanted) == batch.size else batch.take(wanted))


# --- scores ----------------------------------------------------------------------------------

Scored = tuple[np.ndarray, list[Stats | None], Sequence[Callable[[np.ndarray], np.ndarray]]]


def _score_many(rule: CompiledRule, batch: NodeBatch) -> Sequence[Any]:
    if rule.score_many is not None:
        return rule.score_many(batch)
    return [rule.score(batch.env_at(i)) for i in range(batch.size)]


def _store_scores(
    rule: CompiledRule, column: ScoreColumn, rows: np.ndarray, batch: NodeBatch, frame: Frame
) -> None:
    """The rule's scores at ``rows`` (the nodes of ``batch``) into ``column``: as plain
    numbers when they all are (a few changed rows: no ``ScoreValue`` per node)."""
    numbers = rule.score_numbers(batch) if rule.score_numbers is not None else None
    if numbers is None:
        column.store(rows, _score_many(rule, batch), frame)
    else:
        column.store_numbers(rows, numbers, frame)


def _score_all(
    entry: ClassEntry,
    feasible: np.ndarray,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
) -> Scored:
    """Each score rule's raw values over the feasible rows (cached rows reused), normalised
    over them, weighted and summed in rule order as a node-by-node sum would. Columns are
    whole (one row per node); the rows outside ``feasible`` take no part."""
    size = batch.size
    frame = entry.frame
    totals = np.zeros(size)
    stats: list[Stats | None] = []
    normalisers: list[Callable[[np.ndarray], np.ndarray]] = []
    unscored: np.ndarray | None = None  # what a rule scoring no feasible row normalises to
    for plan, column in zip(entry.plan.scores, entry.scores, strict=True):
        rule = plan.rule
        stable = _prepare(plan, column, context)
        todo = np.flatnonzero(feasible & ~column.valid(frame, stable))
        if len(todo):
            wanted = todo.tolist()
            sub = batch if len(wanted) == size else batch.take(wanted)
            column.store(todo, _score_many(rule, sub), frame)
        if column.errors:
            errors.extend(column.error[feasible & column.errored].tolist())
        kind = rule.normalize or "none"
        mask = column.scored & feasible
        if abs(rule.weight) <= EXACT_WEIGHT and not mask.any():
            # Scoring no feasible row, the rule normalises every row to +0.0 and adds exactly
            # nothing to the totals (they start at +0.0, and a sum never makes -0.0 of them).
            if unscored is None:
                unscored = np.zeros(size)
            stats.append(unscored_stats(kind))
            normalisers.append(unscored.__getitem__)
            continue
        facts = column_stats(kind, column.values, mask)
        if facts is None:
            norm = np.zeros(size)
            rows = np.flatnonzero(feasible)
            listed = [
                float(v) if s else None
                for v, s in zip(column.values[rows].tolist(), mask[rows].tolist(), strict=True)
            ]
            norm[rows] = normalize(kind, listed)
        else:
            norm = apply_stats(kind, column.values, mask, facts)
        totals = totals + rule.weight * norm
        stats.append(facts)
        normalisers.append(norm.__getitem__)
    return totals, stats, normalisers


def _score_rows(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    state: _State,
    changed: set[int],
    feasible: np.ndarray,
) -> Scored | None:
    """``_score_all`` from ``state``'s totals: only the ``changed`` rows (and rows the row
    keys dropped) are looked at; a rule's normalisation is redone over every row only when its
    facts moved. None when ``state`` cannot be trusted.

    A column the state did not read (a rule keyed by something each pod of the class has of
    its own, such as its name: gang members differ only there) is *fresh*: its values at every
    feasible row are new to the totals, so every feasible row is looked at (few, inside a
    gang's domain) and its facts are taken again."""
    plans = entry.plan.scores
    columns = entry.scores
    if state.totals is None or len(state.scores) != len(columns):
        return None
    if any(column.errors for column in columns) or any(s is None for s in state.stats):
        return None
    fresh = [a is not b for a, b in zip(state.scores, columns, strict=True)]
    stables = _same_keys(plans, columns, state.score_epochs, context, fresh)
    if stables is None:
        return None
    frame = entry.frame
    if any(fresh) and int(np.count_nonzero(feasible)) > max(frame.size // 8, _FEW):
        return None  # every feasible row would be looked at: one pass is as cheap
    kept = [c for c, f in zip(columns, fresh, strict=True) if not f]
    found = _dropped(kept, state.seen, changed, _limit(frame))
    if found is not None and any(fresh):
        found = found | set(np.flatnonzero(feasible).tolist())
    if found is None or _too_many(found, frame):
        return None
    rows = np.array(sorted(found), np.int64)
    moved = rows[state.feasible[rows] != feasible[rows]]
    live = rows[feasible[rows]]
    at_live = _Rows(live, frame)
    stats = list(state.stats)
    touched = [moved] if len(moved) else []
    whole = False
    for index, (plan, column, stable) in enumerate(zip(plans, columns, stables, strict=True)):
        renewed = live[:0]
        if len(live):
            found_ids = column.oids[live] if stable else column.ids[live]
            if found_ids.tobytes() != (at_live.oids_bytes if stable else at_live.ids_bytes):
                todo = live[found_ids != (at_live.oids if stable else at_live.ids)]
                _store_scores(plan.rule, column, todo, batch.take(todo.tolist()), frame)
                if column.errors:
                    return None
            if fresh[index]:
                renewed = live
            elif column.stamp > state.seen:  # no row was stored since otherwise
                renewed = live[column.stamps[live] > state.seen]
        if not fresh[index] and not len(renewed) and not len(moved):
            continue
        if len(renewed):
            touched.append(renewed)
        kind = plan.rule.normalize or "none"
        if kind == "none":
            continue
        if not fresh[index] and not len(renewed) and not column.scored[moved].any():
            continue  # only unscored rows joined or left: the facts read scored rows alone
        facts = column_stats(kind, column.values, column.scored & feasible)
        if facts is None:
            return None
        if facts != stats[index] or repr(facts) != repr(stats[index]):
            stats[index] = facts
            whole = True
    normalisers = _Normalisers(plans, columns, feasible, stats)
    if whole:
        # Only the feasible rows (a gang's domain: a few) hold anything but 0.
        totals = np.zeros(frame.size)
        at = np.flatnonzero(feasible)
        part = np.zeros(len(at))
        for plan, column, facts in zip(plans, columns, stats, strict=True):
            kind = plan.rule.normalize or "none"
            norm = apply_stats(kind, column.values[at], column.scored[at], facts)  # type: ignore[arg-type]
            part = part + plan.rule.weight * norm
        totals[at] = part
        return totals, stats, normalisers
    assert state.totals is not None
    totals = state.totals.copy()
    if touched:
        # The touched rows: renewed rows repeat from rule to rule (the same live rows).
        distinct = {some.tobytes(): some for some in touched}
        if len(distinct) == 1:
            at = next(iter(distinct.values()))
        else:  # a mask, not ``np.unique``: thousands of moved rows when a zone flips
            hit = np.zeros(frame.size, bool)
            for some in distinct.values():
                hit[some] = True
            at = np.flatnonzero(hit)
        # Infeasible rows total 0 (every rule normalises them to 0); a rule scoring none of
        # the feasible ones adds exactly 0 to each (``part`` is never -0.0), so it is left out.
        inside = at[feasible[at]]
        part = np.zeros(len(inside))
        unscored = bytes(len(inside))
        for plan, column, facts in zip(plans, columns, stats, strict=True):
            scored = column.scored[inside]
            if scored.tobytes() == unscored:
                continue
            kind = plan.rule.normalize or "none"
            norm = _normalised(column, kind, facts, inside, scored, state.seen)  # type: ignore[arg-type]
            part = part + plan.rule.weight * norm
        totals[at] = 0.0
        totals[inside] = part
    return totals, stats, normalisers


def _normalised(
    column: ScoreColumn, kind: str, facts: Stats, rows: np.ndarray, scored: np.ndarray, seen: int
) -> np.ndarray:
    """``apply_stats`` at ``rows`` (where the column scores ``scored``). A column no store
    touched since the state's cycle (a rule reading Node objects only) is mostly left as it
    is for many cycles: it is normalised whole once per facts, and read at the rows until a
    store (classes whose feasible sets give equal facts share it). Normalising is row by
    row, so a row reads alike either way."""
    kept = column.normalised
    if (
        kept is not None
        and kept[2] == column.stamp
        and kept[0] == kind
        and (kept[1] is facts or (kept[1] == facts and repr(kept[1]) == repr(facts)))
    ):
        return kept[3][rows]
    if column.stamp <= seen:
        with np.errstate(all="ignore"):  # rows outside the feasible set may hold anything
            whole = apply_stats(kind, column.values, column.scored, facts)
        column.normalised = (kind, facts, column.stamp, whole)
        return whole[rows]
    return apply_stats(kind, column.values[rows], scored, facts)


class _Normalisers(Sequence[Callable[[np.ndarray], np.ndarray]]):
    """Each rule's normalised values at some rows, read later (the columns are lent by then:
    their arrays are taken now). Made when read: most decisions never read one."""

    __slots__ = ("_feasible", "_plans", "_scored", "_stats", "_values")

    def __init__(
        self,
        plans: Sequence[RulePlan],
        columns: Sequence[ScoreColumn],
        feasible: np.ndarray,
        stats: Sequence[Stats | None],
    ):
        self._plans = plans
        self._values = [column.values for column in columns]
        self._scored = [column.scored for column in columns]
        self._feasible = feasible
        self._stats = stats

    def __len__(self) -> int:
        return len(self._plans)

    @overload
    def __getitem__(self, index: int) -> Callable[[np.ndarray], np.ndarray]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Callable[[np.ndarray], np.ndarray]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        kind = self._plans[index].rule.normalize or "none"
        values = self._values[index]
        scored = self._scored[index]
        feasible = self._feasible
        facts = self._stats[index]
        assert facts is not None

        def at(rows: np.ndarray) -> np.ndarray:
            return apply_stats(kind, values[rows], scored[rows] & feasible[rows], facts)

        return at


def _select(ranking: Sequence[str], totals: np.ndarray, rng: random.Random) -> str | None:
    """The best node; ties (a prefix of the ranking) broken by ``rng`` as a list would be."""
    if not ranking:
        return None
    tied = int(np.count_nonzero(totals == totals[0]))
    return ranking[0] if tied == 1 else rng.choice(list(ranking[:tied]))
