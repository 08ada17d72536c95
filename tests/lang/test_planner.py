"""The planner: what every kind of expression evaluates to, and how.

Expressions are planned against the made-up schema of ``fake_schema`` (roots ``order`` and
``widget``, runtime objects are dicts) and evaluated in an ``Env``. Beyond values, these tests
pin the promises evaluation speed and safety rest on: null-safe indexing, short-circuiting
(proven with ``explode()``, which raises if it is ever called), regular expressions compiled
once, constants folded, exact quantity arithmetic.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyengine.lang import planner as planner_module
from policyengine.lang.parser import parse_expression
from policyengine.lang.planner import PlanError, Planner
from policyengine.lang.runtime import Env, EvalError, format_value
from policyengine.lang.types import BOOL, INT, QUANTITY, STRING, ListType
from policyengine.quantity import parse_quantity
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA


def part(name: str, size: str = "1", spare: bool = False) -> dict[str, Any]:
    return {"name": name, "size": parse_quantity(size), "spare": spare}


def order(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "o1",
        "labels": {"team": "ml"},
        "wants": {"cpu": Fraction(2)},
        "priority": 5,
        "tags": ["fast", "gpu"],
    }
    return {**base, **fields}


def widget(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "w-7",
        "labels": {"zone": "eu-1", "rack": "r2"},
        "capacity": {"cpu": Fraction(4), "memory": parse_quantity("16Gi")},
        "parts": [part("a", "500m", True), part("b", "2"), part("c", "250m", True)],
        "weight": 2.5,
        "count": 3,
        "colour": None,
    }
    return {**base, **fields}


def env_for(context: Any = None, **roots: Any) -> Env:
    roots.setdefault("order", order())
    roots.setdefault("widget", widget())
    return Env(roots, context if context is not None else {})


def evaluate(source: str, env: Env | None = None) -> Any:
    plan = Planner(SCHEMA).expression(parse_expression(source))
    return plan.fn(env if env is not None else env_for())


# --- values --------------------------------------------------------------------------------

VALUES: list[tuple[str, Any]] = [
    # literals
    ("42", 42),
    ("2.5", 2.5),
    ("500m", Fraction(1, 2)),
    ("16Gi", Fraction(16 * 2**30)),
    ('"text"', "text"),
    ("true", True),
    ("null", None),
    ("[1, 2, 3]", [1, 2, 3]),
    ("{1, 2, 2}", frozenset({1, 2})),
    ('{"a": 1, "b": 2}', {"a": 1, "b": 2}),
    ("[]", []),
    # arithmetic
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 / 2", 3.5),
    ("6 / 3", 2.0),
    ("7 % 3", 1),
    ("-widget.count", -3),
    ("10 - 2.5", 7.5),
    ('"ab" + "cd"', "abcd"),
    ("100m + 200m", Fraction(3, 10)),
    ("3 * 500m", Fraction(3, 2)),
    ("1Gi / 4", Fraction(2**28)),
    ('widget.capacity["cpu"] / 3', Fraction(4, 3)),
    ("1Gi / 2Gi", 0.5),
    ("500m * 1.5", 0.75),
    ("2 / 500m", 4.0),
    # comparison
    ("1 < 2", True),
    ("2 <= 1", False),
    ("1 == 1.0", True),
    ("500m == 0.5", True),
    ("100m < 1", True),
    ("16Gi > 1G", True),
    ('"a" != "b"', True),
    ("widget.count >= 3", True),
    # membership
    ('"gpu" in order.tags', True),
    ('"cpu" not in order.tags', True),
    ('"zone" in widget.labels', True),
    ('"eu" in widget.labels["zone"] ?? ""', True),
    ("widget.count in [1, 2, 3]", True),
    ("widget.count in {4, 5}", False),
    ("widget.count not in [1, 2, 3]", False),
    # logic
    ("true and false", False),
    ("widget.count > 1 and widget.weight > 1", True),
    ("widget.count > 5 or widget.weight > 1", True),
    ("not (widget.count > 1)", False),
    # null safety
    ('widget.labels["zone"] ?? "none"', "eu-1"),
    ('widget.labels["missing"] ?? "none"', "none"),
    ('widget.labels["missing"]', None),
    ('widget.colour ?? "grey"', "grey"),
    ("order.tags[0]", "fast"),
    ("order.tags[2]", None),
    ("order.tags[-1]", None),
    ('order.tags[9] ?? "none"', "none"),
    ("null ?? 1", 1),
    # conditional
    ('if widget.count > 2 then "big" else "small"', "big"),
    ('if widget.count > 5 then "big" else "small"', "small"),
    # attributes
    ("widget.name", "w-7"),
    ("widget.parts[1].size", Fraction(2)),
    ("widget.parts[7] == null", True),
    # comprehensions
    ("[p.name for p in widget.parts]", ["a", "b", "c"]),
    ("[p.name for p in widget.parts if p.spare]", ["a", "c"]),
    ("[k for k in widget.labels]", ["zone", "rack"]),
    ('[k + "=" + v for k, v in widget.labels]', ["zone=eu-1", "rack=r2"]),
    ("[x * 2 for x in [1, 2, 3] if x != 2]", [2, 6]),
    ("[x for x in []]", []),
    ("[p.name for p in widget.parts if any(q.size > p.size for q in widget.parts)]", ["a", "c"]),
    # aggregates
    ("len(widget.parts)", 3),
    ("len(widget.labels)", 2),
    ('len("abc")', 3),
    ("any(p.spare for p in widget.parts)", True),
    ("all(p.spare for p in widget.parts)", False),
    ("all(p.size > 0 for p in widget.parts)", True),
    ("count(p.spare for p in widget.parts)", 2),
    ("count([true, false, true])", 2),
    ("any([false, false])", False),
    ("all([])", True),
    ("any([])", False),
    ("count([])", 0),
    ("sum(p.size for p in widget.parts)", Fraction(11, 4)),
    ("sum(p.size for p in widget.parts if p.spare)", Fraction(3, 4)),
    ("sum([1, 2, 3])", 6),
    ("sum([])", 0),
    ("sum(p.size for p in widget.parts if p.size > 10)", 0),
    ("min(p.size for p in widget.parts)", Fraction(1, 4)),
    ("max(p.size for p in widget.parts)", Fraction(2)),
    ("min([])", None),
    ("max(p.size for p in widget.parts if p.size > 10)", None),
    ("max([]) ?? 7", 7),
    ("min(3, 1, 2)", 1),
    ("max(1, 2.5)", 2.5),
    ("max(widget.count, 10)", 10),
    # conversions
    ('int("42")', 42),
    ('int(" -7 ")', -7),
    ('int("4.2")', None),
    ('int("x")', None),
    ("int(2.9)", 2),
    ("int(1500m)", 1),
    ('float("2.5")', 2.5),
    ('float("nope")', None),
    ("float(3)", 3.0),
    ('quantity("16Gi")', Fraction(16 * 2**30)),
    ('quantity("250m")', Fraction(1, 4)),
    ('quantity("lots")', None),
    ("quantity(2)", Fraction(2)),
    ("string(1500m)", "1500m"),
    ("string(0.5)", "0.5"),
    ("string(null)", "null"),
    ('string(["a", 1])', "[a, 1]"),
    ("abs(-3)", 3),
    ("abs(-250m)", Fraction(1, 4)),
    # string helpers
    ('widget.name.startswith("w-")', True),
    ('widget.name.endswith("-7")', True),
    ('widget.name.contains("-")', True),
    ('"a,b,c".split(",")', ["a", "b", "c"]),
    ('"MiXed".lower()', "mixed"),
    ('"MiXed".upper()', "MIXED"),
    ('"  x  ".trim()', "x"),
    ('widget.name.matches("^w-[0-9]+$")', True),
    ('widget.name.matches("[0-9]{2}")', False),
    ('widget.labels["zone"].matches("eu")', True),
    ("widget.labels.keys()", ["zone", "rack"]),
    ("widget.labels.values()", ["eu-1", "r2"]),
    ("widget.capacity.keys()", ["cpu", "memory"]),
    # domain functions
    ("fits(order, widget)", True),
    ("shortfall(order, widget)", []),
    ("probe(3) + 1", 4),
]


@pytest.mark.parametrize(("source", "expected"), VALUES, ids=[s for s, _ in VALUES])
def test_value(source: str, expected: Any) -> None:
    value = evaluate(source)
    assert value == expected
    assert type(value) is type(expected)


def test_domain_function_sees_objects_and_context() -> None:
    small = widget(capacity={"cpu": Fraction(1)})
    assert evaluate("fits(order, widget)", env_for(widget=small)) is False
    assert evaluate("shortfall(order, widget)", env_for(widget=small)) == ["short of cpu"]
    context = {"scores": {"x": 9}}
    assert evaluate('score_of("x")', env_for(context)) == 9
    assert evaluate("probe(widget.count)", env_for(context)) == 3
    assert context["probe"] == [3]


# --- short-circuiting ----------------------------------------------------------------------

# explode() raises: each of these would fail if the side it stands on were evaluated.
SHORT_CIRCUITS = [
    ("widget.count > 100 and explode()", False),
    ("widget.count > 1 or explode()", True),
    ("widget.name ?? explode()", "w-7"),
    ("if widget.count > 1 then 1 else explode()", 1),
    ("if widget.count < 1 then explode() else 2", 2),
    ("any(p.spare or explode() for p in widget.parts)", True),
    ("any(p.spare for p in widget.parts) or explode()", True),
    ("all(p.size > 1 and explode() for p in widget.parts)", False),
    ("[explode() for p in widget.parts if p.size > 10]", []),
    ("false and explode()", False),
]


@pytest.mark.parametrize(("source", "expected"), SHORT_CIRCUITS)
def test_short_circuit_never_evaluates_the_other_side(source: str, expected: Any) -> None:
    assert evaluate(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "widget.count > 1 and explode()",
        "widget.count > 5 or explode()",
        "widget.colour ?? explode()",
        "if widget.count > 5 then 1 else explode()",
    ],
)
def test_the_other_side_does_run_when_needed(source: str) -> None:
    with pytest.raises(EvalError, match="explode\\(\\) raised RuntimeError: boom"):
        evaluate(source)


def test_any_stops_at_the_first_true_element() -> None:
    context: dict[str, Any] = {}
    assert evaluate("any(probe(p.spare) for p in widget.parts)", env_for(context)) is True
    assert context["probe"] == [True]
    context.clear()
    assert evaluate("all(probe(p.spare) for p in widget.parts)", env_for(context)) is False
    assert context["probe"] == [True, False]


# --- planning decisions --------------------------------------------------------------------


def test_regex_is_compiled_once_at_plan_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real_compile = re.compile

    def counting_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
        compiled.append(pattern)
        return real_compile(pattern, flags)

    monkeypatch.setattr(planner_module.re, "compile", counting_compile)
    plan = Planner(SCHEMA).expression(parse_expression('widget.name.matches("^w-[0-9]+$")'))
    assert compiled == ["^w-[0-9]+$"]

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("regex work at evaluation time")

    for name in ("compile", "search", "match", "fullmatch", "_compile"):
        monkeypatch.setattr(planner_module.re, name, forbidden)
    for count in range(100):
        assert plan.fn(env_for(widget=widget(name=f"w-{count}"))) is True
    assert plan.fn(env_for(widget=widget(name="x"))) is False


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("1 + 2 * 3", 7),
        ("100m + 200m", Fraction(3, 10)),
        ('"a" + "b"', "ab"),
        ('"x,y".split(",")', ["x", "y"]),
        ("[1, 2][1]", 2),
        ('{"a": 1}["a"]', 1),
        ("if 1 < 2 then 3 else 4", 3),
        ("null ?? 5", 5),
        ("len([1, 2]) + abs(-1)", 3),
        ('string(1Gi) + "!"', "1Gi!"),
        ("true or widget.count > 1", True),
        ("false and widget.count > 1", False),
    ],
)
def test_constants_are_folded(source: str, value: Any) -> None:
    plan = Planner(SCHEMA).expression(parse_expression(source))
    assert plan.const
    assert plan.value == value
    assert plan.fn(None) == value  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "source",
    ["1 / 0", "probe(1)", "explode()", "widget.count + 1"],
)
def test_failing_constants_runtime_values_and_functions_are_not_folded(source: str) -> None:
    assert not Planner(SCHEMA).expression(parse_expression(source)).const


@pytest.mark.parametrize(
    ("source", "per_node"),
    [
        ("order.priority > 3", False),
        ("widget.count > 3", True),
        ("fits(order, widget)", True),
        ('score_of("x") > 1', True),  # declared varies_per_node
        ('probe(order.name) == "o1"', False),  # needs the context, but not per node
        ("[t for t in order.tags]", False),
        ("[p for p in widget.parts]", True),
        ("[t for t in order.tags if t == widget.name]", True),
        ("42", False),
    ],
)
def test_per_node(source: str, per_node: bool) -> None:
    assert Planner(SCHEMA).expression(parse_expression(source)).per_node is per_node


@pytest.mark.parametrize(
    ("source", "type_"),
    [
        ("widget.count", INT),
        ("widget.name", STRING),
        ('widget.capacity["cpu"] ?? 0', QUANTITY),
        ("[p.name for p in widget.parts]", ListType(STRING)),
        ("widget.count > 1", BOOL),
        ("shortfall(order, widget)", ListType(STRING, bound=16)),
    ],
)
def test_inferred_types_without_the_checker(source: str, type_: Any) -> None:
    assert Planner(SCHEMA).expression(parse_expression(source)).type == type_


def test_checker_types_take_precedence() -> None:
    expr = parse_expression("probe(1)")
    plan = Planner(SCHEMA, types={id(expr): INT}).expression(expr)
    assert plan.type == INT


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("nowhere", "unknown name nowhere"),
        ("nothing(1)", "unknown function nothing"),
        ("widget.height", "Widget has no attribute height"),
        ("widget.name.shout()", "unknown method shout()"),
        ("widget.name.matches(widget.name)", "the pattern of matches() must be a string literal"),
        ('widget.name.matches("(")', "invalid regular expression"),
        ("fits(order)", "fits() takes 2 arguments, not 1"),
        ("len(1, 2)", "len() takes one argument, not 2"),
    ],
)
def test_what_cannot_be_planned_is_a_diagnostic(source: str, message: str) -> None:
    with pytest.raises(PlanError) as caught:
        Planner(SCHEMA).expression(parse_expression(source))
    assert message in caught.value.diagnostic.message
    assert caught.value.diagnostic.code == "PE900"


# --- formatting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(1, 2), "500m"),
        (Fraction(16 * 2**30), "16Gi"),
        (0.5, "0.5"),
        (12.25, "12.25"),
        (3.0, "3"),
        (0.1 + 0.2, "0.3"),
        (None, "null"),
        (True, "true"),
        ("as is", "as is"),
        (["a", Fraction(1, 4), None], "[a, 250m, null]"),
        (frozenset({"b", "a"}), "[a, b]"),
        ({"k": 1}, "{k: 1}"),
        (7, "7"),
    ],
)
def test_format_value(value: Any, text: str) -> None:
    assert format_value(value) == text


# --- properties ----------------------------------------------------------------------------

SUFFIXES = ["m", "", "k", "Ki", "Mi", "Gi"]


@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(SUFFIXES),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(SUFFIXES),
    st.sampled_from(["+", "-"]),
)
def test_quantity_arithmetic_is_exact(
    a: int, suffix_a: str, b: int, suffix_b: str, op: str
) -> None:
    left, right = parse_quantity(f"{a}{suffix_a}"), parse_quantity(f"{b}{suffix_b}")
    expected = left + right if op == "+" else left - right
    # A bare integer literal is an int, not a quantity: spell it 5e0 to keep it one.
    text_a = f"{a}{suffix_a}" if suffix_a else f"{a}e0"
    text_b = f"{b}{suffix_b}" if suffix_b else f"{b}e0"
    result = evaluate(f"{text_a} {op} {text_b}")
    assert result == expected
    assert isinstance(result, Fraction | int)


@given(st.fractions(min_value=-(10**9), max_value=10**9, max_denominator=1000))
def test_formatted_quantities_read_back_exactly(value: Fraction) -> None:
    text = format_value(value)
    if "e" not in text and "." not in text:  # finer than a nanounit is shown as a decimal
        assert parse_quantity(text) == value


@given(st.lists(st.integers(min_value=1, max_value=10**6), max_size=20))
def test_sum_of_milli_quantities_is_exact(millis: list[int]) -> None:
    parts = [part(f"p{i}", f"{m}m") for i, m in enumerate(millis)]
    result = evaluate("sum(p.size for p in widget.parts)", env_for(widget=widget(parts=parts)))
    assert result == Fraction(sum(millis), 1000)


def test_a_total_map_reads_its_default_for_a_missing_key() -> None:
    """Resource maps declare a default (0): a missing resource is 0, not null."""
    from policyengine.lang.schema import Root, Schema
    from policyengine.lang.types import Field, MapType, RecordType

    resources = MapType(STRING, QUANTITY, default=Fraction(0))
    node = RecordType("N", {"free": Field("free", resources, lambda obj: obj["free"])})
    schema = Schema(roots={"node": Root("node", node)})
    plan = Planner(schema).expression(parse_expression('node.free["gpu"] + node.free["cpu"]'))
    assert plan.type == QUANTITY
    assert plan.fn(Env({"node": {"free": {"cpu": Fraction(1, 2)}}})) == Fraction(1, 2)
