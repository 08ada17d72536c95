"""PodTopologySpread: keep matching pods spread across topology domains.

Filter (``whenUnsatisfiable: DoNotSchedule``): for each constraint, placing the pod in the
node's domain must keep ``matching pods in the domain + (1 if the pod matches itself) - global
minimum <= maxSkew``. The global minimum is taken over the domains of nodes that carry *all*
constraint keys and pass the inclusion policies (``nodeAffinityPolicy`` default Honor: nodes the
pod's nodeSelector/required affinity rule out do not count; ``nodeTaintsPolicy`` default
Ignore); with fewer such domains than ``minDomains`` it is 0. A node without the key fails as
"missing required label". ``matchLabelKeys`` add the pod's own values to the selector.

Score (``ScheduleAnyway``): per node, the sum over constraints of
``matching pods in the domain * log(domains + 2) + maxSkew - 1`` (hostname domains counted on
the node itself), rounded; then normalised so that fewer matching pods score higher. Nodes
missing a key are ignored (score 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from policyengine.model.frozen import FrozenDict
from policyengine.model.labels import Selector, compile_selector_or_nothing, label_set_requirements
from policyengine.model.node_selectors import RequiredNodeAffinity
from policyengine.model.normalize import spread_normalize
from policyengine.model.objects import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    Pod,
    TopologySpreadConstraint,
)
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.plugins.node_affinity import pod_required_affinity
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.model.taints import Toleration, first_untolerated
from policyengine.model.workloads import WorkloadIndex

NAME = "PodTopologySpread"
WEIGHT = 2
HOSTNAME = "kubernetes.io/hostname"
REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"

Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A constraint ready to evaluate (kube's internal ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def includes_node(
        self, node: NodeInfo, required: RequiredNodeAffinity, tolerations: tuple[Toleration, ...]
    ) -> bool:
        if self.node_affinity_policy == HONOR and not required.matches(
            node.node.labels, node.node.name
        ):
            return False
        return not (
            self.node_taints_policy == HONOR
            and first_untolerated(node.node.taints, tolerations) is not None
        )


def compile_constraints(
    constraints: Iterable[TopologySpreadConstraint],
    pod_labels: dict[str, str] | object,
    action: str,
) -> tuple[Constraint, ...]:
    out = []
    labels = pod_labels if isinstance(pod_labels, dict) else {}
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = compile_selector_or_nothing(c.label_selector)
        if c.match_label_keys:
            own = {k: labels[k] for k in c.match_label_keys if k in labels}
            if own:
                selector = selector.with_requirements(label_set_requirements(own))
        out.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return tuple(out)


def pod_constraints(
    pod: Pod, action: str, config: SchedulerConfig, workloads: WorkloadIndex
) -> tuple[Constraint, ...]:
    """The pod's own constraints of ``action``; for a pod with none, the configuration's
    defaults with the selector derived from what selects the pod (``model.workloads``), or
    none when nothing does."""
    if pod.topology_spread_constraints:
        return compile_constraints(pod.topology_spread_constraints, pod.labels, action)
    defaults = config.spread_default_constraints
    if not defaults:
        return ()
    selector = workloads.default_selector(pod)
    if selector is None:
        return ()
    # Pods of one template ask every cycle: kept per what the compilation reads.
    key = (defaults, action, selector, pod.labels)
    try:
        found = _DEFAULTED.get(key)
    except TypeError:  # labels or defaults that do not hash
        return _defaulted(defaults, action, selector, pod.labels)
    if found is None:
        if len(_DEFAULTED) >= _DEFAULTED_KEPT:
            _DEFAULTED.clear()  # a bound, not an LRU: a queue's pods alike come together
        found = _DEFAULTED[key] = _defaulted(defaults, action, selector, pod.labels)
    return found


def _defaulted(
    defaults: Sequence[TopologySpreadConstraint],
    action: str,
    selector: Selector,
    labels: Mapping[str, str],
) -> tuple[Constraint, ...]:
    chosen = [c for c in defaults if c.when_unsatisfiable == action]
    if not chosen:
        return ()
    return tuple(replace(c, selector=selector) for c in compile_constraints(chosen, labels, action))


_DEFAULTED: dict[Hashable, tuple[Constraint, ...]] = {}
_DEFAULTED_KEPT = 8192


def requires_all_keys(pod: Pod, config: SchedulerConfig) -> bool:
    """Whether scoring ignores nodes missing one of the constraints' keys: always but for the
    system defaults, which score a node without a zone label by hostname alone."""
    return bool(pod.topology_spread_constraints) or not config.spread_system_defaulted


def count_matching(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """Pods in ``namespace`` matching ``selector``; terminating pods do not count, and an
    empty selector (``labelSelector: {}``) counts none, as kube-scheduler's counting does."""
    if selector.is_everything:
        return 0
    n = 0
    for info in pods:
        p = info.pod
        if p.deletion_timestamp is None and p.namespace == namespace and selector.matches(p.labels):
            n += 1
    return n


