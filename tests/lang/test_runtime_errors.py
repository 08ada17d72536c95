"""A runtime error inside a rule is a verdict, never an exception.

Each case compiles a one-rule policy, evaluates it against objects that make it fail, and
checks the ``RuleError`` (rule name, message, ``file:line:col`` of the failing expression) and
the verdict: a failed filter rejects the node with ``rule <name> failed: <message> at
<file:line:col>``; a failed score is 0 with the error.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.lang.compiler import compile_texts
from policyengine.lang.runtime import FilterVerdict, RuleError, ScoreValue
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA
from tests.lang.runtime_error_cases import (
    FILE,
    FILTER_CASES,
    SCORE_CASES,
    column_of,
    compile_rule,
    env,
)
from tests.lang.widget_schema import widget


@pytest.mark.parametrize(
    ("rule", "roots", "message", "fragment"),
    FILTER_CASES,
    ids=[c[0].split()[1] for c in FILTER_CASES],
)
def test_filter_error_is_a_rejection_with_a_located_reason(
    rule: str, roots: dict[str, Any], message: str, fragment: str
) -> None:
    program, compiled = compile_rule(rule)
    verdict = compiled.filter(env(program, **roots))
    assert isinstance(verdict, FilterVerdict)
    assert verdict.passed is False
    error = verdict.error
    assert isinstance(error, RuleError)
    assert error.rule == compiled.qualified_name
    assert error.message == message
    column = column_of(rule, fragment) if "reason" not in rule else error.span.column
    assert (error.span.file, error.span.line, error.span.column) == (FILE, 2, column)
    where = f"{FILE}:2:{column}"
    assert verdict.reasons == (f"rule {compiled.qualified_name} failed: {message} at {where}",)
    assert str(error) == verdict.reasons[0]


def test_an_error_in_a_reason_hole_points_into_the_string() -> None:
    rule = 'filter in_reason { false } reason "ratio {1 / widget.count}"'
    program, compiled = compile_rule(rule)
    error = compiled.filter(env(program)).error
    assert error is not None
    # The hole's expression starts right after the '{' inside the string literal.
    assert error.span.column == column_of(rule, "1 / widget.count")


@pytest.mark.parametrize(
    ("rule", "roots", "message", "fragment"),
    SCORE_CASES,
    ids=[c[0].split()[1] for c in SCORE_CASES],
)
def test_score_error_is_zero_with_the_error(
    rule: str, roots: dict[str, Any], message: str, fragment: str
) -> None:
    program, compiled = compile_rule(rule)
    value = compiled.score(env(program, **roots))
    assert isinstance(value, ScoreValue)
    assert value.value == 0.0
    assert value.error == RuleError(compiled.qualified_name, value.error.span, message)  # type: ignore[union-attr]
    span = value.error.span  # type: ignore[union-attr]
    assert (span.file, span.line, span.column) == (FILE, 2, column_of(rule, fragment))


def test_library_rule_errors_carry_the_qualified_name() -> None:
    source = (
        "library lib {\n"
        "  filter ratio { widget.count / widget.count > 1 }\n"
        "}\n"
        'policy "p" { use lib }\n'
    )
    result = compile_texts({FILE: source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    rule = result.program.policies[0].rules[0]
    verdict = rule.filter(env(result.program))
    assert verdict.error is not None
    assert verdict.error.rule == "lib.ratio"
    assert verdict.reasons == (f"rule lib.ratio failed: division by zero at {FILE}:2:18",)


def test_errors_are_per_node() -> None:
    program, compiled = compile_rule("filter ratio { 10 / widget.count > 1 }")
    assert compiled.filter(env(program, widget=widget(count=2))) == FilterVerdict(True)
    assert compiled.filter(env(program, widget=widget(count=0))).error is not None
    assert compiled.filter(env(program, widget=widget(count=20))).passed is False
    assert compiled.filter(env(program, widget=widget(count=20))).error is None


def test_a_failing_let_fails_every_rule_that_reads_it_at_the_let() -> None:
    source = (
        'policy "p" {\n'
        "  let ratio = 10 / widget.count\n"
        "  filter a { ratio > 1 }\n"
        "  score b { ratio }\n"
        "}\n"
    )
    result = compile_texts({FILE: source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    policy = result.program.policies[0]
    e = env(result.program)
    failed = policy.filters[0].filter(e)
    scored = policy.scores[0].score(e)
    assert failed.error is not None and scored.error is not None
    for error in (failed.error, scored.error):
        assert (error.span.line, error.span.column, error.message) == (2, 15, "division by zero")


def test_a_match_that_fails_does_not_match() -> None:
    source = 'policy "p" { match order.priority / 0 > 1 }\npolicy "q" { }\n'
    result = compile_texts({FILE: source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    governing = result.program.governing_policy("policyengine", env(result.program))
    assert governing is not None and governing.name == "q"


def test_a_getter_that_raises_is_reported_not_raised() -> None:
    program, compiled = compile_rule('filter named { widget.name == "x" }')
    verdict = compiled.filter(env(program, widget={"count": 1}))  # no "name" key: get → None
    assert verdict.error is not None
    assert verdict.error.message == "widget.name is null, but it is declared string"
    verdict = compiled.filter(env(program, widget=object()))  # no .get at all
    assert verdict.error is not None
    assert verdict.error.message.startswith("reading .name failed: AttributeError")


def test_a_null_score_leaves_the_node_unscored() -> None:
    """Null is how a score says "not this node" (kube-scheduler's PreScore Skip), not an error."""
    program, compiled = compile_rule("score nothing { probe(null) }")
    value = compiled.score(env(program))
    assert value == ScoreValue(None, None)
