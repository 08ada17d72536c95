"""PodTopologySpread's and InterPodAffinity's PreFilters kept between cycles, and their filters'
row keys.

The PreFilters (``model.plugins.pod_topology_spread`` / ``inter_pod_affinity``) sum, over every
node, the pods matching the incoming pod's constraints per topology domain, and the existing
pods' anti-affinity terms matching the incoming pod: a pass over every pod in the cluster for
every pod scheduled. Each node's part depends only on the node and on what a key names of the
pod (its constraints, terms, labels, namespace), so ``domains.NodeSums`` keeps the sums per key
and corrects them for the nodes replaced since. The states built here are the plugins' own
(``FilterState``), equal to what the plugins' ``prepare_filter`` gives
(``tests/schedlib/test_batch_forms.py``).

The filters' row keys (``rowkeys.RowKeyed``) are what each plugin's per-node filter reads of
those sums at the node's domains, reduced to what it decides on: for spread, per constraint,
whether the node lacks the key (-1) or the skew there exceeds maxSkew (1) or not (0); for
affinity, per term and per topology key of existing anti-affinity, whether the node lacks the
key (-1), or some pod counts in its domain (1) or none does (0). The rest of what the filters
read (the pod, its terms, whether any pod matches at all) is in the whole part. So a cached
verdict is recomputed only where one of those can have changed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from policyengine.model.frozen import HashedKey
from policyengine.model.objects import DO_NOT_SCHEDULE, HONOR, SCHEDULE_ANYWAY, Pod
from policyengine.model.plugins import inter_pod_affinity as affinity
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.model.pod_affinity import PodAffinityTerms, compile_pod_affinity, matches_all
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.model.workloads import WorkloadIndex
from policyengine.schedlib import spread_score
from policyengine.schedlib.domains import NamedPart, NodeSums, label_column, relevant_changes
from policyengine.schedlib.nested_counts import add_nested
from policyengine.schedlib.node_rows import rows_of
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.steplog import ANTI_AFFINITY, POD_AFFINITY, label_gate, label_marks

Pair = tuple[str, str]

# Keys are mostly one per deployment (its selector, terms or labels); a benchmark-sized
# cluster has a few hundred.
_KEPT = 512
SPREAD_SUMS = NodeSums(_KEPT)
TERM_SUMS = NodeSums(_KEPT)
# Existing pods' terms that can score an incoming pod, for every such pod (key "score"; their
# required anti-affinity for the filter is ``_EXISTING``).
EXISTING_SUMS = NodeSums(2)
_LOCK = threading.Lock()


def _hashable(key: Hashable) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


_COMPILED: OrderedDict[Hashable, PodAffinityTerms] = OrderedDict()
_COMPILED_KEPT = 1024


def pod_terms(pod: Pod) -> PodAffinityTerms:
    """``compile_pod_affinity(pod)``, kept for pods alike: the terms read only the pod's
    namespace, labels (``matchLabelKeys``) and affinity stanzas."""
    if pod.pod_affinity is None and pod.pod_anti_affinity is None:
        return compile_pod_affinity(pod)
    key = (pod.namespace, pod.labels, pod.pod_affinity, pod.pod_anti_affinity)
    if not _hashable(key):
        return compile_pod_affinity(pod)
    with _LOCK:
        found = _COMPILED.get(key)
    if found is None:
        found = compile_pod_affinity(pod)
        with _LOCK:
            _COMPILED[key] = found
            while len(_COMPILED) > _COMPILED_KEPT:
                _COMPILED.popitem(last=False)
    return found


# --- PreFilters ---------------------------------------------------------------------------


# Distinct (label values, taints) whose included constraints one count key keeps.
_INCLUDED_KEPT = 4096


def _presence_of(key: spread.CountKey) -> Callable[[NodeInfo], dict[Any, int]]:
    """``spread.node_counts`` of a node were it to hold no matching pod: the domains it
    counts for. Which constraints include the node reads only its values of the labels the
    pod's required node affinity names (and its taints, when a constraint honours them): that
    is worked out once per distinct such values, and every node of the cluster alike shares
    it (a node's own domains are then its labels' values)."""
    constraints, required, _, _, require_all = key
    reads = required.label_keys
    taints = any(c.node_taints_policy == HONOR for c in constraints)
    seen: dict[Any, tuple[str, ...]] = {}

    def presence(node: NodeInfo) -> dict[Any, int]:
        labels = node.node.labels
        if require_all and not spread.has_all_keys(labels, constraints):
            return {}
        if reads is None:
            included = _included(node, key)
        else:
            alike: Any = tuple([labels.get(k) for k in reads])
            if taints:
                alike = (alike, node.node.taints)
            found = seen.get(alike)
            if found is None:
                if len(seen) >= _INCLUDED_KEPT:
                    seen.clear()
                found = seen[alike] = _included(node, key)
            included = found
        return {(topology_key, labels.get(topology_key, "")): 0 for topology_key in included}

    return presence


def _included(node: NodeInfo, key: spread.CountKey) -> tuple[str, ...]:
    """The topology keys of the constraints that count ``node`` (``Constraint.includes_node``)."""
    constraints, required, tolerations, _, _ = key
    return tuple(
        c.topology_key for c in constraints if c.includes_node(node, required, tolerations)
    )


class _SpreadInputs:
    """What ``prepare_spread_filter`` derives from the pod alone: its constraints, the kept
    sums' key (``HashedKey``) and how to read and correct them."""

    __slots__ = ("base", "constraints", "counts", "key", "marks", "part", "step")

    def __init__(
        self,
        pod: Pod,
        constraints: tuple[spread.Constraint, ...],
        require_all: bool = True,
        domains_only: bool = False,
    ):
        key = spread.count_key(pod, constraints, require_all)
        self.constraints = constraints
        # The score reads no hostname pair (a node's own pods are counted per row: ``spread_
        # score.host_counts``); kept apart, its sums hold a pair per zone, not one per node.
        self.key = HashedKey(("domains", key) if domains_only else key)

        if domains_only:
            # The hostname constraints' pods are never counted: ``node_counts`` over the
            # other constraints alone, once a node lacking some constraint's key (when every
            # key is required) is left out as ``node_counts`` leaves it out.
            _, required, tolerations, namespace, _ = key
            zoned = tuple(c for c in constraints if c.topology_key != spread.HOSTNAME)
            zoned_key = (zoned, required, tolerations, namespace, False)

            def matching(node: NodeInfo, pods: Sequence[PodInfo]) -> dict[Any, int]:
                if require_all and not spread.has_all_keys(node.node.labels, constraints):
                    return {}
                return spread.pods_counts(node, zoned_key, pods)

        else:

            def matching(node: NodeInfo, pods: Sequence[PodInfo]) -> dict[Any, int]:
                return spread.pods_counts(node, key, pods)

        def part(node: NodeInfo) -> dict[Any, int]:
            return matching(node, node.pods)

        namespace = pod.namespace
        selectors = [c.selector for c in constraints]
        gate = label_gate(selectors)

        def counts(info: PodInfo) -> bool:  # what ``spread.count_matching`` may count
            other = info.pod
            if gate is not None and not gate(other.labels):
                return False
            return (
                other.deletion_timestamp is None
                and other.namespace == namespace
                and any(s.matches(other.labels) for s in selectors)
            )

        present = _presence_of(key)

        def presence(node: NodeInfo) -> dict[Any, int]:  # ``part`` of a node with no such pod
            found = present(node)
            if domains_only:
                return {pair: n for pair, n in found.items() if pair[0] != spread.HOSTNAME}
            return found

        included = (
            tuple(
                (c.topology_key, c.node_affinity_policy, c.node_taints_policy) for c in constraints
            ),
            key[1],
            key[2],
            require_all,
            domains_only,
        )
        self.part = part
        # A node's counts grow by the matching pods that come to it (the same domains).
        self.step = matching
        self.counts = counts
        named = key[1].named_nodes
        if named is not None and all(c.node_affinity_policy == HONOR for c in constraints):
            presence = NamedPart(presence, named)  # no other node is counted
        self.base: tuple[Hashable, Callable[[NodeInfo], dict[Any, int]]] = (included, presence)
        self.marks = label_marks(selectors)


