"""The reference evaluator: the language's meaning, written to be read rather than to be fast.

The planner (``planner.py``) turns every expression into closures and folds, captures and
specialises whatever it can, which is what makes it fast and also what makes it hard to check
by reading. This module states the same semantics as a plain walk over the syntax tree, one
small function per construct, with the checker's side tables (types, name bindings, domain
calls, compiled patterns) as its only guide. Two things rest on it:

- ``explain`` traces a rule with it (``trace.py``), recording the value of every
  sub-expression it evaluates, so the values a trace prints are computed once, here;
- tests hold the fast path equal to it, value for value and error message for error message
  (``tests/lang/test_fast_path_equivalence.py``).

So every behaviour below is the planner's, deliberately, down to the wording of each
``EvalError`` and the span it points at; when the two disagree, one of them has a bug. It
shares no evaluation code with the planner on purpose (even the small operator table is
written again): a primitive the two shared could never be caught disagreeing.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

from policyengine.diagnostics import Span
from policyengine.lang import nodes as n
from policyengine.lang.checker import Binding
from policyengine.lang.runtime import (
    NOT_SCORED,
    PASSED,
    Env,
    EvalError,
    FilterVerdict,
    RuleError,
    ScoreValue,
    format_value,
    type_name,
)
from policyengine.lang.schema import Function
from policyengine.lang.types import (
    DYN,
    NULL,
    ListType,
    MapType,
    Nullable,
    RecordType,
    Type,
    non_null,
)
from policyengine.lang.values import Value
from policyengine.quantity import QuantityError, parse_quantity


class Tables(Protocol):
    """What the reference reads from the checker (a ``CheckResult`` has all of it)."""

    @property
    def types(self) -> Mapping[int, Type]: ...

    @property
    def bindings(self) -> Mapping[int, Binding]: ...

    @property
    def calls(self) -> Mapping[int, Function]: ...

    @property
    def patterns(self) -> Mapping[int, re.Pattern[str]]: ...


# --- the primitive operations --------------------------------------------------------------


class SourceRule(Protocol):
    """What the reference reads of a compiled rule (``CompiledRule`` has it): its name, its
    syntax tree and the checker's tables. Nothing of the evaluators the planner built."""

    @property
    def qualified_name(self) -> str: ...

    @property
    def source(self) -> n.Filter | n.Score | None: ...

    @property
    def checked(self) -> Tables | None: ...


def _divide(a: Value, b: Value) -> Value:
    # A quantity shared out by a count stays an exact quantity; every other quotient is a
    # ratio, which the language calls float.
    if type(a) is Fraction and type(b) is int:
        return a / b
    quotient = a / b
    return float(quotient) if type(quotient) is Fraction else quotient


