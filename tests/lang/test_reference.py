"""The reference evaluator: what every construct evaluates to when the tree is walked.

The reference states the language's meaning for ``explain`` and for the equivalence tests
that hold the planner to it, so it is tested on its own here: the values of every construct
(the planner's own table, plus what that table leaves out), runtime errors with their messages
and spans, short-circuiting, lets computed once, and whole rules giving the verdicts their
compiled closures give. Each case also asserts the planner agrees, which costs nothing here.

Expressions are checked inside a policy (``let value = …``) so that the checker's tables —
which the reference walks by — are those a real compile produces.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest

from policyengine.lang import nodes as n
from policyengine.lang.checker import CheckResult, check
from policyengine.lang.compiler import CompiledRule, Program, compile_texts
from policyengine.lang.loader import load_texts
from policyengine.lang.planner import Planner
from policyengine.lang.reference import Evaluation, evaluate, reference_filter, reference_score
from policyengine.lang.runtime import Env, EvalError, FilterVerdict, ScoreValue
from policyengine.lang.schema import Schema
from policyengine.quantity import parse_quantity
from tests.lang import runtime_error_cases
from tests.lang.expression_tables import SHORT_CIRCUITS, VALUES
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA
from tests.lang.fake_schema import TOTAL_SCHEMA
from tests.lang.widget_schema import env_for, order, part, sample_widget

FILE = "ref.sched"


# --- helpers (the other reference and trace tests use them too) ----------------------------


def checked_expression(
    source: str, lets: Mapping[str, str] | None = None, schema: Schema = SCHEMA
) -> tuple[n.Expr, n.Policy, CheckResult]:
    """``source`` checked as the last let of a policy, after ``lets`` (name → expression)."""
    lines = [f"  let {name} = {expr}" for name, expr in (lets or {}).items()]
    lines.append(f"  let value = {source}")
    text = 'policy "p" {\n' + "\n".join(lines) + "\n}\n"
    unit = load_texts({FILE: text})
    result = check(unit, schema)
    assert result.ok, [d.message for d in result.errors]
    policy = unit.policies[0]
    return policy.lets[-1].expr, policy, result


def planned(expr: n.Expr, owner: n.Policy, checked: CheckResult, schema: Schema = SCHEMA) -> Any:
    """The planner's closure for ``expr``, planned as the compiler plans it."""
    return Planner(schema, checked.types, checked.patterns).expression(expr, owner).fn


def outcome(compute: Any, env: Env) -> tuple[str, Any]:
    """A value, or an error's message and span: what the two evaluators must agree on."""
    try:
        return ("value", compute(env))
    except EvalError as error:
        return ("error", (error.message, error.span))


def reference_value(source: str, env: Env | None = None, **lets: str) -> Any:
    expr, _, checked = checked_expression(source, lets)
    return evaluate(expr, env if env is not None else env_for({}), checked)


def compile_rules(body: str, name: str = FILE) -> Program:
    result = compile_texts({name: body}, SCHEMA)
    assert result.program is not None, result.diagnostics
    return result.program


# --- values --------------------------------------------------------------------------------

# The planner's table has a few cases the checker refuses (they test the planner without
# types); these are their typed spellings.
UNTYPED = {
    'widget.capacity["cpu"] / 3': ('(widget.capacity["cpu"] ?? 0) / 3', Fraction(4, 3)),
    "widget.parts[1].size": ("[p.size for p in widget.parts][1] ?? 0", Fraction(2)),
    'string(["a", 1])': ('string(["a", "1"])', "[a, 1]"),
    'widget.labels["zone"].matches("eu")': ('(widget.labels["zone"] ?? "").matches("eu")', True),
}

