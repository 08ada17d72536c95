"""What a compiled rule needs at evaluation time, and what it hands back.

The planner turns expressions into closures over an ``Env`` (``Closure``); this module defines
that environment, the error a closure raises when a value does not fit (``EvalError``), and the
verdicts a rule returns (``FilterVerdict``, ``ScoreValue``). A runtime error never escapes a
rule: the rule evaluators (``evaluators``) catch it and turn it into a ``RuleError`` inside the
verdict, so one bad node or one buggy domain function cannot take a scheduling cycle down.

Roots live in fixed slots of a list (``ROOTS`` assigns them, once per name) so that a
closure reads ``env.values[1]`` instead of looking a name up. ``let`` values are memoised per
``Env``; those that do not vary per node sit in a table that ``Env.derive`` shares between the
environments of one pod, so pod-only work is done once per pod however many nodes are tried.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from policyengine.diagnostics import Span
from policyengine.lang.schema import Schema
from policyengine.lang.values import Value
from policyengine.quantity import format_quantity

# --- environment ---------------------------------------------------------------------------


class RootSlots:
    """Where each root lives in ``Env.values``: one process-wide table, only ever appended to.

    Slots are global rather than per schema so that an ``Env`` can be built from root values
    by name alone (``Env({"pod": p, "node": n}, context)``). A name keeps its slot for the
    life of the process; a name is "varying" when any schema declares it ``varies_per_node``.
    """

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.varying: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def slot(self, name: str) -> int:
        slot = self.index.get(name)
        if slot is None:
            with self._lock:
                slot = self.index.setdefault(name, len(self.index))
        return slot

    def register(self, schema: Schema) -> None:
        """Give every root of ``schema`` a slot (the planner calls this before planning)."""
        for name in schema.roots:
            self.slot(name)
        varying = {name for name, root in schema.roots.items() if root.varies_per_node}
        if not varying <= self.varying:
            with self._lock:
                self.varying = self.varying | varying


ROOTS = RootSlots()


class Env:
    """The values one evaluation sees: roots by slot, the context, and memoised lets.

    ``memo`` holds lets that vary per node, ``shared`` those that do not; ``locals`` holds
    comprehension variables. An ``Env`` is used by one thread at a time. Envs derived from one
    another share ``shared`` and may run on different threads: two racing evaluations of a
    pod-level let store the same value. A pod-level let may call a function that reads the
    context; the context is then expected to answer the same for every node of the pod.
    Roots left out are null.
    """

    __slots__ = ("context", "locals", "memo", "shared", "values")

    def __init__(self, roots: Mapping[str, Value], context: Any = None):
        index = ROOTS.index
        values: list[Value] = [None] * len(index)
        for name, value in roots.items():
            slot = index.get(name)
            if slot is None:
                slot = ROOTS.slot(name)
                values.extend([None] * (slot + 1 - len(values)))
            values[slot] = value
        self.values = values
        self.context = context
        self.memo: dict[int, Value] = {}
        self.shared: dict[int, Value] = {}
        self.locals: dict[int, Value] = {}

    def root(self, name: str) -> Value:
        slot = ROOTS.index.get(name)
        return self.values[slot] if slot is not None and slot < len(self.values) else None

    def derive(self, context: Any = ..., **roots: Value) -> Env:
        """A copy with some roots (and maybe the context) replaced.

        When only roots that vary per node change, the copy shares this env's table of
        pod-level lets, so they are computed once for all nodes. Changing a root that does
        not vary per node (another pod) starts afresh.
        """
        index, varying = ROOTS.index, ROOTS.varying
        values = self.values.copy()
        shared = self.shared
        for name, value in roots.items():
            slot = index.get(name)
            if slot is None:
                slot = ROOTS.slot(name)
            if slot >= len(values):
                values.extend([None] * (slot + 1 - len(values)))
            values[slot] = value
            if name not in varying:
                shared = {}
        # Built without __init__: this runs once per node on the scheduler's hot path.
        env = _new_env(Env)
        env.values = values
        env.context = self.context if context is ... else context
        env.memo = {}
        env.shared = shared
        env.locals = {}
        return env


_new_env = object.__new__

# What the planner makes of an expression: its value in one evaluation's environment.
Closure = Callable[[Env], Value]


# --- errors --------------------------------------------------------------------------------


class EvalError(Exception):
    """Raised by a planned closure when a value does not fit; caught by the rule evaluator."""

    def __init__(self, span: Span, message: str):
        super().__init__(message)
        self.span = span
        self.message = message


class RuleError(NamedTuple):
    """A rule that failed for one node: which rule, where, and why."""

    rule: str
    span: Span
    message: str

    def __str__(self) -> str:
        return f"rule {self.rule} failed: {self.message} at {self.span}"


class FilterVerdict(NamedTuple):
    passed: bool
    reasons: tuple[str, ...] = ()
    error: RuleError | None = None


class ScoreValue(NamedTuple):
    """``value`` is None when the rule's guard excluded the node; 0.0 with ``error`` on failure."""

    value: float | None
    error: RuleError | None = None


PASSED = FilterVerdict(True)
NOT_SCORED = ScoreValue(None)

_TYPE_NAMES: dict[type, str] = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    Fraction: "quantity",
    str: "string",
    list: "list",
    tuple: "list",
    frozenset: "set",
    set: "set",
    dict: "map",
}


def type_name(value: Value) -> str:
    """The language's name for a runtime value's type, for error messages."""
    name = _TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, Mapping):
        return "map"
    return type(value).__name__


# --- formatting ----------------------------------------------------------------------------


def format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    rounded = round(value, 6)
    if rounded == 0 or abs(value) >= 1e15:
        return f"{value:.6g}"
    text = repr(rounded)
    return text[:-2] if text.endswith(".0") else text


def format_value(value: Value) -> str:
    """How a value reads inside a reason: ``16Gi``, ``0.5``, ``null``, ``[a, b]``."""
    kind = type(value)
    if kind is str:
        return str(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is Fraction:
        return format_quantity(value)
    if kind is float:
        return format_float(value)
    if kind is list or kind is tuple:
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if kind is frozenset or kind is set:
        # Sets have no order of their own; sorting the text keeps reasons reproducible.
        return "[" + ", ".join(sorted(format_value(v) for v in value)) + "]"
    if isinstance(value, Mapping):
        return (
            "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
        )
    return str(value)