# Pods alike (by what their constraints and count key read) share their ``_SpreadInputs``.
_SPREAD_INPUTS: OrderedDict[Hashable, _SpreadInputs] = OrderedDict()
_SPREAD_INPUTS_KEPT = 1024


def _spread_inputs(
    pod: Pod,
    config: SchedulerConfig,
    workloads: WorkloadIndex,
    action: str = DO_NOT_SCHEDULE,
    require_all: bool = True,
) -> _SpreadInputs | None:
    """The pod's ``_SpreadInputs`` for its constraints of ``action`` (its own, or the defaults
    with their derived selector); None when it has none or they cannot be hashed."""
    if pod.topology_spread_constraints:
        # Everything ``pod_constraints`` (the pod's own) and ``count_key`` read of the pod.
        alike: Hashable = (
            action,
            pod.namespace,
            pod.topology_spread_constraints,
            pod.labels,
            pod.node_selector,
            pod.affinity,
            pod.tolerations,
            require_all,
        )
        constraints: tuple[spread.Constraint, ...] | None = None
    else:
        # The defaults read the pod through their derived selector alone.
        constraints = spread.pod_constraints(pod, action, config, workloads)
        if not constraints:
            return None
        alike = (
            action,
            pod.namespace,
            constraints,
            pod.node_selector,
            pod.affinity,
            pod.tolerations,
            require_all,
        )
    # The lookup hashes ``alike`` (a deep tuple) once: not again to test it first, nor to
    # mark it recently used (the oldest entry goes first; a thousand outlast the classes a
    # queue interleaves).
    try:
        found = _SPREAD_INPUTS.get(alike)
    except TypeError:  # a part without a hash
        return None
    if found is not None:
        return found
    if constraints is None:
        constraints = spread.pod_constraints(pod, action, config, workloads)
    if not constraints or not _hashable(spread.count_key(pod, constraints, require_all)):
        return None
    # The soft constraints' inputs serve the score alone, which reads no hostname pair.
    found = _SpreadInputs(pod, constraints, require_all, domains_only=action == SCHEDULE_ANYWAY)
    with _LOCK:
        _SPREAD_INPUTS[alike] = found
        while len(_SPREAD_INPUTS) > _SPREAD_INPUTS_KEPT:
            _SPREAD_INPUTS.popitem(last=False)
    return found


