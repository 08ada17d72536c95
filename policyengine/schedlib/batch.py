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

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from policyengine.model.normalize import MAX_NODE_SCORE
from policyengine.model.plugins import PLUGINS_BY_NAME
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


_LAST = threading.local()  # the last (infos, table) this thread built: a cycle's three forms
# (filter, LeastAllocated, BalancedAllocation) mostly ask about the same nodes.


def _facts(infos: Sequence[NodeInfo]) -> np.ndarray | None:
    """The facts of ``infos`` as an (n, 10) int64 array; None when a value is out of range."""
    last = getattr(_LAST, "entry", None)
    if last is not None and len(last[0]) == len(infos) and all(map(operator.is_, last[0], infos)):
        return last[1]  # type: ignore[no-any-return]
    table = _build_facts(infos)
    _LAST.entry = (tuple(infos), table)
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
    if table is None or not all(
        0 < weight <= 1 << 16 and _small(request) for _, weight, request in state.resources
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
