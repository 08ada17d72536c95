"""``lang.reads``: what a rule reads of its roots, through lets, for the engine's caches.

Table-driven over the fake schema: the attributes read off a root, the constant-key entries
read of an attribute (and only those when nothing else of it is read), roots passed whole to
domain functions, and roots used whole any other way (which no attribute list describes).
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.lang.compiler import compile_texts
from policyengine.lang.reads import RuleReads, expression_reads, rule_reads
from tests.lang.fake_schema import SCHEMA

CASES: list[tuple[str, str, dict[str, object]]] = [
    (
        "",
        "filter f { widget.count > order.priority }",
        {"attributes": {("widget", "count"), ("order", "priority")}},
    ),
    (
        "",
        "filter f { fits(order, widget) }",
        {"root_args": {("fits", "order"), ("fits", "widget")}},
    ),
    ("", 'filter f { (order.wants["cpu"] ?? 0) > 0 }', {"entries": {("order", "wants", "cpu")}}),
    (
        "",
        'filter f { (order.wants["cpu"] ?? 0) > 0 and len(order.wants) > 1 }',
        {"attributes": {("order", "wants")}},
    ),
    (
        'let w = order.wants["gpu"] ?? 0',
        'filter f when w > 0 { (widget.capacity["gpu"] ?? 0) >= w }',
        {"entries": {("order", "wants", "gpu"), ("widget", "capacity", "gpu")}},
    ),
    (
        "",
        'filter f { ([order][0] ?? order).name == "x" }',
        {"bare": {"order"}},
    ),
    (
        "",
        "score s { score_of(order.name) }",
        {"attributes": {("order", "name")}, "functions": {"score_of"}},
    ),
    (
        "",
        'filter f { widget.name != "" } reason "{order.labels}"',
        {"attributes": {("widget", "name"), ("order", "labels")}},
    ),
]


def _reads(lets: str, rule: str) -> RuleReads:
    text = f'policy "p" {{\n  {lets}\n  {rule}\n}}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None, [d.message for d in result.diagnostics]
    compiled = result.program.policies[0].rules[0]
    reads = rule_reads(compiled.source, compiled.checked)
    assert reads is not None
    return reads


@pytest.mark.parametrize(("lets", "rule", "expected"), CASES, ids=[rule for _, rule, _ in CASES])
def test_what_a_rule_reads(lets: str, rule: str, expected: dict[str, object]) -> None:
    reads = _reads(lets, rule)
    assert set(reads.attributes) == expected.get("attributes", set())
    assert set(reads.entries) == expected.get("entries", set())
    assert {(f.name, root) for f, root in reads.root_args} == expected.get("root_args", set())
    assert set(reads.bare_roots) == expected.get("bare", set())
    assert {f.name for f in reads.functions} >= expected.get("functions", set())  # type: ignore[operator]


def test_a_rule_the_checker_has_not_seen_reads_unknown() -> None:
    assert rule_reads(None, None) is None


@pytest.mark.parametrize(
    ("rule", "paths"),
    [
        (
            "filter f { widget.count > order.priority }",
            {("widget", "count"), ("order", "priority")},
        ),
        ('filter f { (widget.capacity["gpu"] ?? 0) > 0 }', {("widget", "capacity")}),
        ("filter f { (widget.parts[0] ?? widget.parts[1]) == null }", {("widget", "parts")}),
        ("filter f { fits(order, widget) }", set()),
        (
            'filter f { widget.name != "" } reason "{order.labels}"',
            {("widget", "name"), ("order", "labels")},
        ),
    ],
    ids=[
        "widget,count,order,priority",
        "widget,capacity",
        "widget,parts",
        "set()",
        "widget,name,order,labels",
    ],
)
def test_the_attribute_paths_a_rule_reads(rule: str, paths: set[tuple[str, ...]]) -> None:
    # Chains are recorded whole (``node.gpu.product``, not ``node.gpu``) from the outermost
    # attribute; an index or a call ends a chain.
    assert set(_reads("", rule).paths) == paths


# (lets, rule, the lets left opaque) -> the lets the rule reaches, what it reads outside the
# opaque ones, and those it refers to.
OPAQUE = [
    (
        'let job = order.labels["job"] ?? order.name',
        'score s { if job == "a" then 10 else widget.count }',
        {"job"},
        (["job"], {("widget", "count")}, set(), ["job"]),
    ),
    (  # a let reached only through another is followed into, then left opaque
        'let job = order.labels["job"] ?? order.name\n  let key = job + widget.name',
        'filter f { key != "" }',
        {"job"},
        (["key", "job"], {("widget", "name")}, set(), ["job"]),
    ),
    (  # nothing opaque: everything the lets read, as before
        'let job = order.labels["job"] ?? order.name',
        'score s { if job == "a" then 10 else widget.count }',
        set(),
        (["job"], {("widget", "count"), ("order", "name")}, {("order", "labels", "job")}, []),
    ),
]


@pytest.mark.parametrize(
    ("lets", "rule", "opaque", "expected"),
    OPAQUE,
    ids=["opaque-let", "let-through-another", "nothing-opaque"],
)
def test_lets_left_opaque_are_listed_instead_of_walked(
    lets: str, rule: str, opaque: set[str], expected: tuple[Any, ...]
) -> None:
    text = f'policy "p" {{\n  {lets}\n  {rule}\n}}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None, [d.message for d in result.diagnostics]
    compiled = result.program.policies[0].rules[0]
    full = rule_reads(compiled.source, compiled.checked)
    assert full is not None
    reached = full.followed
    ids = frozenset(id(let) for let in reached if let.name in opaque)
    reads = rule_reads(compiled.source, compiled.checked, ids)
    assert reads is not None
    names, attributes, entries, listed = expected
    assert [let.name for let in reached] == names
    assert set(reads.attributes) == attributes
    assert set(reads.entries) == entries
    assert [let.name for let in reads.lets] == listed


def test_an_expression_s_reads_follow_its_lets() -> None:
    text = 'policy "p" {\n  let w = order.wants["gpu"] ?? 0\n  filter f { w > widget.count }\n}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None and result.program.checked is not None
    compiled = result.program.policies[0].rules[0]
    full = rule_reads(compiled.source, compiled.checked)
    assert full is not None
    (let,) = full.followed
    reads = expression_reads(let.expr, result.program.checked)
    assert reads is not None
    assert set(reads.entries) == {("order", "wants", "gpu")}
    assert not reads.attributes and not reads.functions
