"""Gangs: place at least ``minMember`` pods of a PodGroup together, inside one topology domain,
or place none of them.

A distributed training job is useless until all of its workers run, and slow when they are
spread over racks. ``schedule_gang`` therefore treats the pending members of a PodGroup as one
unit: it picks candidate topology domains (the governing policy's ``gang`` block names the
levels, filters domains as a whole and scores them), tries the members one after another on a
*derived* snapshot restricted to one domain (``CycleOptions.candidates``), and keeps the first
domain where enough members fit. Nothing is assumed in the caller's snapshot: the caller binds
the placements of a ``GangDecision`` that is ``scheduled``, or nothing at all, so two gangs
never hold half of what each needs. Members that arrive after the gang was placed go to the
domain the placed members share.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import repeat
from typing import Any

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.gang_domains import Domain, domain_view, free_sums, layout
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.normalize import normalize
from policyengine.engine.profiles import profile_for
from policyengine.engine.volumes import assume_volumes
from policyengine.lang.compiler import CompiledGang, Program
from policyengine.lang.runtime import Env
from policyengine.model.frozen import EMPTY
from policyengine.model.gpu_devices import Grant
from policyengine.model.objects import Pod, ResourceList
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.podgroup import pod_group_key
from policyengine.model.resources import PODS, from_units, to_units
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig, topology_of
from policyengine.quantity import format_quantity
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.gangs import GangView
from policyengine.schedlib.views import PodView, ResourceMap

_ZERO = Fraction(0)


@dataclass(frozen=True)
class Gang:
    """The members of one PodGroup the scheduler sees at once."""

    key: str  # "ns/podgroup"
    min_member: int
    timeout_seconds: int | None
    pending: tuple[Pod, ...]  # members waiting to be placed (queue order)
    placed: tuple[tuple[Pod, str], ...] = ()  # members already bound/assumed, with their node
    group_missing: bool = False  # the pods name a PodGroup the snapshot does not hold
    min_resources: ResourceList = EMPTY  # the PodGroup's spec.minResources (may be empty)


@dataclass(frozen=True)
class DomainOutcome:
    """What became of one candidate domain (``explain`` prints these)."""

    level: str | None  # None: the whole cluster (no topology constraint)
    name: str | None
    outcome: str  # "placed", "rejected", "too small", "short", "untried"
    detail: str = ""
    score: float | None = None

    @property
    def label(self) -> str:
        return "the whole cluster" if self.level is None else f"{self.level} {self.name}"


@dataclass(frozen=True)
class GangDecision:
    gang: str
    placements: tuple[Decision, ...]  # one Decision per pending member attempted
    domain: tuple[str, str] | None  # (level, value) chosen, e.g. ("nvlink_domain", "clique-3")
    message: str  # one message for the whole gang (FailedScheduling text when not placed)
    min_member: int = 1
    already_placed: int = 0
    policy: str | None = None
    domains: tuple[DomainOutcome, ...] = ()  # the candidates in the order they were considered

    @property
    def scheduled(self) -> bool:
        """True iff at least ``min_member`` members (counting placed ones) are on nodes."""
        if not self.placements and not self.already_placed:
            return False
        placed = sum(1 for d in self.placements if d.node is not None)
        return placed + self.already_placed >= self.min_member


# --- grouping ----------------------------------------------------------------------------


def gangs_of(pods: Iterable[Pod], snapshot: ClusterSnapshot) -> tuple[Gang | Pod, ...]:
    """The pending ``pods`` as queue units, in the order of each unit's first pod.

    A pod labelled ``scheduling.x-k8s.io/pod-group`` joins that gang (its running members,
    with their nodes, become ``placed``); a pod without the label is a unit of its own. Pods
    naming a PodGroup the snapshot lacks form a gang with ``group_missing`` set, which
    ``schedule_gang`` never places: the coscheduling plugin's Permit denies them too.
    """
    units: list[Gang | Pod | str] = []
    members: dict[str, list[Pod]] = {}
    for pod in pods:
        key = pod_group_key(pod)
        if key is None:
            units.append(pod)
            continue
        if key not in members:
            members[key] = []
            units.append(key)
        members[key].append(pod)
    placed = placed_members(snapshot, frozenset(members)) if members else {}
    out: list[Gang | Pod] = []
    for unit in units:
        if isinstance(unit, str):
            group = snapshot.pod_groups.get(unit)
            out.append(
                Gang(
                    key=unit,
                    min_member=group.min_member if group is not None else len(members[unit]),
                    timeout_seconds=group.schedule_timeout_seconds if group else None,
                    pending=tuple(members[unit]),
                    placed=tuple(placed.get(unit, ())),
                    group_missing=group is None,
                    min_resources=group.min_resources if group is not None else EMPTY,
                )
            )
        else:
            out.append(unit)
    return tuple(out)


def placed_members(
    snapshot: ClusterSnapshot, keys: frozenset[str]
) -> dict[str, list[tuple[Pod, str]]]:
    """The assigned pods of the gangs ``keys``, with their nodes, in node order."""
    found: dict[str, list[tuple[Pod, str]]] = {}
    for info in snapshot.nodes:
        for pod_info in info.pods:
            key = pod_group_key(pod_info.pod)
            if key is not None and key in keys:
                found.setdefault(key, []).append((pod_info.pod, info.name))
    return found


# --- placing -----------------------------------------------------------------------------


def min_resources_gap(snapshot: ClusterSnapshot, gang: Gang) -> dict[str, Fraction]:
    """What the gang's ``spec.minResources`` (with ``pods``: its minMember) asks beyond the
    free resources of the whole cluster, as the coscheduling plugin's PreFilter counts them:
    node by node in node order, each node's allocatable less the requests (and the number) of
    its pods but the gang's placed members, until every resource is covered; a node over its
    allocatable counts against the rest. Empty when covered, or when the PodGroup sets no
    minResources."""
    if not gang.min_resources:
        return {}
    wanted = {name: to_units(name, value) for name, value in gang.min_resources.items()}
    wanted[PODS] = gang.min_member
    mine = {pod.key for pod, _ in gang.placed}
    hosts = {node for _, node in gang.placed}
    for info in snapshot.nodes:
        allocatable = info.allocatable_units
        requested = info.requested_units
        pods = len(info.pods)
        own: list[PodInfo] = []
        if info.name in hosts:
            own = [p for p in info.pods if p.key in mine]
        for name in list(wanted):
            if name == PODS:
                left = allocatable.get(PODS, 0) - (pods - len(own))
            else:
                held = requested.get(name, 0) - sum(p.units.get(name, 0) for p in own)
                left = allocatable.get(name, 0) - held
            wanted[name] -= left
            if wanted[name] <= 0:
                del wanted[name]
        if not wanted:
            return {}
    return {name: from_units(name, wanted[name]) for name in sorted(wanted)}


@dataclass(frozen=True)
class _Base:
    min_member: int
    placed: int


@dataclass(frozen=True)
class _Candidate:
    level: str | None
    name: str | None
    nodes: frozenset[str] | None  # None: no restriction
    score: float | None = None


def schedule_gang(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    options: CycleOptions = CycleOptions(),  # noqa: B008 - frozen, never changed
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> GangDecision:
    """Place the gang's pending members all-or-nothing (see the module docstring).

    Returns a decision placing at least ``min_member`` members (counting ``placed``) inside
    one domain, or a decision placing none with one message for the whole gang. ``snapshot``
    is never changed.
    """
    needed = max(0, gang.min_member - len(gang.placed))
    known = len(gang.pending) + len(gang.placed)
    base = _Base(gang.min_member, len(gang.placed))
    if not gang.pending:
        message = f"gang {gang.key} has no pending members"
        return GangDecision(gang.key, (), None, message, base.min_member, base.placed)
    first = gang.pending[0]
    pod_view = PodView(first)
    context = CycleContext(snapshot, pod_view, config, topology)
    profile = profile_for(program, first, options.scheduler_name)
    policy = program.governing_policy(profile, Env({"pod": pod_view}, context))
    policy_name = policy.name if policy is not None else None
    if gang.group_missing:
        message = f"pod group {gang.key} not found; its pods wait until the PodGroup exists"
        return _none_placed(program, gang, snapshot, message, policy_name, (), base)
    if known < gang.min_member:
        message = (
            f"gang {gang.key} has {known} of its {gang.min_member} members "
            f"(minMember); waiting for the rest"
        )
        return _none_placed(program, gang, snapshot, message, policy_name, (), base)
    gap = min_resources_gap(snapshot, gang)
    if gap:
        short = ", ".join(f"{name} short by {format_quantity(v)}" for name, v in gap.items())
        message = f"gang {gang.key}: the cluster has not got its spec.minResources free ({short})"
        return _none_placed(program, gang, snapshot, message, policy_name, (), base)
    spec = policy.gang if policy is not None else None
    requests = [ResourceMap(dict(PodView(p).requests)) for p in gang.pending]
    gang_view = GangView(
        gang.key, gang.min_member, requests, len(gang.placed), gang.timeout_seconds
    )
    outcomes: list[DomainOutcome] = []
    candidates = _candidates(
        program,
        spec,
        gang,
        snapshot,
        options,
        topology,
        config,
        context,
        pod_view,
        gang_view,
        requests,
        needed,
        outcomes,
    )
    best_short: tuple[int, DomainOutcome] | None = None
    for candidate in candidates:
        decisions, derived = _try(
            program, gang, snapshot, rng, options, topology, config, candidate, needed
        )
        fitted = sum(1 for d in decisions if d.node is not None)
        if fitted >= needed:
            _keep_derived(snapshot, gang, decisions, derived)
            outcomes.append(
                DomainOutcome(
                    candidate.level,
                    candidate.name,
                    "placed",
                    f"{fitted} of {len(gang.pending)} pending members fit",
                    candidate.score,
                )
            )
            domain = (
                (candidate.level, candidate.name)
                if candidate.level is not None and candidate.name is not None
                else None
            )
            where = "" if domain is None else f" in {domain[0]} {domain[1]}"
            message = (
                f"gang {gang.key}: {fitted + len(gang.placed)} of {known} members placed{where}"
                f" by policy {policy_name}"
            )
            return GangDecision(
                gang.key,
                tuple(decisions),
                domain,
                message,
                base.min_member,
                base.placed,
                policy_name,
                tuple(outcomes),
            )
        failed = next((d for d in decisions if d.node is None), None)
        why = f": {failed.pod}: {failed.message}" if failed is not None else ""
        outcome = DomainOutcome(
            candidate.level,
            candidate.name,
            "short",
            f"only {fitted} of the {needed} members needed fit{why}",
            candidate.score,
        )
        outcomes.append(outcome)
        if best_short is None or fitted > best_short[0]:
            best_short = (fitted, outcome)
    message = _failure_message(gang, needed, spec, outcomes, best_short)
    return _none_placed(program, gang, snapshot, message, policy_name, outcomes, base)


def _none_placed(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    message: str,
    policy: str | None,
    outcomes: Sequence[DomainOutcome],
    base: _Base,
) -> GangDecision:
    decisions = tuple(
        Decision(
            pod=pod.key,
            policy=policy,
            version=program.version,
            node=None,
            num_nodes=snapshot.num_nodes,
            message=message,
        )
        for pod in gang.pending
    )
    return GangDecision(
        gang.key, decisions, None, message, base.min_member, base.placed, policy, tuple(outcomes)
    )


def _try(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    rng: random.Random,
    options: CycleOptions,
    topology: TopologyConfig,
    config: SchedulerConfig,
    candidate: _Candidate,
    needed: int,
) -> tuple[list[Decision], ClusterSnapshot]:
    """Members one after another on a derived snapshot, each seeing the ones before it;
    stops as soon as ``needed`` can no longer be reached. Also the snapshot derived: the
    placed members assumed into ``snapshot`` (``assume_gang`` gives it back)."""
    member_options = replace(options, candidates=candidate.nodes)
    if candidate.level is not None:
        member_options = replace(
            member_options,
            candidates_reason=f"node(s) outside the gang's {candidate.level} {candidate.name}",
        )
    spare = len(gang.pending) - needed
    snap = snapshot
    decisions: list[Decision] = []
    for pod in gang.pending:
        decision = schedule(program, pod, snap, rng, member_options, topology, config)
        decisions.append(decision)
        if decision.node is not None:
            # With the GPU devices it was granted, so that no later member gets the same ones.
            placed = with_devices(pod, decision.node, decision.gpu_devices)
            snap = snap.with_pod(placed, decision.node)
            if decision.volumes:  # and with its volumes, which no later member may take
                snap = assume_volumes(snap, decision.node, decision.volumes)
        else:
            spare -= 1
            if spare < 0:
                break
    return decisions, snap


# --- assuming a placed gang ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Derived:
    """The snapshot the last placed gang's members were tried on, derived from ``base`` by
    assuming ``placed`` (pod key, node, GPU grants) of the members ``pending``, in order."""

    base: ClusterSnapshot
    pending: tuple[Pod, ...]
    placed: tuple[tuple[str, str, tuple[Grant, ...]], ...]
    snapshot: ClusterSnapshot


_derived: list[_Derived] = []  # the last one only (a list: replaced whole, never edited)


def _placed(decisions: Iterable[Decision]) -> tuple[tuple[str, str, tuple[Grant, ...]], ...]:
    return tuple((d.pod, d.node, d.gpu_devices) for d in decisions if d.node is not None)


def _keep_derived(
    base: ClusterSnapshot, gang: Gang, decisions: Sequence[Decision], derived: ClusterSnapshot
) -> None:
    global _derived
    _derived = [_Derived(base, gang.pending, _placed(decisions), derived)]


def assume_gang(snapshot: ClusterSnapshot, gang: Gang, decision: GangDecision) -> ClusterSnapshot:
    """``snapshot`` with the members a scheduled ``decision`` placed assumed on their nodes
    (with their GPU grants), in placement order; ``snapshot`` itself when it placed none.

    ``schedule_gang`` derived that very snapshot while trying the members: when ``snapshot``
    and ``gang`` are the ones it was given and the placements are the ones it made, that one
    is given back (equal content, and the derivation steps every per-row cache followed
    during the member cycles), so the next cycle continues from where the member cycles left
    the caches instead of meeting a snapshot that branched off before them."""
    if not decision.scheduled:
        return snapshot
    placed = _placed(decision.placements)
    kept = _derived
    if kept:
        last = kept[0]
        if last.base is snapshot and last.pending is gang.pending and last.placed == placed:
            return last.snapshot
    members = {pod.key: pod for pod in gang.pending}
    volumes = {d.pod: d.volumes for d in decision.placements if d.volumes}
    for key, node, grants in placed:
        snapshot = snapshot.with_pod(with_devices(members[key], node, grants), node)
        if key in volumes:
            snapshot = assume_volumes(snapshot, node, volumes[key])
    return snapshot


def _candidates(
    program: Program,
    spec: CompiledGang | None,
    gang: Gang,
    snapshot: ClusterSnapshot,
    options: CycleOptions,
    topology: TopologyConfig,
    config: SchedulerConfig,
    context: CycleContext,
    pod_view: PodView,
    gang_view: GangView,
    requests: Sequence[ResourceMap],
    needed: int,
    outcomes: list[DomainOutcome],
) -> list[_Candidate]:
    """The domains to try, best first; the whole cluster last unless a level is required."""
    if spec is None or not spec.levels:
        return [_Candidate(None, None, None)]
    if gang.placed:
        return [_joined_domain(spec, gang, snapshot, topology)]
    shape = layout(snapshot, topology, spec.levels)
    free = free_sums(snapshot, topology, spec.levels)
    nodes = snapshot.nodes
    floor = _floor_units(_lower_bound(requests, needed))
    # The member slots (a filter pass) only once a domain has the resources: a gang too large
    # for every domain is turned away on the sums alone.
    slots: dict[str, int] | None = None
    probed = False
    out: list[_Candidate] = []
    for level in spec.levels:
        scored: list[_Candidate] = []
        domains = shape.levels[level]
        passing: dict[str, Env] = {}  # the domains every gang filter passes, with their envs
        for name, domain in domains.items():
            short = _too_small(free, domain, floor)
            if not short and needed:
                if not probed:
                    slots = _member_slots(program, gang, snapshot, options, topology, config)
                    probed = True
                short = _too_few_slots(slots, domain, needed)
            if short:
                outcomes.append(DomainOutcome(level, name, "too small", short))
                continue
            view = domain_view(shape, domain, nodes, free)
            env = Env({"pod": pod_view, "gang": gang_view, "domain": view}, context)
            rejected = _gang_filters(spec, env)
            if rejected:
                outcomes.append(DomainOutcome(level, name, "rejected", rejected))
                continue
            passing[name] = env
        totals = _gang_scores(spec, passing)
        for name in passing:
            scored.append(_Candidate(level, name, domains[name].names, totals.get(name)))
        scored.sort(key=lambda c: (-(c.score or 0.0), c.name or ""))
        out.extend(scored)
    if not spec.required:
        out.append(_Candidate(None, None, None))
    return out


def _joined_domain(
    spec: CompiledGang, gang: Gang, snapshot: ClusterSnapshot, topology: TopologyConfig
) -> _Candidate:
    """Late members go where the placed ones are: the lowest listed level they all share."""
    placed_nodes = [snapshot.get(node) for _, node in gang.placed]
    infos = [info for info in placed_nodes if info is not None]
    for level in spec.levels:
        values = {topology_of(info.node, topology).domain(level) for info in infos}
        if len(values) == 1:
            (value,) = values
            if value is not None:
                nodes = frozenset(
                    info.name
                    for info in snapshot.nodes
                    if topology_of(info.node, topology).domain(level) == value
                )
                return _Candidate(level, value, nodes)
    return _Candidate(None, None, None)


def _lower_bound(requests: Sequence[ResourceMap], needed: int) -> dict[str, Fraction]:
    """Per resource, the least any ``needed`` pending members can ask for together: a domain
    with less free cannot hold the gang, whatever the members' rules say."""
    if needed == 0:
        return {}
    names = {name for r in requests for name, value in r.items() if value > 0}
    floor: dict[str, Fraction] = {}
    first = requests[0]
    if all(r == first for r in requests):
        # Members alike (one template): any ``needed`` of them ask the same, exactly.
        return {name: first.get(name, _ZERO) * needed for name in names}
    for name in names:
        values = sorted(r.get(name, _ZERO) for r in requests)
        floor[name] = sum(values[:needed], _ZERO)
    return floor


