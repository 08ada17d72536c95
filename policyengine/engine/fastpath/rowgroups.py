"""Rules decided by their row key: evaluated once per distinct row key, not once per row.

A row-keyed cluster key (``schedlib.rowkeys``) tells a column which rows a cluster change
invalidates. PodTopologySpread's moves for every node of a zone whenever that zone's count
crosses the global minimum: a thousand rows to compute again after one placement, where the
rule can only give two or three answers. A function that declares ``row_determined``
(``lang.schema.Function``) promises that, for this cycle's pod, its result at a node is
decided by the row part of its cluster key at that node's row; a rule that reads the node only
through such functions (``row_functions``) then gives equal results on rows whose row keys are
equal. Such a rule is evaluated on one row of each distinct row key (``groups``) and the result
copied to the others: exactly the results of evaluating every row. The copies travel as
``lang.copied.Copied`` (the few results and each row's index), which a column stores without
looking at each row's object. A result carrying an error is not copied (its message may name
its node): the rows are then evaluated one by one. ``tests/engine/test_rowgroups.py`` holds
decisions equal to the reference evaluator's.

The same copying serves a pod that lets a cycle tell only a few nodes apart: kube-scheduler
filters only the nodes a DaemonSet's pod names (NodeAffinity's PreFilter), so every other node
passes each filter but NodeAffinity, which rejects them all alike. A function saying so
(``Function.looked_at``) names those few for this cycle's pod; a rule reading the node through
such functions alone (``looked_functions``) is evaluated on the rows they name and one other,
whose verdict the rest share (``looked_groups``): five thousand rows a rule become two. A
filter whose guard alone reads the node that way (``when considered(pod, node)``, kube's
``node_unschedulable``) passes every other row when its guard is false at one of them, and is
evaluated at the named rows only (``rules.filter_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from policyengine.lang.reads import RuleReads
from policyengine.lang.schema import Function

POD_ROOT = "pod"

# Fewer rows than this are evaluated one by one: grouping them costs more than it saves.
_FEW = 4


def _node_functions(reads: RuleReads) -> dict[int, Function] | None:
    """The functions through which the rule reads the node (by id); None when it reads the
    node some other way (an attribute, the node used whole)."""
    if reads.bare_roots - {POD_ROOT}:
        return None
    if any(path[0] != POD_ROOT for path in reads.paths):
        return None
    if any(root != POD_ROOT for root, _ in reads.attributes):
        return None
    if any(root != POD_ROOT for root, _, _ in reads.entries):
        return None
    wanted: dict[int, Function] = {}
    for function in reads.functions:
        if function.needs_context and function.varies_per_node:
            wanted[id(function)] = function
    for function, root in reads.root_args:
        if root != POD_ROOT:
            wanted[id(function)] = function
    return wanted


def row_functions(reads: RuleReads) -> tuple[Function, ...] | None:
    """The functions whose ``row_determined`` must hold for the rule's result at a row to be
    decided by its row key; None when the rule reads the node some other way (an attribute,
    the node used whole, a function that reads it and does not say)."""
    if any(f.needs_context and f.cluster_key is None for f in reads.functions):
        return None  # the rule has no row keys at all (``RulePlan.always``)
    wanted = _node_functions(reads)
    if not wanted or any(f.row_determined is None for f in wanted.values()):
        return None
    return tuple(wanted.values())


def looked_functions(reads: RuleReads) -> tuple[Function, ...] | None:
    """The functions whose ``looked_at`` tells the only rows the rule can tell apart: it reads
    the node through them alone, so at every row none of them looks at, it gives one result.
    None when the rule reads the node some other way or through a function that does not say."""
    wanted = _node_functions(reads)
    if not wanted or any(f.looked_at is None for f in wanted.values()):
        return None
    return tuple(wanted.values())


def looked_groups(
    functions: Sequence[Function], context: Any, nodes: Sequence[Any], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """As ``groups``, for a rule of ``looked_functions``: each of ``rows`` (ascending
    positions in ``nodes``) a function looks at is a group of its own, and the others one
    group. None when every row may differ this cycle or too few rows are left out."""
    if len(rows) < _FEW:
        return None
    looked = np.zeros(len(nodes), bool)
    # Each distinct test once: every kube filter shares one.
    for look in {id(f.looked_at): f.looked_at for f in functions}.values():
        at = look(context, nodes)  # type: ignore[misc]
        if at is None:
            return None
        looked[list(at)] = True
    inside = looked[rows]
    picked = np.flatnonzero(inside)
    outside = np.flatnonzero(~inside)
    if len(outside) < 2:
        return None
    inverse = np.empty(len(rows), np.int64)
    inverse[picked] = np.arange(len(picked))
    inverse[outside] = len(picked)
    return np.append(picked, outside[0]), inverse


def determined_now(functions: Sequence[Function] | None, context: Any) -> bool:
    """Whether every one of ``functions`` is decided by its row key for this cycle's pod."""
    return functions is not None and all(f.row_determined(context) for f in functions)  # type: ignore[misc]


def groups(row_keys: np.ndarray | None, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For ``rows`` of a column whose row keys are ``row_keys`` (None: no row part, one key
    for every row): the positions in ``rows`` of one row per distinct key, and each row's
    group (an index into those). None when there are too few rows or keys repeat too little
    for one evaluation per key to pay."""
    count = len(rows)
    if count < _FEW:
        return None
    if row_keys is None or row_keys.shape[1] == 0:
        return np.zeros(1, np.int64), np.zeros(count, np.int64)
    keys = row_keys[rows]
    codes = _folded(keys)
    if codes is None:
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    else:
        first, inverse = _distinct(codes)
    if 2 * len(first) > count:
        return None
    return first, inverse.reshape(-1)


def _folded(keys: np.ndarray) -> np.ndarray | None:
    """Each row's key as one int64, distinct keys distinct (each column offset by its
    minimum, in mixed radix); None when the columns' spans do not fit one int64."""
    low = keys.min(axis=0)
    spans = keys.max(axis=0) - low + 1
    if keys.shape[1] == 1:
        return keys[:, 0] - low[0]
    total = 1
    for span in spans.tolist():
        total *= span
        if total >= 1 << 62:
            return None
    weights = np.cumprod(np.concatenate(([1], spans[:-1])))
    folded: np.ndarray = (keys - low) @ weights
    return folded


def _distinct(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position of one row of each distinct code and each row's group (an index into
    those): by a table over the codes' range where it is small (a sort costs more), else by
    ``np.unique``."""
    count = len(codes)
    span = int(codes.max()) + 1
    if span > 4 * count + 64:
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return first, inverse
    at = np.full(span, -1, np.int64)
    # Rows sharing a code write in no promised order: whichever stays is one of them.
    at[codes] = np.arange(count)
    present = at >= 0
    group = np.cumsum(present) - 1
    return at[present], group[codes]
