"""Gang preemption: which running pods to evict so that a gang that fits nowhere can run whole.

A gang is placed inside one topology domain (``engine.gangs``), so preemption for a gang chooses
a domain, not a node. For each candidate domain (every domain of each level the governing
policy's ``gang`` block names, and the whole cluster when no level is required and no domain
works, or when the block names none):

1. *Victims.* Every evictable unit with a pod in the domain is removed: a pod of strictly lower
   priority than every pending member that the policy's ``preempt`` rules let the gang's first
   member evict (as for one pod, ``engine.preemption``), or a whole gang of such pods, wherever
   its members run; a gang with one member that may not go is no victim at all. The gang's own
   members are never victims.
2. *Dry run.* ``schedule_gang`` runs on the snapshot without those units; the domain is a
   candidate only if the whole gang (``minMember``) then fits inside it.
3. *Reprieve.* Units are given back one by one, the most important first, those whose eviction
   would break a PodDisruptionBudget before the others; a unit stays evicted only if the gang
   no longer fits inside the domain with it back.
4. *Choice.* Between candidate domains, the order of pod preemption: fewest budget violations,
   the lowest highest-victim priority, the smallest priority sum, the fewest victims, the
   latest start, then the domain's name.

The result names the domain, its victims, and the gang's placement once they are gone (the
last successful dry run). Dry runs use an rng seeded from the caller's, so ``simulate`` stays
reproducible. Every domain is tried: a cluster has few domains per level.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from policyengine.engine.cycle import CycleOptions
from policyengine.engine.gangs import Gang, GangDecision, schedule_gang
from policyengine.engine.overcommit import policy_config
from policyengine.engine.preemption import (
    NEVER,
    NOT_ELIGIBLE_NEVER,
    Candidate,
    PreemptionDecision,
    _group,
    _importance,
    _lower_ranked,
    _rank,
    _Search,
    _violations,
)
from policyengine.engine.profiles import profile_for
from policyengine.lang.compiler import Program
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig, topology_of
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView

CLUSTER = "the whole cluster"

Unit = tuple[tuple[Pod, str], ...]


@dataclass(frozen=True)
class GangPreemption:
    """What preemption decided for one gang: a domain, its victims and the placement they
    make room for; or, when ``placement`` is None, why no domain helps (``message``).

    ``domain`` is ``(level, value)``, or None for the whole cluster; ``tried`` says, per
    domain label, why it was no candidate."""

    gang: str
    domain: tuple[str, str] | None = None
    victims: tuple[Pod, ...] = ()
    pdb_violations: int = 0
    placement: GangDecision | None = None
    message: str = ""
    tried: tuple[tuple[str, str], ...] = ()

    @property
    def preempts(self) -> bool:
        return self.placement is not None

    @property
    def label(self) -> str:
        return CLUSTER if self.domain is None else f"{self.domain[0]}/{self.domain[1]}"

    def as_preemption(self) -> PreemptionDecision:
        """The same outcome in the shape ``simulate`` reports pod preemptions in: ``pod`` is
        the gang, ``node`` the domain's label."""
        return PreemptionDecision(
            self.gang,
            self.label if self.preempts else None,
            self.victims,
            self.message,
            self.pdb_violations,
            gang=True,
        )


@dataclass(frozen=True)
class _Domain:
    level: str | None
    name: str | None
    nodes: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str] | None:
        if self.level is None or self.name is None:
            return None
        return (self.level, self.name)

    @property
    def label(self) -> str:
        return CLUSTER if self.level is None else f"{self.level}/{self.name}"