def has_all_keys(labels: dict[str, str] | object, constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)  # type: ignore[operator]


# ---------------------------------------------------------------- filter


@dataclass(frozen=True, slots=True)
class FilterState:
    constraints: tuple[Constraint, ...]
    pod_labels: dict[str, str]
    pair_counts: dict[Pair, int]
    domains: dict[str, int]  # topology key -> number of eligible domains
    minimum: dict[str, int]  # topology key -> smallest count over its domains
    # Topology key -> {count: domains holding it}, where the caller kept it (not the plugin's
    # own: ``schedlib.topology_filters``); what it says the fields above say too.
    histograms: dict[str, dict[int, int]] | None = field(default=None, compare=False)


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    constraints = pod_constraints(pod, DO_NOT_SCHEDULE, config, snapshot.workloads)
    if not constraints:
        return FilterState((), dict(pod.labels), {}, {}, {})
    key = count_key(pod, constraints)
    counts: dict[Pair, int] = {}
    for node in snapshot.nodes:
        for pair, n in node_counts(node, key).items():
            counts[pair] = counts.get(pair, 0) + n
    return filter_state(constraints, pod, counts)


# What a node's counts depend on besides the node: the constraints, the pod's required node
# affinity, tolerations and namespace, and whether a node must carry every key to count
# (``count_key``), so an incremental caller can keep each node's counts while its
# ``NodeInfo`` lives.
CountKey = tuple[tuple[Constraint, ...], RequiredNodeAffinity, tuple[Toleration, ...], str, bool]


def count_key(pod: Pod, constraints: tuple[Constraint, ...], require_all: bool = True) -> CountKey:
    return (
        constraints,
        pod_required_affinity(pod),
        tuple(pod.tolerations),
        pod.namespace,
        require_all,
    )


def node_counts(node: NodeInfo, key: CountKey) -> dict[Pair, int]:
    """The matching pods ``node`` adds to each of its domains (none: the node does not count).
    A node missing a key counts, where it may, in that key's domain "" (kube's empty value)."""
    return pods_counts(node, key, node.pods)


def pods_counts(node: NodeInfo, key: CountKey, pods: Sequence[PodInfo]) -> dict[Pair, int]:
    """``node_counts`` of ``node`` were it holding ``pods`` alone."""
    constraints, required, tolerations, namespace, require_all = key
    labels = node.node.labels
    if require_all and not has_all_keys(labels, constraints):
        return {}
    out: dict[Pair, int] = {}
    for c in constraints:
        if not c.includes_node(node, required, tolerations):
            continue
        # Two constraints on one key share the pair: the later one wins, as in kube.
        out[(c.topology_key, labels.get(c.topology_key, ""))] = count_matching(
            pods, c.selector, namespace
        )
    return out


def filter_state(
    constraints: tuple[Constraint, ...], pod: Pod, counts: dict[Pair, int]
) -> FilterState:
    """The filter's state from the summed counts of every node (a pair counted by no node is
    absent; one whose nodes hold no matching pod is 0)."""
    domains: dict[str, int] = {}
    minimum: dict[str, int] = {}
    for (key, _), n in counts.items():
        domains[key] = domains.get(key, 0) + 1
        if key not in minimum or n < minimum[key]:
            minimum[key] = n
    return FilterState(constraints, dict(pod.labels), counts, domains, minimum)


def global_minimum(state: FilterState, c: Constraint) -> int:
    if state.domains.get(c.topology_key, 0) < c.min_domains:
        return 0
    return state.minimum.get(c.topology_key, 2**31 - 1)


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if not state.constraints:
        return []
    labels = node.node.labels
    for c in state.constraints:
        value = labels.get(c.topology_key)
        if value is None:
            return [REASON_MISSING_LABEL]
        self_match = 1 if c.selector.matches(state.pod_labels) else 0
        skew = (
            state.pair_counts.get((c.topology_key, value), 0)
            + self_match
            - global_minimum(state, c)
        )
        if skew > c.max_skew:
            return [REASON]
    return []


# ---------------------------------------------------------------- score


@dataclass(frozen=True, slots=True)
class ScoreState:
    """PreScore's result. Hashable: it is the score's whole reading of the pod, so pods with
    equal states share per-node scores and pods alike with different ones (a default
    selector derived from their owners) do not."""

    constraints: tuple[Constraint, ...]
    namespace: str
    ignored: frozenset[str]
    pair_counts: FrozenDict[Pair, int]
    weights: tuple[float, ...]