_OPERATORS: dict[str, Callable[[Value, Value], Value]] = {
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
_ORDERING = frozenset({"<", "<=", ">", ">="})


def _operator_failure(span: Span, op: str, a: Value, b: Value, error: Exception) -> EvalError:
    if isinstance(error, ZeroDivisionError):
        return EvalError(span, "modulo by zero" if op == "%" else "division by zero")
    if isinstance(error, TypeError):
        if op in ("in", "not in"):
            return EvalError(span, f"cannot look for a {type_name(a)} in a {type_name(b)}")
        if op in _ORDERING:
            return EvalError(span, f"cannot compare {type_name(a)} {op} {type_name(b)}")
        return EvalError(span, f"cannot apply '{op}' to {type_name(a)} and {type_name(b)}")
    return EvalError(span, f"'{op}' failed: {error}")


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")
_DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _to_int(value: Value) -> Value:
    # Text that is not a whole number is null, not an error: labels are untrusted input.
    if type(value) is str:
        text = value.strip()
        return int(text) if _WHOLE_NUMBER.fullmatch(text) else None
    return None if value is None else int(value)


def _to_float(value: Value) -> Value:
    if type(value) is str:
        text = value.strip()
        return float(text) if _DECIMAL_NUMBER.fullmatch(text) else None
    return None if value is None else float(value)


def _to_quantity(value: Value) -> Value:
    if value is None or type(value) is Fraction:
        return value
    try:
        return parse_quantity(value)
    except QuantityError:
        if isinstance(value, str):
            return None
        raise TypeError(f"cannot make a quantity of a {type_name(value)}") from None


def _count(items: Value) -> int:
    return sum(1 for item in items if item)


_BUILTINS: dict[str, Callable[[Value], Value]] = {
    "len": len,
    "any": any,
    "all": all,
    "count": _count,
    "sum": sum,
    "min": lambda items: min(items, default=None),
    "max": lambda items: max(items, default=None),
    "int": _to_int,
    "float": _to_float,
    "quantity": _to_quantity,
    "string": format_value,
    "abs": abs,
}
# These stop at the first element that decides them when given a comprehension.
_SHORT_CIRCUIT = frozenset({"any", "all", "count"})


def _builtin_failure(span: Span, name: str, value: Value, error: Exception) -> EvalError:
    if value is None:
        return EvalError(span, f"{name}() of null")
    if isinstance(error, TypeError):
        return EvalError(span, f"{name}() cannot take a {type_name(value)}")
    return EvalError(span, f"{name}() failed: {error}")


_STRING_METHODS: dict[str, Callable[..., Value]] = {
    "startswith": str.startswith,
    "endswith": str.endswith,
    "contains": lambda s, part: part in s,
    "split": lambda s, sep=None: s.split(sep),
    "lower": str.lower,
    "upper": str.upper,
    "trim": str.strip,
}
_MAP_METHODS: dict[str, Callable[..., Value]] = {
    "keys": lambda m: list(m.keys()),
    "values": lambda m: list(m.values()),
}


def _declared_present(t: Type) -> bool:
    """Does a declaration of type ``t`` promise a value (so that null means a broken promise)?"""
    return not isinstance(t, Nullable) and t not in (DYN, NULL)


def _describe(expr: n.Expr) -> str:
    if isinstance(expr, n.Name):
        return expr.id
    if isinstance(expr, n.Attribute):
        return f"{_describe(expr.obj)}.{expr.name}"
    return "the value"


def _read_unknown(obj: Value, name: str) -> Value:
    """An attribute of a value whose record type the checker could not name."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    if obj is None:
        raise TypeError("null")
    return getattr(obj, name, None)


def _list_item(items: Value, position: Value) -> Value:
    if type(position) is not int:
        raise TypeError("a list index is an int")
    return items[position] if 0 <= position < len(items) else None


def _item_of_anything(obj: Value, key: Value) -> Value:
    if isinstance(obj, Mapping):
        return obj.get(key)
    if isinstance(obj, list | tuple | str):
        return _list_item(obj, key)
    raise TypeError("not indexable")


def _index_failure(span: Span, obj: Value, key: Value) -> EvalError:
    if obj is None:
        return EvalError(span, "cannot index null")
    if isinstance(obj, Mapping):
        return EvalError(span, f"a {type_name(key)} cannot be a map key")
    if isinstance(obj, list | tuple | str):
        return EvalError(span, f"a list index is an int, not {type_name(key)}")
    return EvalError(span, f"cannot index a {type_name(obj)}")


# --- the evaluator -------------------------------------------------------------------------


class Evaluation:
    """One evaluation against one ``Env``: the let values computed so far and the current
    item of every comprehension being iterated.

    With ``record`` it also writes the value of every sub-expression it evaluates into that
    dict, keyed by ``id(expr)`` (the last value, for those inside comprehensions), and
    remembers in ``failed`` the innermost expression whose evaluation raised: what a trace
    reports, without evaluating anything a second time.
    """

    def __init__(self, env: Env, tables: Tables, record: dict[int, Value] | None = None):
        self.env = env
        self.tables = tables
        self.record = record
        self.failed: n.Expr | None = None
        self._lets: dict[int, Value] = {}
        self._items: dict[int, Value] = {}

    def value(self, expr: n.Expr) -> Value:
        method = _CONSTRUCTS.get(type(expr))
        if method is None:
            raise EvalError(_span(expr), f"cannot evaluate a {type(expr).__name__}")
        try:
            result = method(self, expr)
        except EvalError:
            if self.failed is None:
                self.failed = expr
            raise
        if self.record is not None:
            self.record[id(expr)] = result
        return result

    def type_of(self, expr: n.Expr) -> Type:
        return self.tables.types.get(id(expr), DYN)

    # leaves -------------------------------------------------------------------------------

    def _literal(self, expr: n.Literal) -> Value:
        return expr.value

    def _name(self, expr: n.Name) -> Value:
        binding = self.tables.bindings.get(id(expr))
        if binding is None:
            raise EvalError(expr.span, f"unknown name {expr.id}")
        if binding.kind == "root":
            return self.env.root(binding.name)
        if binding.kind == "let":
            assert binding.let is not None
            return self._let(binding.let)
        comprehension = binding.comprehension
        assert comprehension is not None
        item = self._items[id(comprehension)]
        if len(comprehension.targets) == 2:
            return item[comprehension.targets.index(binding.name)]
        return item

    def _let(self, let: n.Let) -> Value:
        # Computed at most once per evaluation, as the planner memoises it per Env; a let
        # that fails is not remembered, so every use of it fails the same way.
        key = id(let)
        if key not in self._lets:
            self._lets[key] = self.value(let.expr)
        return self._lets[key]

    # access -------------------------------------------------------------------------------

    def _attribute(self, expr: n.Attribute) -> Value:
        obj = self.value(expr.obj)
        record = non_null(self.type_of(expr.obj))
        name = expr.name
        declared: Type = DYN
        if isinstance(record, RecordType):
            field = record.fields.get(name)
            if field is None:
                raise EvalError(expr.name_span, f"{record} has no attribute {name}")
            try:
                result = field.getter(obj)
            except Exception as error:
                raise _attribute_failure(expr, obj, error) from None
            declared = field.type
        else:
            try:
                result = _read_unknown(obj, name)
            except Exception as error:
                raise _attribute_failure(expr, obj, error) from None
        if result is None and _declared_present(declared):
            raise EvalError(expr.span, f"{_describe(expr)} is null, but it is declared {declared}")
        return result

    def _index(self, expr: n.Index) -> Value:
        obj = self.value(expr.obj)
        key = self.value(expr.index)
        container = non_null(self.type_of(expr.obj))
        try:
            if isinstance(container, MapType):
                # A total map (resources) reads its declared default for a missing key.
                return obj.get(key, container.default)
            if isinstance(container, ListType):
                return _list_item(obj, key)
            return _item_of_anything(obj, key)
        except Exception:
            raise _index_failure(expr.span, obj, key) from None

    # calls --------------------------------------------------------------------------------

    def _argument(self, arg: n.Expr) -> Value:
        # A generator handed to anything but an early-exit aggregate is a plain list.
        if isinstance(arg, n.Comprehension):
            return list(self._elements(arg))
        return self.value(arg)

    def _call(self, expr: n.Call) -> Value:
        name = expr.func
        if name in _BUILTINS:
            return self._builtin(expr)
        function = self.tables.calls.get(id(expr))
        if function is None:
            raise EvalError(expr.span, f"unknown function {name}")
        args = [self._argument(arg) for arg in expr.args]
        try:
            if function.needs_context:
                result = function.impl(self.env.context, *args)
            else:
                result = function.impl(*args)
        except Exception as error:
            raise EvalError(
                expr.span, f"{function.name}() raised {type(error).__name__}: {error}"
            ) from None
        if result is None and _declared_present(function.returns):
            raise EvalError(
                expr.span, f"{function.name}() returned null, but it is declared {function.returns}"
            )
        return result

    def _builtin(self, expr: n.Call) -> Value:
        name, args = expr.func, expr.args
        if name in _SHORT_CIRCUIT and len(args) == 1 and isinstance(args[0], n.Comprehension):
            elements = self._elements(args[0])
            if name == "any":
                return any(elements)
            if name == "all":
                return all(elements)
            return _count(elements)
        if name in ("min", "max") and len(args) > 1:
            values = [self.value(arg) for arg in args]
            try:
                return min(values) if name == "min" else max(values)
            except Exception:
                kinds = " and ".join(sorted({type_name(v) for v in values}))
                raise EvalError(expr.span, f"{name}() cannot order {kinds}") from None
        if len(args) != 1:
            raise EvalError(expr.span, f"{name}() takes one argument, not {len(args)}")
        value = self._argument(args[0])
        try:
            return _BUILTINS[name](value)
        except Exception as error:
            raise _builtin_failure(expr.span, name, value, error) from None

    def _methodcall(self, expr: n.MethodCall) -> Value:
        name = expr.name
        obj = self.value(expr.obj)
        if name == "matches":
            return self._matches(expr, obj)
        args = [self._argument(arg) for arg in expr.args]
        if name in _MAP_METHODS:
            try:
                return _MAP_METHODS[name](obj, *args)
            except Exception:
                raise EvalError(expr.span, f"cannot call {name}() on a {type_name(obj)}") from None
        method = _STRING_METHODS.get(name)
        if method is None:
            raise EvalError(expr.name_span, f"unknown method {name}()")
        try:
            return method(obj, *args)
        except Exception as error:
            if type(obj) is not str:
                raise EvalError(expr.span, f"cannot call {name}() on a {type_name(obj)}") from None
            kinds = ", ".join(type_name(arg) for arg in args)
            raise EvalError(expr.span, f"{name}({kinds}) failed: {error}") from None

    def _matches(self, expr: n.MethodCall, obj: Value) -> bool:
        pattern = self.tables.patterns.get(id(expr))
        if pattern is None:
            literal = expr.args[0] if len(expr.args) == 1 else None
            if not (isinstance(literal, n.Literal) and type(literal.value) is str):
                raise EvalError(expr.span, "the pattern of matches() must be a string literal")
            pattern = re.compile(literal.value)
        try:
            return pattern.search(obj) is not None
        except TypeError:
            raise EvalError(expr.span, f"cannot call matches() on a {type_name(obj)}") from None

    # operators ----------------------------------------------------------------------------

    def _unary(self, expr: n.Unary) -> Value:
        value = self.value(expr.operand)
        if expr.op == "not":
            return not value
        try:
            return -value
        except Exception:
            raise EvalError(expr.span, f"cannot negate a {type_name(value)}") from None

    def _binary(self, expr: n.Binary) -> Value:
        op = expr.op
        left = self.value(expr.left)
        # The right side is evaluated only when the left does not decide.
        if op == "and":
            return self.value(expr.right) if left else left
        if op == "or":
            return left if left else self.value(expr.right)
        if op == "??":
            return self.value(expr.right) if left is None else left
        right = self.value(expr.right)
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        compute = _OPERATORS.get(op)
        if compute is None:
            raise EvalError(expr.op_span, f"unknown operator {op}")
        try:
            return compute(left, right)
        except Exception as error:
            raise _operator_failure(expr.span, op, left, right, error) from None

    def _conditional(self, expr: n.Conditional) -> Value:
        if self.value(expr.cond):
            return self.value(expr.then)
        return self.value(expr.otherwise)

    # collections --------------------------------------------------------------------------

    def _listlit(self, expr: n.ListLit) -> list[Value]:
        return [self.value(item) for item in expr.items]

    def _setlit(self, expr: n.SetLit) -> frozenset[Value]:
        values = [self.value(item) for item in expr.items]
        try:
            return frozenset(values)
        except TypeError:
            raise EvalError(expr.span, "a set holds only strings, numbers and bools") from None

    def _maplit(self, expr: n.MapLit) -> dict[Value, Value]:
        result: dict[Value, Value] = {}
        for key_expr, value_expr in expr.entries:
            key = self.value(key_expr)
            value = self.value(value_expr)
            try:
                result[key] = value
            except TypeError:
                raise EvalError(expr.span, "a map key is a string, a number or a bool") from None
        return result

    def _comprehension(self, expr: n.Comprehension) -> list[Value]:
        return list(self._elements(expr))

    def _elements(self, expr: n.Comprehension) -> Iterator[Value]:
        """The comprehension's elements one by one, each computed only when asked for."""
        for item in self._iterate(expr):
            self._items[id(expr)] = item
            if expr.condition is None or self.value(expr.condition):
                yield self.value(expr.element)

    def _iterate(self, expr: n.Comprehension) -> Iterator[Value]:
        collection = self.value(expr.iterable)
        span = _span(expr.iterable)
        if len(expr.targets) == 2 and isinstance(collection, Mapping):
            yield from collection.items()
            return
        try:
            items = iter(collection)
        except TypeError:
            raise EvalError(span, f"cannot iterate over a {type_name(collection)}") from None
        for item in items:
            if len(expr.targets) == 2 and not (isinstance(item, list | tuple) and len(item) == 2):
                raise EvalError(span, "two targets need a map or a list of pairs")
            yield item

    def _template(self, expr: n.Template) -> str:
        return "".join(
            part if isinstance(part, str) else format_value(self.value(part)) for part in expr.parts
        )


_CONSTRUCTS: dict[type, Callable[[Evaluation, Any], Value]] = {
    n.Literal: Evaluation._literal,
    n.Name: Evaluation._name,
    n.Attribute: Evaluation._attribute,
    n.Index: Evaluation._index,
    n.Call: Evaluation._call,
    n.MethodCall: Evaluation._methodcall,
    n.Unary: Evaluation._unary,
    n.Binary: Evaluation._binary,
    n.Conditional: Evaluation._conditional,
    n.ListLit: Evaluation._listlit,
    n.SetLit: Evaluation._setlit,
    n.MapLit: Evaluation._maplit,
    n.Comprehension: Evaluation._comprehension,
    n.Template: Evaluation._template,
}


def _span(expr: n.Expr) -> Span:
    span: Span = expr.span  # type: ignore[attr-defined]  # every concrete node has one
    return span


def _attribute_failure(expr: n.Attribute, obj: Value, error: Exception) -> EvalError:
    if obj is None:
        return EvalError(expr.span, f"cannot read .{expr.name} of null")
    return EvalError(expr.span, f"reading .{expr.name} failed: {type(error).__name__}: {error}")


def evaluate(expr: n.Expr, env: Env, tables: Tables) -> Value:
    """The value of ``expr`` in ``env``; a runtime error raises ``EvalError`` with its span."""
    return Evaluation(env, tables).value(expr)


# --- rules ---------------------------------------------------------------------------------


class RuleRun(NamedTuple):
    """How a rule's evaluation ended: ``stage`` is ``guard`` (its guard excluded the node),
    ``body`` (the body decided) or ``error``; ``result`` is the verdict or the score."""

    stage: str
    result: FilterVerdict | ScoreValue


def _source_of(rule: SourceRule) -> tuple[n.Filter | n.Score, Tables]:
    if rule.source is None or rule.checked is None:
        raise ValueError(f"rule {rule.qualified_name} was compiled without its syntax tree")
    return rule.source, rule.checked


def _internal(span: Span, error: Exception) -> EvalError:
    return EvalError(span, f"internal error: {type(error).__name__}: {error}")


def _failed(rule: SourceRule, error: EvalError) -> RuleError:
    return RuleError(rule.qualified_name, error.span, error.message)


def run_filter(rule: SourceRule, evaluation: Evaluation) -> RuleRun:
    """Evaluate a filter rule as ``CompiledRule.filter`` does, saying which stage decided."""
    source, _ = _source_of(rule)
    assert isinstance(source, n.Filter)
    span = _span(source.body)
    try:
        if source.guard is not None and not evaluation.value(source.guard):
            return RuleRun("guard", PASSED)
        value = evaluation.value(source.body)
        return RuleRun("body", _filter_verdict(rule, source, evaluation, value))
    except EvalError as error:
        failure = _failed(rule, error)
    except Exception as error:
        failure = _failed(rule, _internal(span, error))
    return RuleRun("error", FilterVerdict(False, (str(failure),), failure))


def _filter_verdict(
    rule: SourceRule, source: n.Filter, evaluation: Evaluation, value: Value
) -> FilterVerdict:
    body_type = non_null(evaluation.type_of(source.body))
    # A body typed as a list of reasons passes when it is empty, or falsy in any other way.
    if isinstance(body_type, ListType) and value is not None and not value:
        return PASSED
    if value is True:
        return PASSED
    if value is False:
        if source.reason is None:
            return FilterVerdict(False, (f"rejected by {rule.qualified_name}",))
        return FilterVerdict(False, (evaluation.value(source.reason),))
    if isinstance(value, list | tuple):
        if not value:
            return PASSED
        return FilterVerdict(False, tuple(v if type(v) is str else format_value(v) for v in value))
    raise EvalError(
        _span(source.body), f"a filter gives a bool or a list of reasons, not {type_name(value)}"
    )


def run_score(rule: SourceRule, evaluation: Evaluation) -> RuleRun:
    """Evaluate a score rule as ``CompiledRule.score`` does, saying which stage decided."""
    source, _ = _source_of(rule)
    assert isinstance(source, n.Score)
    span = _span(source.body)
    try:
        if source.guard is not None and not evaluation.value(source.guard):
            return RuleRun("guard", NOT_SCORED)
        value = evaluation.value(source.body)
        if value is None:
            return RuleRun("body", NOT_SCORED)
        if type(value) is float:
            if value - value != 0:  # NaN or an infinity (x - x is NaN for both)
                raise EvalError(span, f"a score is a finite number, not {format_value(value)}")
            return RuleRun("body", ScoreValue(value))
        if type(value) is int or type(value) is Fraction:
            return RuleRun("body", ScoreValue(float(value)))
        raise EvalError(span, f"a score is a number, not {type_name(value)}")
    except EvalError as error:
        failure = _failed(rule, error)
    except Exception as error:
        failure = _failed(rule, _internal(span, error))
    return RuleRun("error", ScoreValue(0.0, failure))


def reference_filter(rule: SourceRule, env: Env) -> FilterVerdict:
    """What ``rule.filter(env)`` gives, computed by walking the rule's tree."""
    _, tables = _source_of(rule)
    result = run_filter(rule, Evaluation(env, tables)).result
    assert isinstance(result, FilterVerdict)
    return result


def reference_score(rule: SourceRule, env: Env) -> ScoreValue:
    """What ``rule.score(env)`` gives, computed by walking the rule's tree."""
    _, tables = _source_of(rule)
    result = run_score(rule, Evaluation(env, tables)).result
    assert isinstance(result, ScoreValue)
    return result