def _too_small(
    free: dict[Any, int], domain: Domain, floor: Sequence[tuple[str, int, Fraction]]
) -> str:
    """Why the domain's free resources (``gang_domains.free_sums``) cannot hold the floor
    (``_floor_units``)."""
    level, value = domain.level, domain.name
    for name, need, quantity in floor:
        have_units = free.get((level, value, name), 0)
        if have_units < need:
            have = from_units(name, have_units)
            return f"{_num(have)} {name} free, the gang needs {_num(quantity)}"
    return ""


def _floor_units(floor: dict[str, Fraction]) -> list[tuple[str, int, Fraction]]:
    """Per resource, in name order: the floor in kube's integer units, and as a quantity."""
    return [(name, to_units(name, floor[name]), floor[name]) for name in sorted(floor)]


def _member_slots(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    options: CycleOptions,
    topology: TopologyConfig,
    config: SchedulerConfig,
) -> dict[str, int] | None:
    """How many members each node could take, when the members are alike: the first member's
    feasible nodes (one filter pass), each holding as many as its free resources allow.

    A domain whose nodes hold fewer than the gang needs is not tried member by member. This
    holds only while a member's feasibility can only shrink as its peers land, so gangs whose
    members differ, or carry pod affinity or topology spread, are left to the resource sums.
    """
    first = gang.pending[0]
    if not all(_shape(p) == _shape(first) for p in gang.pending):
        return None
    if first.has_pod_affinity_constraints or first.topology_spread_constraints:
        return None
    # Filters only: every node that passes them is turned away as outside an empty domain
    # (with a reason no rule gives), so no node is scored; those nodes are the feasible ones.
    probe = replace(options, all_filters=False, candidates=_NOWHERE, candidates_reason=_PROBE)
    decision = schedule(program, first, snapshot, random.Random(0), probe, topology, config)
    wants = {k: u for k, v in PodView(first).requests.items() if (u := to_units(k, v)) > 0}
    slots: dict[str, int] = {}
    if not wants:
        for name, why in decision.infeasible.items():
            if _probed(why):
                slots[name] = len(gang.pending)
        return slots
    kept = _kept_slots(tuple(wants.items()), snapshot.num_nodes)
    infos = snapshot.node_infos
    seen: tuple[Any, ...] | None = None  # the probe's rejection: one tuple shared by its nodes
    for name, why in decision.infeasible.items():
        if why is not seen:
            if not _probed(why):
                continue
            seen = why
        info = infos[name]
        known = kept.get(name)
        if known is not None and known[0] is info:
            slots[name] = known[1]
            continue
        allocatable, requested = info.allocatable_units, info.requested_units
        slots[name] = count = min(
            max(0, allocatable.get(k, 0) - requested.get(k, 0)) // u for k, u in wants.items()
        )
        kept[name] = (info, count)
    return slots


