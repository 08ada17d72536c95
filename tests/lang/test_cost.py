"""Static cost bounds, worked out by hand from the rules in ``policyengine.lang.cost``.

Each row's comment shows the sum, so a changed rule of costing shows up as a changed sum here.
Bounds come from ``fake_schema``: ``widget.parts`` holds at most 8, ``order.tags`` 16,
``widget.labels`` 32; a collection declared without a bound is assumed to hold 64.
"""

from __future__ import annotations

import pytest

from policyengine.diagnostics import render
from policyengine.lang import nodes as n
from policyengine.lang.checker import MAX_RULE_COST, check, check_expression
from policyengine.lang.cost import RuleCost
from policyengine.lang.loader import load_texts
from policyengine.lang.schema import Function, Param, Root, Schema
from policyengine.lang.types import INT, Field, RecordType
from tests.lang.fake_schema import SCHEMA

# A root with a costly field and a costly function, to see the declared costs used.
GAUGE = RecordType(
    "Gauge",
    {
        "cheap": Field("cheap", INT, lambda g: g["cheap"]),
        "heavy": Field("heavy", INT, lambda g: g["heavy"], cost=7),
    },
)
COSTLY = Schema(
    roots={**SCHEMA.roots, "gauge": Root("gauge", GAUGE)},
    functions={
        **SCHEMA.functions,
        "probe_all": Function("probe_all", (Param("g", GAUGE),), INT, lambda g: 0, cost=40),
    },
)

EXPRESSIONS = [
    ("1", 1),
    ("1 + 2", 3),  # + 1 1
    ("widget.count", 2),  # name 1, field 1
    ("gauge.heavy", 8),  # name 1, field 7
    ("gauge.heavy + gauge.cheap", 11),  # + 8 2
    ("probe_all(gauge)", 41),  # function 40, name 1
    ("fits(order, widget)", 7),  # function 5, names 1 1
    ("shortfall(order, widget)", 12),  # a function's default cost is 10
    ("[p.size for p in widget.parts]", 19),  # 1 + iterable 2 + 8 * element 2
    ("[p.size for p in widget.parts if p.spare]", 35),  # 1 + 2 + 8 * (2 + 2)
    ("[x for x in [1, 2, 3]]", 8),  # 1 + literal 4 + its length 3 * 1
    ("any(p.spare for p in widget.parts)", 20),  # call 1 + the generator 19
    ("len(order.tags)", 3),  # len does not walk the list
    ("sum([1, 2, 3])", 8),  # call 1 + literal 4 + walks 3
    ('"a" in order.tags', 20),  # in 1 + 1 + field 2 + walks 16
    ('"a" in widget.labels', 4),  # a map lookup does not walk
    ("if widget.count > 1 then [p.size for p in widget.parts] else []", 24),  # 1 + 4 + max(19, 1)
    ("[[q.size for q in widget.parts] for p in widget.parts]", 155),  # 1 + 2 + 8 * 19
    ("[k for k in widget.labels]", 35),  # 1 + 2 + 32 * 1
    ("[k for k in widget.labels.keys()]", 36),  # keys() keeps the map's bound
    ('[s for s in widget.name.split(",")]', 69),  # split: unbounded, assumed 64
    ('"x{1}" == "x"', 3),
]


@pytest.mark.parametrize(("source", "expected"), EXPRESSIONS, ids=[s for s, _ in EXPRESSIONS])
def test_expression_cost(source: str, expected: int) -> None:
    checked = check_expression(source, COSTLY)
    assert checked.diagnostics == ()
    assert checked.cost == expected


def _check(source: str):
    unit = load_texts({"t.sched": source})
    assert unit.ok
    return unit, check(unit, COSTLY)


def test_a_rule_counts_each_let_it_reads_once() -> None:
    unit, result = _check(
        'policy "p" {\n'
        "  let big = [p.size for p in widget.parts]\n"  # 19
        "  let unused = [q.size for q in widget.parts]\n"
        '  filter f when len(big) > 0 { len(big) > 1 } reason "{big}"\n'
        "}\n"
    )
    assert result.ok
    (rule,) = unit.policies[0].rules
    # guard: > 1 + len(1 + big 1) + 1; body the same; reason: template 1 + big 1.
    assert result.rule_cost(rule) == RuleCost(guard=4, body=4, reason=2, lets=19)
    assert result.costs[("p", "f")] == 29


def test_lets_read_through_other_lets_count_once() -> None:
    unit, result = _check(
        'policy "p" {\n'
        "  let a = widget.count\n"  # 2
        "  let b = a + a\n"  # 3
        "  score s { b + a }\n"  # 3
        "}\n"
    )
    assert result.ok
    (rule,) = unit.policies[0].rules
    assert result.rule_cost(rule) == RuleCost(guard=0, body=3, reason=0, lets=5)
    assert result.rule_cost(rule).total == 8


def test_library_rules_are_costed_under_the_library() -> None:
    _, result = _check(
        "library lib {\n"
        "  let n = order.priority\n"  # 2
        "  filter f { n > gauge.heavy }\n"  # 1 + 1 + 8
        "}\n"
        'policy "p" { use lib }\n'
    )
    assert result.ok
    assert result.costs == {("lib", "f"): 12}


def test_a_shared_name_keeps_the_larger_bound() -> None:
    unit, result = _check(
        'policy "p" {\n'
        "  filter t { true }\n"
        "  score t { sum(p.size for p in widget.parts) }\n"  # 1 + 19
        "}\n"
    )
    assert result.ok
    filter_rule, score_rule = unit.policies[0].rules
    assert isinstance(filter_rule, n.Filter) and isinstance(score_rule, n.Score)
    assert result.rule_cost(filter_rule).total == 1
    assert result.rule_cost(score_rule).total == 20
    assert result.costs[("p", "t")] == 20


def test_expressions_in_error_still_get_a_bound() -> None:
    # Lint may run on a policy with type errors; costing must not fail on DYN nodes.
    _, result = _check('policy "p" {\n  filter f { [x for x in nope] == [] }\n}\n')
    assert [d.code for d in result.diagnostics] == ["PE201"]
    assert result.costs[("p", "f")] == 1 + (1 + 1 + 64 * 1) + 1


def _nested(depth: int, size: int) -> str:
    items = "[" + ", ".join(str(i) for i in range(size)) + "]"
    body = "v0 > 0"
    for level in range(depth):
        body = f"all({body} for v{level} in {items})"
    return f'policy "p" {{\n  filter dear {{ {body} }}\n}}\n'


@pytest.mark.parametrize(
    ("depth", "size", "refused"),
    [(3, 20, False), (4, 34, True), (6, 10, True)],
    ids=["8,000 a node: fine", "1.3M comprehensions deep", "a million by nesting"],
)
def test_a_rule_above_the_hard_cost_limit_is_an_error(depth: int, size: int, refused: bool) -> None:
    source = _nested(depth, size)
    unit = load_texts({"p.sched": source})
    result = check(unit, SCHEMA)
    bound = result.rule_costs[id(unit.policies[0].rules[0])].total
    errors = [d for d in result.diagnostics if d.code == "PE229"]
    assert (bound > MAX_RULE_COST) == refused
    if not refused:
        assert errors == []
        return
    (error,) = errors
    assert render(error, source).split("\n")[0] == (
        f"p.sched:2:10: error PE229: filter dear has a static cost bound of {bound:,}, above "
        f"the limit of {MAX_RULE_COST:,} a scheduler accepts"
    )