MORE_VALUES: list[tuple[str, Any]] = [
    # division: only a quantity shared out by an int stays exact
    ("1 / 4", 0.25),
    ("3Gi / 2", Fraction(3 * 2**29)),
    ("3 / 1500m", 2.0),
    ("2.5 / 2", 1.25),
    ("1500m / 500m", 3.0),
    ("-7 % 3", 2),
    ("-(3 - 5)", 2),
    ("[1] + [2, 3]", [1, 2, 3]),
    ("0.1 + 0.2", 0.1 + 0.2),
    # null handling
    ('widget.labels["a"] ?? widget.labels["b"] ?? "c"', "c"),
    ("widget.colour == null", True),
    ('order.labels["team"] == "ml"', True),
    ("[1, 2][5] ?? 0", 0),
    # collections and membership
    ('{"a": widget.count, "b": 2}', {"a": 3, "b": 2}),
    ('{"a": 1, "a": 2}', {"a": 2}),
    ("{widget.count, 3, order.priority}", frozenset({3, 5})),
    ('"gpu" in {"gpu", "cpu"}', True),
    ('widget.name in {"w-7", order.name}', True),
    ('"w" in widget.name', True),
    ("widget.count in [1.0, 3.0]", True),
    ("1500m in [1500m, 2]", True),
    # comprehensions: targets over maps, nesting, shadowing
    ('[k for k, v in widget.labels if v == "r2"]', ["rack"]),
    ('[q * 2 for k, q in widget.capacity if k == "cpu"]', [Fraction(8)]),
    (
        "[[t + p.name for p in widget.parts] for t in order.tags]",
        [
            ["fasta", "fastb", "fastc"],
            ["gpua", "gpub", "gpuc"],
        ],
    ),
    ("[x for x in [x for x in [1, 2, 3]] if x > 1]", [2, 3]),
    ('count(t.startswith("f") for t in order.tags)', 1),
    ('sum(q for k, q in widget.capacity if k != "memory")', Fraction(4)),
    ("max(p.size for p in widget.parts if p.spare) ?? 0", Fraction(1, 2)),
    ("all(x > 0 for x in [1, 2] if x > 5)", True),
    # conversions of what labels hold
    ('int(widget.labels["zone"] ?? "") ?? -1', -1),
    ('float(" 1e3 ")', 1000.0),
    ('float(".5")', 0.5),
    ('int("+3")', 3),
    ('quantity(" 2Gi ")', Fraction(2 * 2**30)),
    ("quantity(1.5)", Fraction(3, 2)),
    ("int(widget.weight)", 2),
    ("string(2.0)", "2"),
    ("string({1, 2})", "[1, 2]"),
    ('string({"k": 250m})', "{k: 250m}"),
    # methods
    ('"a b  c".split(" ")', ["a", "b", "", "c"]),
    ('"r2" in widget.labels.values()', True),
    ('"abc".contains("")', True),
    ('widget.name.matches("7$") and not widget.name.matches("^7")', True),
    # domain functions
    ('score_of("x") + 1', 10),
    ("fits(order, widget) and shortfall(order, widget) == []", True),
]


def _all_values() -> list[tuple[str, Any]]:
    typed = [UNTYPED.get(source, (source, value)) for source, value in VALUES]
    return typed + MORE_VALUES


ALL_VALUES = _all_values()


@pytest.mark.parametrize(("source", "expected"), ALL_VALUES, ids=[s for s, _ in ALL_VALUES])
def test_value(source: str, expected: Any) -> None:
    expr, owner, checked = checked_expression(source)
    env = env_for({"scores": {"x": 9}})
    value = evaluate(expr, env, checked)
    assert value == expected
    assert type(value) is type(expected)
    assert planned(expr, owner, checked)(env_for({"scores": {"x": 9}})) == value


def test_quantities_are_exact_fractions() -> None:
    value = reference_value("100m + 200m + 700m")
    assert value == 1 and type(value) is Fraction


