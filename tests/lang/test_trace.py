"""Traces for ``explain``: a rule's outcome on one node and the values that decided it.

Every trace here is asserted whole — outcome, reasons, value, error and the observations as
(source text, formatted value) in source order — because what ``explain`` prints is exactly
this, and a trace that shows too much hides the one value that matters.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest

from policyengine.diagnostics import Span
from policyengine.lang.compiler import CompiledRule, Program, compile_texts
from policyengine.lang.runtime import Env
from policyengine.lang.trace import Observation, RuleTrace, trace_rule
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA

FILE = "trace.sched"

POLICY = """\
library lib {
  filter roomy { widget.count > 2 } reason "only {widget.count}"
}
policy "p" {
  use lib
  let model = order.labels["model"] ?? "any"
  let per_part = widget.weight / len(widget.parts)
  let has = widget.labels["model"] ?? "none"
  filter model when model != "any" {
    widget.labels["model"] == model
  } reason "widget has {has}, order needs {model}"
  filter light { widget.count > 2 and widget.weight < 1.5 }
  filter coloured { widget.colour == "red" or widget.count > 5 }
  filter untagged { not "gpu" in order.tags }
  filter fits { fits(order, widget) }
  filter short { shortfall(order, widget) }
  filter twice { model == "H100" and widget.labels["model"] != model }
  filter ratio { widget.count / (widget.count - 3) > 1 }
  filter spread { per_part < 10 }
  filter numeric { probe(widget.count) }
  filter any_spare { any(p.spare for p in widget.parts) }
  score pack weight 3 when widget.count > 0 {
    100 * widget.weight / widget.count
  }
  score maybe { order.wants["gpu"] }
  score scaled { max(widget.weight, 1.0) * order.priority }
  score text { probe("high") }
}
"""


def order(**fields: Any) -> dict[str, Any]:
    base = {
        "name": "o1",
        "labels": {"model": "H100"},
        "wants": {"cpu": Fraction(2)},
        "priority": 5,
        "tags": ["fast", "gpu"],
    }
    return {**base, **fields}


def widget(**fields: Any) -> dict[str, Any]:
    base = {
        "name": "w-7",
        "labels": {"model": "L4"},
        "capacity": {"cpu": Fraction(4)},
        "parts": [{"name": "a", "size": Fraction(1), "spare": False}],
        "weight": 2.5,
        "count": 3,
        "colour": None,
    }
    return {**base, **fields}


@pytest.fixture(scope="module")
def program() -> Program:
    result = compile_texts({FILE: POLICY}, SCHEMA)
    assert result.program is not None, result.diagnostics
    return result.program


def rule(program: Program, name: str) -> CompiledRule:
    return next(r for r in program.policies[0].rules if r.qualified_name == name)


def env(program: Program, context: dict[str, Any] | None = None, **roots: Any) -> Env:
    roots.setdefault("order", order())
    roots.setdefault("widget", widget())
    return program.env(roots, context if context is not None else {})


def seen(trace: RuleTrace) -> list[tuple[str, str]]:
    return [(o.text, o.value) for o in trace.observations]


def test_a_rejected_comparison_shows_both_sides(program: Program) -> None:
    trace = trace_rule(rule(program, "model"), env(program))
    assert trace == RuleTrace(
        rule="model",
        kind="filter",
        outcome="rejected",
        reasons=("widget has L4, order needs H100",),
        value=None,
        observations=(
            Observation('widget.labels["model"]', "L4", Span(FILE, 10, 5, 10, 27)),
            Observation("model", "H100", Span(FILE, 10, 31, 10, 36)),
        ),
        error=None,
    )


def test_a_false_guard_shows_what_made_the_rule_not_apply(program: Program) -> None:
    trace = trace_rule(rule(program, "model"), env(program, order=order(labels={})))
    assert (trace.outcome, trace.reasons, trace.error) == ("not applicable", (), None)
    assert seen(trace) == [("model", "any")]


def test_a_passed_filter_shows_what_it_passed_on(program: Program) -> None:
    matching = widget(labels={"model": "H100"})
    trace = trace_rule(rule(program, "model"), env(program, widget=matching))
    assert trace.outcome == "passed"
    assert seen(trace) == [('widget.labels["model"]', "H100"), ("model", "H100")]


def test_and_shows_the_false_operand_down_to_its_comparison(program: Program) -> None:
    trace = trace_rule(rule(program, "light"), env(program))
    assert (trace.outcome, trace.reasons) == ("rejected", ("rejected by light",))
    assert seen(trace) == [("widget.weight", "2.5")]  # the constant 1.5 is in the rule


def test_and_that_stopped_at_its_left_operand(program: Program) -> None:
    trace = trace_rule(rule(program, "light"), env(program, widget=widget(count=1)))
    assert seen(trace) == [("widget.count", "1")]


def test_or_shows_every_operand(program: Program) -> None:
    trace = trace_rule(rule(program, "coloured"), env(program))
    assert trace.outcome == "rejected"
    assert seen(trace) == [("widget.colour", "null"), ("widget.count", "3")]


def test_not_shows_its_operand(program: Program) -> None:
    trace = trace_rule(rule(program, "untagged"), env(program))
    assert trace.outcome == "rejected"
    assert seen(trace) == [("order.tags", "[fast, gpu]")]


def test_a_domain_call_shows_its_result(program: Program) -> None:
    small = widget(capacity={"cpu": Fraction(1)})
    trace = trace_rule(rule(program, "fits"), env(program, widget=small))
    assert (trace.outcome, seen(trace)) == ("rejected", [("fits(order, widget)", "false")])
    trace = trace_rule(rule(program, "short"), env(program, widget=small))
    assert trace.outcome == "rejected"
    assert trace.reasons == ("short of cpu",)
    assert seen(trace) == [("shortfall(order, widget)", "[short of cpu]")]


def test_an_aggregate_is_observed_whole(program: Program) -> None:
    trace = trace_rule(rule(program, "any_spare"), env(program))
    assert (trace.outcome, seen(trace)) == (
        "rejected",
        [("any(p.spare for p in widget.parts)", "false")],
    )


def test_a_value_compared_twice_is_shown_once(program: Program) -> None:
    trace = trace_rule(rule(program, "twice"), env(program))
    assert trace.outcome == "passed"
    assert seen(trace) == [("model", "H100"), ('widget.labels["model"]', "L4")]


def test_library_rules_are_traced_under_their_qualified_name(program: Program) -> None:
    trace = trace_rule(rule(program, "lib.roomy"), env(program, widget=widget(count=2)))
    assert trace == RuleTrace(
        rule="lib.roomy",
        kind="filter",
        outcome="rejected",
        reasons=("only 2",),
        value=None,
        observations=(Observation("widget.count", "2", Span(FILE, 2, 18, 2, 30)),),
        error=None,
    )


def test_a_score_shows_its_value_and_its_direct_parts(program: Program) -> None:
    trace = trace_rule(rule(program, "pack"), env(program))
    assert trace == RuleTrace(
        rule="pack",
        kind="score",
        outcome="scored",
        reasons=(),
        value=250 / 3,
        observations=(
            Observation(
                "100 * widget.weight / widget.count",
                "83.333333",
                Span(FILE, 23, 5, 23, 39),
            ),
            Observation("100 * widget.weight", "250", Span(FILE, 23, 5, 23, 24)),
            Observation("widget.count", "3", Span(FILE, 23, 27, 23, 39)),
        ),
        error=None,
    )


def test_a_score_with_a_function_call(program: Program) -> None:
    trace = trace_rule(rule(program, "scaled"), env(program))
    assert (trace.outcome, trace.value) == ("scored", 12.5)
    assert seen(trace) == [
        ("max(widget.weight, 1.0) * order.priority", "12.5"),
        ("max(widget.weight, 1.0)", "2.5"),
        ("order.priority", "5"),
    ]


def test_a_score_whose_guard_is_false_is_not_scored(program: Program) -> None:
    trace = trace_rule(rule(program, "pack"), env(program, widget=widget(count=0)))
    assert (trace.outcome, trace.value, trace.error) == ("not scored", None, None)
    assert seen(trace) == [("widget.count", "0")]


def test_a_score_whose_body_is_null_is_not_scored(program: Program) -> None:
    trace = trace_rule(rule(program, "maybe"), env(program))
    assert (trace.outcome, trace.value) == ("not scored", None)
    assert seen(trace) == [('order.wants["gpu"]', "null"), ("order.wants", "{cpu: 2}")]


def test_an_error_shows_the_values_the_failing_expression_received(program: Program) -> None:
    trace = trace_rule(rule(program, "ratio"), env(program))
    message = f"rule ratio failed: division by zero at {FILE}:18:18"
    assert trace == RuleTrace(
        rule="ratio",
        kind="filter",
        outcome="error",
        reasons=(message,),
        value=None,
        observations=(
            Observation("widget.count", "3", Span(FILE, 18, 18, 18, 30)),
            Observation("widget.count - 3", "0", Span(FILE, 18, 34, 18, 50)),
        ),
        error=message,
    )


def test_an_error_inside_a_let_points_into_the_let(program: Program) -> None:
    trace = trace_rule(rule(program, "spread"), env(program, widget=widget(parts=[])))
    assert trace.outcome == "error"
    assert trace.error == f"rule spread failed: division by zero at {FILE}:7:18"
    assert seen(trace) == [("widget.weight", "2.5"), ("len(widget.parts)", "0")]


def test_a_body_of_the_wrong_kind_shows_the_body(program: Program) -> None:
    trace = trace_rule(rule(program, "numeric"), env(program))
    assert trace.outcome == "error"
    assert trace.error == (
        f"rule numeric failed: a filter gives a bool or a list of reasons, not int at {FILE}:20:20"
    )
    assert seen(trace) == [("probe(widget.count)", "3")]
    trace = trace_rule(rule(program, "text"), env(program))
    assert (trace.outcome, trace.value, seen(trace)) == (
        "error",
        0.0,
        [('probe("high")', "high")],
    )


def test_tracing_evaluates_each_expression_once(program: Program) -> None:
    context: dict[str, Any] = {}
    trace_rule(rule(program, "numeric"), env(program, context))
    assert context["probe"] == [3]


def test_without_its_source_text_an_expression_is_printed_canonically(program: Program) -> None:
    bare = dataclasses.replace(rule(program, "pack"), sources={})
    trace = trace_rule(bare, env(program))
    assert [o.text for o in trace.observations] == [
        "100 * widget.weight / widget.count",
        "100 * widget.weight",
        "widget.count",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "lib.roomy",
        "model",
        "light",
        "coloured",
        "untagged",
        "fits",
        "short",
        "twice",
        "ratio",
        "spread",
        "numeric",
        "any_spare",
        "pack",
        "maybe",
        "scaled",
        "text",
    ],
)
@pytest.mark.parametrize(
    "roots",
    [{}, {"widget": widget(count=0, parts=[], labels={})}, {"order": order(labels={})}],
    ids=["plain", "empty widget", "no model"],
)
def test_a_trace_agrees_with_the_compiled_verdict(
    program: Program, name: str, roots: dict[str, Any]
) -> None:
    compiled = rule(program, name)
    trace = trace_rule(compiled, env(program, **roots))
    if compiled.kind == "filter":
        verdict = compiled.filter(env(program, **roots))
        assert trace.reasons == verdict.reasons
        assert trace.outcome in (
            ("passed", "not applicable") if verdict.passed else ("rejected", "error")
        )
        assert trace.error == (str(verdict.error) if verdict.error is not None else None)
    else:
        value = compiled.score(env(program, **roots))
        assert trace.value == value.value
        assert trace.error == (str(value.error) if value.error is not None else None)
        assert (trace.outcome == "not scored") == (value.value is None)