def prepare_spread_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig
) -> spread.FilterState:
    """``pod_topology_spread.prepare_filter``, from sums kept per ``count_key``."""
    inputs = _spread_inputs(pod, config, snapshot.workloads)
    if inputs is None:
        constraints = spread.pod_constraints(pod, DO_NOT_SCHEDULE, config, snapshot.workloads)
        if not constraints:
            return spread.filter_state((), pod, {})
        key = spread.count_key(pod, constraints)
        if not _hashable(key):
            return spread.prepare_filter(pod, snapshot, config)
        inputs = _SpreadInputs(pod, constraints)
    kept = SPREAD_SUMS.kept(
        inputs.key,
        snapshot,
        inputs.part,
        inputs.counts,
        base=inputs.base,
        marks=inputs.marks,
        step=inputs.step,
    )
    # The domains and minimum per key from the kept histograms (a hostname key has a pair per
    # node): what ``spread.filter_state`` finds walking every pair.
    histograms = kept.histograms()
    return spread.FilterState(
        inputs.constraints,
        dict(pod.labels),
        kept.counts,  # read only, as the plugin reads it
        {key: sum(by_count.values()) for key, by_count in histograms.items()},
        {key: min(by_count) for key, by_count in histograms.items()},
        histograms,
    )


def prepare_spread_score(
    pod: Pod, snapshot: ClusterSnapshot, feasible: Sequence[NodeInfo], config: SchedulerConfig
) -> spread.ScoreState | None:
    """``pod_topology_spread.prepare_score`` with each domain's matching pods read from sums
    kept per count key (``SPREAD_SUMS``, corrected for the nodes replaced since) instead of
    walking every pod of every node. The sums count a node's pods once per domain, as the
    filter does; the score adds them once per constraint, so a pod whose soft constraints
    share a topology key takes the plugin's own walk."""
    if not feasible or not snapshot.num_nodes:
        return None
    require_all = spread.requires_all_keys(pod, config)
    inputs = _spread_inputs(pod, config, snapshot.workloads, SCHEDULE_ANYWAY, require_all)
    keys = [c.topology_key for c in inputs.constraints] if inputs is not None else []
    if inputs is None or len(set(keys)) != len(keys):
        return spread.prepare_score(pod, snapshot, feasible, config)
    sums = SPREAD_SUMS.sums(
        inputs.key,
        snapshot,
        inputs.part,
        inputs.counts,
        copy=False,  # only read, before this returns
        base=inputs.base,
        marks=inputs.marks,
        step=inputs.step,
    )

    def counted(pairs: AbstractSet[spread.Pair]) -> dict[spread.Pair, int]:
        return {pair: sums.get(pair, 0) for pair in pairs}

    return spread_score.score_state(
        pod, snapshot, inputs.constraints, feasible, require_all, counted
    )


