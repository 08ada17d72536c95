"""The syntax tree of a .sched file: frozen dataclasses, each carrying its source span.

Spans are excluded from equality so that two trees compare equal when they mean the same
thing wherever their text stands — which is how ``fmt`` proves it never changes meaning (a
formatted file parses to an equal tree). Later stages never mutate the tree; what they learn
(types, resolved names, costs) lives beside it in side tables keyed by ``id(node)``, since two
equal subtrees in different scopes may differ in type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from policyengine.diagnostics import NO_SPAN, Span

# --- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """Base of all expressions."""


@dataclass(frozen=True)
class Literal(Expr):
    """``kind`` is one of int, float, quantity, string, bool, null; ``text`` is the spelling."""

    kind: str
    value: int | float | Fraction | str | bool | None
    text: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Name(Expr):
    id: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Attribute(Expr):
    obj: Expr
    name: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Index(Expr):
    obj: Expr
    index: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Call(Expr):
    """A free function call ``f(a, b)``; a generator argument is a ``Comprehension``."""

    func: str
    args: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    func_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class MethodCall(Expr):
    """``obj.name(args)``: the string helpers and collection methods."""

    obj: Expr
    name: str
    args: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Unary(Expr):
    """``op`` is ``-`` or ``not``."""

    op: str
    operand: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Binary(Expr):
    """``op`` is one of + - * / % == != < <= > >= in, ``not in``, and, or, ??."""

    op: str
    left: Expr
    right: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    op_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Conditional(Expr):
    """``if cond then a else b``."""

    cond: Expr
    then: Expr
    otherwise: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class ListLit(Expr):
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class SetLit(Expr):
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class MapLit(Expr):
    entries: tuple[tuple[Expr, Expr], ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Comprehension(Expr):
    """``element for a[, b] in iterable [if condition]``.

    ``kind`` is ``list`` for ``[... for ...]`` and ``generator`` for the argument of an
    aggregate such as ``any(... for ...)``. Two targets iterate a map's keys and values.
    """

    kind: str
    element: Expr
    targets: tuple[str, ...]
    iterable: Expr
    condition: Expr | None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    target_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Template(Expr):
    """A reason string: literal text and ``{expr}`` holes, interpolated per node."""

    parts: tuple[str | Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


# --- walking expressions -------------------------------------------------------------------


def _map_children(expr: MapLit) -> tuple[Expr, ...]:
    return tuple(part for entry in expr.entries for part in entry)


def _comprehension_children(expr: Comprehension) -> tuple[Expr, ...]:
    if expr.condition is None:
        return (expr.iterable, expr.element)
    return (expr.iterable, expr.element, expr.condition)


# Keyed by exact node type: every checker, cost and lint pass asks for children, so a dict
# look-up instead of a chain of isinstance tests pays off.
_CHILDREN: dict[type, Callable[[Any], tuple[Expr, ...]]] = {
    Literal: lambda expr: (),
    Name: lambda expr: (),
    Attribute: lambda expr: (expr.obj,),
    Index: lambda expr: (expr.obj, expr.index),
    Call: lambda expr: expr.args,
    MethodCall: lambda expr: (expr.obj, *expr.args),
    Unary: lambda expr: (expr.operand,),
    Binary: lambda expr: (expr.left, expr.right),
    Conditional: lambda expr: (expr.cond, expr.then, expr.otherwise),
    ListLit: lambda expr: expr.items,
    SetLit: lambda expr: expr.items,
    MapLit: _map_children,
    Comprehension: _comprehension_children,
    Template: lambda expr: tuple(p for p in expr.parts if isinstance(p, Expr)),
}


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``, in source order (a comprehension's iterable
    first: it is evaluated before the element)."""
    return _CHILDREN[type(expr)](expr)


def nesting_depth(expr: Expr) -> int:
    """How many expressions deep ``expr`` nests (a literal is 1), counted without recursion:
    the parser uses it to refuse trees too deep for the stages that walk them."""
    deepest = 0
    stack: list[tuple[Expr, int]] = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children(node))
    return deepest


# --- runs of an associative operator -------------------------------------------------------

ASSOCIATIVE = frozenset({"and", "or"})


def _in_run(expr: Expr, op: str) -> bool:
    return type(expr) is Binary and expr.op == op


def run_of(op: str, operands: Sequence[Expr]) -> Expr:
    """``a op b op c …`` as one balanced tree, for ``op`` in ``ASSOCIATIVE``.

    Balanced, its depth grows with the logarithm of its length, so that no stage recursing
    over the tree (checker, planner, the evaluators it builds, fmt) goes once per clause deep.
    Operands that are runs of ``op`` themselves (``a or (b or c)``) join the run: the two mean
    the same (left to right, stopping at the first deciding operand, either way), and one tree
    for both is what lets ``fmt`` drop such parentheses. Up to three operands the tree is the
    left-nested one a left-associative operator gives.
    """
    flat: list[Expr] = []
    for operand in operands:
        if not _in_run(operand, op):
            flat.append(operand)
            continue
        stack = [operand]
        while stack:
            node = stack.pop()
            if isinstance(node, Binary) and _in_run(node, op):
                stack += (node.right, node.left)
            else:
                flat.append(node)
    return _balanced(op, flat, 0, len(flat))


def _balanced(op: str, operands: list[Expr], lo: int, hi: int) -> Expr:
    if hi - lo == 1:
        return operands[lo]
    middle = lo + (hi - lo + 1) // 2
    left = _balanced(op, operands, lo, middle)
    right = _balanced(op, operands, middle, hi)
    first: Span = left.span  # type: ignore[attr-defined]
    last: Span = right.span  # type: ignore[attr-defined]
    span = Span(first.file, first.line, first.column, last.end_line, last.end_column)
    return Binary(op, left, right, span, span)