def test_a_total_map_reads_its_default_for_a_missing_key() -> None:
    source = 'stock.free["gpu"] + stock.free["cpu"]'
    expr, owner, checked = checked_expression(source, schema=TOTAL_SCHEMA)
    env = env_for({}, stock={"free": {"cpu": Fraction(1, 2)}})
    assert evaluate(expr, env, checked) == Fraction(1, 2)
    assert planned(expr, owner, checked, TOTAL_SCHEMA)(env) == Fraction(1, 2)


def test_names_are_resolved_by_the_checkers_bindings() -> None:
    # The inner 'x' is the inner comprehension's; the let is read where no target hides it.
    assert reference_value("[[x * 10 for x in [n]] for n in [1, 2]]") == [[10], [20]]
    assert reference_value("[base + x for x in [1, 2]]", base="100") == [101, 102]
    assert reference_value("twice + 1", base="widget.count", twice="base * 2") == 7


def test_a_let_is_computed_once_per_evaluation() -> None:
    context: dict[str, Any] = {}
    expr, _, checked = checked_expression("seen + seen + seen", {"seen": "probe(1)"})
    assert evaluate(expr, env_for(context), checked) == 3
    assert context["probe"] == [1]


def test_domain_functions_get_the_context_when_they_ask_for_it() -> None:
    context = {"scores": {"gpu": 4}}
    assert reference_value('score_of("gpu")', env_for(context)) == 4
    small = sample_widget(capacity={"cpu": Fraction(1)})
    assert reference_value("shortfall(order, widget)", env_for({}, widget=small)) == [
        "short of cpu"
    ]


@pytest.mark.parametrize(("source", "expected"), SHORT_CIRCUITS, ids=[s for s, _ in SHORT_CIRCUITS])
def test_short_circuit_never_evaluates_the_other_side(source: str, expected: Any) -> None:
    assert reference_value(source) == expected


def test_any_and_all_stop_at_the_deciding_element() -> None:
    context: dict[str, Any] = {}
    assert reference_value("any(probe(p.spare) for p in widget.parts)", env_for(context))
    assert context["probe"] == [True]
    context.clear()
    assert reference_value("all(probe(p.spare) for p in widget.parts)", env_for(context)) is False
    assert context["probe"] == [True, False]
    context.clear()
    # A list comprehension handed to any() stops early too, as in the planner.
    assert reference_value("any([probe(p.spare) for p in widget.parts])", env_for(context))
    assert context["probe"] == [True]


# --- runtime errors ------------------------------------------------------------------------

BROKEN_PARTS = [part("a"), {"name": "b", "spare": False}]