# Existing pods' terms, each interned as a small integer so the sums' keys hash fast.
_TERMS: dict[Any, int] = {}
_TERM_LIST: list[Any] = []
_TERMS_KEPT = 100_000


def _term_index(term: Any) -> int:
    index = _TERMS.get(term)
    if index is None:
        index = _TERMS[term] = len(_TERM_LIST)
        _TERM_LIST.append(term)
    return index


def _existing_anti_part(node: NodeInfo) -> dict[Any, int]:
    """The required anti-affinity terms of the pods on ``node``, per domain of the node."""
    holders = node.pods_with_required_anti_affinity
    if not holders:
        return {}
    out: dict[Any, int] = {}
    labels = node.node.labels
    for info in holders:
        for term in info.affinity_terms.required_anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None:
                entry = (_term_index(term), term.topology_key, value)
                out[entry] = out.get(entry, 0) + 1
    return out


def _nothing(node: NodeInfo) -> dict[Any, int]:  # a node holding no pod a term counts
    return {}


def _has_anti(info: PodInfo) -> bool:
    return info.pod.has_required_anti_affinity


def _has_terms(info: PodInfo) -> bool:
    return info.pod.has_pod_affinity_constraints


# Per pod alike (namespace, labels, namespaces): the term indexes met so far, and those of
# them whose term matches the pod (in the order met).
_MATCHED: OrderedDict[Hashable, tuple[set[int], list[int]]] = OrderedDict()
_MATCHED_KEPT = 1024
# Per term index, ``label_gate`` of its selector (None: no gate). Pods alike are told apart
# by every label (a job name, a template hash), so each new label set meets every term once:
# the gate turns most of those matches into one dict lookup.
_TERM_GATES: dict[int, Callable[[Any], bool] | None] = {}


def _term_matches(index: int, pod: Pod, own_ns: Any) -> bool:
    """``_TERM_LIST[index].matches(pod, own_ns)``, its label gate first."""
    try:
        gate = _TERM_GATES[index]
    except KeyError:
        gate = _TERM_GATES[index] = label_gate((_TERM_LIST[index].selector,))
    if gate is not None and not gate(pod.labels):
        return False
    return bool(_TERM_LIST[index].matches(pod, own_ns))


