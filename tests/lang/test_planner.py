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
from tests.lang.expression_tables import SHORT_CIRCUITS, VALUES
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA
from tests.lang.widget_schema import env_for, part, sample_widget


def evaluate(source: str, env: Env | None = None) -> Any:
    plan = Planner(SCHEMA).expression(parse_expression(source))
    return plan.fn(env if env is not None else env_for())


# --- values --------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), VALUES, ids=[s for s, _ in VALUES])
def test_value(source: str, expected: Any) -> None:
    value = evaluate(source)
    assert value == expected
    assert type(value) is type(expected)


def test_domain_function_sees_objects_and_context() -> None:
    small = sample_widget(capacity={"cpu": Fraction(1)})
    assert evaluate("fits(order, widget)", env_for(widget=small)) is False
    assert evaluate("shortfall(order, widget)", env_for(widget=small)) == ["short of cpu"]
    context = {"scores": {"x": 9}}
    assert evaluate('score_of("x")', env_for(context)) == 9
    assert evaluate("probe(widget.count)", env_for(context)) == 3
    assert context["probe"] == [3]


# --- short-circuiting ----------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), SHORT_CIRCUITS, ids=[s for s, _ in SHORT_CIRCUITS])
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
        assert plan.fn(env_for(widget=sample_widget(name=f"w-{count}"))) is True
    assert plan.fn(env_for(widget=sample_widget(name="x"))) is False


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
    ids=[
        "1 + 2 * 3",
        "100m + 200m",
        '"a" + "b"',
        '"x,y".split(",")',
        "[1, 2][1]",
        '{"a": 1}["a"]',
        "if 1 < 2 then 3 else 4",
        "null ?? 5",
        "len([1, 2]) + abs(-1)",
        'string(1Gi) + "!"',
        "true or widget.count > 1",
        "false and widget.count > 1",
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
    ids=[
        "widget.count",
        "widget.name",
        'widget.capacity["cpu"] ?? 0',
        "[p.name for p in widget.parts]",
        "widget.count > 1",
        "shortfall(order, widget)",
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
    ids=[
        "500m",
        "16Gi",
        "0.5",
        "12.25",
        "3",
        "0.3",
        "null",
        "true",
        "as is",
        "[a, 250m, null]",
        "[a, b]",
        "{k: 1}",
        "7",
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
    result = evaluate(
        "sum(p.size for p in widget.parts)", env_for(widget=sample_widget(parts=parts))
    )
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