# (expression, roots, message, the fragment of the expression the span starts at)
ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    ("widget.count / (widget.count - 3)", {}, "division by zero", "widget.count / "),
    ("widget.weight / 0", {}, "division by zero", "widget.weight"),
    ("order.priority % (widget.count - 3)", {}, "modulo by zero", "order.priority"),
    (
        "widget.weight",
        {"widget": sample_widget(weight=None)},
        "widget.weight is null, but it is declared float",
        "widget.weight",
    ),
    (
        "[p.size for p in widget.parts]",
        {"widget": sample_widget(parts=BROKEN_PARTS)},
        "p.size is null, but it is declared quantity",
        "p.size",
    ),
    (
        "[(if p.spare then p else p).size for p in widget.parts]",
        {"widget": sample_widget(parts=BROKEN_PARTS)},
        "the value.size is null, but it is declared quantity",
        "(if p.spare",
    ),
    (
        "len(widget.parts)",
        {"widget": sample_widget(parts=None)},
        "widget.parts is null, but it is declared list<Part>",
        "widget.parts",
    ),
    (
        "[p for p in widget.parts]",
        {"widget": sample_widget(parts=7)},
        "cannot iterate over a int",
        "widget.parts",
    ),
    (
        "[k for k, v in probe(order.tags)]",
        {},
        "two targets need a map or a list of pairs",
        "probe",
    ),
    (
        'int(float("1e999") ?? 0)',
        {},
        "int() failed: cannot convert float infinity to integer",
        "int(",
    ),
    ('"a,b".split("")', {}, "split(string) failed: empty separator", '"a,b"'),
    (
        "widget.name.startswith(probe(1))",
        {},
        "startswith(int) failed: startswith first arg must be str or a tuple of str, not int",
        "widget.name",
    ),
    ("probe(3).lower()", {}, "cannot call lower() on a int", "probe(3)"),
    ("probe(3).keys()", {}, "cannot call keys() on a int", "probe(3)"),
    ('probe(3).matches("a")', {}, "cannot call matches() on a int", "probe(3)"),
    ('min(probe(1), probe("a"))', {}, "min() cannot order int and string", "min("),
    ('sum(probe(["a"]))', {}, "sum() cannot take a list", "sum("),
    ("abs(probe(null))", {}, "abs() of null", "abs("),
    ("quantity(probe(true))", {}, "quantity() cannot take a bool", "quantity("),
    ("{probe([1]): 1}", {}, "a map key is a string, a number or a bool", "{"),
    ("{probe([1])}", {}, "a set holds only strings, numbers and bools", "{"),
    ("probe([1]) in {1, 2}", {}, "cannot look for a list in a set", "probe"),
    ('-probe("a")', {}, "cannot negate a string", "-"),
    ("probe(null).name", {}, "cannot read .name of null", "probe"),
    ('probe([1])["a"]', {}, "a list index is an int, not string", "probe"),
    ("probe(5)[0]", {}, "cannot index a int", "probe"),
    ("explode()", {}, "explode() raised RuntimeError: boom", "explode"),
    ("broken()", {}, "broken() returned null, but it is declared string", "broken"),
    ("widget.count / 0 > 1 or explode()", {}, "division by zero", "widget.count"),
]


@pytest.mark.parametrize(
    ("source", "roots", "message", "fragment"), ERRORS, ids=[e[0] for e in ERRORS]
)
def test_runtime_errors_name_the_failing_expression(
    source: str, roots: dict[str, Any], message: str, fragment: str
) -> None:
    expr, owner, checked = checked_expression(source)
    found = outcome(lambda env: evaluate(expr, env, checked), env_for({}, **roots))
    assert found[0] == "error", found
    got_message, span = found[1]
    assert got_message == message
    prefix = "  let value = "
    assert (span.file, span.line, span.column) == (
        FILE,
        2,
        len(prefix) + source.index(fragment) + 1,
    )
    assert outcome(planned(expr, owner, checked), env_for({}, **roots)) == found


def test_the_innermost_failing_expression_is_remembered() -> None:
    expr, _, checked = checked_expression("1 + widget.count / (widget.count - 3)")
    evaluation = Evaluation(env_for({}), checked)
    with pytest.raises(EvalError):
        evaluation.value(expr)
    assert isinstance(evaluation.failed, n.Binary) and evaluation.failed.op == "/"


# --- whole rules ---------------------------------------------------------------------------


def _rule(program: Program, name: str) -> CompiledRule:
    return next(r for p in program.policies for r in p.rules if r.qualified_name == name)


def assert_same_rule_results(rule: CompiledRule, env_of: Any) -> None:
    if rule.kind == "filter":
        assert reference_filter(rule, env_of()) == rule.filter(env_of())
    else:
        assert reference_score(rule, env_of()) == rule.score(env_of())


@pytest.mark.parametrize(
    ("rule", "roots"),
    [(c[0], c[1]) for c in (*runtime_error_cases.FILTER_CASES, *runtime_error_cases.SCORE_CASES)],
    ids=[
        c[0].split()[1]
        for c in (*runtime_error_cases.FILTER_CASES, *runtime_error_cases.SCORE_CASES)
    ],
)
def test_failing_rules_fail_as_their_compiled_closures_do(rule: str, roots: dict[str, Any]) -> None:
    program, compiled = runtime_error_cases.compile_rule(rule)
    assert_same_rule_results(compiled, lambda: runtime_error_cases.env(program, **roots))
    result = (
        reference_filter(compiled, runtime_error_cases.env(program, **roots))
        if compiled.kind == "filter"
        else reference_score(compiled, runtime_error_cases.env(program, **roots))
    )
    assert result.error is not None


