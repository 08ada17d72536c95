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

from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np

from policyengine.lang.evaluators import BatchBody, NodeBatch
from policyengine.lang.runtime import Closure, format_value
from policyengine.lang.values import Column, Value

# A columnar form is a batched body: one value per node of the batch, in one call.
Vec = BatchBody


class Side:
    """One operand: a column form when it varies per node, else its closure (run once)."""

    __slots__ = ("fn", "vec")

    def __init__(self, vec: Vec | None, fn: Closure):
        self.vec = vec
        self.fn = fn


def root(slot: int) -> Vec:
    def column(batch: NodeBatch) -> Column:
        values = batch.column(slot)
        if values is None:
            raise LookupError("the batch has no column for this root")
        return values

    return column


def each(of: Vec, op: Callable[[Value], Value]) -> Vec:
    """``op`` applied to every value of a column."""

    def column(batch: NodeBatch) -> list[Value]:
        return [op(value) for value in of(batch)]

    return column


def attribute(of: Vec, getter: Callable[[Value], Value], must_exist: bool) -> Vec:
    def column(batch: NodeBatch) -> list[Value]:
        values = [getter(value) for value in of(batch)]
        if must_exist and any(value is None for value in values):
            raise ValueError("a declared non-null attribute read null")
        return values

    return column


def binary(
    left: Side, right: Side, op: Callable[[Value, Value], Value], symbol: str | None = None
) -> Vec | None:
    """``op(a, b)`` per node; None when neither side varies per node. ``symbol`` names the
    operator when it is arithmetic or a comparison: columns of exact integers then go through
    numpy (``Numbers``) where that gives the very values ``op`` would."""
    lv, rv, lf, rf = left.vec, right.vec, left.fn, right.fn
    numeric = symbol in _NUMERIC
    if lv is not None and rv is not None:

        def both(batch: NodeBatch) -> Column:
            a, b = lv(batch), rv(batch)
            if numeric:
                fast = _numbers_op(symbol, a, b, True, True)
                if fast is not None:
                    return fast
            return [op(x, y) for x, y in zip(a, b, strict=True)]

        return both
    if lv is not None:

        def left_column(batch: NodeBatch) -> Column:
            b = rf(batch.env)
            a = lv(batch)
            if numeric:
                fast = _numbers_op(symbol, a, b, True, False)
                if fast is not None:
                    return fast
            return [op(x, b) for x in a]

        return left_column
    if rv is not None:

        def right_column(batch: NodeBatch) -> Column:
            a = lf(batch.env)
            b = rv(batch)
            if numeric:
                fast = _numbers_op(symbol, a, b, False, True)
                if fast is not None:
                    return fast
            return [op(a, y) for y in b]

        return right_column
    return None


# --- exact integer columns through numpy ---------------------------------------------------
#
# Resource quantities are ``Fraction``s, and Fraction arithmetic costs microseconds per value:
# a GPU bin-packing score over a thousand nodes spent most of its time there. Most quantities
# a rule reads are whole numbers (GPU counts, bytes, pods), and on whole numbers the language's
# operators agree with int64 arithmetic as long as nothing overflows; so a column whose values
# are all ints, or all whole Fractions, is carried as an int64 array (``Numbers``) and only
# turned back into Python values when something other than these operators reads it.
#
# What each operator gives, as the planner's ``_ARITHMETIC`` defines it: int op int is an int;
# with a Fraction on either side, a Fraction (whole, for + - *); comparisons are exact. ``/``
# is a float, the correctly rounded quotient (``float(Fraction(a, b))`` and ``int / int`` both
# are), which float64 division of two integers of at most 53 bits also is; but a Fraction
# divided by an int stays an exact Fraction, which is left to the per-node path. Anything
# else (floats, bools, mixed kinds, a zero divisor, a value or result beyond the bounds) takes
# the per-node path, which gives the values, or raises the errors, the closures do.

