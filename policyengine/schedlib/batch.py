"""Columnar forms of the hot kube-scheduler plugins: one call for many nodes.

``functions`` runs a plugin's per-node step once per node; for the plugins every pod pays for
on every node, the forms here compute the same results with far less Python per node: nodes
are grouped by what the plugin reads of them (a taint list is shared by thousands of nodes,
so it is judged once per distinct list), and per-node facts the plugin derives from a
``NodeInfo`` are kept as long as that ``NodeInfo`` lives (it is immutable); the resource
plugins (NodeResourcesFit's filter, LeastAllocated, BalancedAllocation) run as int64 numpy
columns over those facts, or, for the few changed nodes a pod class's later cycles ask
about, as a plain Python loop over the same facts (numpy's fixed cost per call is more than
that loop's for dozens of nodes). Each form returns exactly what the plugin's own ``filter``/``score``
returns for each node: ``tests/schedlib/test_batch_forms.py`` compares them node for node, and
the property test in ``tests/engine/test_fast_path.py`` holds whole decisions equal.

``FILTERS`` and ``SCORES`` map a plugin name to ``form(state, infos, ctx) -> list``.
"""

from __future__ import annotations

import itertools
import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from policyengine.lang.vector import ints
from policyengine.model.normalize import MAX_NODE_SCORE, go_div
from policyengine.model.overcommit import Overcommits, effective_allocatable
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.balanced_allocation import balanced_score
from policyengine.model.plugins.node_affinity import REASON
from policyengine.model.plugins.node_resources_fit import (
    REASON_TOO_MANY_PODS,
    allocatable_and_requested,
    insufficient,
    least_requested_score,
)
from policyengine.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from policyengine.model.snapshot import NodeInfo
from policyengine.schedlib import topology_filters
from policyengine.schedlib.domains import label_column
from policyengine.schedlib.node_rows import named_positions, rows_at
from policyengine.schedlib.resource_facts import LIMIT, STORE, Direct, Gathered, facts_row

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


# --- InterPodAffinity's score: a sum per topology key at the node's domain ----------------

_AFFINITY_SCORE = PLUGINS_BY_NAME["InterPodAffinity"]
_FEW_AFFINITY = 8  # fewer nodes are scored by the plugin's own loop


