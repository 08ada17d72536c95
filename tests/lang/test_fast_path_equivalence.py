"""The fast path equals the reference: random well-typed policies, random objects, same answers.

The design keeps the tree-walking evaluator as the reference ``explain`` uses and asks tests
to hold the planner's closures equal to it. Here hypothesis writes expressions over the fake
schema — arithmetic on ints, floats and quantities, comparisons, ``??``, map lookups of keys
that may be missing, ``if``, ``and``/``or``/``not``, comprehensions and aggregates over the
schema's collections, string helpers, lets, a total map — and objects with keys missing, and both
evaluators must give the same value (of the same type) or fail with the same message at the
same place. Whole rules are compared too, evaluated across several widgets through
``Env.derive`` so that the planner's per-pod memo of lets is exercised.

Every generated expression must pass the checker (a generator bug fails loudly, it is not
filtered away). Example counts are kept modest: the suite must stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.lang.checker import check
from policyengine.lang.compiler import CompiledRule, compile_texts
from policyengine.lang.evaluators import NodeBatch
from policyengine.lang.loader import load_texts
from policyengine.lang.planner import Planner
from policyengine.lang.reference import evaluate, reference_filter, reference_score
from policyengine.lang.runtime import Env, EvalError
from tests.lang.fake_schema import TOTAL_SCHEMA as SCHEMA

Draw = Callable[..., Any]
Scope = Mapping[str, str]  # name -> kind, for comprehension targets and lets

MAX_DEPTH = 3
KEYS = ["a", "b", "cpu", "x"]
WORDS = ["a", "", "x,y", " A ", "12", "-3", "1.5", "2Gi", "cpu", "fast"]
PATTERNS = ["^[a-z]+$", "[0-9]", "^$", "i$"]


def _literal_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- expressions: one generator per kind ----------------------------------------------------


class Expressions:
    """Draws source text of a given kind; ``scope`` holds the names that may be read."""

    def __init__(self, draw: Draw):
        self.draw = draw
        self.targets = 0

    def pick(self, options: list[Callable[[], str]]) -> str:
        return self.draw(st.sampled_from(options))()

    def grow(self, leaves: list[Callable[[], str]], branches: list[Callable[[], str]]) -> str:
        # Mostly a branch: the operators are what the two paths might disagree on.
        return self.pick(branches if self.draw(st.integers(0, 3)) > 0 else leaves)

    def names(self, scope: Scope, kind: str) -> list[Callable[[], str]]:
        return [lambda name=name: name for name, k in scope.items() if k == kind]

    def fresh(self) -> str:
        # Names repeat on purpose now and then, so that inner targets shadow outer ones.
        self.targets += 1
        return self.draw(st.sampled_from([f"t{self.targets}", "t", "u"]))

    def of(self, kind: str, depth: int, scope: Scope) -> str:
        return getattr(self, "_" + kind.replace("?", "_maybe"))(depth, scope)

    def comprehension(self, depth: int, scope: Scope, element_kind: str, generator: bool) -> str:
        """``ELEMENT for t in SOURCE [if CONDITION]`` over one of the schema's collections."""
        source = self.draw(st.sampled_from(["strs", "parts", "ints", "smap", "qmap"]))
        inner = dict(scope)
        if source in ("smap", "qmap"):
            key, value = self.fresh(), self.fresh()
            if key == value:
                value = key + "v"
            iterable = self.of(source, depth - 1, scope)
            inner[key], inner[value] = "str", ("str" if source == "smap" else "qty")
            targets = f"{key}, {value}"
        else:
            name = self.fresh()
            iterable = self.of(source, depth - 1, scope)
            inner[name] = {"strs": "str", "parts": "part", "ints": "int"}[source]
            targets = name
        element = self.of(element_kind, depth - 1, inner)
        condition = ""
        if self.draw(st.booleans()):
            condition = f" if {self.of('bool', depth - 1, inner)}"
        text = f"{element} for {targets} in {iterable}{condition}"
        return text if generator else f"[{text}]"

    # numbers ------------------------------------------------------------------------------

    def _int(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: self.draw(st.sampled_from(["0", "1", "2", "3", "7", "100"])),
            lambda: "widget.count",
            lambda: "order.priority",
            lambda: "len(order.tags)",
            lambda: "len(widget.parts)",
            lambda: "len(widget.labels)",
            *self.names(scope, "int"),
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        op = self.draw(st.sampled_from(["+", "-", "*", "%"]))
        return self.grow(
            leaves,
            [
                lambda: f"({self._int(d, scope)} {op} {self._int(d, scope)})",
                lambda: f"-{self._int(d, scope)}",
                lambda: f"abs({self._int(d, scope)})",
                lambda: f"({self._int_maybe(d, scope)} ?? {self._int(d, scope)})",
                lambda: (
                    f"(if {self._bool(d, scope)} then {self._int(d, scope)} else {self._int(d, scope)})"
                ),
                lambda: f"count({self.comprehension(depth, scope, 'bool', True)})",
                lambda: f"sum({self._ints(d, scope)})",
                lambda: (
                    f"{self.draw(st.sampled_from(['min', 'max']))}({self._int(d, scope)}, {self._int(d, scope)})"
                ),
                lambda: f"len({self._str(d, scope)})",
                lambda: f"score_of({self._str(d, scope)})",
            ],
        )

    def _int_maybe(self, depth: int, scope: Scope) -> str:
        d = max(depth - 1, 0)
        return self.pick(
            [
                lambda: f"int({self._str(d, scope)})",
                lambda: f"{self._ints(d, scope)}[{self._int(d, scope)}]",
                lambda: f"{self.draw(st.sampled_from(['min', 'max']))}({self._ints(d, scope)})",
            ]
        )

    def _float(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: self.draw(st.sampled_from(["0.5", "2.5", "0.0", "1.25"])),
            lambda: "widget.weight",
            *self.names(scope, "float"),
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        op = self.draw(st.sampled_from(["+", "-", "*", "/"]))
        return self.grow(
            leaves,
            [
                lambda: f"({self._float(d, scope)} {op} {self._number(d, scope)})",
                lambda: f"({self._int(d, scope)} {op} {self._float(d, scope)})",
                lambda: f"({self._int(d, scope)} / {self._int(d, scope)})",
                lambda: f"({self._qty(d, scope)} / {self._qty(d, scope)})",
                lambda: f"({self._qty(d, scope)} * {self._float(d, scope)})",
                lambda: f"(float({self._str(d, scope)}) ?? 1.5)",
                lambda: f"(float({self._int(d, scope)}) ?? 0.0)",
                lambda: f"-{self._float(d, scope)}",
                lambda: f"abs({self._float(d, scope)})",
                lambda: (
                    f"(if {self._bool(d, scope)} then {self._float(d, scope)} else {self._int(d, scope)})"
                ),
                lambda: f"max({self._float(d, scope)}, {self._int(d, scope)})",
            ],
        )

    def _qty(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: self.draw(st.sampled_from(["500m", "1Gi", "2e0", "250m", "0m", "3k"])),
            lambda: f'(widget.capacity["{self.draw(st.sampled_from(KEYS))}"] ?? 0)',
            lambda: f'(order.wants["{self.draw(st.sampled_from(KEYS))}"] ?? 1Gi)',
            lambda: f'stock.free["{self.draw(st.sampled_from(KEYS))}"]',
            *[lambda name=name: f"{name}.size" for name, k in scope.items() if k == "part"],
            *self.names(scope, "qty"),
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        return self.grow(
            leaves,
            [
                lambda: (
                    f"({self._qty(d, scope)} {self.draw(st.sampled_from(['+', '-']))} {self._qty(d, scope)})"
                ),
                lambda: f"({self._qty(d, scope)} * {self._int(d, scope)})",
                lambda: f"({self._int(d, scope)} * {self._qty(d, scope)})",
                lambda: f"({self._qty(d, scope)} / {self._int(d, scope)})",
                lambda: f"({self._qty(d, scope)} + {self._int(d, scope)})",
                lambda: f"(widget.capacity[{self._str(d, scope)}] ?? {self._qty(d, scope)})",
                lambda: f"(stock.free[{self._str(d, scope)}] - {self._qty(d, scope)})",
                lambda: f"sum({self.comprehension(depth, scope, 'qty', True)})",
                lambda: f"(max({self.comprehension(depth, scope, 'qty', True)}) ?? 0m)",
                lambda: f"(quantity({self._str(d, scope)}) ?? 0m)",
                lambda: f"-{self._qty(d, scope)}",
                lambda: f"abs({self._qty(d, scope)})",
                lambda: f"min({self._qty(d, scope)}, {self._qty(d, scope)})",
                lambda: (
                    f"(if {self._bool(d, scope)} then {self._qty(d, scope)} else {self._qty(d, scope)})"
                ),
            ],
        )

    def _number(self, depth: int, scope: Scope) -> str:
        kind = self.draw(st.sampled_from(["int", "float", "qty"]))
        return self.of(kind, depth, scope)

    # strings and booleans -----------------------------------------------------------------

    def _str(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: _literal_string(self.draw(st.sampled_from(WORDS))),
            lambda: "widget.name",
            lambda: "order.name",
            *[lambda name=name: f"{name}.name" for name, k in scope.items() if k == "part"],
            *self.names(scope, "str"),
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        labels = self.draw(st.sampled_from(["widget.labels", "order.labels"]))
        return self.grow(
            leaves,
            [
                lambda: f"({labels}[{self._str(d, scope)}] ?? {self._str(d, scope)})",
                lambda: f"(widget.colour ?? {self._str(d, scope)})",
                lambda: f"({self._str(d, scope)} + {self._str(d, scope)})",
                lambda: (
                    f"{self._str(d, scope)}.{self.draw(st.sampled_from(['lower', 'upper', 'trim']))}()"
                ),
                lambda: (
                    f"string({self.of(self.draw(st.sampled_from(['int', 'float', 'qty', 'bool', 'strs'])), d, scope)})"
                ),
                lambda: f"({self._strs(d, scope)}[{self._int(d, scope)}] ?? {self._str(d, scope)})",
                lambda: (
                    f"(if {self._bool(d, scope)} then {self._str(d, scope)} else {self._str(d, scope)})"
                ),
            ],
        )

    def _bool(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: self.draw(st.sampled_from(["true", "false"])),
            lambda: "widget.colour == null",
            *[lambda name=name: f"{name}.spare" for name, k in scope.items() if k == "part"],
            *self.names(scope, "bool"),
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        compare = self.draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        method = self.draw(st.sampled_from(["startswith", "endswith", "contains"]))
        membership = self.draw(st.sampled_from(["in", "not in"]))
        return self.grow(
            leaves,
            [
                lambda: f"{self._number(d, scope)} {compare} {self._number(d, scope)}",
                lambda: f"{self._str(d, scope)} {compare} {self._str(d, scope)}",
                lambda: f"widget.labels[{self._str(d, scope)}] == {self._str(d, scope)}",
                lambda: f"{self._str(d, scope)} {membership} {self._strs(d, scope)}",
                lambda: (
                    f"{self._str(d, scope)} {membership} {self.draw(st.sampled_from(['widget.labels', 'order.labels']))}"
                ),
                lambda: f"{self._str(d, scope)} {membership} {self._str(d, scope)}",
                lambda: f'{self._str(d, scope)} {membership} {{"a", "cpu", {self._str(d, scope)}}}',
                lambda: f"{self._int(d, scope)} {membership} {{1, 3}}",
                lambda: f"{self._int(d, scope)} {membership} {self._ints(d, scope)}",
                lambda: f"{self._str(d, scope)}.{method}({self._str(d, scope)})",
                lambda: (
                    f"{self._str(d, scope)}.matches({_literal_string(self.draw(st.sampled_from(PATTERNS)))})"
                ),
                lambda: f"({self._bool(d, scope)} and {self._bool(d, scope)})",
                lambda: f"({self._bool(d, scope)} or {self._bool(d, scope)})",
                lambda: f"not {self._bool(d, scope)}",
                lambda: (
                    f"{self.draw(st.sampled_from(['any', 'all']))}({self.comprehension(depth, scope, 'bool', True)})"
                ),
                lambda: "fits(order, widget)",
                lambda: (
                    f"(if {self._bool(d, scope)} then {self._bool(d, scope)} else {self._bool(d, scope)})"
                ),
            ],
        )

    # collections --------------------------------------------------------------------------

    def _strs(self, depth: int, scope: Scope) -> str:
        leaves = [
            lambda: "order.tags",
            lambda: "widget.labels.keys()",
            lambda: "order.labels.values()",
            lambda: "shortfall(order, widget)",
        ]
        if depth <= 0:
            return self.pick(leaves)
        d = depth - 1
        return self.grow(
            leaves,
            [
                lambda: self.comprehension(depth, scope, "str", False),
                lambda: f'{self._str(d, scope)}.split(",")',
                lambda: f"[{self._str(d, scope)}, {self._str(d, scope)}]",
                lambda: f"({self._strs(d, scope)} + {self._strs(d, scope)})",
            ],
        )

    def _ints(self, depth: int, scope: Scope) -> str:
        if depth <= 0:
            return self.draw(
                st.sampled_from(["[1, 2, 3]", "[0]", "[widget.count, order.priority]"])
            )
        d = depth - 1
        return self.pick(
            [
                lambda: f"[{self._int(d, scope)}, {self._int(d, scope)}]",
                lambda: self.comprehension(depth, scope, "int", False),
            ]
        )

    def _parts(self, depth: int, scope: Scope) -> str:
        if depth <= 0:
            return "widget.parts"
        name = self.fresh()
        inner = {**scope, name: "part"}
        return self.draw(
            st.sampled_from(
                [
                    "widget.parts",
                    f"[{name} for {name} in widget.parts if {self._bool(depth - 1, inner)}]",
                ]
            )
        )

    def _smap(self, depth: int, scope: Scope) -> str:
        if depth <= 0:
            return self.draw(st.sampled_from(["widget.labels", "order.labels"]))
        return self.pick(
            [
                lambda: "widget.labels",
                lambda: (
                    f'{{"a": {self._str(depth - 1, scope)}, {self._str(depth - 1, scope)}: "v"}}'
                ),
            ]
        )

    def _qmap(self, depth: int, scope: Scope) -> str:
        return self.draw(st.sampled_from(["widget.capacity", "order.wants", "stock.free"]))


KINDS = ["int", "float", "qty", "str", "bool", "bool", "strs", "int?"]


@st.composite
def programs(draw: Draw) -> list[tuple[str, str]]:
    """Several lets of assorted kinds, each an expression under test; a let may read the
    ones before it. Many expressions per example buy coverage cheaply: checking and planning
    one policy costs far less than hypothesis drawing another."""
    gen = Expressions(draw)
    scope: dict[str, str] = {}
    lets = []
    for index in range(draw(st.integers(3, 6))):
        kind = draw(st.sampled_from(KINDS))
        lets.append((f"l{index}", gen.of(kind, draw(st.integers(1, MAX_DEPTH)), scope)))
        scope[f"l{index}"] = kind
    return lets


# --- runtime objects ------------------------------------------------------------------------

QUANTITIES = [Fraction(0), Fraction(1, 2), Fraction(2), Fraction(2**30), Fraction(3, 1000)]


def _maybe(draw: Draw, fields: dict[str, Any]) -> dict[str, Any]:
    # A record delivered with some keys missing: a declared field that reads null must fail
    # the same way on both paths.
    return {k: v for k, v in fields.items() if draw(st.integers(0, 11)) > 0}


@st.composite
def parts(draw: Draw) -> dict[str, Any]:
    return _maybe(
        draw,
        {
            "name": draw(st.sampled_from(WORDS)),
            "size": draw(st.sampled_from(QUANTITIES)),
            "spare": draw(st.booleans()),
        },
    )


def _string_map(draw: Draw) -> dict[str, str]:
    return draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(WORDS), max_size=3))


def _quantity_map(draw: Draw) -> dict[str, Any]:
    return draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(QUANTITIES), max_size=3))


@st.composite
def widgets(draw: Draw) -> dict[str, Any]:
    return _maybe(
        draw,
        {
            "name": draw(st.sampled_from(WORDS)),
            "labels": _string_map(draw),
            "capacity": _quantity_map(draw),
            "parts": draw(st.lists(parts(), max_size=3)),
            "weight": draw(st.sampled_from([0.0, 0.5, 2.5, -1.0, 3.0])),
            "count": draw(st.sampled_from([-2, 0, 1, 3, 10])),
            "colour": draw(st.sampled_from([None, "red", ""])),
        },
    )


@st.composite
def nodes(draw: Draw) -> dict[str, Any]:
    """The roots that vary per node: a widget and its stock (a total map of quantities)."""
    return {"widget": draw(widgets()), "stock": _maybe(draw, {"free": _quantity_map(draw)})}


@st.composite
def orders(draw: Draw) -> dict[str, Any]:
    return _maybe(
        draw,
        {
            "name": draw(st.sampled_from(WORDS)),
            "labels": _string_map(draw),
            "wants": _quantity_map(draw),
            "priority": draw(st.sampled_from([0, 1, 5, -1])),
            "tags": draw(st.lists(st.sampled_from(WORDS), max_size=3)),
        },
    )


CONTEXTS = st.fixed_dictionaries(
    {"scores": st.dictionaries(st.sampled_from(WORDS), st.integers(-5, 5), max_size=2)}
)


# --- comparing outcomes ---------------------------------------------------------------------


def canonical(value: Any) -> Any:
    """A value with its type spelled out at every level (1, 1.0 and true differ), NaN equal."""
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(canonical(v) for v in value))
    if isinstance(value, frozenset | set):
        return ("set", frozenset(canonical(v) for v in value))
    if isinstance(value, Mapping):
        return ("map", tuple((canonical(k), canonical(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def outcome(compute: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """What ``compute(*args)`` gives: a value, an error's message and span, or a crash."""
    try:
        return ("value", canonical(compute(*args)))
    except EvalError as error:
        return ("error", (error.message, error.span))
    except Exception as error:  # a crash on either side is a finding, compared like the rest
        return ("crash", f"{type(error).__name__}: {error}")


def assert_both_paths_agree(
    rule: CompiledRule, planned_env: Env, walked_env: Env, source: str
) -> None:
    """The rule's compiled closure decides as the reference does (errors included)."""
    if rule.kind == "filter":
        planned = outcome(rule.filter, planned_env)
        walked = outcome(reference_filter, rule, walked_env)
    else:
        planned = outcome(rule.score, planned_env)
        walked = outcome(reference_score, rule, walked_env)
    assert planned == walked, (source, rule.qualified_name)


def _policy_text(lets: list[tuple[str, str]], rules: list[str]) -> str:
    body = [f"  let {name} = {expr}" for name, expr in lets] + [f"  {rule}" for rule in rules]
    return 'policy "p" {\n' + "\n".join(body) + "\n}\n"


# --- the properties -------------------------------------------------------------------------

FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FAST
@given(programs(), orders(), st.lists(nodes(), min_size=1, max_size=3), CONTEXTS)
def test_expressions_evaluate_the_same_on_both_paths(
    lets: list[tuple[str, str]],
    order: dict[str, Any],
    nodes: list[dict[str, Any]],
    context: dict[str, Any],
) -> None:
    unit = load_texts({"gen.sched": _policy_text(lets, [])})
    checked = check(unit, SCHEMA)
    assert checked.ok, (lets, [d.message for d in checked.errors])
    policy = unit.policies[0]
    planner = Planner(SCHEMA, checked.types, checked.patterns)
    plans = [planner.expression(let.expr, policy).fn for let in policy.lets]
    # The planner's envs are derived from one pod's, as the engine derives them per node, and
    # each is shared by all the expressions; the reference starts afresh every time.
    pod_env = Env({"order": order}, context)
    for node in nodes:
        planned_env = pod_env.derive(**node)
        roots = {"order": order, **node}
        for let, fast, (_, source) in zip(policy.lets, plans, lets, strict=True):
            planned = outcome(fast, planned_env)
            walked = outcome(evaluate, let.expr, Env(roots, context), checked)
            assert planned == walked, source


@st.composite
def rule_programs(draw: Draw) -> str:
    """A policy with lets, one filter and one score, each with an optional guard."""
    gen = Expressions(draw)
    scope: dict[str, str] = {}
    lets = []
    for index in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["int", "float", "qty", "str", "bool", "strs"]))
        lets.append((f"l{index}", gen.of(kind, draw(st.integers(0, 2)), scope)))
        scope[f"l{index}"] = kind

    def guard() -> str:
        return f" when {gen.of('bool', 2, scope)}" if draw(st.booleans()) else ""

    body = gen.of(draw(st.sampled_from(["bool", "bool", "strs"])), draw(st.integers(0, 3)), scope)
    reason = ""
    if draw(st.booleans()):
        hole = gen.of(draw(st.sampled_from(["str", "int", "qty", "float"])), 1, scope)
        if "{" in hole or "}" in hole:  # braces inside a hole would end it early
            hole = "widget.count"
        reason = ' reason "saw {' + hole.replace('"', '\\"') + '} here"'
    filter_rule = f"filter f{guard()} {{ {body} }}{reason}"
    number = gen.of(draw(st.sampled_from(["int", "float", "qty", "int?"])), 3, scope)
    score_rule = f"score s{guard()} {{ {number} }}"
    return _policy_text(lets, [filter_rule, score_rule])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(rule_programs(), orders(), st.lists(nodes(), min_size=1, max_size=3), CONTEXTS)
def test_rules_decide_the_same_on_both_paths(
    source: str, order: dict[str, Any], nodes: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    result = compile_texts({"gen.sched": source}, SCHEMA)
    assert result.program is not None, (source, [d.message for d in result.diagnostics])
    program = result.program
    rules: list[CompiledRule] = list(program.policies[0].rules)
    # One pod, several nodes: the planner shares pod-level lets between the derived envs.
    pod_env = program.env(order=order, context=context)
    for node in nodes:
        node_env = pod_env.derive(**node)
        fresh = Env({"order": order, **node}, context)
        for rule in rules:
            assert_both_paths_agree(rule, node_env, fresh, source)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    rule_programs(),
    orders(),
    st.lists(nodes(), min_size=1, max_size=5),
    CONTEXTS,
    st.data(),
)
def test_whole_batch_forms_give_every_node_its_single_answer(
    source: str,
    order: dict[str, Any],
    nodes: list[dict[str, Any]],
    context: dict[str, Any],
    data: st.DataObject,
) -> None:
    # ``filter_many``/``score_many`` run columnar forms of the guard and body (``lang.vector``)
    # over all nodes, or over the nodes a guard admits; each node must get what the rule's
    # single evaluator gives it, errors included, on the whole batch and on a narrowed one;
    # ``score_numbers`` the same values as plain floats, or None where one is an error.
    result = compile_texts({"gen.sched": source}, SCHEMA)
    assert result.program is not None, (source, [d.message for d in result.diagnostics])
    rules: list[CompiledRule] = list(result.program.policies[0].rules)
    pod_env = result.program.env(order=order, context=context)
    batch = NodeBatch(pod_env, {name: [node[name] for node in nodes] for name in nodes[0]})
    rows = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, unique=True))
    for subset, chosen in ((batch, list(range(len(nodes)))), (batch.take(rows), rows)):
        for rule in rules:
            single = rule.filter if rule.kind == "filter" else rule.score
            many = rule.filter_many if rule.kind == "filter" else rule.score_many
            assert many is not None
            want = [single(pod_env.derive(**nodes[row])) for row in chosen]
            assert canonical(many(subset)) == canonical(want), source
            numbers = rule.score_numbers
            if rule.kind == "score" and numbers is not None:
                # The scores as plain numbers: each ``ScoreValue.value``, unless one is not
                # a plain number (an error): then none, and ``score_many`` tells.
                got = numbers(subset)
                if any(value.error is not None for value in want):
                    assert got is None, source
                else:
                    assert got is not None, source
                    values, scored = got
                    assert [
                        repr(v if s else None)
                        for v, s in zip(values.tolist(), scored.tolist(), strict=True)
                    ] == [repr(v.value) for v in want], source
                    assert not values[~scored].any(), source  # 0.0 where not scored
