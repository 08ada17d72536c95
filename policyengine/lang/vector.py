"""Columnar forms of planned expressions: one value per node of a ``NodeBatch`` in one call.

A rule such as ``not node.unschedulable or pod.tolerates_unschedulable`` costs little per
node, but evaluated node by node it pays for an ``Env`` and a chain of closure calls on every
node of every pod. Its columnar form reads ``node.unschedulable`` for all nodes in one list
comprehension, applies ``not`` to the list, and folds in the pod-level value once.

Each form computes, for every node of the batch, exactly the value the planned closure would
compute on that node's env, with the same Python operations on the same values. Short
circuits are kept: the right side of ``and``/``or``/``??`` and the branches of ``if`` are
evaluated only on the nodes where the closure would evaluate them (a narrower batch,
``NodeBatch.take``), so a division guarded by ``x > 0`` never divides by zero here either.
Any exception means "not here": the rule evaluator then runs the closures node by node,
which report the error exactly as before. Forms exist only for expressions whose value
varies per node; pod-level parts are computed once from the batch's env.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policyengine.lang.runtime import Env, NodeBatch

Vec = Callable[[NodeBatch], Sequence[Any]]
Scalar = Callable[[Env], Any]


class Side:
    """One operand: a column form when it varies per node, else its closure (run once)."""

    __slots__ = ("fn", "vec")

    def __init__(self, vec: Vec | None, fn: Scalar):
        self.vec = vec
        self.fn = fn


def root(slot: int) -> Vec:
    def column(batch: NodeBatch) -> Sequence[Any]:
        values = batch.column(slot)
        if values is None:
            raise LookupError("the batch has no column for this root")
        return values

    return column


def each(of: Vec, op: Callable[[Any], Any]) -> Vec:
    """``op`` applied to every value of a column."""

    def column(batch: NodeBatch) -> list[Any]:
        return [op(value) for value in of(batch)]

    return column


def attribute(of: Vec, getter: Callable[[Any], Any], must_exist: bool) -> Vec:
    def column(batch: NodeBatch) -> list[Any]:
        values = [getter(value) for value in of(batch)]
        if must_exist and any(value is None for value in values):
            raise ValueError("a declared non-null attribute read null")
        return values

    return column


def binary(left: Side, right: Side, op: Callable[[Any, Any], Any]) -> Vec | None:
    """``op(a, b)`` per node; None when neither side varies per node."""
    lv, rv, lf, rf = left.vec, right.vec, left.fn, right.fn
    if lv is not None and rv is not None:

        def both(batch: NodeBatch) -> list[Any]:
            return [op(a, b) for a, b in zip(lv(batch), rv(batch), strict=True)]

        return both
    if lv is not None:

        def left_column(batch: NodeBatch) -> list[Any]:
            b = rf(batch.env)
            return [op(a, b) for a in lv(batch)]

        return left_column
    if rv is not None:

        def right_column(batch: NodeBatch) -> list[Any]:
            a = lf(batch.env)
            return [op(a, b) for b in rv(batch)]

        return right_column
    return None


def _spread(rows: list[int], fill: list[Any], values: Sequence[Any]) -> list[Any]:
    for row, value in zip(rows, values, strict=True):
        fill[row] = value
    return fill


def _on(side: Side, batch: NodeBatch, rows: list[int]) -> Sequence[Any]:
    """``side``'s values on the nodes at ``rows`` of ``batch``."""
    if side.vec is None:
        return [side.fn(batch.env)] * len(rows)
    if len(rows) == batch.size:
        return side.vec(batch)
    return side.vec(batch.take(rows))


def conjunction(left: Side, right: Side, is_and: bool) -> Vec | None:
    """``a and b`` / ``a or b`` per node, evaluating ``b`` only where ``a`` does not decide."""
    lv = left.vec
    if lv is None and right.vec is None:
        return None

    def column(batch: NodeBatch) -> list[Any]:
        if lv is None:
            a = left.fn(batch.env)
            if (not a) if is_and else a:
                return [a] * batch.size
            return list(_on(right, batch, list(range(batch.size))))
        first = lv(batch)
        out = list(first)
        rows = [i for i, a in enumerate(first) if (a if is_and else not a)]
        if rows:
            _spread(rows, out, _on(right, batch, rows))
        return out

    return column


def coalesce(left: Side, right: Side) -> Vec:
    """``a ?? b`` per node: ``b`` only where ``a`` is null."""
    lv = left.vec

    def column(batch: NodeBatch) -> list[Any]:
        if lv is None:
            a = left.fn(batch.env)
            if a is not None:
                return [a] * batch.size
            return list(_on(right, batch, list(range(batch.size))))
        out = list(lv(batch))
        rows = [i for i, a in enumerate(out) if a is None]
        if rows:
            _spread(rows, out, _on(right, batch, rows))
        return out

    return column


def conditional(cond: Side, then: Side, otherwise: Side) -> Vec:
    """``if c then t else o`` per node, each branch only where it is taken."""
    cv = cond.vec

    def column(batch: NodeBatch) -> list[Any]:
        if cv is None:  # one branch for every node
            taken = then if cond.fn(batch.env) else otherwise
            return list(_on(taken, batch, list(range(batch.size))))
        flags = cv(batch)
        out: list[Any] = [None] * batch.size
        yes = [i for i, c in enumerate(flags) if c]
        no = [i for i, c in enumerate(flags) if not c]
        if yes:
            _spread(yes, out, _on(then, batch, yes))
        if no:
            _spread(no, out, _on(otherwise, batch, no))
        return out

    return column


def broadcast(fn: Scalar) -> Vec:
    """A pod-level value as a column (for a rule body or guard that does not vary per node)."""

    def column(batch: NodeBatch) -> list[Any]:
        return [fn(batch.env)] * batch.size

    return column