class _ExistingAnti:
    """Per term (its index), the existing pods holding it per domain of their node, over the
    nodes of the last snapshot followed (``_existing_anti_part`` summed), corrected in place
    for the rows whose anti-affinity pods came or went since. A pod asks only about the terms
    matching it, so the sums are kept grouped by term (regrouping thousands of pairs at every
    placement of an anti-affinity pod cost more than the rest of the PreFilter)."""

    __slots__ = ("by_term", "generation", "nodes")

    def __init__(self) -> None:
        self.generation = -1
        self.nodes: Sequence[NodeInfo] = ()
        self.by_term: dict[int, dict[Pair, int]] = {}

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def follow(self, snapshot: ClusterSnapshot) -> dict[int, dict[Pair, int]]:
        nodes = snapshot.rows
        if nodes is not self.nodes:
            rows = None
            if len(self.nodes) == len(nodes):
                rows = relevant_changes(
                    snapshot, self.generation, self.nodes, _has_anti, (ANTI_AFFINITY,)
                )
            if rows is None:
                self.by_term = {}
                for node in snapshot.nodes_with_required_anti_affinity_pods:
                    self._add(_existing_anti_part(node), 1)
            else:
                old = self.nodes
                for row in rows:
                    self._add(_existing_anti_part(old[row]), -1)
                    self._add(_existing_anti_part(nodes[row]), 1)
            self.nodes = nodes
            self.generation = snapshot.generation
        return self.by_term

    def _add(self, part: dict[Any, int], sign: int) -> None:
        for (index, key, value), n in part.items():
            add_nested(self.by_term, index, (key, value), sign * n)


_EXISTING = _ExistingAnti()


def _bound_term_caches() -> None:
    """Start the term caches afresh once they hold too many terms (the caller holds ``_LOCK``):
    the kept sums index terms by position, so they go with them."""
    if len(_TERM_LIST) > _TERMS_KEPT:
        _TERMS.clear()
        _TERM_LIST.clear()
        _TERM_GATES.clear()
        _MATCHED.clear()
        EXISTING_SUMS.clear()
        _EXISTING.clear()


def _existing_anti_counts(pod: Pod, own_ns: Any, snapshot: ClusterSnapshot) -> dict[Pair, int]:
    """The plugin's ``existing_anti_affinity_counts``: the domains holding pods whose required
    anti-affinity matches ``pod``, from one sum over every node shared by all pods. Whether a
    term matches reads the pod's namespace and labels and the namespaces' labels only."""
    if not snapshot.nodes_with_required_anti_affinity_pods:
        return {}  # no pod anywhere has required anti-affinity: nothing to sum
    with _LOCK:
        _bound_term_caches()
        groups = _EXISTING.follow(snapshot)
        alike = (pod.namespace, pod.labels, snapshot.namespaces)
        kept = _hashable(alike)
        matched = _MATCHED.pop(alike, None) if kept else None
        seen, hits = (set(), []) if matched is None else matched
        # Each term is matched against the pod once; a cycle then sums the groups of the
        # terms that match it, not a walk over every term in the cluster.
        for index in groups.keys() - seen:
            seen.add(index)
            if _term_matches(index, pod, own_ns):
                hits.append(index)
        out: dict[Pair, int] = {}
        for index in hits:
            pairs = groups.get(index)
            if pairs:
                for pair, n in pairs.items():
                    out[pair] = out.get(pair, 0) + n
        if kept:
            _MATCHED[alike] = (seen, hits)
            while len(_MATCHED) > _MATCHED_KEPT:
                _MATCHED.popitem(last=False)
    return out


