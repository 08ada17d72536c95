"""Preemption: which running pods to evict so that a pod that fits nowhere can run.

This is kube-scheduler's DefaultPreemption (PostFilter), over one immutable snapshot:

1. *Eligibility.* A pod with ``preemptionPolicy: Never`` never preempts. A pod already
   nominated to a node where a pod it may evict is terminating because a scheduler preempted
   it (deletion started, ``DisruptionTarget`` condition with reason ``PreemptionByScheduler``)
   waits for it instead of preempting again (unless the nominated node is now rejected for a
   reason preemption cannot fix). A pod terminating for another reason (deleted by its owner,
   drained) does not hold it back.
2. *Candidates.* Nodes rejected for a reason no eviction can fix (kube's
   ``UnschedulableAndUnresolvable``: unschedulable node, node name, taints, node affinity,
   required pod affinity, spread on a missing label) are skipped: "Preemption is not helpful
   for scheduling". On each other node every *potential victim* (a pod of lower priority that
   the policy lets this pod evict) is removed; if the pod's filters still reject the node, the
   node is no candidate.
3. *Victims per node.* Potential victims are taken back ("reprieved") one by one, the most
   important first (higher priority, then earlier start), those whose eviction would break a
   PodDisruptionBudget before the others; a pod stays evicted only if the pod does not fit
   with it back.
4. *Choice.* Fewest budget violations, then the lowest highest-victim priority, the smallest
   sum of victim priorities, the fewest victims, the latest start among the highest-priority
   victims, then the first node by name.

The policy decides what may be evicted: the first ``preempt`` rule whose guard holds for the
pod judges each lower-priority pod (``victim``); a policy without preempt rules lets any
lower-priority pod go, as kube-scheduler does; one whose rules all have false guards lets
none go. A victim is always of strictly lower priority, whatever a rule says. A victim in a
gang (PodGroup label) brings every member of its gang, on any node: gangs are evicted whole or
not at all, and only when every member may be evicted.

Each fit is checked with the policy's compiled filters on the one node, with a context built
over the snapshot minus the victims (so spread and affinity see the evictions), and with the
pods nominated to that node at the same or higher priority assumed there, as kube-scheduler
adds nominated pods when filtering.

*Bounded search.* As kube-scheduler's DefaultPreemption does, the dry runs do not cover every
node of a large cluster: they walk the potential nodes (sorted by name) from a random offset,
wrapping around, and stop once ``num_candidates`` candidates are found, at least one of them
keeping every budget (``max(minCandidateNodesPercentage% of the nodes,
minCandidateNodesAbsolute)``, at most all of them: ``SchedulerConfig``, kube's 10 and 100).
A node where the pod fits with no eviction at all ends the search at once: it is the best
candidate there can be. The offset is drawn from the cycle's seeded rng, so ``simulate`` stays
reproducible; without an rng the walk starts at the first node. Clusters of at most 100 nodes
are searched whole, so there the choice does not depend on the offset.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision, Rejection, first_rejection_groups
from policyengine.engine.gpu_placement import choose_devices, governing_device_choice
from policyengine.engine.overcommit import policy_config
from policyengine.engine.profiles import profile_for
from policyengine.lang.compiler import CompiledPolicy, Program
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.model.pdb import PodDisruptionBudget
from policyengine.model.plugins import FILTER_PLUGINS
from policyengine.model.plugins.base import UNSCHEDULABLE
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.podgroup import POD_GROUP_LABEL
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView

NEVER = "Never"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
# kube adds MaxInt32 + 1 to each priority before summing, so negative priorities sum sensibly.
_PRIORITY_OFFSET = 2**31
# A pod without a start time counts as starting now, the latest possible.
_NO_START = "\uffff"

_FILTER_PLUGINS = {p.filter_rule: p for p in FILTER_PLUGINS if p.filter_rule}


@dataclass(frozen=True)
class Candidate:
    """A node where evicting ``victims`` (most important first) lets the pod fit."""

    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int


@dataclass(frozen=True)
class PreemptionDecision:
    """What preemption decided for one pod: the node and its victims, or why none.

    ``message`` is kube's PostFilter message when preemption failed (``0/3 nodes are
    available: 3 No preemption victims found for incoming pod.``) and a summary when it
    succeeded; ``candidates`` are the candidate nodes the bounded search found, best first;
    ``statuses`` say why each other node it tried was not a candidate. ``gang``: the
    preemption was for a whole gang (``engine.gang_preemption``): ``pod`` is the gang and
    ``node`` the label of the topology domain freed for it.
    """

    pod: str
    node: str | None
    victims: tuple[Pod, ...] = ()
    message: str = ""
    pdb_violations: int = 0
    candidates: tuple[Candidate, ...] = ()
    statuses: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gang: bool = False

    @property
    def preempts(self) -> bool:
        return self.node is not None


def failed_scheduling_message(decision: Decision, preemption: PreemptionDecision | None) -> str:
    """kube's FailedScheduling text: the filter histogram, then the PostFilter's failure."""
    if preemption is None or preemption.preempts or not preemption.message:
        return decision.message
    return f"{decision.message} preemption: {preemption.message}."


def with_nominated(
    snapshot: ClusterSnapshot, pod: Pod, nominated: Iterable[Pod], node: str | None = None
) -> ClusterSnapshot:
    """``snapshot`` with the pods nominated to a node (``status.nominatedNodeName``) assumed
    there when their priority is at least ``pod``'s: kube-scheduler filters a pod as if the
    preemptors of equal or higher priority already ran. ``node`` limits it to one node."""
    for other in nominated:
        target = other.nominated_node_name
        if (
            not target
            or other.key == pod.key
            or other.priority < pod.priority
            or (node is not None and target != node)
            or target not in snapshot
            or other.key in snapshot.pod_nodes
        ):
            continue
        snapshot = snapshot.with_pod(other, target)
    return snapshot


def preempt(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    decision: Decision | None = None,
    nominated: Sequence[Pod] = (),
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
    rng: random.Random | None = None,
) -> PreemptionDecision:
    """Preemption for ``pod``, which ``decision`` (this snapshot's cycle, run here when not
    given) found unschedulable. ``nominated``: pending pods nominated to nodes. ``rng``: the
    cycle's rng, for the search's start offset (module docstring)."""
    if decision is None:
        options = CycleOptions(all_filters=False, scheduler_name=scheduler_name)
        base = with_nominated(snapshot, pod, nominated)
        decision = schedule(program, pod, base, random.Random(0), options, topology, config)
    pod_view = PodView(pod)
    env = Env({"pod": pod_view}, CycleContext(snapshot, pod_view, config, topology))
    policy = program.governing_policy(profile_for(program, pod, scheduler_name), env)
    if policy is None or decision.node is not None:
        # Nothing to preempt for: no PostFilter failure to add to the cycle's own message.
        return PreemptionDecision(pod.key, None)
    if pod.preemption_policy == NEVER:
        return PreemptionDecision(pod.key, None, message=NOT_ELIGIBLE_NEVER)
    if pod.resource_claims:  # no eviction lets policyengine allocate its claims
        return PreemptionDecision(pod.key, None)
    groups = first_rejection_groups(decision.infeasible)
    search: _Search | None = None
    nominated_to = pod.nominated_node_name
    if nominated_to and nominated_to in snapshot:
        first = decision.infeasible.get(nominated_to, ())
        if not first or _resolvable(first[0]):
            dying = [
                info.pod
                for info in snapshot.node(nominated_to).pods
                if info.pod.terminating_by_preemption
            ]
            if dying:
                search = _Search(
                    policy, pod, snapshot, nominated, topology, policy_config(policy, pod, config)
                )
                if any(search.eligible(victim, nominated_to) for victim in dying):
                    return PreemptionDecision(pod.key, None, message=NOT_ELIGIBLE_TERMINATING)
    helpless = [names for first_rejection, names in groups if not _resolvable(first_rejection)]
    lowest = snapshot.lowest_priority
    if lowest is None or lowest >= pod.priority:
        quick = _no_victims(pod, snapshot, decision, helpless, rng)
        if quick is not None:
            return quick
    if search is None:
        search = _Search(
            policy, pod, snapshot, nominated, topology, policy_config(policy, pod, config)
        )
    candidates: list[Candidate] = []
    statuses: dict[str, tuple[str, ...]] = {}
    for names in helpless:
        statuses.update(dict.fromkeys(names, (NOT_HELPFUL,)))
    potential = sorted(set(snapshot.node_names).difference(statuses))
    wanted = num_candidates(len(potential), config)
    offset = rng.randrange(len(potential)) if rng is not None and potential else 0
    if lowest is None or lowest >= pod.priority:
        # No pod in the cluster ranks below the preemptor (pods of one priority, the common
        # case): no node has a victim, told without looking at any.
        statuses.update(dict.fromkeys(potential, (NO_VICTIMS,)))
        potential = []
    keeping = 0  # candidates that break no budget
    for i in range(len(potential)):
        name = potential[(offset + i) % len(potential)]
        found = search.on_node(name)
        if not isinstance(found, Candidate):
            statuses[name] = found
            continue
        if not found.victims:
            candidates = [found]
            break
        candidates.append(found)
        keeping += found.pdb_violations == 0
        if keeping and len(candidates) >= wanted:
            break
    if not candidates:
        return PreemptionDecision(
            pod.key, None, message=_histogram(len(snapshot), statuses), statuses=statuses
        )
    ranked = _rank(candidates)
    best = ranked[0]
    message = preempting_message(f"on {best.node}", best)
    return PreemptionDecision(
        pod.key,
        best.node,
        best.victims,
        message,
        best.pdb_violations,
        tuple(ranked),
        statuses,
    )


def preempting_message(where: str, chosen: Candidate) -> str:
    """What a preemption says it does (``preempting on NODE: victims``), for pods and gangs."""
    shown = ", ".join(f"{v.key} (priority {v.priority})" for v in chosen.victims) or "none"
    message = f"preempting {where}: {shown}"
    if chosen.pdb_violations:
        message += f"; {chosen.pdb_violations} PodDisruptionBudget violation(s)"
    return message


def without_victims(snapshot: ClusterSnapshot, victims: Sequence[Pod]) -> ClusterSnapshot:
    """The snapshot once the victims are gone (offline: no grace period)."""
    for victim in victims:
        if victim.key in snapshot.pod_nodes:
            snapshot = snapshot.without_pod(victim.key)
    return snapshot


def after_preempting(victims: Sequence[Pod]) -> str:
    """How a placement that needed preemption ends its message."""
    return "after preempting " + ", ".join(v.key for v in victims)


def num_candidates(potential: int, config: SchedulerConfig = DEFAULT_CONFIG) -> int:
    """How many candidates the dry runs look for among ``potential`` nodes: a percentage of
    them, at least an absolute number, at most all of them (kube's calculateNumCandidates)."""
    wanted = potential * config.min_candidate_nodes_percentage // 100
    return min(potential, max(wanted, config.min_candidate_nodes_absolute))


def _resolvable(rejection: Rejection) -> bool:
    """Whether evicting pods might fix this rejection (kube's ``Unschedulable`` code).

    kube's own filters say so by their reasons; a policy's own rules are assumed fixable, and
    the dry run with the victims removed decides."""
    plugin = _FILTER_PLUGINS.get(rejection.rule.rsplit(".", 1)[-1])
    if plugin is None:
        return True
    return plugin.code(rejection.reasons) == UNSCHEDULABLE


def _histogram(num_nodes: int, statuses: Mapping[str, tuple[str, ...]]) -> str:
    counts: dict[str, int] = {}
    for reasons, nodes in Counter(statuses.values()).items():
        for reason in dict.fromkeys(reasons):
            counts[reason] = counts.get(reason, 0) + nodes
    return _counted(num_nodes, counts)


def _counted(num_nodes: int, counts: Mapping[str, int]) -> str:
    entries = sorted(f"{count} {reason}" for reason, count in counts.items() if count)
    return f"0/{num_nodes} nodes are available: {', '.join(entries)}."


def _no_victims(
    pod: Pod,
    snapshot: ClusterSnapshot,
    decision: Decision,
    helpless: list[list[str]],
    rng: random.Random | None,
) -> PreemptionDecision | None:
    """The failed preemption of a pod no pod in the cluster ranks below (the common case of
    pods of one priority), told from the node counts: the nodes whose first rejection
    eviction cannot fix, and every other node with no victim. The search's start is drawn
    from ``rng`` as the search would draw it, so later cycles break ties alike. None when the
    decision is not of this snapshot's nodes (the search then tells it node by node)."""
    unfixable = sum(map(len, helpless))
    if decision.num_nodes != len(snapshot) or unfixable > len(snapshot):
        return None
    potential = len(snapshot) - unfixable
    if rng is not None and potential:
        rng.randrange(potential)
    counts = {NOT_HELPFUL: unfixable, NO_VICTIMS: potential}
    return PreemptionDecision(
        pod.key,
        None,
        message=_counted(len(snapshot), counts),
        statuses=_Statuses(snapshot, helpless),
    )


class _Statuses(Mapping[str, tuple[str, ...]]):
    """``PreemptionDecision.statuses`` of ``_no_victims``, built when read, as the search
    would have built it: the nodes eviction cannot fix, then every other node (in name
    order) with no victim."""

    def __init__(self, snapshot: ClusterSnapshot, helpless: list[list[str]]):
        self._snapshot = snapshot
        self._helpless = helpless
        self._built: dict[str, tuple[str, ...]] | None = None

    def _get(self) -> dict[str, tuple[str, ...]]:
        if self._built is None:
            built: dict[str, tuple[str, ...]] = {}
            for names in self._helpless:
                built.update(dict.fromkeys(names, (NOT_HELPFUL,)))
            rest = sorted(set(self._snapshot.node_names).difference(built))
            built.update(dict.fromkeys(rest, (NO_VICTIMS,)))
            self._built = built
        return self._built

    def __getitem__(self, node: str) -> tuple[str, ...]:
        return self._get()[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __eq__(self, other: object) -> bool:
        return self._get() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, which do not hash


def _start(pod: Pod) -> str:
    return pod.creation_timestamp or _NO_START


def _importance(pod: Pod) -> tuple[int, str, str]:
    """Sort key, most important first: higher priority, then earlier start (kube's
    MoreImportantPod; the model keeps creationTimestamp, not status.startTime), then name."""
    return (-pod.priority, _start(pod), pod.key)


def _rank(candidates: list[Candidate]) -> list[Candidate]:
    """kube's pickOneNodeForPreemption as a total order, best first."""

    def key(c: Candidate) -> tuple[int, int, int, int, str, str]:
        if not c.victims:
            return (-1, 0, 0, 0, "", c.node)  # a node that needs no eviction wins outright
        top = max(v.priority for v in c.victims)
        earliest = min(_start(v) for v in c.victims if v.priority == top)
        total = sum(v.priority + _PRIORITY_OFFSET for v in c.victims)
        # the latest start wins: invert the string order by negating each code point
        latest = "".join(chr(0x10FFFF - ord(ch)) for ch in earliest)
        return (c.pdb_violations, top, total, len(c.victims), latest, c.node)

    return sorted(candidates, key=key)


class _Search:
    """The per-pod state of one preemption: who may be evicted, gangs, budgets."""

    def __init__(
        self,
        policy: CompiledPolicy,
        pod: Pod,
        snapshot: ClusterSnapshot,
        nominated: Sequence[Pod],
        topology: TopologyConfig,
        config: SchedulerConfig,
    ):
        self.policy = policy
        self.pod = pod
        self.view = PodView(pod)
        self.snapshot = snapshot
        self.nominated = nominated
        self.topology = topology
        self.config = config
        self.allows = self._rule()
        self._groups: dict[str, list[tuple[Pod, str]]] | None = None
        self._eligible: dict[str, bool] = {}
        # Each budget with the disruptions it allows now, computed once per preemption.
        running = list(snapshot.pods()) if snapshot.pdbs else []
        self.budgets = [
            (budget, budget.allowed(running))
            for budget in snapshot.pdbs.values()
            if budget.selector is not None
        ]

    def _rule(self) -> Callable[[Env], bool] | None:
        """The body of the first preempt rule that applies; None: any lower priority goes."""
        if not self.policy.preempt:
            return None
        context = CycleContext(self.snapshot, self.view, self.config, self.topology)
        env = Env({"pod": self.view}, context)
        for rule in self.policy.preempt:
            if rule.applies(env):
                return rule.allows
        return lambda env: False

    def eligible(self, victim: Pod, node: str) -> bool:
        known = self._eligible.get(victim.key)
        if known is not None:
            return known
        # A terminating pod stays a potential victim, as in kube: it holds its resources until
        # it is gone, and the loop sends nothing for it (``controller.preemption``).
        ok = victim.priority < self.pod.priority
        if ok and self.allows is not None:
            context = CycleContext(self.snapshot, self.view, self.config, self.topology)
            info = self.snapshot.node(node)
            roots = {"pod": self.view, "node": NodeView(info, self.topology)}
            ok = self.allows(Env({**roots, "victim": PodView(victim)}, context))
        self._eligible[victim.key] = ok
        return ok

    @property
    def groups(self) -> dict[str, list[tuple[Pod, str]]]:
        """Each gang's members with their nodes; gathered (a walk over every pod) only once a
        node with an evictable gang member is looked at."""
        if self._groups is None:
            self._groups = {}
            for info in self.snapshot.nodes:
                for member in info.pods:
                    group = _group(member.pod)
                    if group is not None:
                        self._groups.setdefault(group, []).append((member.pod, info.name))
        return self._groups

    def units(self, node: str) -> list[tuple[tuple[Pod, str], ...]]:
        """The evictable units with a pod on ``node``: single pods, and whole gangs whose
        every member (on any node) may be evicted."""
        units: list[tuple[tuple[Pod, str], ...]] = []
        seen: set[str] = set()
        for info in self.snapshot.node(node).pods:
            pod = info.pod
            group = _group(pod)
            if group is None:
                if self.eligible(pod, node):
                    units.append(((pod, node),))
                continue
            if group in seen:
                continue
            seen.add(group)
            members = self.groups.get(group, [])
            if all(self.eligible(p, n) for p, n in members):
                units.append(tuple(members))
        return units

    def fits(self, others: ClusterSnapshot, info: NodeInfo) -> Rejection | None:
        """The first of the policy's filters that rejects the node ``info`` (the node as the
        dry run left it) in ``others`` (the rest of the cluster), if any."""
        # One node's record replaced (not pod by pod): the dry run stays linear in the nodes.
        snapshot = replace(others, node_infos=others.node_infos.with_item(info.name, info))
        snapshot = with_nominated(snapshot, self.pod, self.nominated, info.name)
        context = CycleContext(snapshot, self.view, self.config, self.topology)
        node = NodeView(snapshot.node(info.name), self.topology)
        env = Env({"pod": self.view, "node": node}, context)
        for rule in self.policy.filters:
            verdict = rule.filter(env)
            if not verdict.passed:
                return Rejection(rule.qualified_name, tuple(verdict.reasons))
        return None

    def on_node(self, node: str) -> Candidate | tuple[str, ...]:
        """kube's SelectVictimsOnNode: the candidate, or why ``node`` is none."""
        units = self.units(node) if _lower_ranked(self.snapshot.node(node), self.pod) else []
        if not units:
            return (NO_VICTIMS,)
        # The node's own pods come and go on its NodeInfo; gang members on other nodes leave
        # the rest of the cluster (``others``) through the snapshot.
        others = self.snapshot
        info = others.node(node)
        own = {p.key: p for p in info.pods}
        for unit in units:
            for pod, where in unit:
                if where == node:
                    info = info.without_pod(pod.key)
                else:
                    others = others.without_pod(pod.key)
        rejection = self.fits(others, info)
        if rejection is not None:
            return rejection.reasons or (f"rejected by {rejection.rule}",)
        units.sort(key=lambda unit: min(_importance(pod) for pod, _ in unit))
        violating = _violations(units, self.budgets)
        victims: list[Pod] = []
        pdb_violations = 0
        ordered = [u for u, v in zip(units, violating, strict=True) if v] + [
            u for u, v in zip(units, violating, strict=True) if not v
        ]
        breaks = {id(u) for u, v in zip(units, violating, strict=True) if v}
        for unit in ordered:
            back_others, back_info = others, info
            for pod, where in unit:
                if where == node:
                    back_info = back_info.with_pod(own[pod.key])
                else:
                    back_others = back_others.with_pod(pod, where)
            if self.fits(back_others, back_info) is None:
                others, info = back_others, back_info
                continue
            victims.extend(pod for pod, _ in unit)
            if id(unit) in breaks:
                pdb_violations += len(unit)
        victims.sort(key=_importance)
        return Candidate(node, tuple(victims), pdb_violations)


def review_victims(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    proposals: Mapping[str, Sequence[Pod]],
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
) -> dict[str, str | None] | None:
    """The policy's opinion of victims another scheduler's preemption chose (kube-scheduler
    asking an extender, ``controller.extender``): for each node and the victims proposed on
    it, None when the policy agrees — each victim is on that node and is one the policy lets
    ``pod`` evict (lower priority, its ``preempt`` rules), a victim in a gang comes with every
    member of its gang, and the pod passes the policy's filters on the node once the victims
    are gone — otherwise why not. None as a whole when no policy governs the pod: no opinion."""
    view = PodView(pod)
    env = Env({"pod": view}, CycleContext(snapshot, view, config, topology))
    policy = program.governing_policy(profile_for(program, pod, scheduler_name), env)
    if policy is None:
        return None
    search = _Search(policy, pod, snapshot, (), topology, policy_config(policy, pod, config))
    return {node: _review(search, node, victims) for node, victims in proposals.items()}


def _review(search: _Search, node: str, victims: Sequence[Pod]) -> str | None:
    if node not in search.snapshot:
        return f"node {node} is not in the scheduler's cache"
    info = search.snapshot.node(node)
    proposed = {victim.key for victim in victims}
    for victim in victims:
        if info.pod_index(victim.key) < 0:
            return f"{victim.key} is not on node {node}"
        if not search.eligible(victim, node):
            return f"the policy does not let {search.pod.key} evict {victim.key}"
        group = _group(victim)
        if group is not None:
            staying = [p.key for p, _ in search.groups.get(group, []) if p.key not in proposed]
            if staying:
                return (
                    f"{victim.key} is in gang {group}, which goes whole or not at all: "
                    f"{', '.join(sorted(staying))} would stay"
                )
        info = info.without_pod(victim.key)
    rejection = search.fits(search.snapshot, info)
    if rejection is None:
        return None
    return "; ".join(rejection.reasons) or f"rejected by {rejection.rule}"


def _lower_ranked(info: NodeInfo, pod: Pod) -> bool:
    """Whether ``info`` holds a pod of lower priority than ``pod``. Only those are evictable
    (and a gang only when all its members are): a node without one has no victim, whatever
    the preempt rules say."""
    lowest = info.lowest_priority
    return lowest is not None and lowest < pod.priority


def _group(pod: Pod) -> str | None:
    name = pod.labels.get(POD_GROUP_LABEL)
    return f"{pod.namespace}/{name}" if name else None


def _violations(
    units: Sequence[tuple[tuple[Pod, str], ...]],
    budgets_allowed: Sequence[tuple[PodDisruptionBudget, int]],
) -> list[bool]:
    """kube's filterPodsWithPDBViolation over units, in order: evicting a unit breaks a
    budget when some member takes a budget's allowance below zero."""
    budgets = [budget for budget, _ in budgets_allowed]
    allowed = [count for _, count in budgets_allowed]
    out = []
    for unit in units:
        broken = False
        for pod, _ in unit:
            if not pod.labels:
                continue
            for i, budget in enumerate(budgets):
                if not budget.selects(pod) or pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    broken = True
        out.append(broken)
    return out


def preempt_in_simulation(
    program: Program,
    pod: Pod,
    snapshot: ClusterSnapshot,
    decision: Decision,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
    rng: random.Random | None = None,
) -> tuple[Decision, ClusterSnapshot, PreemptionDecision | None]:
    """What ``simulate`` does for a pod that fits nowhere: preempt, and when a node is chosen,
    the victims leave the snapshot at once (no grace period offline) and the decision places
    the pod on that node. Returns the decision, the snapshot and the preemption (if any)."""
    outcome = preempt(
        program,
        pod,
        snapshot,
        decision,
        topology=topology,
        config=config,
        scheduler_name=scheduler_name,
        rng=rng,
    )
    if outcome.node is None:
        # The placement keeps the filters' histogram as its reason (``explain`` says why
        # preemption could not help).
        return decision, snapshot, None
    snapshot = without_victims(snapshot, outcome.victims)
    after = after_preempting(outcome.victims)
    placed = replace(
        decision,
        node=outcome.node,
        message=f"scheduled on {outcome.node} by policy {decision.policy} {after}",
        gpu_devices=choose_devices(
            snapshot,
            outcome.node,
            pod,
            choice=governing_device_choice(program, pod, snapshot, scheduler_name),
        ),
    )
    return placed, snapshot, outcome