_INT, _QUANTITY, _FLOAT = "int", "quantity", "float"
_BOUND = 1 << 61  # |operand| at most this: a sum or difference stays within int64
_EXACT_FLOAT = 1 << 53  # integers float64 holds exactly
_NUMERIC = frozenset({"+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="})
_COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply}
_SHORT = 16
_WHOLE_KINDS = (int, Fraction)
# CPython's Fraction keeps its parts in slots; reading those is a C call per value, the
# public properties a Python one.
_PARTS = (
    ("_numerator", "_denominator")
    if hasattr(Fraction(1), "_numerator")
    else ("numerator", "denominator")
)
_NUMERATOR = attrgetter(_PARTS[0])
_DENOMINATOR = attrgetter(_PARTS[1])


class Numbers(Sequence[Value]):
    """A column of ints, of whole ``Fraction``s (``kind`` says which) or of floats, held as a
    numpy array; read as a sequence, it is the Python values the per-node path computes."""

    __slots__ = ("_values", "array", "kind")

    def __init__(self, kind: str, array: np.ndarray):
        self.kind = kind
        self.array = array
        self._values: list[Value] | None = None

    def values(self) -> list[Value]:
        if self._values is None:
            items = self.array.tolist()
            self._values = [Fraction(v) for v in items] if self.kind == _QUANTITY else items
        return self._values

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index: Any) -> Value:
        return self.values()[index]

    def __iter__(self) -> Iterator[Value]:
        return iter(self.values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Numbers):
            return self.values() == other.values()
        if isinstance(other, list):
            return self.values() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which do not hash


def ints(array: np.ndarray) -> Numbers:
    """An int64 array as the column of Python ints it holds (what a batch form computing in
    numpy returns: read as a list only when something needs the Python values)."""
    return Numbers(_INT, array)


def _whole(value: Value) -> tuple[str, int] | None:
    """A pod-level operand as (kind, integer); None when it is not a whole int or Fraction."""
    kind = type(value)
    if kind is int and -_BOUND <= value <= _BOUND:
        return _INT, value
    if kind is Fraction and value.denominator == 1 and -_BOUND <= value.numerator <= _BOUND:
        return _QUANTITY, value.numerator
    return None


def _column_numbers(values: Column) -> Numbers | None:
    """``values`` as a ``Numbers`` of ints or whole Fractions; None when they are not."""
    if isinstance(values, Numbers):
        return values if values.kind != _FLOAT else None
    # A short column costs less node by node than numpy's calls; a column of other values is
    # told by its first.
    if len(values) < _SHORT or type(values[0]) not in _WHOLE_KINDS:
        return None
    kinds = set(map(type, values))
    try:
        if kinds == {int}:
            array = np.fromiter(values, np.int64, len(values))
            kind = _INT
        elif kinds == {Fraction}:
            if np.any(np.fromiter(map(_DENOMINATOR, values), np.int64, len(values)) != 1):
                return None
            array = np.fromiter(map(_NUMERATOR, values), np.int64, len(values))
            kind = _QUANTITY
        else:
            return None
    except OverflowError:
        return None
    if len(array) and int(np.abs(array).max()) > _BOUND:
        return None
    numbers = Numbers(kind, array)
    if isinstance(values, list):
        numbers._values = values  # already the Python values
    return numbers