def prepare_affinity_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig
) -> affinity.FilterState:
    """``inter_pod_affinity.prepare_filter``, from sums kept for every pod (existing pods'
    anti-affinity terms) and per terms (the pod's own)."""
    terms = pod_terms(pod)
    own_ns = snapshot.namespace_labels(pod.namespace)
    req_aff = terms.required_affinity
    req_anti = terms.required_anti_affinity
    terms_key = (req_aff, req_anti, snapshot.namespaces)  # namespace selectors read these
    if not _hashable(terms_key):
        return affinity.prepare_filter(pod, snapshot, config)
    existing = _existing_anti_counts(pod, own_ns, snapshot)
    found: dict[Any, int] = {}
    if req_aff or req_anti:

        def terms_part(node: NodeInfo) -> dict[Any, int]:
            out: dict[Any, int] = {}
            labels = node.node.labels
            for info in node.pods:
                other = info.pod
                ns_labels = snapshot.namespace_labels(other.namespace)
                if req_aff and matches_all(req_aff, other, ns_labels):
                    for t in req_aff:
                        if t.topology_key in labels:
                            pair = (True, t.topology_key, labels[t.topology_key])
                            out[pair] = out.get(pair, 0) + 1
                for t in req_anti:
                    if t.topology_key in labels and t.matches(other, ns_labels):
                        pair = (False, t.topology_key, labels[t.topology_key])
                        out[pair] = out.get(pair, 0) + 1
            return out

        gated = [t.selector for t in (*req_aff[:1], *req_anti)]
        gate = label_gate(gated)

        def matched(info: PodInfo) -> bool:
            other = info.pod
            if gate is not None and not gate(other.labels):
                return False
            ns_labels = snapshot.namespace_labels(other.namespace)
            return bool(req_aff and matches_all(req_aff, other, ns_labels)) or any(
                t.matches(other, ns_labels) for t in req_anti
            )

        found = TERM_SUMS.sums(
            terms_key,
            snapshot,
            terms_part,
            matched,
            base=((), _nothing),
            marks=label_marks(gated),
        )
    return affinity.FilterState(
        terms=terms,
        skip=not existing and not req_aff and not req_anti,
        self_match=matches_all(req_aff, pod, own_ns),
        affinity_counts={(k, v): n for (aff, k, v), n in found.items() if aff},
        anti_affinity_counts={(k, v): n for (aff, k, v), n in found.items() if not aff},
        existing_anti_affinity_counts=existing,
    )


# --- InterPodAffinity's PreScore ------------------------------------------------------------


def _existing_score_part(node: NodeInfo) -> dict[Any, int]:
    """The terms of the pods on ``node`` that can score an incoming pod, per domain of the
    node, tagged 0 (required affinity: hardPodAffinityWeight), 1 or -1 (preferred affinity
    or anti-affinity: +/- their weight)."""
    holders = node.pods_with_affinity
    if not holders:
        return {}
    out: dict[Any, int] = {}
    labels = node.node.labels
    for info in holders:
        theirs = info.affinity_terms
        weighted = [(0, term, 0) for term in theirs.required_affinity]
        weighted += [(1, w.term, w.weight) for w in theirs.preferred_affinity]
        weighted += [(-1, w.term, w.weight) for w in theirs.preferred_anti_affinity]
        for tag, term, weight in weighted:
            value = labels.get(term.topology_key)
            if value is not None:
                entry = (tag, _term_index(term), weight, term.topology_key, value)
                out[entry] = out.get(entry, 0) + 1
    return out


def prepare_affinity_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig,
) -> affinity.ScoreState | None:
    """``inter_pod_affinity.prepare_score`` from sums kept between cycles: existing pods'
    terms from one sum over every node shared by all pods, the pod's own preferred terms from
    sums kept per terms (``TERM_SUMS``), each corrected for the nodes replaced since."""
    if not feasible:
        return None
    terms = pod_terms(pod)
    own = terms.preferred_affinity or terms.preferred_anti_affinity
    if not own:
        if config.ignore_preferred_terms_of_existing_pods:
            return None
        if not snapshot.nodes_with_affinity_pods:
            return None  # no pod anywhere has (anti-)affinity terms that could score this one
    scores: dict[str, dict[str, int]] = {}
    if own:
        own_key = (
            "preferred",
            terms.preferred_affinity,
            terms.preferred_anti_affinity,
            snapshot.namespaces,  # namespace selectors read these
        )
        if not _hashable(own_key):
            return affinity.prepare_score(pod, snapshot, feasible, config)
        _add_own_preferred(scores, terms, own_key, snapshot)
    if snapshot.nodes_with_affinity_pods:
        _add_existing_terms(scores, pod, snapshot, config)
    if not scores:
        return None
    return affinity.ScoreState(scores)