def _probed(why: tuple[Any, ...]) -> bool:
    """Whether a node's rejections are the probe's alone: it passed every filter."""
    return len(why) == 1 and why[0].rule == "gang_domain" and why[0].reasons == (_PROBE,)


# Per members' wanted units: each node's slots with the NodeInfo they were counted on (held,
# so its identity is not reused). NodeInfos are immutable and most are the same gang after
# gang; a handful of member shapes.
_SLOTS: dict[tuple[tuple[str, int], ...], dict[str, tuple[NodeInfo, int]]] = {}
_SLOT_SHAPES = 32


def _kept_slots(wants: tuple[tuple[str, int], ...], nodes: int) -> dict[str, tuple[NodeInfo, int]]:
    kept = _SLOTS.get(wants)
    if kept is None or len(kept) > 2 * nodes + 64:  # nodes gone pile up: start over
        if len(_SLOTS) >= _SLOT_SHAPES:
            _SLOTS.clear()
        kept = _SLOTS[wants] = {}
    return kept


_NOWHERE: frozenset[str] = frozenset()
_PROBE = "the probe for member slots scores no node"


def _shape(pod: Pod) -> tuple[object, ...]:
    """What decides where a pod fits, leaving out what names it."""
    return (
        pod.containers,
        pod.init_containers,
        pod.overhead,
        pod.pod_requests,
        pod.node_selector,
        pod.affinity,
        pod.tolerations,
        pod.topology_spread_constraints,
        pod.scheduler_name,
        pod.priority,
        pod.annotations,
    )


