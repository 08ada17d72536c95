"""The type checker: proves every rule well-typed against the schema before any pod is seen.

A policy that passes the checker cannot fail at run time for want of a name, an attribute or
a value: unknown names are reported, operators get operands they accept, and a value that may
be missing (``Nullable``) must be given a default with ``??`` before it is used. The checker
runs after parsing and linking and before the compiler, which relies on what it records.

What it learns lives beside the frozen tree in side tables keyed by ``id(node)`` (the type of
every expression, what every name refers to, which schema function every call resolves to, the
compiled ``matches()`` patterns, whether an expression varies from node to node) and is
returned in a ``CheckResult`` with the diagnostics and each rule's static cost bound.

Errors never cascade: an expression in error gets the type ``DYN``, which every check accepts
silently, so one mistake produces one diagnostic. The work is an ordered list of passes over
the unit (declarations, then each library and policy, then costs), each adding diagnostics.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial

from policyengine.diagnostics import Diagnostic, Severity, Span, sorted_diagnostics
from policyengine.lang import messages as m
from policyengine.lang import nodes as n
from policyengine.lang.cost import AGGREGATES, CostModel, RuleCost
from policyengine.lang.link import Linked, link
from policyengine.lang.loader import Unit
from policyengine.lang.nodes import children
from policyengine.lang.parser import parse_expression
from policyengine.lang.schema import Function, Schema
from policyengine.lang.types import (
    BOOL,
    DYN,
    FLOAT,
    INT,
    NULL,
    NUMERIC,
    QUANTITY,
    STRING,
    ListType,
    MapType,
    Nullable,
    RecordType,
    SetType,
    Type,
    assignable,
    bound_of,
    join,
    non_null,
    nullable,
)

_LITERAL_TYPES: dict[str, Type] = {
    "int": INT,
    "float": FLOAT,
    "quantity": QUANTITY,
    "string": STRING,
    "bool": BOOL,
    "null": NULL,
}
_CONVERSIONS: dict[str, Type] = {"int": INT, "float": FLOAT, "quantity": QUANTITY}
# The most work one rule may do for one (pod, node) pair, in cost units (lang.cost): a hundred
# times lint's default budget and two hundred times the dearest shipped rule. A policy from a
# ConfigMap must not be able to stall every scheduling cycle, so above it is an error (PE229),
# in lint and at a reload alike, not a warning.
MAX_RULE_COST = 1_000_000

BUILTINS = frozenset({*AGGREGATES, "len", "abs", "string", *_CONVERSIONS})
_ORDERING = frozenset({"<", "<=", ">", ">="})
# name -> (parameter types, result type); a map's methods depend on the map (_methodcall).
_STRING_METHODS: dict[str, tuple[tuple[Type, ...], Type]] = {
    "startswith": ((STRING,), BOOL),
    "endswith": ((STRING,), BOOL),
    "contains": ((STRING,), BOOL),
    "split": ((STRING,), ListType(STRING)),
    "lower": ((), STRING),
    "upper": ((), STRING),
    "trim": ((), STRING),
    "matches": ((STRING,), BOOL),
}
_MAP_METHODS = ("keys", "values")
_PROFILE_NAME = re.compile(r'profile\s+("(?:[^"\\]|\\.)*")')
# Expressions that need no parentheses as the left of '??'.
_TIGHT = (n.Literal, n.Name, n.Attribute, n.Index, n.Call, n.MethodCall, n.ListLit, n.MapLit)


@dataclass(frozen=True)
class Binding:
    """What a ``Name`` refers to: a schema root, a let, or a comprehension variable."""

    kind: str  # "root", "let" or "target"
    name: str
    let: n.Let | None = None
    comprehension: n.Comprehension | None = None


@dataclass(frozen=True)
class CheckResult:
    """The diagnostics and the side tables later stages read.

    ``types`` (every expression), ``bindings`` (every resolved ``Name``), ``calls`` (every
    schema-function ``Call``), ``patterns`` (every ``matches()`` call with a valid literal),
    ``per_node`` (every expression of a policy or library) and ``rule_costs`` are keyed by
    ``id(node)``.

    ``let_types`` and ``costs`` are keyed by (policy or library name, let or rule name); a let
    defined twice keeps its first definition. A filter and a score may share a name, so
    ``costs`` holds the larger bound of the rules so named; ``rule_costs`` (by ``id(rule)``,
    or ``rule_cost(rule)``) is exact and split into guard, body, reason and lets.
    """

    diagnostics: tuple[Diagnostic, ...]
    types: Mapping[int, Type]
    let_types: Mapping[tuple[str, str], Type]
    costs: Mapping[tuple[str, str], int]
    rule_costs: Mapping[int, RuleCost]
    bindings: Mapping[int, Binding] = field(default_factory=dict)
    calls: Mapping[int, Function] = field(default_factory=dict)
    patterns: Mapping[int, re.Pattern[str]] = field(default_factory=dict)
    per_node: Mapping[int, bool] = field(default_factory=dict)
    linked: Linked | None = None
    cost_model: CostModel | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)

    def type_of(self, expr: n.Expr) -> Type:
        return self.types.get(id(expr), DYN)

    def rule_cost(self, rule: n.Filter | n.Score) -> RuleCost:
        return self.rule_costs[id(rule)]


@dataclass(frozen=True)
class ExpressionCheck:
    """The result of checking one free-standing expression (tests, tools, a REPL)."""

    expr: n.Expr
    type: Type
    diagnostics: tuple[Diagnostic, ...]
    types: Mapping[int, Type]
    cost: int


@dataclass(frozen=True)
class _Scope:
    lets: Mapping[str, n.Let] = field(default_factory=dict)
    # Lets of the same policy not yet in scope (for "used before it is defined").
    later: Mapping[str, n.Let] = field(default_factory=dict)
    targets: Mapping[str, tuple[n.Comprehension, Type]] = field(default_factory=dict)
    current_let: n.Let | None = None
    gang: bool = False  # inside a gang block: the gang roots, no root varying per node

    def with_targets(self, targets: Mapping[str, tuple[n.Comprehension, Type]]) -> _Scope:
        return _Scope(
            self.lets, self.later, {**self.targets, **targets}, self.current_let, self.gang
        )


def _span(expr: n.Expr) -> Span:
    # Every concrete expression node has a span; their base class declares none.
    span: Span = expr.span  # type: ignore[attr-defined]
    return span


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def _default_example(t: Type) -> str | None:
    """A default of the right type to show in a '??' hint."""
    t = non_null(t)
    if t in (INT, QUANTITY):
        return "0"
    examples = {FLOAT: "0.0", STRING: '""', BOOL: "false"}
    if t in examples:
        return examples[t]
    if isinstance(t, ListType):
        return "[]"
    if isinstance(t, MapType):
        return "{}"
    return None


def _numeric(t: Type) -> bool:
    return t in NUMERIC


def _arithmetic(op: str, left: Type, right: Type) -> Type | None:
    """The result of ``left op right`` for non-null, non-dyn operands, or None if refused."""
    if op == "+" and left == right == STRING:
        return STRING
    if op == "+" and isinstance(left, ListType) and isinstance(right, ListType):
        element = join(left.element, right.element)
        return ListType(element, left.bound + right.bound) if element is not None else None
    if not (_numeric(left) and _numeric(right)):
        return None
    pair = {left, right}
    if op == "%":
        return INT if pair == {INT} else None
    if op in ("+", "-"):
        if pair == {INT}:
            return INT
        return FLOAT if FLOAT in pair else QUANTITY
    if op == "*":
        if pair == {INT}:
            return INT
        if pair == {QUANTITY}:
            return None
        return QUANTITY if pair == {QUANTITY, INT} else FLOAT
    # '/': a quantity shared out stays a quantity; any other division is a ratio.
    return QUANTITY if (left, right) == (QUANTITY, INT) else FLOAT


def _comparable(left: Type, right: Type) -> bool:
    left, right = non_null(left), non_null(right)
    if DYN in (left, right) or NULL in (left, right):
        return True
    if _numeric(left) and _numeric(right):
        return True
    if left == right and left in (STRING, BOOL):
        return True
    for kind in (ListType, SetType):
        if isinstance(left, kind) and isinstance(right, kind):
            return _comparable(left.element, right.element)
    if isinstance(left, MapType) and isinstance(right, MapType):
        return _comparable(left.key, right.key) and _comparable(left.value, right.value)
    # Records are not comparable: their runtime objects have no equality the language defines.
    return False


class _Checker:
    def __init__(self, schema: Schema, sources: Mapping[str, str]):
        self.schema = schema
        self.sources = sources
        self.diagnostics: list[Diagnostic] = []
        self.types: dict[int, Type] = {}
        self.bindings: dict[int, Binding] = {}
        self.calls: dict[int, Function] = {}
        self.patterns: dict[int, re.Pattern[str]] = {}
        self.let_types: dict[int, Type] = {}
        self._varies: dict[int, bool] = {}
        self._lines: dict[str, list[str]] = {}

    # --- reporting ---------------------------------------------------------------------

    def report(self, message: m.Message, span: Span) -> None:
        self.diagnostics.append(
            Diagnostic(message.code, Severity.ERROR, message.text, span, message.hint)
        )

    def text(self, span: Span) -> str | None:
        """The source text under a span, on one line (for hints that quote the user's code)."""
        lines = self._lines.get(span.file)
        if lines is None:
            source = self.sources.get(span.file)
            if source is None:
                return None
            lines = source.split("\n")  # as the lexer counts lines (not str.splitlines)
            self._lines[span.file] = lines
        if not 1 <= span.line <= span.end_line <= len(lines):
            return None
        if span.line == span.end_line:
            piece = lines[span.line - 1][span.column - 1 : span.end_column - 1]
        else:
            first = lines[span.line - 1][span.column - 1 :]
            middle = lines[span.line : span.end_line - 1]
            last = lines[span.end_line - 1][: span.end_column - 1]
            piece = " ".join([first, *middle, last])
        return " ".join(piece.split()) or None

    def null_misuse(self, expr: n.Expr, found: Type, needed_by: str) -> None:
        text, default = self.text(_span(expr)), _default_example(found)
        if text and not isinstance(expr, _TIGHT):
            text = f"({text})"  # '??' binds tighter than if/or/and/comparisons
        example = f"({text} ?? {default})" if text and default else None
        self.report(m.may_be_null(found, needed_by, example), _span(expr))

    def require(
        self,
        expr: n.Expr,
        found: Type,
        ok: Callable[[Type], bool],
        needed_by: str,
        wrong: Callable[[], m.Message],
    ) -> bool:
        """Check that ``found`` (the type of ``expr``) is accepted by ``ok``; False after a report.

        DYN is accepted silently (an error was reported where it arose). A nullable type whose
        inner type ``ok`` accepts is PE209 with a ``??`` hint; anything else is ``wrong()``.
        """
        if found == DYN or ok(found):
            return True
        if isinstance(found, Nullable) and ok(found.inner):
            self.null_misuse(expr, found, needed_by)
        else:
            self.report(wrong(), _span(expr))
        return False

    # --- expressions -------------------------------------------------------------------

    def expr(self, expr: n.Expr, scope: _Scope, generator_ok: bool = False) -> Type:
        if isinstance(expr, n.Comprehension) and expr.kind == "generator" and not generator_ok:
            self.report(m.generator_outside_aggregate(), _span(expr))
            self._comprehension(expr, scope)
            found: Type = DYN
        else:
            handler = getattr(self, "_" + type(expr).__name__.lower())
            found = handler(expr, scope)
        self.types[id(expr)] = found
        return found

    def _literal(self, expr: n.Literal, scope: _Scope) -> Type:
        return _LITERAL_TYPES[expr.kind]

    def _name(self, expr: n.Name, scope: _Scope) -> Type:
        name = expr.id
        if name in scope.targets:
            comprehension, found = scope.targets[name]
            self.bindings[id(expr)] = Binding("target", name, comprehension=comprehension)
            return found
        if name in scope.lets:
            let = scope.lets[name]
            self.bindings[id(expr)] = Binding("let", name, let=let)
            if scope.gang and self.varies(let.expr):
                self.report(
                    m.hidden_in_gang(f"let '{name}' reads a value per node; it"), _span(expr)
                )
            return self.let_types.get(id(let), DYN)
        root = self.schema.roots.get(name)
        if root is not None:
            self.bindings[id(expr)] = Binding("root", name)
            in_gang_roots = name in self.schema.gang_roots
            if in_gang_roots and not scope.gang:
                self.report(m.gang_root_outside(name), _span(expr))
            elif scope.gang and not in_gang_roots and root.varies_per_node:
                self.report(m.hidden_in_gang(f"'{name}'"), _span(expr))
            return root.type
        if name in scope.later:
            if scope.later[name] is scope.current_let:
                self.report(m.let_refers_to_itself(name), _span(expr))
            else:
                self.report(m.let_before_definition(name), _span(expr))
        elif name in BUILTINS or name in self.schema.functions:
            self.report(m.function_used_as_value(name), _span(expr))
        else:
            visible = sorted({*scope.targets, *scope.lets, *self.schema.roots})
            self.report(m.unknown_name(name, _closest(name, visible), visible), _span(expr))
        return DYN

    def _attribute(self, expr: n.Attribute, scope: _Scope) -> Type:
        found = self.expr(expr.obj, scope)
        if found == DYN:
            return DYN
        if isinstance(found, Nullable):
            self.null_misuse(expr.obj, found, f"'.{expr.name}'")
            return DYN
        if not isinstance(found, RecordType):
            obj_text = self.text(_span(expr.obj)) or "value"
            message = m.no_attributes(found, expr.name, obj_text, isinstance(found, MapType))
            self.report(message, expr.name_span)
            return DYN
        declared = found.fields.get(expr.name)
        if declared is None:
            suggestion = _closest(expr.name, found.fields)
            obj_text = self.text(_span(expr.obj)) or "value"
            message = m.unknown_attribute(
                found.name, expr.name, obj_text, suggestion, list(found.fields)
            )
            self.report(message, expr.name_span)
            return DYN
        return declared.type

    def _index(self, expr: n.Index, scope: _Scope) -> Type:
        container = self.expr(expr.obj, scope)
        index = self.expr(expr.index, scope)
        if container == DYN:
            return DYN
        if isinstance(container, Nullable):
            self.null_misuse(expr.obj, container, "indexing")
            return DYN
        if isinstance(container, MapType):
            wanted, result = (
                container.key,
                (container.value if container.default is not None else nullable(container.value)),
            )
        elif isinstance(container, ListType):
            wanted, result = INT, nullable(container.element)
        else:
            self.report(m.not_indexable(container), _span(expr.obj))
            return DYN
        fits = self.require(
            expr.index,
            index,
            lambda t: assignable(t, wanted),
            "indexing",
            lambda: m.bad_index(container, str(wanted), index),
        )
        return result if fits else DYN

    def _unary(self, expr: n.Unary, scope: _Scope) -> Type:
        found = self.expr(expr.operand, scope)
        if expr.op == "not":
            ok = self.require(
                expr.operand,
                found,
                lambda t: t == BOOL,
                "'not'",
                lambda: m.bad_operand("not", found, "bool"),
            )
            return BOOL if ok else DYN
        ok = self.require(
            expr.operand, found, _numeric, "'-'", lambda: m.bad_operand("-", found, "a number")
        )
        return found if ok else DYN

    def _binary(self, expr: n.Binary, scope: _Scope) -> Type:
        left = self.expr(expr.left, scope)
        right = self.expr(expr.right, scope)
        op = expr.op
        if op in ("and", "or"):
            ok = [
                self.require(
                    side,
                    found,
                    lambda t: t == BOOL,
                    f"'{op}'",
                    partial(m.bad_operand, op, found, "bool"),
                )
                for side, found in ((expr.left, left), (expr.right, right))
            ]
            return BOOL if all(ok) else DYN
        if op == "??":
            if DYN in (left, right):
                return DYN
            result = join(non_null(left), right)
            if result is None:
                self.report(m.bad_default(non_null(left), right), _span(expr.right))
                return DYN
            return result
        if op in ("in", "not in"):
            return self._membership(expr, left, right)
        if op in ("==", "!="):
            if not _comparable(left, right):
                self.report(m.not_comparable(op, left, right), _span(expr))
                return DYN
            return BOOL
        if DYN in (left, right):
            return BOOL if op in _ORDERING else DYN
        # Decide on the types without their nulls first: a null is worth mentioning only when
        # a default would make the operation valid.
        bare_left, bare_right = non_null(left), non_null(right)
        if op in _ORDERING:
            ordered = (_numeric(bare_left) and _numeric(bare_right)) or (
                bare_left == bare_right == STRING
            )
            outcome: Type | None = BOOL if ordered else None
        else:
            outcome = _arithmetic(op, bare_left, bare_right)
        if outcome is None:
            report = m.not_comparable if op in _ORDERING else m.bad_operands
            self.report(report(op, left, right), _span(expr))
            return DYN
        nulls = [
            (side, found)
            for side, found in ((expr.left, left), (expr.right, right))
            if isinstance(found, Nullable)
        ]
        for side, found in nulls:
            self.null_misuse(side, found, f"'{op}'")
        return DYN if nulls else outcome

    def _membership(self, expr: n.Binary, left: Type, right: Type) -> Type:
        if right == DYN:
            return BOOL
        if isinstance(right, Nullable):
            self.null_misuse(expr.right, right, f"'{expr.op}'")
            return DYN
        if isinstance(right, ListType | SetType):
            wanted = right.element
        elif isinstance(right, MapType):
            wanted = right.key
        elif right == STRING:
            wanted = STRING
        else:
            self.report(m.bad_membership(expr.op, left, right), _span(expr))
            return DYN
        ok = self.require(
            expr.left,
            left,
            lambda t: assignable(t, wanted),
            f"'{expr.op}'",
            lambda: m.bad_membership(expr.op, left, right),
        )
        return BOOL if ok else DYN

    def _conditional(self, expr: n.Conditional, scope: _Scope) -> Type:
        cond = self.expr(expr.cond, scope)
        then = self.expr(expr.then, scope)
        otherwise = self.expr(expr.otherwise, scope)
        ok = self.require(
            expr.cond, cond, lambda t: t == BOOL, "'if'", lambda: m.not_a_condition("'if'", cond)
        )
        if not ok or DYN in (then, otherwise):
            return DYN
        result = join(then, otherwise)
        if result is None:
            self.report(m.branches_differ(then, otherwise), _span(expr))
            return DYN
        return result

    def _join_items(self, kind: str, items: Iterable[n.Expr], scope: _Scope) -> Type | None:
        """The join of the items' types (DYN when empty or when one is DYN, as ``join`` has it),
        or None after reporting a misfit."""
        joined: Type | None = None
        failed = False
        for item in items:
            found = self.expr(item, scope)
            if failed:
                continue
            if joined is None:
                joined = found
                continue
            widened = join(joined, found)
            if widened is None:
                self.report(m.items_differ(kind, joined, found), _span(item))
                failed = True
            else:
                joined = widened
        if failed:
            return None
        return joined if joined is not None else DYN

    def _listlit(self, expr: n.ListLit, scope: _Scope) -> Type:
        element = self._join_items("list", expr.items, scope)
        return ListType(element, len(expr.items)) if element is not None else DYN

    def _setlit(self, expr: n.SetLit, scope: _Scope) -> Type:
        element = self._join_items("set", expr.items, scope)
        return SetType(element, len(expr.items)) if element is not None else DYN

    def _maplit(self, expr: n.MapLit, scope: _Scope) -> Type:
        key = self._join_items("map key", (k for k, _ in expr.entries), scope)
        value = self._join_items("map value", (v for _, v in expr.entries), scope)
        if key is None or value is None:
            return DYN
        return MapType(key, value, len(expr.entries))

    def _template(self, expr: n.Template, scope: _Scope) -> Type:
        for part in expr.parts:
            if isinstance(part, n.Expr):
                self.expr(part, scope)  # a hole may hold a value of any type
        return STRING

    def _comprehension(self, expr: n.Comprehension, scope: _Scope) -> Type:
        iterable = self.expr(expr.iterable, scope)
        ok = True
        if len(expr.targets) == 2 and expr.targets[0] == expr.targets[1]:
            self.report(m.target_twice(expr.targets[1]), expr.target_spans[1])
            ok = False
        target_types: tuple[Type, ...] = (DYN,) * len(expr.targets)
        if isinstance(iterable, Nullable):
            self.null_misuse(expr.iterable, iterable, "'for'")
            ok = False
        elif isinstance(iterable, ListType | SetType):
            if len(expr.targets) == 2:
                self.report(m.two_targets_over(iterable), expr.target_spans[1])
                ok = False
            else:
                target_types = (iterable.element,)
        elif isinstance(iterable, MapType):
            target_types = (iterable.key, iterable.value)[: len(expr.targets)]
        elif iterable != DYN:
            self.report(m.not_iterable(iterable), _span(expr.iterable))
            ok = False
        inner = scope.with_targets(
            {name: (expr, found) for name, found in zip(expr.targets, target_types, strict=True)}
        )
        if expr.condition is not None:
            cond = self.expr(expr.condition, inner)
            ok = (
                self.require(
                    expr.condition,
                    cond,
                    lambda t: t == BOOL,
                    "'if'",
                    lambda: m.not_a_condition("a comprehension", cond),
                )
                and ok
            )
        element = self.expr(expr.element, inner)
        if not ok or iterable == DYN:
            return DYN
        return ListType(element, bound_of(iterable))

    # --- calls -------------------------------------------------------------------------

    def _call(self, expr: n.Call, scope: _Scope) -> Type:
        if expr.func in BUILTINS:
            return self._builtin(expr, scope)
        function = self.schema.functions.get(expr.func)
        found = [self.expr(arg, scope) for arg in expr.args]
        if function is None:
            known = sorted({*BUILTINS, *self.schema.functions})
            self.report(m.unknown_function(expr.func, _closest(expr.func, known)), expr.func_span)
            return DYN
        self.calls[id(expr)] = function
        if len(expr.args) != len(function.params):
            self.report(m.wrong_arity(expr.func, len(function.params), len(expr.args)), _span(expr))
            return DYN
        ok = True
        for position, (arg, arg_type, param) in enumerate(
            zip(expr.args, found, function.params, strict=True), start=1
        ):
            ok = (
                self.require(
                    arg,
                    arg_type,
                    partial(assignable, target=param.type),
                    f"{expr.func}()",
                    partial(m.bad_argument, expr.func, position, str(param.type), arg_type),
                )
                and ok
            )
        return function.returns if ok else DYN

    def _builtin(self, expr: n.Call, scope: _Scope) -> Type:
        name, args = expr.func, expr.args
        generator_ok = name in AGGREGATES and len(args) == 1
        found = [self.expr(arg, scope, generator_ok) for arg in args]
        if name in ("min", "max") and len(args) >= 2:
            return self._min_max_of_values(expr, found)
        if len(args) != 1:
            wanted: int | str = (
                "a list, set or generator, or at least 2 arguments" if name in ("min", "max") else 1
            )
            self.report(m.wrong_arity(name, wanted, len(args)), _span(expr))
            return DYN
        arg, arg_type = args[0], found[0]
        if name in AGGREGATES:
            return self._aggregate(name, arg, arg_type)
        if name == "len":
            ok = self.require(
                arg,
                arg_type,
                lambda t: t == STRING or isinstance(t, ListType | SetType | MapType),
                "len()",
                lambda: m.bad_argument("len", 1, "a string, list, set or map", arg_type),
            )
            return INT if ok else DYN
        if name == "string":
            return STRING
        if name == "abs":
            ok = self.require(
                arg,
                arg_type,
                _numeric,
                "abs()",
                lambda: m.bad_argument("abs", 1, "a number", arg_type),
            )
            return arg_type if ok and arg_type != DYN else DYN
        target = _CONVERSIONS[name]
        ok = self.require(
            arg,
            arg_type,
            lambda t: t == STRING or _numeric(t),
            f"{name}()",
            lambda: m.bad_argument(name, 1, "a string or a number", arg_type),
        )
        return Nullable(target) if ok else DYN

    def _min_max_of_values(self, expr: n.Call, found: list[Type]) -> Type:
        joined: Type | None = None
        ok = True
        for position, (arg, arg_type) in enumerate(zip(expr.args, found, strict=True), start=1):
            fits = self.require(
                arg,
                arg_type,
                _numeric,
                f"{expr.func}()",
                partial(m.bad_argument, expr.func, position, "a number", arg_type),
            )
            if not fits:
                ok = False
            elif ok and arg_type != DYN:
                widened = arg_type if joined is None else join(joined, arg_type)
                if widened is None:
                    assert joined is not None
                    self.report(m.arguments_differ(expr.func, joined, arg_type), _span(arg))
                    ok = False
                else:
                    joined = widened
        if not ok:
            return DYN
        return joined if joined is not None else DYN

    def _aggregate(self, name: str, arg: n.Expr, found: Type) -> Type:
        results: dict[str, Type] = {"any": BOOL, "all": BOOL, "count": INT}
        collection_ok = self.require(
            arg,
            found,
            lambda t: isinstance(t, ListType | SetType),
            f"{name}()",
            lambda: m.bad_argument(name, 1, "a list, set or generator", found),
        )
        if not collection_ok:
            return DYN
        if found == DYN:
            return results.get(name, DYN)
        assert isinstance(found, ListType | SetType)
        element = found.element
        where = arg.element if isinstance(arg, n.Comprehension) else arg
        if element == DYN:
            empty = isinstance(arg, n.ListLit | n.SetLit) and not arg.items
            return INT if name == "sum" and empty else results.get(name, DYN)
        if name in results:
            ok = self.require(
                where,
                element,
                lambda t: t == BOOL,
                f"{name}()",
                lambda: m.bad_elements(name, "bool", element),
            )
            return results[name] if ok else DYN
        ok = self.require(
            where, element, _numeric, f"{name}()", lambda: m.bad_elements(name, "numeric", element)
        )
        if not ok:
            return DYN
        return element if name == "sum" else Nullable(element)

    def _methodcall(self, expr: n.MethodCall, scope: _Scope) -> Type:
        receiver = self.expr(expr.obj, scope)
        found = [self.expr(arg, scope) for arg in expr.args]
        if expr.name == "matches" and len(expr.args) == 1:
            self._pattern(expr)
        if receiver == DYN:
            return DYN
        if isinstance(receiver, Nullable):
            self.null_misuse(expr.obj, receiver, f"{expr.name}()")
            return DYN
        signature: tuple[tuple[Type, ...], Type] | None = None
        methods: tuple[str, ...] = ()
        if receiver == STRING:
            methods = tuple(_STRING_METHODS)
            signature = _STRING_METHODS.get(expr.name)
        elif isinstance(receiver, MapType):
            methods = _MAP_METHODS
            if expr.name == "keys":
                signature = ((), ListType(receiver.key, receiver.bound))
            elif expr.name == "values":
                signature = ((), ListType(receiver.value, receiver.bound))
        if signature is None:
            message = m.unknown_method(receiver, expr.name, _closest(expr.name, methods), methods)
            self.report(message, expr.name_span)
            return DYN
        params, result = signature
        if len(params) != len(expr.args):
            self.report(m.wrong_arity(expr.name, len(params), len(expr.args)), _span(expr))
            return DYN
        ok = True
        for position, (arg, arg_type, param) in enumerate(
            zip(expr.args, found, params, strict=True), start=1
        ):
            ok = (
                self.require(
                    arg,
                    arg_type,
                    partial(assignable, target=param),
                    f"{expr.name}()",
                    partial(m.bad_argument, expr.name, position, str(param), arg_type),
                )
                and ok
            )
        if expr.name == "matches" and id(expr) not in self.patterns:
            ok = False
        return result if ok else DYN

    def _pattern(self, expr: n.MethodCall) -> None:
        """Compile a ``matches()`` pattern once, now: it must be a literal and a valid regex."""
        pattern = expr.args[0]
        if not (isinstance(pattern, n.Literal) and pattern.kind == "string"):
            self.report(m.pattern_not_literal(), _span(pattern))
            return
        assert isinstance(pattern.value, str)
        try:
            self.patterns[id(expr)] = re.compile(pattern.value)
        except re.error as error:
            self.report(m.invalid_pattern(str(error)), _span(pattern))

    # --- what varies per node ----------------------------------------------------------

    def varies(self, expr: n.Expr) -> bool:
        key = id(expr)
        if key not in self._varies:
            self._varies[key] = False  # a guard against cycles; lets cannot form them
            self._varies[key] = self._compute_varies(expr)
        return self._varies[key]

    def _compute_varies(self, expr: n.Expr) -> bool:
        if isinstance(expr, n.Name):
            binding = self.bindings.get(id(expr))
            if binding is None:
                return False
            if binding.kind == "root":
                return self.schema.roots[binding.name].varies_per_node
            if binding.kind == "let":
                assert binding.let is not None
                return self.varies(binding.let.expr)
            assert binding.comprehension is not None
            return self.varies(binding.comprehension.iterable)
        function = self.calls.get(id(expr))
        own = function is not None and function.varies_per_node
        # Evaluate every child so that each sub-expression gets its entry.
        return any([self.varies(child) for child in children(expr)]) or own

    def per_node_culprit(self, expr: n.Expr) -> tuple[str, Span] | None:
        """The first thing in ``expr`` that makes it vary per node, described for a message."""
        if not self.varies(expr):
            return None
        if isinstance(expr, n.Name):
            binding = self.bindings[id(expr)]
            what = f"let {binding.name}" if binding.kind == "let" else binding.name
            return what, _span(expr)
        function = self.calls.get(id(expr))
        if function is not None and function.varies_per_node:
            assert isinstance(expr, n.Call)
            return f"{function.name}()", expr.func_span
        for child in children(expr):
            found = self.per_node_culprit(child)
            if found is not None:
                return found
        return None

    # --- statements --------------------------------------------------------------------

    def owner(self, owner: n.Policy) -> dict[str, n.Let]:
        """Check one policy or library; returns its lets in scope for its rules."""
        lets = self._lets(owner)
        scope = _Scope(lets=lets)
        self._matches(owner, scope)
        self._rules(owner, scope)
        self._gangs(owner, lets)
        self._preempts(owner, scope)
        self._selects(owner, scope)
        self._devices(owner, scope)
        self._uses(owner)
        for overcommit in owner.overcommits:
            if overcommit.resource not in self.schema.compressible_resources:
                self.report(
                    m.incompressible_overcommit(
                        overcommit.resource, self.schema.compressible_resources
                    ),
                    overcommit.resource_span,
                )
            if overcommit.max_load is not None and not 0 <= overcommit.max_load <= 1:
                self.report(
                    m.max_load_out_of_range(overcommit.resource, overcommit.max_load_text),
                    overcommit.span,
                )
            if overcommit.ratio < 1:
                self.report(
                    m.overcommit_below_one(overcommit.resource, overcommit.ratio_text),
                    overcommit.ratio_span,
                )
        return lets

    def _lets(self, owner: n.Policy) -> dict[str, n.Let]:
        visible: dict[str, n.Let] = {}
        ordered = owner.lets
        for position, let in enumerate(ordered):
            later: dict[str, n.Let] = {}
            for other in ordered[position:]:
                if other.name not in visible:
                    later.setdefault(other.name, other)
            scope = _Scope(lets=dict(visible), later=later, current_let=let)
            self.let_types[id(let)] = self.expr(let.expr, scope)
            if let.name in self.schema.roots:
                self.report(m.let_shadows_root(let.name), let.name_span)
            elif let.name in visible:
                self.report(m.let_twice(let.name, str(visible[let.name].name_span)), let.name_span)
            else:
                visible[let.name] = let
        return visible

    def _matches(self, owner: n.Policy, scope: _Scope) -> None:
        matches = [s for s in owner.body if isinstance(s, n.Match)]
        for position, match in enumerate(matches):
            if isinstance(owner, n.Library):
                self.report(m.match_in_library(owner.name), match.span)
            elif position > 0:
                self.report(m.second_match(owner.name), match.span)
            found = self.expr(match.expr, scope)
            ok = self.require(
                match.expr, found, lambda t: t == BOOL, "a match", partial(m.bad_match, found)
            )
            if ok and not isinstance(owner, n.Library):
                culprit = self.per_node_culprit(match.expr)
                if culprit is not None:
                    self.report(m.match_reads_per_node(culprit[0]), culprit[1])

    def _gangs(self, owner: n.Policy, lets: Mapping[str, n.Let]) -> None:
        for position, block in enumerate(owner.gangs):
            if isinstance(owner, n.Library):
                self.report(m.gang_in_library(owner.name), block.span)
            elif position > 0:
                self.report(m.second_gang(owner.name), block.span)
            withins = [s for s in block.body if isinstance(s, n.Within)]
            known = self.schema.topology_levels
            for index, within in enumerate(withins):
                if index > 0:
                    self.report(m.second_within(), within.span)
                for level, span in zip(within.levels, within.level_spans, strict=False):
                    if level not in known:
                        self.report(m.unknown_level(level, _closest(level, known), known), span)
            self._rules(owner, _Scope(lets=lets, gang=True), block.rules)

    def _rules(
        self,
        owner: n.Policy,
        scope: _Scope,
        rules: Iterable[n.Filter | n.Score] | None = None,
    ) -> None:
        # A filter and a score may share a name (kube-scheduler plugins such as
        # taint_toleration are both), so names are unique per kind.
        seen: dict[tuple[str, str], n.Filter | n.Score] = {}
        for rule in owner.rules if rules is None else rules:
            kind = "filter" if isinstance(rule, n.Filter) else "score"
            first = seen.setdefault((kind, rule.name), rule)
            if first is not rule:
                where = _owner_label(owner)
                self.report(
                    m.duplicate_rule(where, kind, rule.name, str(first.name_span)), rule.name_span
                )
            if rule.guard is not None:
                guard = self.expr(rule.guard, scope)
                self.require(
                    rule.guard,
                    guard,
                    lambda t: t == BOOL,
                    "a guard",
                    partial(m.bad_guard, kind, rule.name, guard),
                )
            body = self.expr(rule.body, scope)
            if isinstance(rule, n.Filter):
                if rule.reason is not None:
                    self.expr(rule.reason, scope)
                accepts: Callable[[Type], bool] = _filter_body
            else:
                # A null score leaves the node unscored by this rule (as a false guard does),
                # which is how builtins say kube-scheduler's PreScore skipped the plugin.
                def accepts(t: Type) -> bool:
                    return _numeric(t.inner if isinstance(t, Nullable) else t)

                self._normalize(rule)
            self.require(
                rule.body,
                body,
                accepts,
                f"a {kind}",
                partial(m.bad_rule_body, kind, rule.name, body),
            )

    def _devices(self, owner: n.Policy, scope: _Scope) -> None:
        """``device MODE [{ SHAPES }]``: a known mode, shapes exactly for
        ``least_fragmentation``, a list of shape maps read once per pod (not per node); one
        per policy, none in a library."""
        for position, device in enumerate(owner.devices):
            if isinstance(owner, n.Library):
                self.report(m.device_in_library(owner.name), device.span)
            elif position > 0:
                self.report(m.second_device(owner.name), device.span)
            if device.mode not in m.DEVICE_MODES:
                self.report(m.unknown_device_mode(device.mode), device.mode_span)
            elif device.mode != "least_fragmentation" and device.shapes is not None:
                self.report(m.device_takes_no_shapes(device.mode), _span(device.shapes))
            elif device.mode == "least_fragmentation" and device.shapes is None:
                self.report(m.device_needs_shapes(device.mode), device.span)
            if device.shapes is None:
                continue
            found = self.expr(device.shapes, scope)
            ok = self.require(
                device.shapes,
                found,
                lambda t: (
                    isinstance(t, ListType)
                    and isinstance(t.element, MapType)
                    and t.element.key == STRING
                    and _numeric(t.element.value)
                ),
                "the shapes",
                partial(m.bad_device_shapes, found),
            )
            culprit = self.per_node_culprit(device.shapes) if ok else None
            if culprit is not None:
                self.report(m.device_shapes_read_per_node(culprit[0]), culprit[1])

    def _selects(self, owner: n.Policy, scope: _Scope) -> None:
        """``select MODE [{ KEY }]``: a known mode, a key exactly when the mode orders by one,
        a key that can be ordered (numbers, or strings); one per policy, none in a library."""
        for position, select in enumerate(owner.selects):
            if isinstance(owner, n.Library):
                self.report(m.select_in_library(owner.name), select.span)
            elif position > 0:
                self.report(m.second_select(owner.name), select.span)
            if select.mode not in m.SELECT_MODES:
                self.report(m.unknown_select_mode(select.mode), select.mode_span)
            elif select.mode == "random" and select.key is not None:
                self.report(m.select_random_key(), _span(select.key))
            elif select.mode != "random" and select.key is None:
                self.report(m.select_needs_key(select.mode), select.span)
            if select.key is not None:
                found = self.expr(select.key, scope)
                self.require(
                    select.key,
                    found,
                    lambda t: _numeric(t) or t == STRING,
                    "a select key",
                    partial(m.bad_select_key, select.mode, found),
                )

    def _preempts(self, owner: n.Policy, scope: _Scope) -> None:
        """A preempt guard is about the pod alone; its body also sees the preempt roots
        (``victim``), which no other expression does."""
        for rule in owner.preempts:
            if rule.guard is not None:
                guard = self.expr(rule.guard, scope)
                ok = self.require(
                    rule.guard,
                    guard,
                    lambda t: t == BOOL,
                    "a guard",
                    partial(m.bad_preempt_guard, guard),
                )
                culprit = self.per_node_culprit(rule.guard) if ok else None
                if culprit is not None:
                    self.report(m.preempt_guard_reads_per_node(culprit[0]), culprit[1])
            schema = self.schema
            self.schema = replace(schema, roots={**schema.roots, **schema.preempt_roots})
            try:
                body = self.expr(rule.body, scope)
            finally:
                self.schema = schema
            self.require(
                rule.body,
                body,
                lambda t: t == BOOL,
                "a preempt rule",
                partial(m.bad_preempt_body, body),
            )

    def _normalize(self, rule: n.Score) -> None:
        if rule.normalize is None or rule.normalize in self.schema.normalizers:
            return
        known = self.schema.normalizers
        message = m.unknown_normalizer(rule.normalize, _closest(rule.normalize, known), known)
        self.report(message, rule.normalize_span or rule.name_span)

    def _uses(self, owner: n.Policy) -> None:
        first: dict[str, n.Use] = {}
        for use in owner.uses:
            if use.library in first:
                earlier = str(first[use.library].name_span)
                self.report(m.library_used_twice(use.library, owner.name, earlier), use.name_span)
            else:
                first[use.library] = use

    def declarations(self, unit: Unit) -> None:
        """Names that must be unique across the unit, and the policies profiles refer to."""
        policies: dict[str, n.Policy] = {}
        for policy in unit.policies:
            if policy.name in policies:
                first_at = str(policies[policy.name].name_span)
                self.report(m.duplicate_policy(policy.name, first_at), policy.name_span)
            else:
                policies[policy.name] = policy
        profiles: dict[str, n.Profile] = {}
        for profile in unit.profiles:
            name_span = self._profile_name_span(profile)
            if profile.scheduler_name in profiles:
                first_at = str(self._profile_name_span(profiles[profile.scheduler_name]))
                self.report(m.duplicate_profile(profile.scheduler_name, first_at), name_span)
            else:
                profiles[profile.scheduler_name] = profile
            for name, span in zip(profile.policies, profile.policy_spans, strict=False):
                if name not in policies:
                    message = m.unknown_profile_policy(
                        profile.scheduler_name, name, _closest(name, policies), policies
                    )
                    self.report(message, span)

    def _profile_name_span(self, profile: n.Profile) -> Span:
        """The parser keeps no span for a profile's name: find its string after ``profile``."""
        span = profile.span
        source = self.sources.get(span.file)
        if source is not None:
            lines = source.split("\n")  # as the lexer counts lines (not str.splitlines)
            if 1 <= span.line <= len(lines):
                line = lines[span.line - 1]
                found = _PROFILE_NAME.match(line, span.column - 1)
                if found is not None:
                    start, end = found.span(1)
                    return Span(span.file, span.line, start + 1, span.line, end + 1)
        return span


def _filter_body(t: Type) -> bool:
    return t == BOOL or (isinstance(t, ListType) and assignable(t.element, STRING))


def _owner_label(owner: n.Policy) -> str:
    return f"library {owner.name}" if isinstance(owner, n.Library) else f'policy "{owner.name}"'


def _sources(unit: Unit) -> dict[str, str]:
    sources = dict(unit.sources)
    for file in unit.files:
        if file.source:
            sources.setdefault(file.path, file.source)
    return sources


def check(unit: Unit, schema: Schema, linked: Linked | None = None) -> CheckResult:
    """Type-check every policy and library of ``unit`` against ``schema``.

    When ``linked`` is not given the unit is linked here and the linker's diagnostics are
    included in the result; a caller that links itself passes its ``Linked`` and reports the
    linker's diagnostics itself.
    """
    own_link = linked is None
    if linked is None:
        linked = link(unit)
    checker = _Checker(schema, _sources(unit))
    passes: list[tuple[str, Callable[[], object]]] = [
        ("declarations", lambda: checker.declarations(unit)),
        ("libraries", lambda: [checker.owner(lib) for lib in unit.libraries]),
        ("policies", lambda: [checker.owner(policy) for policy in unit.policies]),
    ]
    for _name, run in passes:
        run()
    owners: tuple[n.Policy, ...] = (*unit.libraries, *unit.policies)
    let_types: dict[tuple[str, str], Type] = {}
    for owner in owners:
        for let in owner.lets:
            let_types.setdefault((owner.name, let.name), checker.let_types.get(id(let), DYN))
    let_refs = {
        key: binding.let for key, binding in checker.bindings.items() if binding.let is not None
    }
    model = CostModel(checker.types, let_refs, checker.calls)
    rule_costs: dict[int, RuleCost] = {}
    costs: dict[tuple[str, str], int] = {}
    for owner in owners:
        for rule in owner.rules:
            cost = rule_costs[id(rule)] = model.rule(rule)
            key = (owner.name, rule.name)
            costs[key] = max(costs.get(key, 0), cost.total)
        for block in owner.gangs:
            for rule in block.rules:
                rule_costs[id(rule)] = model.rule(rule)
    per_node = {key: checker.varies(_node) for key, _node in _typed_nodes(owners)}
    too_dear = [
        Diagnostic(message.code, Severity.ERROR, message.text, rule.name_span, message.hint)
        for owner in owners
        for rule in (*owner.rules, *(r for block in owner.gangs for r in block.rules))
        if rule_costs[id(rule)].total > MAX_RULE_COST
        for message in (
            m.cost_over_limit(
                "filter" if isinstance(rule, n.Filter) else "score",
                rule.name,
                rule_costs[id(rule)].total,
                MAX_RULE_COST,
            ),
        )
    ]
    diagnostics = [*(linked.diagnostics if own_link else ()), *checker.diagnostics, *too_dear]
    return CheckResult(
        diagnostics=tuple(sorted_diagnostics(_dedupe(diagnostics))),
        types=checker.types,
        let_types=let_types,
        costs=costs,
        rule_costs=rule_costs,
        bindings=checker.bindings,
        calls=checker.calls,
        patterns=checker.patterns,
        per_node=per_node,
        linked=linked,
        cost_model=model,
    )


def _typed_nodes(owners: Iterable[n.Policy]) -> Iterable[tuple[int, n.Expr]]:
    """Every expression in the owners' statements (for the per-node table)."""
    stack: list[n.Expr] = []
    for owner in owners:
        for statement in owner.body:
            if isinstance(statement, n.Let | n.Match):
                stack.append(statement.expr)
            elif isinstance(statement, n.Filter | n.Score):
                stack.extend(e for e in (statement.guard, statement.body) if e is not None)
                if isinstance(statement, n.Filter) and statement.reason is not None:
                    stack.append(statement.reason)
            elif isinstance(statement, n.GangBlock):
                for rule in statement.rules:
                    stack.extend(e for e in (rule.guard, rule.body) if e is not None)
                    if isinstance(rule, n.Filter) and rule.reason is not None:
                        stack.append(rule.reason)
    while stack:
        expr = stack.pop()
        yield id(expr), expr
        stack.extend(children(expr))


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, Span, str]] = set()
    unique = []
    for d in diagnostics:
        key = (d.code, d.span, d.message)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


def check_expression(source: str, schema: Schema, path: str = "<expr>") -> ExpressionCheck:
    """Check one expression over the schema's roots alone (no lets); syntax errors raise
    ``ValueError`` as ``parse_expression`` does."""
    expr = parse_expression(source, path)
    checker = _Checker(schema, {path: source})
    found = checker.expr(expr, _Scope())
    let_refs = {k: b.let for k, b in checker.bindings.items() if b.let is not None}
    model = CostModel(checker.types, let_refs, checker.calls)
    return ExpressionCheck(
        expr=expr,
        type=found,
        diagnostics=tuple(sorted_diagnostics(checker.diagnostics)),
        types=checker.types,
        cost=model.expr(expr),
    )