def topology_normalizing_weight(size: int) -> float:
    return math.log(float(size + 2))


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    magnitude = abs(x)
    whole = math.floor(magnitude)
    if magnitude - whole >= 0.5:  # exact for doubles, unlike floor(x + 0.5)
        whole += 1
    return whole if x >= 0 else -whole


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState | None:
    if not feasible or not snapshot.num_nodes:
        return None
    constraints = pod_constraints(pod, SCHEDULE_ANYWAY, config, snapshot.workloads)
    if not constraints:
        return None
    require_all = requires_all_keys(pod, config)
    required = pod_required_affinity(pod)

    def counted(pairs: AbstractSet[Pair]) -> dict[Pair, int]:
        counts = dict.fromkeys(pairs, 0)
        for node in snapshot.nodes:
            labels = node.node.labels
            if require_all and not has_all_keys(labels, constraints):
                continue
            for c in constraints:
                if not c.includes_node(node, required, pod.tolerations):
                    continue
                pair = (c.topology_key, labels.get(c.topology_key, ""))
                if pair in counts:
                    counts[pair] += count_matching(node.pods, c.selector, pod.namespace)
        return counts

    return score_state(pod, constraints, feasible, require_all, counted)


def score_state(
    pod: Pod,
    constraints: tuple[Constraint, ...],
    feasible: Sequence[NodeInfo],
    require_all: bool,
    counted: Callable[[AbstractSet[Pair]], dict[Pair, int]],
) -> ScoreState:
    """PreScore over ``feasible``: the nodes left out, each constraint's normalising weight,
    and the matching pods of every domain a feasible node is in (``counted`` of those pairs,
    hostname domains aside: scored per node)."""
    ignored: set[str] = set()
    pairs: set[Pair] = set()
    sizes = [0] * len(constraints)
    keys = tuple(c.topology_key for c in constraints)
    domains = [i for i, key in enumerate(keys) if key != HOSTNAME]
    seen: set[tuple[str | None, ...]] = set()
    for node in feasible:
        values = tuple(map(node.node.labels.get, keys))
        if require_all and None in values:
            ignored.add(node.name)
            continue
        # Nodes of the same domains add nothing new: most of thousands of nodes are seen once.
        mine = tuple(values[i] for i in domains)
        if mine in seen:
            continue
        seen.add(mine)
        for i, value in zip(domains, mine, strict=True):
            pair = (keys[i], value if value is not None else "")
            if pair not in pairs:
                pairs.add(pair)
                sizes[i] += 1
    weights = []
    for i, c in enumerate(constraints):
        size = sizes[i]
        if c.topology_key == HOSTNAME:
            size = len(feasible) - len(ignored)
        weights.append(topology_normalizing_weight(size))
    return ScoreState(
        constraints, pod.namespace, frozenset(ignored), FrozenDict(counted(pairs)), tuple(weights)
    )


def score(state: ScoreState, node: NodeInfo) -> int:
    if node.name in state.ignored:
        return 0
    labels = node.node.labels
    total = 0.0
    for c, weight in zip(state.constraints, state.weights, strict=True):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == HOSTNAME:
            count = count_matching(node.pods, c.selector, state.namespace)
        else:
            count = state.pair_counts.get((c.topology_key, value), 0)
        total += float(count) * weight + float(c.max_skew - 1)
    return go_round(total)


def score_rows(state: ScoreState, nodes: Sequence[NodeInfo]) -> list[int | None]:
    """``score`` over many nodes, None for the ignored ones. Without a hostname constraint a
    node's score depends only on its values of the constraints' keys: computed once per
    distinct tuple of values (a handful of zones, not thousands of nodes)."""
    ignored = state.ignored
    if any(c.topology_key == HOSTNAME for c in state.constraints):
        return [None if info.node.name in ignored else score(state, info) for info in nodes]
    keys = tuple(c.topology_key for c in state.constraints)
    by_values: dict[tuple[str | None, ...], int] = {}
    out: list[int | None] = []
    append = out.append
    for info in nodes:
        node = info.node
        if node.name in ignored:
            append(None)
            continue
        labels = node.labels
        values = tuple(labels.get(key) for key in keys)
        found = by_values.get(values)
        if found is None:
            found = by_values[values] = score(state, info)
        append(found)
    return out


def normalize(state: ScoreState, node_names: Sequence[str], scores: list[int]) -> list[int]:
    return spread_normalize(
        [None if n in state.ignored else s for n, s in zip(node_names, scores, strict=True)]
    )


PLUGIN = Plugin(
    NAME,
    "pod_topology_spread",
    "pod_topology_spread",
    WEIGHT,
    prepare_filter=prepare_filter,
    filter=filter,
    prepare_score=prepare_score,
    score=score,
    normalize=normalize,
    resolvable_reasons=frozenset({REASON}),
)