def _too_few_slots(slots: dict[str, int] | None, domain: Domain, needed: int) -> str:
    if slots is None or needed == 0:
        return ""
    room = sum(map(slots.get, domain.names, repeat(0)))
    if room >= needed:
        return ""
    return f"its feasible nodes hold {room} of the {needed} members needed"


def _num(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _gang_filters(spec: CompiledGang, env: Env) -> str:
    """The first gang filter that rejects the domain, as ``rule: reason``; empty when none."""
    for rule in spec.filters:
        verdict = rule.filter(env)
        if verdict.error is not None:
            return f"{rule.qualified_name}: {verdict.error}"
        if not verdict.passed:
            reasons = "; ".join(verdict.reasons) or f"rejected by {rule.qualified_name}"
            return f"{rule.qualified_name}: {reasons}"
    return ""


def _gang_scores(spec: CompiledGang, envs: dict[str, Env]) -> dict[str, float]:
    """Each gang score over the level's passing domains (their filters' envs), normalised over
    them, weighted."""
    names = list(envs)
    totals = dict.fromkeys(names, 0.0)
    if not spec.scores or not names:
        return totals
    for rule in spec.scores:
        values: list[float | None] = []
        for env in envs.values():
            value = rule.score(env)
            values.append(None if value.error is not None else value.value)
        for name, score in zip(names, normalize(rule.normalize, values), strict=True):
            totals[name] += rule.weight * score
    return totals


def _failure_message(
    gang: Gang,
    needed: int,
    spec: CompiledGang | None,
    outcomes: Sequence[DomainOutcome],
    best_short: tuple[int, DomainOutcome] | None,
) -> str:
    members = "1 member" if needed == 1 else f"{needed} members"
    head = f"gang {gang.key} cannot be placed: {members} must fit together"
    if spec is not None and spec.levels:
        levels = _either(spec.levels)
        head += f" in one {levels}" if spec.required else f" (tried each {levels}, then anywhere)"
    parts: list[str] = []
    counts: dict[tuple[str, str], int] = {}
    for outcome in outcomes:
        if outcome.outcome in ("too small", "rejected") and outcome.level is not None:
            what = (
                "too small"
                if outcome.outcome == "too small"
                else f"rejected by {outcome.detail.split(':', 1)[0]}"
            )
            key = (outcome.level, what)
            counts[key] = counts.get(key, 0) + 1
    for (level, what), count in counts.items():
        parts.append(f"{count} {level} domain(s) {what}")
    if spec is not None and spec.levels:
        for level in spec.levels:
            if not any(o.level == level for o in outcomes):
                parts.append(f"no node has a {level} label")
    if best_short is not None:
        parts.append(f"{best_short[1].label}: {best_short[1].detail}")
    text = head + (": " + "; ".join(parts) if parts else "")
    return text if text.endswith(".") else text + "."


def _either(levels: Sequence[str]) -> str:
    if len(levels) == 1:
        return levels[0]
    return ", ".join(levels[:-1]) + " or " + levels[-1]


__all__ = [
    "DomainOutcome",
    "Gang",
    "GangDecision",
    "assume_gang",
    "gangs_of",
    "placed_members",
    "schedule_gang",
]
