"""InterPodAffinity: required and preferred pod affinity and anti-affinity, both directions.

Filter, in kube's order:
1. the pod's required affinity: every term's topology key must be on the node and, for each
   term, some pod matching *all* terms must live in the node's domain — unless no pod anywhere
   matches and the pod matches its own terms (the first pod of a self-affine group);
2. the pod's required anti-affinity: no matching pod in the node's domain of any term;
3. symmetry: no existing pod whose required anti-affinity matches the incoming pod may live in
   a domain the node belongs to.

Score: over all nodes' pods, the incoming pod's preferred terms (+weight / -weight for anti),
existing pods' required affinity terms matching the incoming pod (+hardPodAffinityWeight) and
existing pods' preferred terms matching it, accumulated per topology domain; a node scores the
sum over its domains; normalised min–max.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policyengine.model.normalize import min_max_normalize
from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.pod_affinity import (
    AffinityTerm,
    PodAffinityTerms,
    WeightedAffinityTerm,
    compile_pod_affinity,
    matches_all,
)
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo

NAME = "InterPodAffinity"
WEIGHT = 2
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

Pair = tuple[str, str]


def _bump(counts: dict[Pair, int], pair: Pair, by: int = 1) -> None:
    counts[pair] = counts.get(pair, 0) + by


@dataclass(frozen=True, slots=True)
class FilterState:
    terms: PodAffinityTerms
    skip: bool
    self_match: bool
    affinity_counts: dict[Pair, int]
    anti_affinity_counts: dict[Pair, int]
    existing_anti_affinity_counts: dict[Pair, int]


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    terms = compile_pod_affinity(pod)
    own_ns = snapshot.namespace_labels(pod.namespace)
    existing: dict[Pair, int] = {}
    for node in snapshot.nodes_with_required_anti_affinity_pods:
        labels = node.node.labels
        for info in node.pods_with_required_anti_affinity:
            for term in info.affinity_terms.required_anti_affinity:
                if term.topology_key in labels and term.matches(pod, own_ns):
                    _bump(existing, (term.topology_key, labels[term.topology_key]))
    affinity: dict[Pair, int] = {}
    anti: dict[Pair, int] = {}
    req_aff = terms.required_affinity
    req_anti = terms.required_anti_affinity
    if req_aff or req_anti:
        for node in snapshot.nodes:
            labels = node.node.labels
            for info in node.pods:
                other = info.pod
                ns_labels = snapshot.namespace_labels(other.namespace)
                if req_aff and matches_all(req_aff, other, ns_labels):
                    for t in req_aff:
                        if t.topology_key in labels:
                            _bump(affinity, (t.topology_key, labels[t.topology_key]))
                for t in req_anti:
                    if t.topology_key in labels and t.matches(other, ns_labels):
                        _bump(anti, (t.topology_key, labels[t.topology_key]))
    return FilterState(
        terms=terms,
        skip=not existing and not req_aff and not req_anti,
        self_match=matches_all(req_aff, pod, own_ns),
        affinity_counts=affinity,
        anti_affinity_counts=anti,
        existing_anti_affinity_counts=existing,
    )


def satisfies_pod_affinity(state: FilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in state.terms.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # every topology key must be on the node
        if state.affinity_counts.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
            break  # kube stops here, before checking the remaining keys
    if not pods_exist:
        return not state.affinity_counts and state.self_match
    return True


def satisfies_pod_anti_affinity(state: FilterState, labels: Mapping[str, str]) -> bool:
    if not state.anti_affinity_counts:
        return True
    for t in state.terms.required_anti_affinity:
        value = labels.get(t.topology_key)
        if value is not None and state.anti_affinity_counts.get((t.topology_key, value), 0) > 0:
            return False
    return True


def satisfies_existing_anti_affinity(state: FilterState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    return not any(counts.get(pair, 0) > 0 for pair in labels.items())


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    labels = node.node.labels
    if not satisfies_pod_affinity(state, labels):
        return [REASON_AFFINITY]
    if not satisfies_pod_anti_affinity(state, labels):
        return [REASON_ANTI_AFFINITY]
    if not satisfies_existing_anti_affinity(state, labels):
        return [REASON_EXISTING_ANTI_AFFINITY]
    return []


# ---------------------------------------------------------------- score


@dataclass(frozen=True, slots=True)
class ScoreState:
    topology_score: dict[str, dict[str, int]]


def _add(scores: dict[str, dict[str, int]], key: str, value: str, amount: int) -> None:
    by_value = scores.setdefault(key, {})
    by_value[value] = by_value.get(value, 0) + amount


def _weighted(
    scores: dict[str, dict[str, int]],
    terms: Sequence[WeightedAffinityTerm],
    target: Pod,
    target_ns: Mapping[str, str],
    labels: Mapping[str, str],
    sign: int,
) -> None:
    for w in terms:
        t = w.term
        if t.topology_key in labels and t.matches(target, target_ns):
            _add(scores, t.topology_key, labels[t.topology_key], w.weight * sign)


def _hard(
    scores: dict[str, dict[str, int]],
    terms: Sequence[AffinityTerm],
    weight: int,
    target: Pod,
    target_ns: Mapping[str, str],
    labels: Mapping[str, str],
) -> None:
    for t in terms:
        if t.topology_key in labels and t.matches(target, target_ns):
            _add(scores, t.topology_key, labels[t.topology_key], weight)


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState | None:
    if not feasible:
        return None
    terms = compile_pod_affinity(pod)
    has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
    if config.ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None
    own_ns = snapshot.namespace_labels(pod.namespace)
    nodes = snapshot.nodes if has_constraints else snapshot.nodes_with_affinity_pods
    scores: dict[str, dict[str, int]] = {}
    hard_weight = config.hard_pod_affinity_weight
    for node in nodes:
        labels = node.node.labels
        if not labels:
            continue
        for info in node.pods if has_constraints else node.pods_with_affinity:
            other = info.pod
            if has_constraints:
                other_ns = snapshot.namespace_labels(other.namespace)
                _weighted(scores, terms.preferred_affinity, other, other_ns, labels, 1)
                _weighted(scores, terms.preferred_anti_affinity, other, other_ns, labels, -1)
            theirs = info.affinity_terms
            if theirs.empty:
                continue
            if hard_weight > 0:
                _hard(scores, theirs.required_affinity, hard_weight, pod, own_ns, labels)
            _weighted(scores, theirs.preferred_affinity, pod, own_ns, labels, 1)
            _weighted(scores, theirs.preferred_anti_affinity, pod, own_ns, labels, -1)
    if not scores:
        return None
    return ScoreState(scores)


def score(state: ScoreState, node: NodeInfo) -> int:
    labels = node.node.labels
    total = 0
    for key, by_value in state.topology_score.items():
        value = labels.get(key)
        if value is not None:
            total += by_value.get(value, 0)
    return total


def normalize(state: ScoreState, node_names: Sequence[str], scores: list[int]) -> list[int]:
    return min_max_normalize(scores)


PLUGIN = Plugin(
    NAME,
    "inter_pod_affinity",
    "inter_pod_affinity",
    WEIGHT,
    prepare_filter=prepare_filter,
    filter=filter,
    prepare_score=prepare_score,
    score=score,
    normalize=normalize,
    resolvable_reasons=frozenset({REASON_EXISTING_ANTI_AFFINITY, REASON_ANTI_AFFINITY}),
)