POLICY = """\
library lib {
  let big = widget.count > 2
  filter big { big } reason "only {widget.count} here"
  score spare { count(p.spare for p in widget.parts) }
}
policy "p" {
  use lib { weight spare 2 }
  let team = order.labels["team"] ?? "none"
  filter team when team != "none" { widget.labels["team"] == team }
  filter short { shortfall(order, widget) }
  filter listed { ["too " + t for t in order.tags if t == "slow"] }
  filter plain { widget.weight < 2 }
  filter constant_reason { widget.weight < 2 } reason "too heavy"
  score ratio when widget.count > 0 { 100 * widget.weight / widget.count }
  score maybe { order.wants["gpu"] }
  score exact { (widget.capacity["cpu"] ?? 0) / 2 }
}
"""

RULE_ENVS: list[dict[str, Any]] = [
    {},
    {"widget": sample_widget(count=1, weight=3.0, labels={"team": "ml"}, parts=[])},
    {"widget": sample_widget(count=0, capacity={})},
    {"order": order(labels={"team": "web"}, tags=["slow"])},
    {"order": order(wants={"gpu": parse_quantity("2")})},
]

RULE_NAMES = [
    "lib.big",
    "lib.spare",
    "team",
    "short",
    "listed",
    "plain",
    "constant_reason",
    "ratio",
    "maybe",
    "exact",
]


@pytest.mark.parametrize("name", RULE_NAMES)
@pytest.mark.parametrize("roots", RULE_ENVS, ids=range(len(RULE_ENVS)))
def test_rules_give_the_verdicts_of_their_compiled_closures(
    name: str, roots: dict[str, Any]
) -> None:
    program = compile_rules(POLICY)
    rule = _rule(program, name)
    assert_same_rule_results(rule, lambda: env_for({}, **roots))


def test_rule_verdicts_in_detail() -> None:
    program = compile_rules(POLICY)
    small = env_for({}, widget=sample_widget(count=1, weight=3.0, parts=[]))
    assert reference_filter(_rule(program, "lib.big"), small) == FilterVerdict(
        False, ("only 1 here",)
    )
    assert reference_filter(_rule(program, "plain"), small) == FilterVerdict(
        False, ("rejected by plain",)
    )
    assert reference_filter(_rule(program, "constant_reason"), small) == FilterVerdict(
        False, ("too heavy",)
    )
    assert reference_score(_rule(program, "ratio"), small) == ScoreValue(300.0)
    assert reference_score(_rule(program, "maybe"), small) == ScoreValue(None)
    assert reference_score(_rule(program, "exact"), env_for({})) == ScoreValue(2.0)
    assert reference_score(_rule(program, "ratio"), env_for({}, widget=sample_widget(count=0))) == (
        ScoreValue(None)
    )


def test_a_rule_compiled_without_its_tree_is_refused() -> None:
    program = compile_rules(POLICY)
    rule = _rule(program, "plain")
    bare = CompiledRule(
        rule.kind,
        rule.name,
        rule.qualified_name,
        rule.library,
        rule.weight,
        rule.normalize,
        rule.span,
        rule.cost,
        rule.per_node,
        rule.filter,
        rule.score,
    )
    with pytest.raises(ValueError, match="compiled without its syntax tree"):
        reference_filter(bare, env_for({}))


def test_compiled_rules_carry_what_the_reference_needs() -> None:
    program = compile_rules(POLICY)
    rule = _rule(program, "lib.big")
    assert isinstance(rule.source, n.Filter) and rule.source.name == "big"
    assert isinstance(rule.owner, n.Library) and rule.owner.name == "lib"
    assert rule.checked is program.checked and program.checked is not None
    assert FILE in rule.sources