# --- statements ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    path: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Match:
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Disable:
    """``disable [filter|score] RULE``: without a kind, every rule of that name is left out."""

    rule: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    kind: str | None = None


@dataclass(frozen=True)
class Reweight:
    rule: str
    weight: int
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Use:
    library: str
    adjustments: tuple[Disable | Reweight, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Let:
    name: str
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Filter:
    name: str
    guard: Expr | None
    body: Expr
    reason: Template | None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Score:
    name: str
    weight: int | None
    normalize: str | None
    guard: Expr | None
    body: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    weight_span: Span | None = field(default=None, compare=False, repr=False)
    normalize_span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Overcommit:
    resource: str
    ratio: int | float
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    ratio_text: str = field(default="", compare=False, repr=False)
    # ``max_load L``: the ratio holds on a node only while its measured load is at most L.
    max_load: int | float | None = None
    max_load_text: str = field(default="", compare=False, repr=False)
    resource_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    ratio_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Within:
    """``within LEVEL[, LEVEL...] [required]``: topology levels a gang tries, lowest first."""

    levels: tuple[str, ...]
    required: bool
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    level_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class GangBlock:
    """``gang { within ...; filter ...; score ... }``: rules over a whole gang and a domain."""

    body: tuple[Within | Filter | Score, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)

    @property
    def within(self) -> Within | None:
        return next((s for s in self.body if isinstance(s, Within)), None)

    @property
    def rules(self) -> tuple[Filter | Score, ...]:
        return tuple(s for s in self.body if isinstance(s, Filter | Score))


@dataclass(frozen=True)
class Preempt:
    """``preempt [when GUARD] { BODY }``: which running pods a pod the guard admits may evict;
    the body sees ``victim`` (a candidate victim) besides ``pod`` and ``node`` (the victim's)."""

    guard: Expr | None
    body: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Select:
    """``select MODE [{ KEY }]``: how the best node is chosen among equal totals. ``random``
    (kube-scheduler's seeded choice, the default), ``lowest`` or ``highest`` (the tied node
    with the least or greatest ``KEY``, which reads ``pod`` and ``node``; nodes still tied by
    the seeded choice)."""

    mode: str
    key: Expr | None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    mode_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Device:
    """``device MODE [{ SHAPES }]``: which GPU device(s) a pod gets inside the chosen node.
    ``best_fit`` (the default), ``spread`` (the most free), ``least_fragmentation`` (the one
    whose use leaves the node's fragmentation against ``SHAPES`` lowest)."""

    mode: str
    shapes: Expr | None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    mode_span: Span = field(default=NO_SPAN, compare=False, repr=False)


Statement = Match | Use | Let | Filter | Score | Overcommit | GangBlock | Preempt | Select | Device
Rule = Filter | Score


@dataclass(frozen=True)
class Policy:
    name: str
    body: tuple[Statement, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    name_span: Span = field(default=NO_SPAN, compare=False, repr=False)

    @property
    def match(self) -> Match | None:
        return next((s for s in self.body if isinstance(s, Match)), None)

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(s for s in self.body if isinstance(s, Filter | Score))

    @property
    def lets(self) -> tuple[Let, ...]:
        return tuple(s for s in self.body if isinstance(s, Let))

    @property
    def uses(self) -> tuple[Use, ...]:
        return tuple(s for s in self.body if isinstance(s, Use))

    @property
    def overcommits(self) -> tuple[Overcommit, ...]:
        return tuple(s for s in self.body if isinstance(s, Overcommit))

    @property
    def preempts(self) -> tuple[Preempt, ...]:
        return tuple(s for s in self.body if isinstance(s, Preempt))

    @property
    def selects(self) -> tuple[Select, ...]:
        return tuple(s for s in self.body if isinstance(s, Select))

    @property
    def devices(self) -> tuple[Device, ...]:
        return tuple(s for s in self.body if isinstance(s, Device))

    @property
    def gangs(self) -> tuple[GangBlock, ...]:
        return tuple(s for s in self.body if isinstance(s, GangBlock))


@dataclass(frozen=True)
class Library(Policy):
    """A named set of rules (and lets) that policies ``use``; it has no ``match``."""


@dataclass(frozen=True)
class Profile:
    """A scheduler name and the ordered policies it runs; the first whose match holds governs."""

    scheduler_name: str
    policies: tuple[str, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    policy_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


Item = Import | Policy | Library | Profile


@dataclass(frozen=True)
class Comment:
    """A ``#`` comment; ``own_line`` is true when nothing but blanks precede it on its line."""

    text: str
    span: Span
    own_line: bool


@dataclass(frozen=True)
class SourceFile:
    path: str
    items: tuple[Item, ...]
    comments: tuple[Comment, ...] = field(default=(), compare=False, repr=False)
    source: str = field(default="", compare=False, repr=False)

    @property
    def imports(self) -> tuple[Import, ...]:
        return tuple(i for i in self.items if isinstance(i, Import))

    @property
    def policies(self) -> tuple[Policy, ...]:
        return tuple(i for i in self.items if type(i) is Policy)

    @property
    def libraries(self) -> tuple[Library, ...]:
        return tuple(i for i in self.items if isinstance(i, Library))

    @property
    def profiles(self) -> tuple[Profile, ...]:
        return tuple(i for i in self.items if isinstance(i, Profile))