def _affinity_score(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """InterPodAffinity's score reads of a node only its value of each topology key the
    state sums: each key's sums gathered at the nodes' rows through the label's kept column
    (a node without the label adds 0), added as int64."""
    run = _AFFINITY_SCORE.score
    assert run is not None
    rows = None
    if ctx is not None and len(infos) >= _FEW_AFFINITY:
        rows = rows_at(ctx.snapshot, infos)
    if rows is None:
        return [run(state, info) for info in infos]
    if any(
        abs(n) > _LIMIT for by_value in state.topology_score.values() for n in by_value.values()
    ):
        return [run(state, info) for info in infos]
    total = np.zeros(len(rows), np.int64)
    for key, by_value in state.topology_score.items():
        total += label_column(ctx.snapshot, key).gather(by_value)[rows]
    return ints(total)  # type: ignore[return-value]  # a sequence of ints, read lazily


if _AFFINITY_SCORE.score is not None:
    SCORES["InterPodAffinity"] = _affinity_score


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
    found = topology_filters.by_pattern(ctx, "PodTopologySpread", state, infos, run)
    if found is not None:
        return found
    keys = tuple(c.topology_key for c in state.constraints)
    return _grouped(run, _label_values(keys))(state, infos, ctx)


def _affinity_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """InterPodAffinity's filter reads of a node only its values of the pod's terms'
    topology keys and of the keys existing pods' anti-affinity counts name."""
    run = _AFFINITY.filter
    assert run is not None
    if state.skip:
        return [run(state, info) for info in infos[:1]] * len(infos)
    found = topology_filters.by_pattern(ctx, "InterPodAffinity", state, infos, run)
    if found is not None:
        return found
    keys = {t.topology_key for t in state.terms.required_affinity}
    keys.update(t.topology_key for t in state.terms.required_anti_affinity)
    keys.update(key for key, _ in state.existing_anti_affinity_counts)
    return _grouped(run, _label_values(tuple(sorted(keys))))(state, infos, ctx)


_NODE_AFFINITY = PLUGINS_BY_NAME["NodeAffinity"]
_PORTS = PLUGINS_BY_NAME["NodePorts"]


def _node_affinity_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """NodeAffinity's filter reads of a node only its values of the labels the pod's
    nodeSelector and required terms name (``RequiredNodeAffinity.label_keys``): nodes alike in
    them get one answer; a term naming nodes by ``metadata.name``, node by node."""
    run = _NODE_AFFINITY.filter
    assert run is not None
    if state.skip:
        return [run(state, info) for info in infos[:1]] * len(infos)
    required = state.required
    named = required.named_nodes
    if named is not None:
        # Every term names its node (a DaemonSet's pods): no other node can match them.
        reasons: list[Any] = [[REASON]] * len(infos)
        for at in named_positions(infos, named, ctx.snapshot):
            reasons[at] = run(state, infos[at])
        return reasons
    keys = required.label_keys
    if keys is None:
        return [run(state, info) for info in infos]
    return _grouped(run, _label_values(keys))(state, infos, ctx)


def _node_affinity_score(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    """NodeAffinity's score sums the weights of the preferred terms a node matches: it reads
    of a node only the labels those terms name (node by node when a term reads its name)."""
    run = _NODE_AFFINITY.score
    assert run is not None
    keys = state.preferred.label_keys
    if keys is None:
        return [run(state, info) for info in infos]
    return _grouped(run, _label_values(keys))(state, infos, ctx)


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
if _NODE_AFFINITY.score is not None:
    SCORES["NodeAffinity"] = _node_affinity_score


# --- PodTopologySpread's and InterPodAffinity's PreFilters, incrementally ------------------
#
# Both sum, over every node, what each node adds to each topology domain: a pass over all pods
# of the cluster per pod. ``topology_filters`` keeps the sums per key of what they read of the
# pod and corrects them for the nodes replaced since.

PREPARE_FILTERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "PodTopologySpread": topology_filters.prepare_spread_filter,
    "InterPodAffinity": topology_filters.prepare_affinity_filter,
}


# --- NodeResourcesFit and BalancedAllocation, in int64 columns ----------------------------
#
# Kube computes these in int64 (milli-CPU, bytes) with Go's truncating division; every operand
# below is checked non-negative and small enough that no product overflows, so numpy's floor
# division is Go's. Outside that range (or for configurations the columns do not cover) the
# plugin's own per-node step runs instead.

# Facts per node, one row each, kept between cycles (``resource_facts``).
_PODS, _ALLOWED, _A_CPU, _A_MEM, _A_EPH, _U_CPU, _U_MEM, _U_EPH, _NZ_CPU, _NZ_MEM = range(10)
_LIMIT = LIMIT


_LAST = threading.local()  # the last few (infos, rows) this thread gathered, by length: a
# cycle's three forms (filter, LeastAllocated, BalancedAllocation) mostly ask about the same
# nodes, and the next cycle about the same nodes but the one the last pod was assumed onto.
_KEPT = 4


_FEW = 64  # calls about at most this many nodes compute their rows (``Direct``)
# Calls about at most this many nodes compute in plain Python over each node's kept row
# (``facts_row``): a class's later cycles ask about the few rows that changed, and the numpy
# path's fixed cost (a table, masks, a reasons table) is some 50 us per call whatever the
# rows, the Python loop about 1 us per node.
_SMALL = 48


def _facts(infos: Sequence[NodeInfo]) -> tuple[Gathered | Direct, np.ndarray] | None:
    """The store's rows of ``infos`` and their base columns, (n, 10) int64; None when a value
    is out of range."""
    size = len(infos)
    if size <= _FEW:
        # A class's next cycle asks the three forms about the same few changed nodes: their
        # rows are computed once (the tuple held keeps the ids from being reused).
        ids = tuple(map(id, infos))
        last = getattr(_LAST, "direct", None)
        if last is not None and last[0] == ids:
            return last[2]
        direct = Direct(infos)
        rows = direct.base()
        found = None if rows is None else (direct, rows)
        _LAST.direct = (ids, tuple(infos), found)
        return found
    kept: dict[int, tuple[tuple[NodeInfo, ...], Gathered]] | None = getattr(_LAST, "kept", None)
    if kept is None:
        kept = _LAST.kept = {}
    last = kept.pop(size, None)
    gathered: Gathered | None = None
    if last is not None:
        changed = list(itertools.compress(range(size), map(operator.is_not, infos, last[0])))
        if not changed:
            gathered = last[1]
        elif len(changed) <= size // 8:
            part = STORE.gather([infos[row] for row in changed])
            gathered = last[1].patched(changed, part)
    if gathered is None:
        gathered = STORE.gather(infos)
    kept[size] = (tuple(infos), gathered)
    while len(kept) > _KEPT:
        del kept[next(iter(kept))]
    table = gathered.base()
    return None if table is None else (gathered, table)


def _small(*values: int) -> bool:
    return all(0 <= v <= _LIMIT for v in values)


_FIT = PLUGINS_BY_NAME["NodeResourcesFit"]
_BALANCED = PLUGINS_BY_NAME["NodeResourcesBalancedAllocation"]


def _fit_filter(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _FIT.filter
    assert run is not None
    if len(infos) <= _SMALL or state.overcommit:
        # Under overcommit each node's allocatable cpu is scaled by its load: node by node.
        return _fit_filter_few(state, infos)
    facts = _facts(infos)
    if (
        facts is None
        or len(state.scalars) > 48
        or not _small(
            state.cpu, state.memory, state.ephemeral, *(units for _, units in state.scalars)
        )
    ):
        return [run(state, info) for info in infos]
    gathered, table = facts
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
            columns = gathered.scalar(name)
            if columns is None:
                return [run(state, info) for info in infos]
            code |= np.where(units > columns[:, 1] - columns[:, 2], bit, 0)
    return _reasons_by_code(code, names)


def _fit_filter_few(state: Any, infos: Sequence[NodeInfo]) -> list[Any]:
    """``_fit_filter`` node by node over the kept rows: the plugin's own comparisons on the
    same integers (allocatable CPU scaled by the node's load under overcommit), one (shared,
    never mutated) reasons list per distinct set of shortages."""
    cpu, memory, ephemeral, scalars = state.cpu, state.memory, state.ephemeral, state.scalars
    overcommit = state.overcommit
    wanted = bool(cpu or memory or ephemeral or state.has_scalar_entries)
    made: dict[int, list[str]] = {}
    out = []
    for info in infos:
        row = facts_row(info)
        code = 1 if row[_PODS] + 1 > row[_ALLOWED] else 0
        if wanted:
            alloc_cpu = _alloc_cpu(info, row, overcommit)
            if cpu > 0 and cpu > alloc_cpu - row[_U_CPU]:
                code |= 2
            if memory > 0 and memory > row[_A_MEM] - row[_U_MEM]:
                code |= 4
            if ephemeral > 0 and ephemeral > row[_A_EPH] - row[_U_EPH]:
                code |= 8
            if scalars:
                alloc = info.allocatable_units
                used = info.requested_units
                bit = 16
                for name, units in scalars:
                    if units > alloc.get(name, 0) - used.get(name, 0):
                        code |= bit
                    bit <<= 1
        reasons = made.get(code)
        if reasons is None:
            reasons = made[code] = _fit_reasons(code, scalars)
        out.append(reasons)
    return out


def _alloc_cpu(info: NodeInfo, row: tuple[int, ...], overcommit: Overcommits) -> int:
    """The node's allocatable cpu as the fit counts it: scaled by ``overcommit`` where the
    node's load allows (only cpu is compressible, so only cpu can be overcommitted)."""
    if overcommit:
        return effective_allocatable(row[_A_CPU], CPU, info.load, overcommit)
    return row[_A_CPU]


def _fit_reasons(code: int, scalars: Sequence[tuple[str, int]]) -> list[str]:
    """The reasons ``_fit_filter_few``'s ``code`` stands for, in the plugin's order."""
    names = [REASON_TOO_MANY_PODS, *_FIXED_SHORTAGES, *(insufficient(n) for n, _ in scalars)]
    return [name for i, name in enumerate(names) if code >> i & 1]


_FIXED_SHORTAGES = tuple(insufficient(r) for r in (CPU, MEMORY, EPHEMERAL_STORAGE))


def _reasons_by_code(code: np.ndarray, names: list[str]) -> list[Any]:
    """Each node's reasons: the names whose bits its code sets, in order; one (shared, never
    mutated) list per distinct code."""
    if not len(code):
        return []
    top = int(code.max())
    if top < 4096:
        # Few reason bits in use: index a table by the code itself (no sort).
        slots = np.flatnonzero(np.bincount(code, minlength=top + 1))
        inverse = code
    else:
        slots, inverse = np.unique(code, return_inverse=True)
    lists = np.empty(top + 1 if top < 4096 else len(slots), object)
    for index, value in enumerate(slots.tolist()):
        lists[value if top < 4096 else index] = [r for i, r in enumerate(names) if value >> i & 1]
    return lists[inverse.reshape(-1)].tolist()


def _alloc_req(
    infos: Sequence[NodeInfo],
    facts: tuple[Gathered | Direct, np.ndarray],
    name: str,
    request: int,
    use_requested: bool,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``allocatable_and_requested`` per node, as two int64 columns; None when out of range."""
    gathered, table = facts
    if name == CPU:
        used = table[:, _U_CPU if use_requested else _NZ_CPU]
        return table[:, _A_CPU], used + request
    if name == MEMORY:
        used = table[:, _U_MEM if use_requested else _NZ_MEM]
        return table[:, _A_MEM], used + request
    if name == EPHEMERAL_STORAGE:
        return table[:, _A_EPH], table[:, _U_EPH] + request
    if (request == 0 and is_scalar_resource(name)) or not is_scalar_resource(name):
        zeros = np.zeros(len(infos), np.int64)
        return zeros, zeros
    columns = gathered.scalar(name)
    if columns is None:
        return None
    # A node without the resource in its allocatable leaves it out: (0, 0).
    holds = columns[:, 0] != 0
    return columns[:, 1], np.where(holds, columns[:, 2] + request, 0)


def _least_allocated(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _FIT.score
    assert run is not None
    if len(infos) <= _SMALL or state.overcommit:  # overcommit: see ``_fit_filter``
        return _least_allocated_few(state, infos)
    facts = _facts(infos)
    if facts is None or not all(
        0 < weight <= 1 << 16 and _small(request) for _, weight, request in state.resources
    ):
        return [run(state, info) for info in infos]
    total = np.zeros(len(infos), np.int64)
    weights = np.zeros(len(infos), np.int64)
    for name, weight, request in state.resources:
        pair = _alloc_req(infos, facts, name, request, False)
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
    return ints(result)  # type: ignore[return-value]  # a sequence of ints, read lazily


def _least_allocated_few(state: Any, infos: Sequence[NodeInfo]) -> list[Any]:
    """The plugin's ``score`` with cpu and memory read from the kept rows."""
    resources = state.resources
    if (
        len(resources) == 2
        and resources[0][0] == CPU
        and resources[1][0] == MEMORY
        and resources[0][1] > 0
        and resources[1][1] > 0
    ):
        return _least_cpu_memory(state, infos)
    return _least_allocated_rows(state, infos)


def _least_allocated_rows(state: Any, infos: Sequence[NodeInfo]) -> list[Any]:
    # (column of the allocatable, of the non-zero sum; None: read through the plugin's own
    # ``allocatable_and_requested``), the weight and the pod's request, per resource.
    reads = [
        (_NON_ZERO_COLUMNS.get(name), name, weight, request)
        for name, weight, request in state.resources
    ]
    overcommit = state.overcommit
    out = []
    for info in infos:
        row = facts_row(info)
        total = weights = 0
        for columns, name, weight, request in reads:
            if columns is not None:
                alloc = _alloc_cpu(info, row, overcommit) if name == CPU else row[columns[0]]
                req = row[columns[1]] + request
            else:
                alloc, req = allocatable_and_requested(
                    info, name, request, use_requested=False, overcommit=overcommit
                )
            if alloc == 0:
                continue
            # ``least_requested_score``, with Go's division by a positive number inlined.
            if req > alloc:
                score = 0
            elif alloc > 0:
                score = (alloc - req) * MAX_NODE_SCORE // alloc
            else:
                score = least_requested_score(req, alloc)
            total += score * weight
            weights += weight
        if not weights:
            out.append(0)
        elif total >= 0 and weights > 0:
            out.append(total // weights)
        else:
            out.append(go_div(total, weights))
    return out


_NON_ZERO_COLUMNS = {CPU: (_A_CPU, _NZ_CPU), MEMORY: (_A_MEM, _NZ_MEM)}


def _least_cpu_memory(state: Any, infos: Sequence[NodeInfo]) -> list[Any]:
    """``_least_allocated_few`` of cpu and memory (the default resources) with positive
    weights, inlined: the same integer operations (a node with a negative allocatable, which
    Go's division reads apart, takes the general way)."""
    (_, cpu_weight, cpu_request), (_, memory_weight, memory_request) = state.resources
    overcommit = state.overcommit
    out = []
    for info in infos:
        row = facts_row(info)
        alloc_cpu, alloc_memory = _alloc_cpu(info, row, overcommit), row[_A_MEM]
        if alloc_cpu < 0 or alloc_memory < 0:
            out.append(_least_allocated_rows(state, [info])[0])
            continue
        total = weights = 0
        if alloc_cpu:
            req = row[_NZ_CPU] + cpu_request
            if req <= alloc_cpu:
                total = (alloc_cpu - req) * MAX_NODE_SCORE // alloc_cpu * cpu_weight
            weights = cpu_weight
        if alloc_memory:
            req = row[_NZ_MEM] + memory_request
            if req <= alloc_memory:
                total += (alloc_memory - req) * MAX_NODE_SCORE // alloc_memory * memory_weight
            weights += memory_weight
        out.append(total // weights if weights else 0)
    return out


def _balanced_few(state: Any, infos: Sequence[NodeInfo]) -> list[Any]:
    """The plugin's ``score`` with cpu and memory read from the kept rows."""
    resources = state.resources
    overcommit = state.overcommit
    if len(resources) == 2 and resources[0][0] == CPU and resources[1][0] == MEMORY:
        return _balanced_cpu_memory(resources[0][1], resources[1][1], infos, overcommit)
    out = []
    for info in infos:
        row = facts_row(info)
        requested = []
        allocatable = []
        for name, request in state.resources:
            if name == CPU:
                alloc, req = _alloc_cpu(info, row, overcommit), row[_U_CPU] + request
            elif name == MEMORY:
                alloc, req = row[_A_MEM], row[_U_MEM] + request
            else:
                alloc, req = allocatable_and_requested(
                    info, name, request, use_requested=True, overcommit=overcommit
                )
            if alloc == 0:
                alloc = req = 0
            requested.append(req)
            allocatable.append(alloc)
        out.append(balanced_score(requested, allocatable))
    return out


def _balanced_cpu_memory(
    cpu: int, memory: int, infos: Sequence[NodeInfo], overcommit: Overcommits
) -> list[Any]:
    """``balanced_score`` of cpu and memory (the default resources), inlined: the same float
    operations in the same order (``min(f, 1.0)`` is ``f`` unless ``f > 1.0``; one fraction
    or none has no spread)."""
    out = []
    for info in infos:
        row = facts_row(info)
        alloc_cpu, alloc_mem = _alloc_cpu(info, row, overcommit), row[_A_MEM]
        if alloc_cpu and alloc_mem:
            f0 = float(row[_U_CPU] + cpu) / float(alloc_cpu)
            f1 = float(row[_U_MEM] + memory) / float(alloc_mem)
            if f0 > 1.0:
                f0 = 1.0
            if f1 > 1.0:
                f1 = 1.0
            out.append(math.trunc((1 - abs((f0 - f1) / 2)) * _MAX_SCORE))
        else:
            out.append(_UNSPREAD)
    return out


_MAX_SCORE = float(MAX_NODE_SCORE)
_UNSPREAD = math.trunc((1 - 0.0) * _MAX_SCORE)


def _balanced(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
    run = _BALANCED.score
    assert run is not None
    if len(infos) <= _SMALL or state.overcommit:  # overcommit: see ``_fit_filter``
        return _balanced_few(state, infos)
    facts = _facts(infos)
    if (
        facts is None
        or len(state.resources) > 2
        or not all(_small(request) for _, request in state.resources)
    ):
        return [run(state, info) for info in infos]
    fractions = []
    for name, request in state.resources:
        pair = _alloc_req(infos, facts, name, request, True)
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
    return ints(np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64))  # type: ignore[return-value]


if _FIT.filter is not None and _FIT.score is not None:
    FILTERS["NodeResourcesFit"] = _fit_filter
    SCORES["NodeResourcesFit"] = _least_allocated
if _BALANCED.score is not None:
    SCORES["NodeResourcesBalancedAllocation"] = _balanced