def _add_own_preferred(
    scores: dict[str, dict[str, int]],
    terms: PodAffinityTerms,
    own_key: Hashable,
    snapshot: ClusterSnapshot,
) -> None:
    """The pod's preferred terms: +/- each term's weight per pod it matches, at the domain
    of the pod's node."""
    weighted = [(1, w) for w in terms.preferred_affinity]
    weighted += [(-1, w) for w in terms.preferred_anti_affinity]

    def part(node: NodeInfo) -> dict[Any, int]:
        out: dict[Any, int] = {}
        labels = node.node.labels
        if not labels:
            return out
        for info in node.pods:
            other = info.pod
            ns_labels = snapshot.namespace_labels(other.namespace)
            for index, (_, w) in enumerate(weighted):
                key = w.term.topology_key
                if key in labels and w.term.matches(other, ns_labels):
                    entry = (index, key, labels[key])
                    out[entry] = out.get(entry, 0) + 1
        return out

    selectors = [w.term.selector for _, w in weighted]
    gate = label_gate(selectors)

    def matched(info: PodInfo) -> bool:
        other = info.pod
        if gate is not None and not gate(other.labels):
            return False
        ns_labels = snapshot.namespace_labels(other.namespace)
        return any(w.term.matches(other, ns_labels) for _, w in weighted)

    sums = TERM_SUMS.sums(
        own_key, snapshot, part, matched, base=((), _nothing), marks=label_marks(selectors)
    )
    for (index, key, value), n in sums.items():
        if n:
            sign, w = weighted[index]
            by_value = scores.setdefault(key, {})
            by_value[value] = by_value.get(value, 0) + sign * w.weight * n


def _add_existing_terms(
    scores: dict[str, dict[str, int]], pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig
) -> None:
    """Existing pods' terms matching the pod: required affinity at hardPodAffinityWeight,
    preferred at +/- their weight, per domain of their node."""
    own_ns = snapshot.namespace_labels(pod.namespace)
    hard_weight = config.hard_pod_affinity_weight
    with _LOCK:
        _bound_term_caches()
        sums = EXISTING_SUMS.sums(
            "score", snapshot, _existing_score_part, _has_terms, marks=(POD_AFFINITY,)
        )
        known = list(_TERM_LIST)
    matched: dict[int, bool] = {}
    for (tag, index, weight, key, value), n in sums.items():
        if tag == 0 and hard_weight <= 0:
            continue
        hit = matched.get(index)
        if hit is None:
            hit = matched[index] = known[index].matches(pod, own_ns)
        if hit:
            amount = hard_weight if tag == 0 else weight * tag
            by_value = scores.setdefault(key, {})
            by_value[value] = by_value.get(value, 0) + amount * n


# --- the filters' row keys ----------------------------------------------------------------


def _counts_by_value(counts: dict[Pair, int], key: str) -> dict[str, int]:
    return {value: n for (k, value), n in counts.items() if k == key}


def _held(snapshot: ClusterSnapshot, key: str, counts: dict[Pair, int]) -> np.ndarray:
    """Per row: -1 when the node lacks label ``key``, else whether ``counts`` at the node's
    domain is above 0."""
    held = {value: 1 for (k, value), n in counts.items() if k == key and n > 0}
    return label_column(snapshot, key).gather(held, missing=-1)


def spread_filter_key(state: spread.FilterState, snapshot: ClusterSnapshot) -> RowKeyed:
    """What ``pod_topology_spread.filter`` decides on, per row and constraint."""
    columns = []
    for c in state.constraints:
        # Whether the skew is over, per domain (a domain no node counts for holds 0 pods),
        # then per row through its domain: one gather over the rows.
        self_match = 1 if c.selector.matches(state.pod_labels) else 0
        floor = self_match - spread.global_minimum(state, c)
        default = int(floor > c.max_skew)  # a domain no node counts for holds 0 pods
        by_count = state.histograms.get(c.topology_key) if state.histograms else None
        if default or (by_count is not None and max(by_count, default=0) + floor <= c.max_skew):
            over = {}  # every domain reads as the default: none of them need naming
        else:
            over = {
                value: int(n + floor > c.max_skew)
                for value, n in _counts_by_value(state.pair_counts, c.topology_key).items()
            }
        column = label_column(snapshot, c.topology_key)
        columns.append(column.gather(over, missing=-1, default=default))
    return RowKeyed(("spread", len(columns)), _side_by_side(columns))


