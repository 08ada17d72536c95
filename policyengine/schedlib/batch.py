"""Columnar forms of the hot kube-scheduler plugins: one call for many nodes.

``functions`` runs a plugin's per-node step once per node; for the plugins every pod pays for
on every node, the forms here compute the same results with far less Python per node: nodes
are grouped by what the plugin reads of them (a taint list is shared by thousands of nodes,
so it is judged once per distinct list), and per-node facts the plugin derives from a
``NodeInfo`` are kept as long as that ``NodeInfo`` lives (it is immutable); the resource
plugins (NodeResourcesFit's filter, LeastAllocated, BalancedAllocation) run as int64 numpy
columns over those facts. Each form returns exactly what the plugin's own ``filter``/``score``
returns for each node: ``tests/schedlib/test_batch_forms.py`` compares them node for node, and
the property test in ``tests/engine/test_fast_path.py`` holds whole decisions equal.

``FILTERS`` and ``SCORES`` map a plugin name to ``form(state, infos, ctx) -> list``.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from policyengine.model.normalize import MAX_NODE_SCORE
from policyengine.model.objects import DO_NOT_SCHEDULE
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.node_resources_fit import (
    REASON_TOO_MANY_PODS,
    allocatable_and_requested,
    insufficient,
)
from policyengine.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from policyengine.model.snapshot import NodeInfo

Form = Callable[[Any, Sequence[NodeInfo], Any], list[Any]]


def _grouped(run: Callable[[Any, NodeInfo], Any], key: Callable[[NodeInfo], Any]) -> Form:
    """The plugin's per-node step, run once per distinct ``key(node)`` (what it reads)."""

    def form(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
        seen: dict[Any, Any] = {}
        out = []
        for info in infos:
            k = key(info)
            try:
                out.append(seen[k])
            except KeyError:
                value = seen[k] = run(state, info)
                out.append(value)
        return out

    return form


def _taints(info: NodeInfo) -> Any:
    return info.node.taints


_TAINTS = PLUGINS_BY_NAME["TaintToleration"]

FILTERS: dict[str, Form] = {}
SCORES: dict[str, Form] = {}

# TaintToleration reads only the node's taints (and the pod's tolerations, in the state);
# the reasons list is shared between nodes, which is safe: callers never mutate it.
if _TAINTS.filter is not None and _TAINTS.score is not None:
    FILTERS["TaintToleration"] = _grouped(_TAINTS.filter, _taints)
    SCORES["TaintToleration"] = _grouped(_TAINTS.score, _taints)

_IMAGES = PLUGINS_BY_NAME["ImageLocality"]


def _image_locality(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """ImageLocality reads of a node only the sizes of the pod's images it holds (the state
    has the rest): nodes holding the same sizes of them score alike, most of them 0."""
    run = _IMAGES.score
    assert run is not None
    # An image no node holds (spread 0) is on none of these nodes either.
    images = tuple(image for image in state.images if state.spread.get(image, 0))
    if not images:
        return [run(state, info) for info in infos[:1]] * len(infos)

    def held(info: NodeInfo) -> Any:
        sizes = info.image_sizes
        return tuple([sizes.get(image) for image in images])

    return _grouped(run, held)(state, infos, ctx)


if _IMAGES.score is not None:
    SCORES["ImageLocality"] = _image_locality


# --- the label-reading filters, grouped by the label values they read ----------------------

_SPREAD = PLUGINS_BY_NAME["PodTopologySpread"]
_AFFINITY = PLUGINS_BY_NAME["InterPodAffinity"]


def _label_values(keys: tuple[str, ...]) -> Callable[[NodeInfo], Any]:
    def values(info: NodeInfo) -> Any:
        labels = info.node.labels
        return tuple([labels.get(key) for key in keys])

    return values


def _spread_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """PodTopologySpread's filter reads of a node only its values of the constraints'
    topology keys: nodes of one domain get one answer."""
    run = _SPREAD.filter
    assert run is not None
    if not state.constraints:
        return [run(state, info) for info in infos[:1]] * len(infos)
    keys = tuple(c.topology_key for c in state.constraints)
    return _grouped(run, _label_values(keys))(state, infos, ctx)


def _affinity_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """InterPodAffinity's filter reads of a node only its values of the pod's terms'
    topology keys and of the keys existing pods' anti-affinity counts name."""
    run = _AFFINITY.filter
    assert run is not None
    if state.skip:
        return [run(state, info) for info in infos[:1]] * len(infos)
    keys = {t.topology_key for t in state.terms.required_affinity}
    keys.update(t.topology_key for t in state.terms.required_anti_affinity)
    keys.update(key for key, _ in state.existing_anti_affinity_counts)
    return _grouped(run, _label_values(tuple(sorted(keys))))(state, infos, ctx)


_NODE_AFFINITY = PLUGINS_BY_NAME["NodeAffinity"]
_PORTS = PLUGINS_BY_NAME["NodePorts"]


def _node_affinity_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """NodeAffinity's filter for a pod with a nodeSelector and no required affinity terms
    reads of a node only its values of the selector's keys; with terms, node by node."""
    run = _NODE_AFFINITY.filter
    assert run is not None
    if state.skip:
        return [run(state, info) for info in infos[:1]] * len(infos)
    required = state.required
    if required.terms is not None or not required.has_node_selector:
        return [run(state, info) for info in infos]
    return _grouped(run, _label_values(tuple(required.node_selector)))(state, infos, ctx)


def _ports_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """NodePorts passes every node for a pod that asks for no host port."""
    run = _PORTS.filter
    assert run is not None
    if not state.wanted:
        return [run(state, info) for info in infos[:1]] * len(infos)
    return [run(state, info) for info in infos]


if _SPREAD.filter is not None and _AFFINITY.filter is not None:
    FILTERS["PodTopologySpread"] = _spread_filter
    FILTERS["InterPodAffinity"] = _affinity_filter
if _NODE_AFFINITY.filter is not None and _PORTS.filter is not None:
    FILTERS["NodeAffinity"] = _node_affinity_filter
    FILTERS["NodePorts"] = _ports_filter


# --- PodTopologySpread's PreFilter, incrementally -------------------------------------------
#
# The PreFilter sums, over every node, the pods matching each constraint per domain: a pass
# over all pods of the cluster for every pod that carries a constraint. A node's part depends
# on the node and on what ``spread.count_key`` names of the pod, so it is kept per such key
# while the node's ``NodeInfo`` lives, and the sums are corrected for the nodes replaced since
# (usually the one the previous pod was assumed onto).

PREPARE_FILTERS: dict[str, Callable[[Any, Any, Any], Any]] = {}
_COUNTS_KEPT = 16


class _Counts:
    __slots__ = ("counts", "nodes", "parts", "present")

    def __init__(
        self,
        nodes: tuple[NodeInfo, ...],
        parts: list[dict[Any, int]],
        counts: dict[Any, int],
        present: dict[Any, int],
    ):
        self.nodes = nodes
        self.parts = parts
        self.counts = counts
        self.present = present  # how many nodes count each pair (0-count pairs stay in)


_SPREAD_COUNTS: OrderedDict[Any, _Counts] = OrderedDict()
_SPREAD_LOCK = threading.Lock()


def _summed(nodes: tuple[NodeInfo, ...], key: Any) -> _Counts:
    parts = [spread.node_counts(node, key) for node in nodes]
    counts: dict[Any, int] = {}
    present: dict[Any, int] = {}
    for part in parts:
        for pair, n in part.items():
            counts[pair] = counts.get(pair, 0) + n
            present[pair] = present.get(pair, 0) + 1
    return _Counts(nodes, parts, counts, present)


def _updated(known: _Counts, nodes: tuple[NodeInfo, ...], key: Any) -> _Counts | None:
    changed = list(itertools.compress(range(len(nodes)), map(operator.is_not, nodes, known.nodes)))
    if len(changed) > len(nodes) // 4:
        return None
    parts = known.parts.copy()
    counts = dict(known.counts)
    present = dict(known.present)
    for row in changed:
        for pair, n in parts[row].items():
            counts[pair] -= n
            present[pair] -= 1
            if not present[pair]:
                del present[pair], counts[pair]
        part = parts[row] = spread.node_counts(nodes[row], key)
        for pair, n in part.items():
            counts[pair] = counts.get(pair, 0) + n
            present[pair] = present.get(pair, 0) + 1
    return _Counts(nodes, parts, counts, present)


def _spread_prepare_filter(pod: Any, snapshot: Any, config: Any) -> Any:
    constraints = spread.pod_constraints(pod, DO_NOT_SCHEDULE, config)
    if not constraints:
        return spread.filter_state((), pod, {})
    key = spread.count_key(pod, constraints)
    try:
        hash(key)
    except TypeError:
        return _SPREAD.prepare_filter(pod, snapshot, config)  # type: ignore[misc]
    nodes = snapshot.nodes
    with _SPREAD_LOCK:
        known = _SPREAD_COUNTS.pop(key, None)
    found = None
    if known is not None and len(known.nodes) == len(nodes):
        found = known if known.nodes is nodes else _updated(known, nodes, key)
    if found is None:
        found = _summed(nodes, key)
    with _SPREAD_LOCK:
        _SPREAD_COUNTS[key] = found
        while len(_SPREAD_COUNTS) > _COUNTS_KEPT:
            _SPREAD_COUNTS.popitem(last=False)
    return spread.filter_state(constraints, pod, dict(found.counts))


PREPARE_FILTERS["PodTopologySpread"] = _spread_prepare_filter


# --- NodeResourcesFit and BalancedAllocation, in int64 columns ----------------------------
#
# Kube computes these in int64 (milli-CPU, bytes) with Go's truncating division; every operand
# below is checked non-negative and small enough that no product overflows, so numpy's floor
# division is Go's. Outside that range (or for configurations the columns do not cover) the
# plugin's own per-node step runs instead.

# Facts per node, one row each: the columns below index it.
_PODS, _ALLOWED, _A_CPU, _A_MEM, _A_EPH, _U_CPU, _U_MEM, _U_EPH, _NZ_CPU, _NZ_MEM = range(10)
_LIMIT = 1 << 55  # values at most this: (alloc - req) * 100 stays within int64
_FACTS_ATTR = "_resource_facts"


def _facts_row(info: NodeInfo) -> tuple[int, ...]:
    """What the resource plugins read of ``info``, kept on it (``NodeInfo`` is immutable)."""
    row = info.__dict__.get(_FACTS_ATTR)
    if row is None:
        alloc = info.allocatable_units
        used = info.requested_units
        row = (
            len(info.pods),
            alloc.get(PODS, 0),
            alloc.get(CPU, 0),
            alloc.get(MEMORY, 0),
            alloc.get(EPHEMERAL_STORAGE, 0),
            used.get(CPU, 0),
            used.get(MEMORY, 0),
            used.get(EPHEMERAL_STORAGE, 0),
            info.non_zero_cpu,
            info.non_zero_memory,
        )
        info.__dict__[_FACTS_ATTR] = row  # as functools.cached_property does
    return row


_LAST = threading.local()  # the last few (infos, table) this thread built, by length: a
# cycle's three forms (filter, LeastAllocated, BalancedAllocation) mostly ask about the same
# nodes, and the next cycle about the same nodes but the one the last pod was assumed onto.
_KEPT = 4


def _facts(infos: Sequence[NodeInfo]) -> np.ndarray | None:
    """The facts of ``infos`` as an (n, 10) int64 array; None when a value is out of range."""
    kept: dict[int, tuple[tuple[NodeInfo, ...], np.ndarray | None]] | None = getattr(
        _LAST, "tables", None
    )
    if kept is None:
        kept = _LAST.tables = {}
    size = len(infos)
    last = kept.pop(size, None)
    table: np.ndarray | None = None
    if last is not None and last[1] is not None:
        changed = list(itertools.compress(range(size), map(operator.is_not, infos, last[0])))
        if not changed:
            table = last[1]
        elif len(changed) <= size // 8:
            fresh = _build_facts([infos[row] for row in changed])
            if fresh is not None:
                table = last[1].copy()
                table[changed] = fresh
    if table is None:
        table = _build_facts(infos)
    kept[size] = (tuple(infos), table)
    while len(kept) > _KEPT:
        del kept[next(iter(kept))]
    return table


def _build_facts(infos: Sequence[NodeInfo]) -> np.ndarray | None:
    rows = [_facts_row(info) for info in infos]
    if not rows:
        return np.zeros((0, 10), np.int64)
    try:
        table = np.array(rows, dtype=np.int64)
    except OverflowError:
        return None
    if table.min() < 0 or table.max() > _LIMIT:
        return None
    return table


def _small(*values: int) -> bool:
    return all(0 <= v <= _LIMIT for v in values)


def _column(values: list[int]) -> np.ndarray | None:
    if not values:
        return np.zeros(0, np.int64)
    if not _small(min(values), max(values)):
        return None
    return np.array(values, dtype=np.int64)


_FIT = PLUGINS_BY_NAME["NodeResourcesFit"]
_BALANCED = PLUGINS_BY_NAME["NodeResourcesBalancedAllocation"]


def _fit_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _FIT.filter
    assert run is not None
    table = _facts(infos)
    if (
        table is None
        or state.overcommit  # the plugin's own step scales allocatable cpu per node's load
        or len(state.scalars) > 48
        or not _small(
            state.cpu, state.memory, state.ephemeral, *(units for _, units in state.scalars)
        )
    ):
        return [run(state, info) for info in infos]
    code = (table[:, _PODS] + 1 > table[:, _ALLOWED]).astype(np.int64)
    names = [REASON_TOO_MANY_PODS]
    if state.cpu or state.memory or state.ephemeral or state.has_scalar_entries:
        for request, a, u, resource in (
            (state.cpu, _A_CPU, _U_CPU, CPU),
            (state.memory, _A_MEM, _U_MEM, MEMORY),
            (state.ephemeral, _A_EPH, _U_EPH, EPHEMERAL_STORAGE),
        ):
            bit = 1 << len(names)
            names.append(insufficient(resource))
            if request > 0:
                code |= np.where(request > table[:, a] - table[:, u], bit, 0)
        for name, units in state.scalars:
            bit = 1 << len(names)
            names.append(insufficient(name))
            free = (
                _column([info.allocatable_units.get(name, 0) for info in infos]),
                _column([info.requested_units.get(name, 0) for info in infos]),
            )
            if free[0] is None or free[1] is None:
                return [run(state, info) for info in infos]
            code |= np.where(units > free[0] - free[1], bit, 0)
    # One (shared, never mutated) reasons list per distinct combination.
    made: dict[int, list[str]] = {}
    out = []
    for value in code.tolist():
        reasons = made.get(value)
        if reasons is None:
            reasons = made[value] = [r for i, r in enumerate(names) if value >> i & 1]
        out.append(reasons)
    return out


def _alloc_req(
    infos: Sequence[NodeInfo], table: np.ndarray, name: str, request: int, use_requested: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """``allocatable_and_requested`` per node, as two int64 columns; None when out of range."""
    if name == CPU:
        used = table[:, _U_CPU if use_requested else _NZ_CPU]
        return table[:, _A_CPU], used + request
    if name == MEMORY:
        used = table[:, _U_MEM if use_requested else _NZ_MEM]
        return table[:, _A_MEM], used + request
    if name == EPHEMERAL_STORAGE:
        return table[:, _A_EPH], table[:, _U_EPH] + request
    pairs = [
        allocatable_and_requested(i, name, request, use_requested=use_requested) for i in infos
    ]
    alloc = _column([a for a, _ in pairs])
    req = _column([r for _, r in pairs])
    if alloc is None or req is None:
        return None
    return alloc, req


def _least_allocated(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _FIT.score
    assert run is not None
    table = _facts(infos)
    if (
        table is None
        or state.overcommit
        or not all(
            0 < weight <= 1 << 16 and _small(request) for _, weight, request in state.resources
        )
    ):
        return [run(state, info) for info in infos]
    total = np.zeros(len(infos), np.int64)
    weights = np.zeros(len(infos), np.int64)
    for name, weight, request in state.resources:
        pair = _alloc_req(infos, table, name, request, False)
        if pair is None:
            return [run(state, info) for info in infos]
        alloc, req = pair
        present = alloc != 0
        fits = present & (req <= alloc)
        safe = np.where(present, alloc, 1)
        score = np.where(fits, (alloc - req) * MAX_NODE_SCORE // safe, 0)
        total += np.where(present, score * weight, 0)
        weights += np.where(present, weight, 0)
    result = np.where(weights > 0, total // np.where(weights > 0, weights, 1), 0)
    return result.tolist()  # type: ignore[no-any-return]


def _balanced(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _BALANCED.score
    assert run is not None
    table = _facts(infos)
    if (
        table is None
        or state.overcommit
        or len(state.resources) > 2
        or not all(_small(request) for _, request in state.resources)
    ):
        return [run(state, info) for info in infos]
    fractions = []
    for name, request in state.resources:
        pair = _alloc_req(infos, table, name, request, True)
        if pair is None:
            return [run(state, info) for info in infos]
        alloc, req = pair
        present = alloc != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.minimum(req.astype(np.float64) / alloc.astype(np.float64), 1.0)
        fractions.append((present, fraction))
    std = np.zeros(len(infos), np.float64)
    if len(fractions) == 2:
        (p0, f0), (p1, f1) = fractions
        both = p0 & p1
        std = np.where(both, np.abs((f0 - f1) / 2), 0.0)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64).tolist()  # type: ignore[no-any-return]


if _FIT.filter is not None and _FIT.score is not None:
    FILTERS["NodeResourcesFit"] = _fit_filter
    SCORES["NodeResourcesFit"] = _least_allocated
if _BALANCED.score is not None:
    SCORES["NodeResourcesBalancedAllocation"] = _balanced