def preempt_gang(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    rng: random.Random | None = None,
    options: CycleOptions = CycleOptions(),  # noqa: B008 - frozen, never changed
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> GangPreemption:
    """Preemption for ``gang``, which ``schedule_gang`` could not place (module docstring).
    ``snapshot`` is never changed."""
    if not gang.pending or gang.group_missing:
        return GangPreemption(gang.key, message="no pending members to preempt for")
    if len(gang.pending) + len(gang.placed) < gang.min_member:
        return GangPreemption(gang.key, message="waiting for the gang's members")
    first = gang.pending[0]
    view = PodView(first)
    context = CycleContext(snapshot, view, config, topology)
    policy = program.governing_policy(
        profile_for(program, first, options.scheduler_name), Env({"pod": view}, context)
    )
    if policy is None:
        return GangPreemption(gang.key, message="no policy governs the gang")
    if any(p.preemption_policy == NEVER for p in gang.pending):
        return GangPreemption(gang.key, message=NOT_ELIGIBLE_NEVER)
    # Victims must be of lower priority than every member: judge them as the lowest member.
    lowest = min(gang.pending, key=lambda p: p.priority)
    judge = replace(first, priority=lowest.priority)
    search = _Search(policy, judge, snapshot, (), topology, policy_config(policy, first, config))
    seed = rng.getrandbits(32) if rng is not None else 0
    spec = policy.gang
    levels = spec.levels if spec is not None else ()
    domains = _domains(snapshot, gang, levels, topology)
    fallback = not levels or (spec is not None and not spec.required)
    tried: list[tuple[str, str]] = []
    found: dict[str, tuple[Candidate, _Domain, GangDecision]] = {}
    for domain in domains:
        outcome = _on_domain(
            program, gang, snapshot, search, domain, seed, options, topology, config
        )
        if isinstance(outcome, str):
            tried.append((domain.label, outcome))
        else:
            found[domain.label] = (outcome[0], domain, outcome[1])
    if not found and fallback and levels:
        whole = _Domain(None, None, tuple(sorted(snapshot.node_names)))
        outcome = _on_domain(
            program, gang, snapshot, search, whole, seed, options, topology, config
        )
        if isinstance(outcome, str):
            tried.append((whole.label, outcome))
        else:
            found[whole.label] = (outcome[0], whole, outcome[1])
    if not found:
        why = "; ".join(f"{label}: {reason}" for label, reason in tried) or "no domain"
        return GangPreemption(
            gang.key, message=f"preemption cannot place gang {gang.key}: {why}", tried=tuple(tried)
        )
    best, domain, placement = found[_rank([c for c, _, _ in found.values()])[0].node]
    shown = ", ".join(f"{v.key} (priority {v.priority})" for v in best.victims) or "none"
    message = f"preempting in {domain.label} for gang {gang.key}: {shown}"
    if best.pdb_violations:
        message += f"; {best.pdb_violations} PodDisruptionBudget violation(s)"
    return GangPreemption(
        gang.key,
        domain.key,
        best.victims,
        best.pdb_violations,
        placement,
        message,
        tuple(tried),
    )


def _domains(
    snapshot: ClusterSnapshot, gang: Gang, levels: tuple[str, ...], topology: TopologyConfig
) -> list[_Domain]:
    """Each level's domains, lowest level first, by name; the whole cluster when the policy
    names no level. Members already placed keep the gang in domains holding all of them."""
    if not levels:
        return [_Domain(None, None, tuple(sorted(snapshot.node_names)))]
    placed = {node for _, node in gang.placed}
    out: list[_Domain] = []
    for level in levels:
        members: dict[str, list[str]] = {}
        for info in snapshot.nodes:
            value = topology_of(info.node, topology).domain(level)
            if value is not None:
                members.setdefault(value, []).append(info.name)
        for value in sorted(members):
            nodes = tuple(sorted(members[value]))
            if placed <= set(nodes):
                out.append(_Domain(level, value, nodes))
    return out


def _on_domain(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    search: _Search,
    domain: _Domain,
    seed: int,
    options: CycleOptions,
    topology: TopologyConfig,
    config: SchedulerConfig,
) -> tuple[Candidate, GangDecision] | str:
    """The victims in ``domain`` and the placement they make room for, or why none."""
    units: list[Unit] = []
    seen: set[str] = set()
    for node in domain.nodes:
        if not _lower_ranked(search.snapshot.node(node), search.pod):
            continue  # nothing on it ranks below the gang
        for unit in search.units(node):
            key = _group(unit[0][0]) or unit[0][0].key
            if key in seen or key == gang.key:
                continue
            seen.add(key)
            units.append(unit)
    if not units:
        return "no preemption victims"
    inside = frozenset(domain.nodes)

    def fits(snap: ClusterSnapshot) -> GangDecision | None:
        decision = schedule_gang(
            program, gang, snap, random.Random(seed), options, topology, config
        )
        if not decision.scheduled:
            return None
        if domain.level is not None and any(
            d.node is not None and d.node not in inside for d in decision.placements
        ):
            return None
        return decision

    freed = snapshot
    for unit in units:
        for pod, _ in unit:
            freed = freed.without_pod(pod.key)
    placement = fits(freed)
    if placement is None:
        return "the gang does not fit even with every lower-priority pod gone"
    units.sort(key=lambda unit: min(_importance(pod) for pod, _ in unit))
    violating = _violations(units, search.budgets)
    ordered = [u for u, v in zip(units, violating, strict=True) if v] + [
        u for u, v in zip(units, violating, strict=True) if not v
    ]
    breaks = {id(u) for u, v in zip(units, violating, strict=True) if v}
    victims: list[Pod] = []
    pdb_violations = 0
    for unit in ordered:
        back = freed
        for pod, node in unit:
            back = back.with_pod(pod, node)
        kept = fits(back)
        if kept is not None:
            freed, placement = back, kept
            continue
        victims.extend(pod for pod, _ in unit)
        if id(unit) in breaks:
            pdb_violations += len(unit)
    victims.sort(key=_importance)
    return Candidate(domain.label, tuple(victims), pdb_violations), placement


def preempt_gang_in_simulation(
    program: Program,
    gang: Gang,
    snapshot: ClusterSnapshot,
    decision: GangDecision,
    rng: random.Random,
    options: CycleOptions = CycleOptions(),  # noqa: B008 - frozen, never changed
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> tuple[GangDecision, ClusterSnapshot, PreemptionDecision | None]:
    """What ``simulate`` does for a gang that fits nowhere: preempt, and when a domain is
    chosen, its victims leave the snapshot at once and the gang takes the placement the dry
    run found. Returns the gang's decision, the snapshot and the preemption (if any)."""
    outcome = preempt_gang(program, gang, snapshot, rng, options, topology, config)
    if outcome.placement is None:
        return decision, snapshot, None
    for victim in outcome.victims:
        if victim.key in snapshot.pod_nodes:
            snapshot = snapshot.without_pod(victim.key)
    shown = ", ".join(v.key for v in outcome.victims)
    placed = replace(
        outcome.placement, message=f"{outcome.placement.message} after preempting {shown}"
    )
    return placed, snapshot, outcome.as_preemption()