def _side_by_side(columns: list[np.ndarray]) -> np.ndarray:
    """Row key columns (int64) as one (rows, columns) array."""
    return columns[0].reshape(-1, 1) if len(columns) == 1 else np.column_stack(columns)


def affinity_filter_key(state: affinity.FilterState, snapshot: ClusterSnapshot) -> RowKeyed:
    """What ``inter_pod_affinity.filter`` reads per row: each term's count at the node's
    domain (above 0 or not), and whether existing pods' anti-affinity counts the node's
    domains; whole: whether any pod matches at all and the pod's own match."""
    columns = [
        _held(snapshot, t.topology_key, state.affinity_counts)
        for t in state.terms.required_affinity
    ]
    columns += [
        _held(snapshot, t.topology_key, state.anti_affinity_counts)
        for t in state.terms.required_anti_affinity
    ]
    existing_keys = tuple(sorted({k for k, _ in state.existing_anti_affinity_counts}))
    columns += [_held(snapshot, k, state.existing_anti_affinity_counts) for k in existing_keys]
    whole = (
        "affinity",
        existing_keys,
        bool(state.affinity_counts),
        bool(state.anti_affinity_counts),
        state.self_match,
    )
    if not columns:
        return RowKeyed(whole, np.zeros((snapshot.num_nodes, 0), np.int64))
    return RowKeyed(whole, _side_by_side(columns))


_MAKERS: dict[str, Callable[[Any, ClusterSnapshot], RowKeyed]] = {
    "PodTopologySpread": spread_filter_key,
    "InterPodAffinity": affinity_filter_key,
}


def filter_key(ctx: Any, plugin_name: str, state: Any) -> RowKeyed:
    """The row key of ``plugin_name``'s filter for ``state`` over the cycle's snapshot, made
    once per cycle (the cluster key and the batch form both read it)."""
    make = _MAKERS[plugin_name]
    return ctx.prepared((plugin_name, "rows", id(state)), lambda: make(state, ctx.snapshot))


_BASE = 3  # each row key column holds -1, 0 or 1
_MAX_COLUMNS = 39  # 3**39 < 2**63
_FEW_ROWS = 32  # up to this many rows are grouped in a dict rather than by ``np.unique``


def by_pattern(
    ctx: Any, plugin_name: str, state: Any, infos: Sequence[NodeInfo], run: Any
) -> list[Any] | None:
    """``run(state, info)`` for each of ``infos`` (nodes of the cycle's snapshot), run once
    per distinct row key: the filter's verdict is a function of its row key (module
    docstring), so nodes with equal keys get the same answer. None when an info is not the
    snapshot's or the key is too wide to fold into one integer."""
    if ctx is None or not infos:
        return None
    rows_key = filter_key(ctx, plugin_name, state).rows
    if rows_key.shape[1] > _MAX_COLUMNS or len(rows_key) != ctx.snapshot.num_nodes:
        return None
    rows = rows_of(ctx.snapshot, infos)
    if rows is None:
        return None
    # Only the rows asked about are folded (the engine mostly asks about a few changed ones).
    picked = rows_key if len(rows) == len(rows_key) else rows_key[rows]
    if picked.shape[1] == 1:
        codes = picked[:, 0]
    else:
        codes = (picked + 1) @ (_BASE ** np.arange(picked.shape[1], dtype=np.int64))
    if len(rows) <= _FEW_ROWS:
        found: dict[int, Any] = {}
        out = []
        for code, info in zip(codes.tolist(), infos, strict=True):
            answer = found.get(code, found)
            if answer is found:
                answer = found[code] = run(state, info)
            out.append(answer)
        return out
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    answers = np.empty(len(first), object)
    for at, row in enumerate(first.tolist()):
        answers[at] = run(state, infos[row])
    return answers[inverse.reshape(-1)].tolist()


PREPARE_SCORES: dict[str, Callable[[Any, Any, Any, Any], Any]] = {
    "InterPodAffinity": prepare_affinity_score,
    "PodTopologySpread": prepare_spread_score,
}
