"""Planning: each expression becomes a Python closure once, so evaluation never walks a tree.

Evaluation is the scheduler's hot path (every rule, every node, every pod), so everything that
can be decided before a value is seen is decided here: names resolve to root slots, let memo
slots or comprehension slots; record attributes bind their schema getter; domain functions
bind their implementation; regular expressions are compiled; constant subexpressions are
folded; an operand that is constant is captured by value instead of called.

A closure raises ``EvalError`` (with the span of the subexpression that failed) when a value
does not fit — a division by zero, a null where the declaration promised a value, a domain
function that raised. The rule evaluators in ``runtime`` turn that into a ``RuleError``.

The checker's types are used when it has run (``types``, keyed by ``id(node)``); without them
the planner infers just enough itself (which record an attribute is read from, whether an
index is a map lookup or a list position) and leaves the rest to the runtime values.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import repeat
from typing import Any

from policyengine.diagnostics import Diagnostic, Severity, Span
from policyengine.lang import nodes as n
from policyengine.lang import vector
from policyengine.lang.copied import Copied
from policyengine.lang.evaluators import BatchBody, NodeBatch
from policyengine.lang.runtime import ROOTS, Closure, Env, EvalError, format_value, type_name
from policyengine.lang.schema import Function, Schema
from policyengine.lang.types import (
    BOOL,
    DYN,
    FLOAT,
    INT,
    NULL,
    QUANTITY,
    STRING,
    ListType,
    MapType,
    Nullable,
    RecordType,
    SetType,
    Type,
    join,
    non_null,
)
from policyengine.lang.values import Column, Value
from policyengine.quantity import QuantityError, parse_quantity

# The code of every diagnostic the planner itself raises. The checker catches these problems
# first; the planner reports them only when it runs on an unchecked tree.
PLAN_ERROR = "PE900"


@dataclass(slots=True, eq=False)
class Plan:
    """What planning learnt about one expression: its closure and what it depends on.

    ``per_node`` is true when the value may differ between nodes for one pod. ``const`` plans
    carry their ``value`` (and a closure returning it). ``root`` is the slot of a bare root.
    """

    fn: Closure
    type: Type
    per_node: bool
    const: bool = False
    value: Value = None
    root: int | None = None
    # The whole-``NodeBatch`` form of a plan that varies per node, when it has one (a domain
    # call with a batch form, or an expression over such values: ``lang.vector``).
    batch: BatchBody | None = None
    # A domain call whose function tells when it does nothing (``Function.idle``), its
    # arguments bare roots: true when the call gives its empty value at every node.
    idle: Closure | None = None


def _side(plan: Plan) -> vector.Side | None:
    """``plan`` as an operand of a columnar form; None when it varies per node without one."""
    if not plan.per_node:
        return vector.Side(None, plan.fn)
    if plan.batch is None:
        return None
    return vector.Side(plan.batch, plan.fn)


def _columnar(
    make: Callable[..., BatchBody | None], *plans: Plan, **options: Any
) -> BatchBody | None:
    """``make(*sides)`` when some operand varies per node and every such one has a form."""
    if not any(plan.per_node for plan in plans):
        return None
    sides = [_side(plan) for plan in plans]
    if any(side is None for side in sides):
        return None
    return make(*sides, **options)


def batch_form(plan: Plan) -> BatchBody | None:
    """``plan`` over a whole ``NodeBatch``: its columnar form, or its one value on every node
    when it does not vary per node; None when it varies per node without a form."""
    if not plan.per_node:
        return vector.broadcast(plan.fn)
    return plan.batch


def _each(plan: Plan, op: Callable[[Value], Value]) -> BatchBody | None:
    if not plan.per_node or plan.batch is None:
        return None
    return vector.each(plan.batch, op)


class PlanError(Exception):
    def __init__(self, span: Span, message: str, hint: str | None = None):
        super().__init__(message)
        self.diagnostic = Diagnostic(PLAN_ERROR, Severity.ERROR, message, span, hint)


@dataclass(frozen=True, slots=True)
class _Local:
    slot: int
    type: Type
    per_node: bool
    part: int | None = None  # which half of a (key, value) pair, for two targets


@dataclass(frozen=True, slots=True)
class _Scope:
    owner: n.Policy | None  # whose lets are visible
    locals: Mapping[str, _Local]


def _const(value: Value, type_: Type) -> Plan:
    return Plan(lambda env: value, type_, False, True, value)


_LITERAL_TYPES = {
    "int": INT,
    "float": FLOAT,
    "quantity": QUANTITY,
    "string": STRING,
    "bool": BOOL,
    "null": NULL,
}


def _describe(expr: n.Expr) -> str:
    """A short spelling of a name or attribute chain for messages (``widget.weight``)."""
    if isinstance(expr, n.Name):
        return expr.id
    if isinstance(expr, n.Attribute):
        return f"{_describe(expr.obj)}.{expr.name}"
    return "the value"


# --- operators -----------------------------------------------------------------------------


def _divide(a: Value, b: Value) -> Value:
    # A quantity divided by a count stays exact (half of 3 CPUs is 1500m); any other division
    # is a ratio, which the language calls float.
    if type(b) is int and type(a) is Fraction:
        return a / b
    result = a / b
    return float(result) if type(result) is Fraction else result


_ARITHMETIC: dict[str, Callable[[Value, Value], Value]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": _divide,
    "%": operator.mod,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def _binary_error(span: Span, symbol: str, a: Value, b: Value, error: Exception) -> EvalError:
    if isinstance(error, ZeroDivisionError):
        return EvalError(span, "modulo by zero" if symbol == "%" else "division by zero")
    if isinstance(error, TypeError):
        if symbol in ("in", "not in"):
            return EvalError(span, f"cannot look for a {type_name(a)} in a {type_name(b)}")
        if symbol in ("<", "<=", ">", ">="):
            return EvalError(span, f"cannot compare {type_name(a)} {symbol} {type_name(b)}")
        return EvalError(span, f"cannot apply '{symbol}' to {type_name(a)} and {type_name(b)}")
    return EvalError(span, f"'{symbol}' failed: {error}")


def _checked_binary(symbol: str, span: Span, left: Plan, right: Plan) -> Closure:
    op = _ARITHMETIC[symbol]
    lf, rf = left.fn, right.fn
    if right.const:
        b = right.value

        def right_const(env: Env) -> Value:
            a = lf(env)
            try:
                return op(a, b)
            except Exception as error:
                raise _binary_error(span, symbol, a, b, error) from None

        return right_const
    if left.const:
        a = left.value

        def left_const(env: Env) -> Value:
            b = rf(env)
            try:
                return op(a, b)
            except Exception as error:
                raise _binary_error(span, symbol, a, b, error) from None

        return left_const

    def both(env: Env) -> Value:
        a = lf(env)
        b = rf(env)
        try:
            return op(a, b)
        except Exception as error:
            raise _binary_error(span, symbol, a, b, error) from None

    return both


def _arithmetic_type(symbol: str, lt: Type, rt: Type) -> Type:
    lt, rt = non_null(lt), non_null(rt)
    if symbol in ("<", "<=", ">", ">=", "in", "not in"):
        return BOOL
    if symbol == "/":
        return QUANTITY if (lt, rt) == (QUANTITY, INT) else FLOAT
    if symbol == "+" and lt == rt == STRING:
        return STRING
    numeric = {lt, rt}
    if numeric <= {INT}:
        return INT
    if FLOAT in numeric and numeric <= {INT, FLOAT, QUANTITY}:
        return FLOAT
    if QUANTITY in numeric and numeric <= {INT, QUANTITY}:
        return QUANTITY
    return DYN


# --- indexing ------------------------------------------------------------------------------


def _list_at(items: Value, position: Value) -> Value:
    if type(position) is not int:
        raise TypeError("list index")
    return items[position] if 0 <= position < len(items) else None


def _index_any(obj: Value, key: Value) -> Value:
    if isinstance(obj, Mapping):
        return obj.get(key)
    if isinstance(obj, list | tuple | str):
        return _list_at(obj, key)
    raise TypeError("not indexable")


def _index_error(span: Span, obj: Value, key: Value, error: Exception) -> EvalError:
    if obj is None:
        return EvalError(span, "cannot index null")
    if isinstance(obj, Mapping):
        return EvalError(span, f"a {type_name(key)} cannot be a map key")
    if isinstance(obj, list | tuple | str):
        return EvalError(span, f"a list index is an int, not {type_name(key)}")
    return EvalError(span, f"cannot index a {type_name(obj)}")


# --- builtins ------------------------------------------------------------------------------

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _to_int(value: Value) -> int | None:
    if type(value) is str:
        text = value.strip()
        return int(text) if _INT_TEXT.fullmatch(text) else None
    if value is None:
        return None
    return int(value)


def _to_float(value: Value) -> float | None:
    if type(value) is str:
        text = value.strip()
        return float(text) if _FLOAT_TEXT.fullmatch(text) else None
    if value is None:
        return None
    return float(value)


def _to_quantity(value: Value) -> Fraction | None:
    if type(value) is Fraction or value is None:
        return value
    try:
        return parse_quantity(value)
    except QuantityError:
        if isinstance(value, str):
            return None
        raise TypeError(f"cannot make a quantity of a {type_name(value)}") from None


def _count(items: Value) -> int:
    return sum(1 for item in items if item)


def _least(items: Value) -> Value:
    return min(items, default=None)


def _greatest(items: Value) -> Value:
    return max(items, default=None)


# Aggregates that can answer before the end of their generator.
_EARLY_EXIT = frozenset({"any", "all", "count"})

# name → implementation over one evaluated argument
_UNARY_BUILTINS: dict[str, Callable[[Value], Value]] = {
    "len": len,
    "any": any,
    "all": all,
    "count": _count,
    "sum": sum,
    "min": _least,
    "max": _greatest,
    "int": _to_int,
    "float": _to_float,
    "quantity": _to_quantity,
    "string": format_value,
    "abs": abs,
}


def _element_type(t: Type) -> Type:
    t = non_null(t)
    if isinstance(t, ListType | SetType):
        return t.element
    if isinstance(t, MapType):
        return t.key
    return DYN


def _builtin_type(name: str, args: list[Plan]) -> Type:
    if name in ("len", "count"):
        return INT
    if name in ("any", "all"):
        return BOOL
    if name == "int":
        return INT
    if name == "float":
        return FLOAT
    if name == "quantity":
        return QUANTITY
    if name == "string":
        return STRING
    if name == "abs":
        return non_null(args[0].type)
    if len(args) > 1:  # min / max of several values
        joined = args[0].type
        for arg in args[1:]:
            joined = join(joined, arg.type) or DYN
        return joined
    element = _element_type(args[0].type)
    if name == "sum":
        return element
    return Nullable(element) if element != DYN else DYN


# --- methods -------------------------------------------------------------------------------

_STRING_METHODS: dict[str, tuple[tuple[int, ...], Callable[..., Value], Type]] = {
    "startswith": ((1,), str.startswith, BOOL),
    "endswith": ((1,), str.endswith, BOOL),
    "contains": ((1,), lambda s, part: part in s, BOOL),
    "split": ((0, 1), lambda s, sep=None: s.split(sep), ListType(STRING)),
    "lower": ((0,), str.lower, STRING),
    "upper": ((0,), str.upper, STRING),
    "trim": ((0,), str.strip, STRING),
}
_MAP_METHODS: dict[str, Callable[[Value], Value]] = {
    "keys": lambda m: list(m.keys()),
    "values": lambda m: list(m.values()),
}


# --- the planner ---------------------------------------------------------------------------


class Planner:
    """Plans expressions against one schema; lets are planned once and shared by all rules.

    One planner per program: it hands out the memo slots of lets and the slots of
    comprehension variables, which must be unique within the program.
    """

    def __init__(
        self,
        schema: Schema,
        types: Mapping[int, Type] | None = None,
        patterns: Mapping[int, re.Pattern[str]] | None = None,
    ):
        self.schema = schema
        ROOTS.register(schema)
        self._types: Mapping[int, Type] = types or {}
        # The checker compiles every matches() pattern to validate it; reuse its objects.
        self._patterns: Mapping[int, re.Pattern[str]] = patterns or {}
        self._let_decls: dict[int, dict[str, n.Let]] = {}
        self._lets: dict[tuple[int, str], Plan] = {}
        self._planning: set[tuple[int, str]] = set()
        self._next_let = 0
        self._next_local = 0
        self._dispatch: dict[type, Callable[[Any, _Scope], Plan]] = {
            n.Literal: self._literal,
            n.Name: self._name,
            n.Attribute: self._attribute,
            n.Index: self._index,
            n.Call: self._call,
            n.MethodCall: self._method,
            n.Unary: self._unary,
            n.Binary: self._binary,
            n.Conditional: self._conditional,
            n.ListLit: self._list,
            n.SetLit: self._set,
            n.MapLit: self._map,
            n.Comprehension: self._comprehension,
            n.Template: self._template,
        }

    # public ------------------------------------------------------------------------------

    def expression(self, expr: n.Expr, owner: n.Policy | None = None) -> Plan:
        """The plan of ``expr`` with the lets of ``owner`` (a policy or library) in scope."""
        return self._plan(expr, _Scope(owner, {}))

    def template(self, template: n.Template, owner: n.Policy | None = None) -> Plan:
        return self._plan(template, _Scope(owner, {}))

    def let_plan(self, owner: n.Policy, name: str) -> Plan | None:
        """The plan of ``owner``'s let ``name`` (None: no such let), as a rule reading it
        evaluates it."""
        return self._let(owner, name)

    @property
    def let_count(self) -> int:
        return self._next_let

    # dispatch ----------------------------------------------------------------------------

    def _plan(self, expr: n.Expr, scope: _Scope) -> Plan:
        method = self._dispatch.get(type(expr))
        if method is None:
            raise PlanError(
                getattr(expr, "span", Span("<unknown>", 1, 1, 1, 2)),
                f"cannot plan a {type(expr).__name__}",
            )
        plan = method(expr, scope)
        checked = self._types.get(id(expr))
        if checked is not None:
            plan.type = checked
        return plan

    @staticmethod
    def _fold(plan: Plan, *children: Plan) -> Plan:
        """A pure operation on constants is computed now; if it fails, at run time (with its span)."""
        if not all(child.const for child in children):
            return plan
        try:
            value = plan.fn(None)  # type: ignore[arg-type]  # constants never read the env
        except Exception:
            return plan
        return _const(value, plan.type)

    # leaves ------------------------------------------------------------------------------

    def _literal(self, expr: n.Literal, scope: _Scope) -> Plan:
        return _const(expr.value, _LITERAL_TYPES.get(expr.kind, DYN))

    def _name(self, expr: n.Name, scope: _Scope) -> Plan:
        local = scope.locals.get(expr.id)
        if local is not None:
            slot, part = local.slot, local.part
            if part is None:
                return Plan(lambda env: env.locals[slot], local.type, local.per_node)
            return Plan(lambda env: env.locals[slot][part], local.type, local.per_node)
        let = self._let(scope.owner, expr.id)
        if let is not None:
            return let
        root = self.schema.roots.get(expr.id)
        if root is not None:
            index = ROOTS.slot(expr.id)
            return Plan(
                lambda env: env.values[index],
                root.type,
                root.varies_per_node,
                root=index,
                batch=vector.root(index) if root.varies_per_node else None,
            )
        raise PlanError(expr.span, f"unknown name {expr.id}")

    def _let(self, owner: n.Policy | None, name: str) -> Plan | None:
        if owner is None:
            return None
        decls = self._let_decls.get(id(owner))
        if decls is None:
            decls = {}
            for decl in owner.lets:
                decls.setdefault(decl.name, decl)
            self._let_decls[id(owner)] = decls
        let = decls.get(name)
        if let is None:
            return None
        key = (id(owner), name)
        done = self._lets.get(key)
        if done is None:
            if key in self._planning:
                raise PlanError(let.name_span, f"let {name} refers to itself")
            self._planning.add(key)
            try:
                inner = self._plan(let.expr, _Scope(owner, {}))
            finally:
                self._planning.discard(key)
            done = inner if inner.const else self._memoised(inner)
            self._lets[key] = done
        # A fresh Plan per reference: _plan may set the checker's type on it.
        return Plan(done.fn, done.type, done.per_node, done.const, done.value, batch=done.batch)

    def _memoised(self, inner: Plan) -> Plan:
        slot = self._next_let
        self._next_let += 1
        compute = inner.fn
        if inner.per_node:

            def per_node_let(env: Env) -> Value:
                memo = env.memo
                try:
                    return memo[slot]
                except KeyError:
                    value = memo[slot] = compute(env)
                    return value

            return Plan(per_node_let, inner.type, True, batch=inner.batch)

        def per_pod_let(env: Env) -> Value:
            shared = env.shared
            try:
                return shared[slot]
            except KeyError:
                value = shared[slot] = compute(env)
                return value

        return Plan(per_pod_let, inner.type, False)

    # access ------------------------------------------------------------------------------

    def _attribute(self, expr: n.Attribute, scope: _Scope) -> Plan:
        obj = self._plan(expr.obj, scope)
        record = non_null(obj.type)
        span, name = expr.span, expr.name
        if isinstance(record, RecordType):
            field = record.fields.get(name)
            if field is None:
                raise PlanError(expr.name_span, f"{record} has no attribute {name}")
            getter, field_type = field.getter, field.type
        elif record == DYN:
            getter, field_type = _dyn_getter(name), DYN
        else:
            raise PlanError(expr.name_span, f"a {record} has no attribute {name}")
        # A declared non-null field that reads null is a schema broken promise: say so here,
        # rather than with a puzzling message in whatever operator meets the null later.
        must_exist = not isinstance(field_type, Nullable) and field_type not in (DYN, NULL)

        def missing() -> str:  # spelled only when it happens: most plans never fail
            return f"{_describe(expr)} is null, but it is declared {field_type}"

        def failure(value: Value, error: Exception) -> EvalError:
            if value is None:
                return EvalError(span, f"cannot read .{name} of null")
            return EvalError(span, f"reading .{name} failed: {type(error).__name__}: {error}")

        if obj.root is not None:
            index = obj.root

            def root_attribute(env: Env) -> Value:
                value = env.values[index]
                try:
                    result = getter(value)
                except Exception as error:
                    raise failure(value, error) from None
                if result is None and must_exist:
                    raise EvalError(span, missing())
                return result

            return Plan(
                root_attribute,
                field_type,
                obj.per_node,
                batch=vector.attribute(obj.batch, getter, must_exist)
                if obj.per_node and obj.batch is not None
                else None,
            )
        of = obj.fn

        def attribute(env: Env) -> Value:
            value = of(env)
            try:
                result = getter(value)
            except Exception as error:
                raise failure(value, error) from None
            if result is None and must_exist:
                raise EvalError(span, missing())
            return result

        return Plan(
            attribute,
            field_type,
            obj.per_node,
            batch=vector.attribute(obj.batch, getter, must_exist)
            if obj.per_node and obj.batch is not None
            else None,
        )

    def _index(self, expr: n.Index, scope: _Scope) -> Plan:
        obj = self._plan(expr.obj, scope)
        key = self._plan(expr.index, scope)
        container = non_null(obj.type)
        span = expr.span
        of, kf = obj.fn, key.fn
        result_type: Type
        lookup: Callable[[Value, Value], Value]
        if isinstance(container, MapType):
            # A total map (resources) reads its default for a missing key; others read null.
            missing = container.default

            def lookup(o: Value, k: Value, missing: Value = missing) -> Value:
                return o.get(k, missing)

            result_type = container.value if missing is not None else Nullable(container.value)
            if key.const:
                k = key.value

                def map_get_const(env: Env) -> Value:
                    o = of(env)
                    try:
                        return o.get(k, missing)
                    except Exception as error:
                        raise _index_error(span, o, k, error) from None

                fn: Closure = map_get_const
            else:

                def map_get(env: Env) -> Value:
                    o = of(env)
                    k = kf(env)
                    try:
                        return o.get(k, missing)
                    except Exception as error:
                        raise _index_error(span, o, k, error) from None

                fn = map_get
        else:
            at = _list_at if isinstance(container, ListType) else _index_any
            lookup = at
            result_type = Nullable(container.element) if isinstance(container, ListType) else DYN

            def index(env: Env) -> Value:
                o = of(env)
                k = kf(env)
                try:
                    return at(o, k)
                except Exception as error:
                    raise _index_error(span, o, k, error) from None

            fn = index
        plan = Plan(
            fn,
            result_type,
            obj.per_node or key.per_node,
            batch=_columnar(vector.binary, obj, key, op=lookup),
        )
        return self._fold(plan, obj, key)

    # calls -------------------------------------------------------------------------------

    def _args(self, args: tuple[n.Expr, ...], scope: _Scope) -> list[Plan]:
        # A generator passed to anything but an aggregate is materialised as a list.
        return [
            self._comprehension(arg, scope)
            if isinstance(arg, n.Comprehension)
            else self._plan(arg, scope)
            for arg in args
        ]

    def _call(self, expr: n.Call, scope: _Scope) -> Plan:
        if expr.func in _UNARY_BUILTINS:
            return self._builtin(expr, scope)
        function = self.schema.functions.get(expr.func)
        if function is None:
            raise PlanError(expr.func_span, f"unknown function {expr.func}")
        return self._domain(expr, function, scope)

    def _builtin(self, expr: n.Call, scope: _Scope) -> Plan:
        name, span = expr.func, expr.span
        if (
            len(expr.args) == 1
            and isinstance(expr.args[0], n.Comprehension)
            and name in _EARLY_EXIT
        ):
            return self._short_circuit(name, expr.args[0], scope)
        args = self._args(expr.args, scope)
        if not args or (len(args) > 1 and name not in ("min", "max")):
            raise PlanError(expr.func_span, f"{name}() takes one argument, not {len(args)}")
        per_node = any(arg.per_node for arg in args)
        result_type = _builtin_type(name, args)
        if len(args) > 1:
            pick = min if name == "min" else max
            fns = tuple(arg.fn for arg in args)

            def several(env: Env) -> Value:
                values = [f(env) for f in fns]
                try:
                    return pick(values)
                except Exception:
                    kinds = " and ".join(sorted({type_name(v) for v in values}))
                    raise EvalError(span, f"{name}() cannot order {kinds}") from None

            return self._fold(Plan(several, result_type, per_node), *args)
        impl = _UNARY_BUILTINS[name]
        af = args[0].fn
        if name in _EARLY_EXIT and isinstance(expr.args[0], n.Comprehension):
            column = None
        else:
            column = _each(args[0], impl)

        def builtin(env: Env) -> Value:
            value = af(env)
            try:
                return impl(value)
            except Exception as error:
                raise _builtin_error(span, name, value, error) from None

        return self._fold(Plan(builtin, result_type, per_node, batch=column), args[0])

    def _short_circuit(self, name: str, generator: n.Comprehension, scope: _Scope) -> Plan:
        """``any``/``all``/``count`` over a generator: stop as soon as the answer is known."""
        source, inner, slot, start = self._loop(generator, scope)
        element = self._plan(generator.element, inner)
        condition = (
            self._plan(generator.condition, inner) if generator.condition is not None else None
        )
        items, ef = source.fn, element.fn
        cf = condition.fn if condition is not None else _always
        per_node = source.per_node or element.per_node or bool(condition and condition.per_node)
        over: Callable[[Env, Value], Value]
        if name == "any":

            def any_of(env: Env, collection: Value) -> bool:
                names = env.locals
                for item in start(collection):
                    names[slot] = item
                    if cf(env) and ef(env):
                        return True
                return False

            over, result_type = any_of, BOOL
        elif name == "all":

            def all_of(env: Env, collection: Value) -> bool:
                names = env.locals
                for item in start(collection):
                    names[slot] = item
                    if cf(env) and not ef(env):
                        return False
                return True

            over, result_type = all_of, BOOL
        else:

            def count_of(env: Env, collection: Value) -> int:
                names = env.locals
                total = 0
                for item in start(collection):
                    names[slot] = item
                    if cf(env) and ef(env):
                        total += 1
                return total

            over, result_type = count_of, INT
        return Plan(
            lambda env: over(env, items(env)),
            result_type,
            per_node,
            batch=self._by_distinct_collection(generator, source, inner, slot, over),
        )

    def _by_distinct_collection(
        self,
        loop: n.Comprehension,
        source: Plan,
        inner: _Scope,
        slot: int,
        over: Callable[[Env, Value], Value],
    ) -> BatchBody | None:
        """The columnar form of a loop over a collection that varies per node, when its
        element and condition read nothing else that does: ``over`` once per distinct
        collection of the column (a builtin hands nodes alike one shared list: resource
        shortages, a node's taints). Planned again with the loop's targets as pod-level
        values, the element and condition tell whether they read the node otherwise."""
        if not source.per_node or source.batch is None:
            return None
        probe = _Scope(
            inner.owner,
            {
                name: replace(local, per_node=False) if local.slot == slot else local
                for name, local in inner.locals.items()
            },
        )
        parts = [loop.element] if loop.condition is None else [loop.element, loop.condition]
        if any(self._plan(part, probe).per_node for part in parts):
            return None
        return vector.per_distinct(source.batch, over)

    def _domain(self, expr: n.Call, function: Function, scope: _Scope) -> Plan:
        args = self._args(expr.args, scope)
        if len(args) != len(function.params):
            raise PlanError(
                expr.func_span,
                f"{function.name}() takes {len(function.params)} arguments, not {len(args)}",
            )
        impl, span, name = function.impl, expr.span, function.name
        returns = function.returns
        must_exist = not isinstance(returns, Nullable) and returns not in (DYN, NULL)
        fns = tuple(arg.fn for arg in args)
        with_context = function.needs_context

        def call(env: Env) -> Value:
            values = [f(env) for f in fns]
            try:
                result = impl(env.context, *values) if with_context else impl(*values)
            except Exception as error:
                raise EvalError(span, f"{name}() raised {type(error).__name__}: {error}") from None
            if result is None and must_exist:
                raise EvalError(span, f"{name}() returned null, but it is declared {returns}")
            return result

        # The common shapes skip building an argument list on every call.
        if len(fns) == 2 and not with_context:
            f0, f1 = fns

            def call2(env: Env) -> Value:
                a, b = f0(env), f1(env)
                try:
                    result = impl(a, b)
                except Exception as error:
                    raise EvalError(
                        span, f"{name}() raised {type(error).__name__}: {error}"
                    ) from None
                if result is None and must_exist:
                    raise EvalError(span, f"{name}() returned null, but it is declared {returns}")
                return result

            call = call2
        elif len(fns) == 1:
            f0 = fns[0]

            def call1(env: Env) -> Value:
                a = f0(env)
                try:
                    result = impl(env.context, a) if with_context else impl(a)
                except Exception as error:
                    raise EvalError(
                        span, f"{name}() raised {type(error).__name__}: {error}"
                    ) from None
                if result is None and must_exist:
                    raise EvalError(span, f"{name}() returned null, but it is declared {returns}")
                return result

            call = call1
        per_node = function.varies_per_node or any(arg.per_node for arg in args)
        # Domain functions are never folded: they may read the context or be costly to run
        # at compile time for no benefit.
        return Plan(
            call,
            returns,
            per_node,
            batch=_batched(function, args, must_exist),
            idle=_idle_call(function, args),
        )

    def _method(self, expr: n.MethodCall, scope: _Scope) -> Plan:
        obj = self._plan(expr.obj, scope)
        name, span = expr.name, expr.span
        if name == "matches":
            return self._matches(expr, obj, scope)
        args = self._args(expr.args, scope)
        of = obj.fn
        if name in _MAP_METHODS:
            if args:
                raise PlanError(expr.name_span, f"{name}() takes no arguments")
            impl = _MAP_METHODS[name]
            container = non_null(obj.type)
            result_type: Type = DYN
            if isinstance(container, MapType):
                result_type = ListType(container.key if name == "keys" else container.value)

            def map_method(env: Env) -> Value:
                o = of(env)
                try:
                    return impl(o)
                except Exception:
                    raise EvalError(span, f"cannot call {name}() on a {type_name(o)}") from None

            return self._fold(
                Plan(map_method, result_type, obj.per_node, batch=_each(obj, impl)), obj
            )
        spec = _STRING_METHODS.get(name)
        if spec is None:
            raise PlanError(expr.name_span, f"unknown method {name}()")
        arities, impl, result_type = spec
        if len(args) not in arities:
            raise PlanError(
                expr.name_span,
                f"{name}() takes {' or '.join(map(str, arities))} arguments, not {len(args)}",
            )
        per_node = obj.per_node or any(arg.per_node for arg in args)

        def failure(o: Value, values: list[Value], error: Exception) -> EvalError:
            if type(o) is not str:
                return EvalError(span, f"cannot call {name}() on a {type_name(o)}")
            kinds = ", ".join(type_name(v) for v in values)
            return EvalError(span, f"{name}({kinds}) failed: {error}")

        if not args:

            def method0(env: Env) -> Value:
                o = of(env)
                try:
                    return impl(o)
                except Exception as error:
                    raise failure(o, [], error) from None

            return self._fold(Plan(method0, result_type, per_node, batch=_each(obj, impl)), obj)
        af = args[0].fn
        if args[0].const:
            a = args[0].value

            def method_const(env: Env) -> Value:
                o = of(env)
                try:
                    return impl(o, a)
                except Exception as error:
                    raise failure(o, [a], error) from None

            with_arg = _with_argument(impl, a)
            return self._fold(
                Plan(method_const, result_type, per_node, batch=_each(obj, with_arg)), obj
            )

        def method1(env: Env) -> Value:
            o = of(env)
            a = af(env)
            try:
                return impl(o, a)
            except Exception as error:
                raise failure(o, [a], error) from None

        return self._fold(
            Plan(
                method1,
                result_type,
                per_node,
                batch=_columnar(vector.binary, obj, args[0], op=impl),
            ),
            obj,
            args[0],
        )

    def _matches(self, expr: n.MethodCall, obj: Plan, scope: _Scope) -> Plan:
        if len(expr.args) != 1:
            raise PlanError(expr.name_span, f"matches() takes one argument, not {len(expr.args)}")
        pattern = self._plan(expr.args[0], scope)
        if not (pattern.const and type(pattern.value) is str):
            raise PlanError(
                getattr(expr.args[0], "span", expr.span),
                "the pattern of matches() must be a string literal",
                "patterns are compiled once, when the policy is loaded",
            )
        try:
            compiled = self._patterns.get(id(expr)) or re.compile(pattern.value)
        except re.error as error:
            raise PlanError(
                getattr(expr.args[0], "span", expr.span), f"invalid regular expression: {error}"
            ) from None
        search, of, span = compiled.search, obj.fn, expr.span

        def matches(env: Env) -> bool:
            o = of(env)
            try:
                return search(o) is not None
            except TypeError:
                raise EvalError(span, f"cannot call matches() on a {type_name(o)}") from None

        def found(o: Value) -> bool:
            return search(o) is not None

        return self._fold(Plan(matches, BOOL, obj.per_node, batch=_each(obj, found)), obj)

    # operators ---------------------------------------------------------------------------

    def _unary(self, expr: n.Unary, scope: _Scope) -> Plan:
        operand = self._plan(expr.operand, scope)
        f, span = operand.fn, expr.span
        if expr.op == "not":
            return self._fold(
                Plan(
                    lambda env: not f(env),
                    BOOL,
                    operand.per_node,
                    batch=_each(operand, operator.not_),
                ),
                operand,
            )

        def negate(env: Env) -> Value:
            value = f(env)
            try:
                return -value
            except Exception:
                raise EvalError(span, f"cannot negate a {type_name(value)}") from None

        return self._fold(
            Plan(
                negate,
                non_null(operand.type),
                operand.per_node,
                batch=_each(operand, operator.neg),
            ),
            operand,
        )

    def _binary(self, expr: n.Binary, scope: _Scope) -> Plan:
        op = expr.op
        left = self._plan(expr.left, scope)
        right = self._plan(expr.right, scope)
        per_node = left.per_node or right.per_node
        lf, rf = left.fn, right.fn
        if op in ("and", "or"):
            if left.const:
                # The right side runs only when the left does not decide: fold that away.
                decided = (not left.value) if op == "and" else bool(left.value)
                if decided:
                    return _const(op == "or", BOOL)
                return right
            column = _columnar(vector.conjunction, left, right, is_and=op == "and")
            if op == "and":
                return self._fold(
                    Plan(lambda env: lf(env) and rf(env), BOOL, per_node, batch=column),
                    left,
                    right,
                )
            return self._fold(
                Plan(lambda env: lf(env) or rf(env), BOOL, per_node, batch=column), left, right
            )
        if op == "??":
            result_type = join(non_null(left.type), right.type) or DYN
            if left.const:
                return right if left.value is None else left
            if right.const:
                default = right.value

                def coalesce_const(env: Env) -> Value:
                    value = lf(env)
                    return default if value is None else value

                return Plan(
                    coalesce_const,
                    result_type,
                    left.per_node,
                    batch=_columnar(vector.coalesce, left, right),
                )

            def coalesce(env: Env) -> Value:
                value = lf(env)
                return rf(env) if value is None else value

            return Plan(
                coalesce, result_type, per_node, batch=_columnar(vector.coalesce, left, right)
            )
        if op in ("==", "!="):
            eq = op == "=="
            if right.const:
                c = right.value
                fn: Closure = (lambda env: lf(env) == c) if eq else (lambda env: lf(env) != c)
            elif left.const:
                c = left.value
                fn = (lambda env: c == rf(env)) if eq else (lambda env: c != rf(env))
            else:
                fn = (lambda env: lf(env) == rf(env)) if eq else (lambda env: lf(env) != rf(env))
            compare = operator.eq if eq else operator.ne
            column = _columnar(vector.binary, left, right, op=compare, symbol=op)
            return self._fold(Plan(fn, BOOL, per_node, batch=column), left, right)
        if op in ("in", "not in") and right.const and not left.const:
            members = _as_member_set(right.value)
            if members is not None:
                test = _member_test(lf, members, op, expr.span, right.value)
                positive = op == "in"

                def member(value: Value) -> bool:
                    # An unhashable value raises here: the closures then decide node by node.
                    return (value in members) is positive

                return Plan(test, BOOL, left.per_node, batch=_each(left, member))
        if op not in _ARITHMETIC:
            raise PlanError(expr.op_span, f"unknown operator {op}")
        plan = Plan(
            _checked_binary(op, expr.span, left, right),
            _arithmetic_type(op, left.type, right.type),
            per_node,
            batch=_columnar(vector.binary, left, right, op=_ARITHMETIC[op], symbol=op),
        )
        return self._fold(plan, left, right)

    def _conditional(self, expr: n.Conditional, scope: _Scope) -> Plan:
        cond = self._plan(expr.cond, scope)
        then = self._plan(expr.then, scope)
        otherwise = self._plan(expr.otherwise, scope)
        if cond.const:
            return then if cond.value else otherwise
        cf, tf, of = cond.fn, then.fn, otherwise.fn
        return Plan(
            lambda env: tf(env) if cf(env) else of(env),
            join(then.type, otherwise.type) or DYN,
            cond.per_node or then.per_node or otherwise.per_node,
            batch=_columnar(vector.conditional, cond, then, otherwise),
        )

    # collections -------------------------------------------------------------------------

    def _list(self, expr: n.ListLit, scope: _Scope) -> Plan:
        items = [self._plan(item, scope) for item in expr.items]
        fns = tuple(item.fn for item in items)
        element: Type | None = items[0].type if items else DYN
        for item in items[1:]:
            element = join(element, item.type) if element is not None else None
        plan = Plan(
            lambda env: [f(env) for f in fns],
            ListType(element or DYN),
            any(item.per_node for item in items),
        )
        return self._fold(plan, *items)

    def _set(self, expr: n.SetLit, scope: _Scope) -> Plan:
        items = [self._plan(item, scope) for item in expr.items]
        fns, span = tuple(item.fn for item in items), expr.span

        def make_set(env: Env) -> frozenset[Value]:
            values = [f(env) for f in fns]
            try:
                return frozenset(values)
            except TypeError:
                raise EvalError(span, "a set holds only strings, numbers and bools") from None

        element = items[0].type if items else DYN
        plan = Plan(make_set, SetType(element), any(item.per_node for item in items))
        return self._fold(plan, *items)

    def _map(self, expr: n.MapLit, scope: _Scope) -> Plan:
        entries = [(self._plan(k, scope), self._plan(v, scope)) for k, v in expr.entries]
        fns, span = tuple((k.fn, v.fn) for k, v in entries), expr.span

        def make_map(env: Env) -> dict[Value, Value]:
            try:
                return {kf(env): vf(env) for kf, vf in fns}
            except TypeError:
                raise EvalError(span, "a map key is a string, a number or a bool") from None

        key_type = entries[0][0].type if entries else DYN
        value_type = entries[0][1].type if entries else DYN
        flat = [plan for entry in entries for plan in entry]
        plan = Plan(make_map, MapType(key_type, value_type), any(p.per_node for p in flat))
        return self._fold(plan, *flat)

    def _loop(
        self, expr: n.Comprehension, scope: _Scope
    ) -> tuple[Plan, _Scope, int, Callable[[Value], Iterator[Value]]]:
        """Plan the iterable; bind the targets in a new scope to one fresh slot.

        The slot holds the current item; with two targets it holds a (key, value) pair and
        each target reads its half, so every loop stores exactly one value per item.
        ``start`` turns the collection into the iterator of items, or raises ``EvalError``.
        """
        source = self._plan(expr.iterable, scope)
        container = non_null(source.type)
        slot = self._next_local
        self._next_local += 1
        names = dict(scope.locals)
        span = getattr(expr.iterable, "span", expr.span)
        if len(expr.targets) == 2:
            if isinstance(container, MapType):
                types: tuple[Type, ...] = (container.key, container.value)
            else:
                types = (DYN, DYN)
            for part, (target, type_) in enumerate(zip(expr.targets, types, strict=True)):
                names[target] = _Local(slot, type_, source.per_node, part)
            start = _pairs_of(span)
        else:
            names[expr.targets[0]] = _Local(slot, _element_type(container), source.per_node)
            start = _items_of(span)
        return source, _Scope(scope.owner, names), slot, start

    def _comprehension(self, expr: n.Comprehension, scope: _Scope) -> Plan:
        source, inner, slot, start = self._loop(expr, scope)
        element = self._plan(expr.element, inner)
        condition = self._plan(expr.condition, inner) if expr.condition is not None else None
        items, ef = source.fn, element.fn
        per_node = source.per_node or element.per_node or bool(condition and condition.per_node)
        cf = condition.fn if condition is not None else _always

        def over(env: Env, collection: Value) -> list[Value]:
            names = env.locals
            out = []
            for item in start(collection):
                names[slot] = item
                if cf(env):
                    out.append(ef(env))
            return out

        return Plan(
            lambda env: over(env, items(env)),
            ListType(element.type),
            per_node,
            batch=self._by_distinct_collection(expr, source, inner, slot, over),
        )

    def _template(self, expr: n.Template, scope: _Scope) -> Plan:
        parts = [
            _const(part, STRING) if isinstance(part, str) else self._plan(part, scope)
            for part in expr.parts
        ]
        if all(part.const for part in parts):
            return _const("".join(format_value(part.value) for part in parts), STRING)
        fns = tuple(part.fn for part in parts)
        return Plan(
            lambda env: "".join([format_value(f(env)) for f in fns]),
            STRING,
            any(part.per_node for part in parts),
            batch=_columnar(vector.template, *parts),
        )


# --- helpers used by the plans above -------------------------------------------------------


def _distinct(results: Column) -> Sequence[Any]:
    """The results to look at once each: a ``Copied``'s few, or every one."""
    return results.results if type(results) is Copied else results


def _batched(function: Function, args: list[Plan], must_exist: bool) -> BatchBody | None:
    """The whole-batch form of a domain call, when the function has one and every argument
    is either pod-level (evaluated once) or a bare root (read from the batch's column)."""
    batch = function.batch
    if batch is None or not all(arg.root is not None or not arg.per_node for arg in args):
        return None
    specs = tuple((arg.fn, arg.root if arg.per_node else None) for arg in args)
    with_context = function.needs_context

    def run(nodes: NodeBatch) -> Column:
        env = nodes.env
        values = []
        for fn, slot in specs:
            if slot is None:
                values.append(fn(env))
                continue
            column = nodes.column(slot)
            if column is None:
                raise LookupError("the batch has no column for this root")
            values.append(column)
        results = batch(env.context, *values) if with_context else batch(*values)
        if len(results) != nodes.size or (
            must_exist
            and not isinstance(results, vector.Numbers)  # numbers, never null
            and any(map(operator.is_, _distinct(results), repeat(None)))
        ):
            # The node-by-node path reports these, with the call's span.
            raise ValueError("the batched call did not give one value per node")
        return results

    return run


def _idle_call(function: Function, args: list[Plan]) -> Closure | None:
    """``Plan.idle`` of a call: the function's own test, when evaluating the arguments cannot
    fail (bare roots) and its empty value is one a rule can read (a list, or null)."""
    test = function.idle
    if test is None or not function.needs_context:
        return None
    if not isinstance(function.returns, ListType | Nullable):
        return None
    if any(arg.root is None for arg in args):
        return None

    def idle(env: Env) -> bool:
        return bool(test(env.context))

    return idle


def _always(env: Env) -> bool:
    return True


def _with_argument(impl: Callable[..., Value], argument: Value) -> Callable[[Value], Value]:
    def call(value: Value) -> Value:
        return impl(value, argument)

    return call


def _items_of(span: Span) -> Callable[[Value], Iterator[Value]]:
    def start(collection: Value) -> Iterator[Value]:
        try:
            return iter(collection)
        except TypeError:
            raise EvalError(span, f"cannot iterate over a {type_name(collection)}") from None

    return start


def _pairs_of(span: Span) -> Callable[[Value], Iterator[Value]]:
    def checked(items: Value) -> Iterator[Value]:
        for item in items:
            if not (isinstance(item, list | tuple) and len(item) == 2):
                raise EvalError(span, "two targets need a map or a list of pairs")
            yield item

    def start(collection: Value) -> Iterator[Value]:
        if isinstance(collection, Mapping):
            return iter(collection.items())
        try:
            return checked(iter(collection))
        except TypeError:
            raise EvalError(span, f"cannot iterate over a {type_name(collection)}") from None

    return start


def _dyn_getter(name: str) -> Callable[[Value], Value]:
    """Reading an attribute of a value whose record type is unknown until run time."""

    def getter(obj: Value) -> Value:
        if isinstance(obj, Mapping):
            return obj.get(name)
        if obj is None:
            raise TypeError("null")
        return getattr(obj, name, None)

    return getter


def _as_member_set(value: Value) -> frozenset[Value] | None:
    """A constant list or set searched with ``in`` becomes a frozenset (hashing beats scanning)."""
    if not isinstance(value, list | tuple | frozenset):
        return None
    try:
        return frozenset(value)
    except TypeError:
        return None


def _member_test(
    lf: Closure, members: frozenset[Value], op: str, span: Span, container: Value
) -> Closure:
    positive = op == "in"

    def member(env: Env) -> bool:
        value = lf(env)
        try:
            found = value in members
        except TypeError as error:
            # An unhashable value equals no hashable member of a list; but looking for it in
            # a set fails, as it does when the set is not a constant.
            if type(container) is frozenset:
                raise _binary_error(span, op, value, container, error) from None
            found = False
        return found if positive else not found

    return member


def _builtin_error(span: Span, name: str, value: Value, error: Exception) -> EvalError:
    if value is None:
        return EvalError(span, f"{name}() of null")
    if isinstance(error, TypeError):
        return EvalError(span, f"{name}() cannot take a {type_name(value)}")
    return EvalError(span, f"{name}() failed: {error}")
