"""Traces of one rule on one node: what ``explain`` prints to say why a rule decided as it did.

A verdict says *that* a node was rejected; an operator debugging a policy needs *why*: which
values the deciding comparison saw. ``trace_rule`` evaluates the rule once with the reference
evaluator, recording the value of every sub-expression on the way, then picks the few that
decided the outcome:

- a filter (passed or rejected): for a comparison both sides; for ``and`` the operands that
  were false when it was false (all of them when it held); for ``or`` every operand when it
  was false (the true one when it held); for ``not`` its operand; anything else — a domain
  call, an aggregate, a let — is observed whole;
- a rule whose guard was false: the guard's deciding values, by the same walk;
- a score: the body's value and the values of its direct sub-expressions;
- a rule that failed: the values the failing expression had received.

Constants and whole records (``node``, ``pod``) are left out: they say nothing a reader of the
rule does not already know. Nothing is evaluated twice: the values come from the one
evaluation that produced the verdict, so a trace always agrees with its own outcome.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from policyengine.diagnostics import Span
from policyengine.lang import nodes as n
from policyengine.lang.compiler import CompiledRule
from policyengine.lang.fmt import print_expr
from policyengine.lang.nodes import children
from policyengine.lang.reference import Evaluation, run_filter, run_score
from policyengine.lang.runtime import Env, FilterVerdict, format_value
from policyengine.lang.types import RecordType, non_null
from policyengine.lang.values import Value

_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})


@dataclass(frozen=True)
class Observation:
    """One sub-expression and its value: ``text`` as written (whitespace collapsed), ``value``
    as a reason would print it."""

    text: str
    value: str
    span: Span


@dataclass(frozen=True)
class RuleTrace:
    """Why one rule decided as it did on one node.

    ``outcome`` is ``passed``, ``rejected``, ``not applicable`` (a filter whose guard was
    false), ``scored``, ``not scored`` (a score whose guard was false or whose body was null)
    or ``error``; ``value`` is a score's value (0 on error), None otherwise; ``error`` is the
    failure as a filter's reason states it.
    """

    rule: str
    kind: str
    outcome: str
    reasons: tuple[str, ...]
    value: float | None
    observations: tuple[Observation, ...]
    error: str | None


def trace_rule(rule: CompiledRule, env: Env) -> RuleTrace:
    """Evaluate ``rule`` in ``env`` with the reference evaluator and explain the outcome."""
    if rule.source is None or rule.checked is None:
        raise ValueError(f"rule {rule.qualified_name} was compiled without its syntax tree")
    source = rule.source
    values: dict[int, Value] = {}
    evaluation = Evaluation(env, rule.checked, record=values)
    run = run_filter(rule, evaluation) if rule.kind == "filter" else run_score(rule, evaluation)
    result = run.result
    error = result.error
    if run.stage == "error":
        outcome = "error"
        chosen = _failure_inputs(evaluation.failed, source.body, values)
    elif run.stage == "guard":
        assert source.guard is not None
        outcome = "not applicable" if rule.kind == "filter" else "not scored"
        chosen = list(_deciding(source.guard, values))
    elif isinstance(result, FilterVerdict):
        outcome = "passed" if result.passed else "rejected"
        chosen = list(_deciding(source.body, values))
    else:
        outcome = "scored" if result.value is not None else "not scored"
        chosen = [source.body, *children(source.body)]
    observations = _observe(chosen, values, evaluation, rule.sources)
    if isinstance(result, FilterVerdict):
        return RuleTrace(
            rule.qualified_name,
            rule.kind,
            outcome,
            result.reasons,
            None,
            observations,
            str(error) if error is not None else None,
        )
    return RuleTrace(
        rule.qualified_name,
        rule.kind,
        outcome,
        (),
        result.value,
        observations,
        str(error) if error is not None else None,
    )


def _deciding(expr: n.Expr, values: Mapping[int, Value]) -> Iterator[n.Expr]:
    """The sub-expressions whose values decided ``expr``'s (already recorded) value."""
    if isinstance(expr, n.Binary) and expr.op in _COMPARISONS:
        yield expr.left
        yield expr.right
    elif isinstance(expr, n.Binary) and expr.op in ("and", "or"):
        decided = bool(values.get(id(expr)))
        # A true 'and' or a false 'or' needed every operand; otherwise the operand that
        # short-circuited it (the only one evaluated with that value) decided alone.
        needs_all = decided if expr.op == "and" else not decided
        for operand in (expr.left, expr.right):
            if id(operand) in values and (needs_all or bool(values[id(operand)]) == decided):
                yield from _deciding(operand, values)
    elif isinstance(expr, n.Unary) and expr.op == "not":
        yield from _deciding(expr.operand, values)
    else:
        yield expr


def _failure_inputs(
    failed: n.Expr | None, body: n.Expr, values: Mapping[int, Value]
) -> list[n.Expr]:
    if failed is None:  # the body's value itself was refused (a filter given a number …)
        return [body]
    return [child for child in children(failed) if id(child) in values]


def _observe(
    chosen: list[n.Expr],
    values: Mapping[int, Value],
    evaluation: Evaluation,
    sources: Mapping[str, str],
) -> tuple[Observation, ...]:
    seen: set[tuple[str, str]] = set()
    found: list[Observation] = []
    for expr in sorted(chosen, key=_position):
        if id(expr) not in values or _says_nothing(expr, evaluation):
            continue
        span: Span = expr.span  # type: ignore[attr-defined]
        observation = Observation(_text(expr, span, sources), format_value(values[id(expr)]), span)
        key = (observation.text, observation.value)
        if key not in seen:  # a let compared twice is shown once
            seen.add(key)
            found.append(observation)
    return tuple(found)


def _position(expr: n.Expr) -> tuple[str, int, int, int, int]:
    # Outer expressions before the ones they contain, which start at the same place.
    span: Span = expr.span  # type: ignore[attr-defined]
    return (span.file, span.line, span.column, -span.end_line, -span.end_column)


def _says_nothing(expr: n.Expr, evaluation: Evaluation) -> bool:
    """Constants are visible in the rule; whole records would print as a wall of fields."""
    if _constant(expr):
        return True
    return isinstance(non_null(evaluation.type_of(expr)), RecordType)


def _constant(expr: n.Expr) -> bool:
    if isinstance(expr, n.Literal):
        return True
    if isinstance(expr, n.Unary) and expr.op == "-":
        return _constant(expr.operand)
    if isinstance(expr, n.ListLit | n.SetLit):
        return all(_constant(item) for item in expr.items)
    if isinstance(expr, n.MapLit):
        return all(_constant(k) and _constant(v) for k, v in expr.entries)
    return False


def _text(expr: n.Expr, span: Span, sources: Mapping[str, str]) -> str:
    """The expression as written, on one line; as ``fmt`` prints it when the text is gone."""
    source = sources.get(span.file)
    if source is not None:
        lines = source.split("\n")  # as the lexer counts lines
        if 1 <= span.line <= span.end_line <= len(lines):
            if span.line == span.end_line:
                piece = lines[span.line - 1][span.column - 1 : span.end_column - 1]
            else:
                piece = "\n".join(
                    [
                        lines[span.line - 1][span.column - 1 :],
                        *lines[span.line : span.end_line - 1],
                        lines[span.end_line - 1][: span.end_column - 1],
                    ]
                )
            text = " ".join(piece.split())
            if text:
                return text
    return print_expr(expr)