def _numbers_op(symbol: Any, a: Value, b: Value, a_column: bool, b_column: bool) -> Column | None:
    """``a symbol b`` per node through numpy, when exact; None to take the per-node path.
    Each side is a column (one value per node) or, when not ``*_column``, a pod-level value."""
    left = _operand(a, a_column)
    if left is None:
        return None
    right = _operand(b, b_column)
    if right is None:
        return None
    (lkind, lvalues, lmax), (rkind, rvalues, rmax) = left, right
    if symbol in _COMPARE:
        result: np.ndarray = _COMPARE[symbol](lvalues, rvalues)
        return result.tolist()  # type: ignore[no-any-return]
    if symbol == "/":
        if rkind == _INT and lkind == _QUANTITY:
            return None  # an exact Fraction: the per-node path
        if lmax > _EXACT_FLOAT or rmax > _EXACT_FLOAT or not np.all(rvalues):
            return None
        quotient = np.asarray(np.true_divide(lvalues, rvalues, dtype=np.float64)).reshape(-1)
        if _QUANTITY in (lkind, rkind):
            # A Fraction quotient of 0 is +0 as a float; float division of 0 by a negative
            # number is -0.
            quotient[quotient == 0] = 0.0
        return Numbers(_FLOAT, quotient)
    if symbol == "*" and lmax * rmax > _BOUND:
        return None
    out = np.asarray(_ARITH[symbol](lvalues, rvalues), np.int64).reshape(-1)
    if len(out) and int(np.abs(out).max()) > _BOUND:
        return None
    kind = _INT if lkind == rkind == _INT else _QUANTITY
    return Numbers(kind, out)


def _operand(value: Value, column: bool) -> tuple[str, Any, int] | None:
    """(kind, int64 array or int, largest magnitude) of one side; None when not exact."""
    if column:
        numbers = _column_numbers(value)
        if numbers is None:
            return None
        array = numbers.array
        return numbers.kind, array, int(np.abs(array).max()) if len(array) else 0
    whole = _whole(value)
    if whole is None:
        return None
    return whole[0], whole[1], abs(whole[1])


def _spread(rows: list[int], fill: list[Value], values: Column) -> list[Value]:
    for row, value in zip(rows, values, strict=True):
        fill[row] = value
    return fill


def _on(side: Side, batch: NodeBatch, rows: list[int]) -> Column:
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

    def column(batch: NodeBatch) -> list[Value]:
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

    def column(batch: NodeBatch) -> list[Value]:
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

    def column(batch: NodeBatch) -> list[Value]:
        if cv is None:  # one branch for every node
            taken = then if cond.fn(batch.env) else otherwise
            return list(_on(taken, batch, list(range(batch.size))))
        flags = cv(batch)
        out: list[Value] = [None] * batch.size
        yes = [i for i, c in enumerate(flags) if c]
        no = [i for i, c in enumerate(flags) if not c]
        if yes:
            _spread(yes, out, _on(then, batch, yes))
        if no:
            _spread(no, out, _on(otherwise, batch, no))
        return out

    return column


def per_distinct(of: Vec, over: Callable[[Any, Value], Value]) -> Vec:
    """``over(env, value)`` for every value of a column, computed once per distinct value
    object: a loop whose element and condition read nothing else that varies per node gives
    nodes sharing one collection (a builtin's shared list for nodes alike) one result. By
    identity, not equality: the values need not be hashable, and the column, held whole while
    the loop runs, keeps every one alive (no identity is reused meanwhile)."""

    def column(batch: NodeBatch) -> list[Value]:
        values = of(batch)
        if type(values) is not list:
            values = list(values)
        env = batch.env
        done: dict[int, Value] = {}
        out = []
        for value in values:
            key = id(value)
            if key in done:
                out.append(done[key])
            else:
                found = done[key] = over(env, value)
                out.append(found)
        return out

    return column


def broadcast(fn: Closure) -> Vec:
    """A pod-level value as a column (for a rule body or guard that does not vary per node)."""

    def column(batch: NodeBatch) -> list[Value]:
        return [fn(batch.env)] * batch.size

    return column


def template(*parts: Side) -> Vec:
    """A reason template per node: each part formatted as the closure formats it, joined."""

    def column(batch: NodeBatch) -> list[str]:
        texts: list[Any] = []
        for part in parts:
            if part.vec is None:
                texts.append(repeat(format_value(part.fn(batch.env)), batch.size))
            else:
                texts.append(map(format_value, part.vec(batch)))
        return list(map("".join, zip(*texts, strict=True)))

    return column
