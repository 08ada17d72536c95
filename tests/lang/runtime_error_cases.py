"""Rules that fail at runtime, and how to run one: the filter and score cases of the
runtime-error tests, each a one-rule policy, the objects that make it fail (over a widget that
counts nothing, so ratios over ``widget.count`` divide by zero), the message and the fragment
the error points at.

The runtime-error tests check each error's message, span and verdict; the reference evaluator
is held to failing on the same cases as the compiled closures do.
"""

from __future__ import annotations

from typing import Any

from policyengine.lang.compiler import CompiledRule, Program, compile_texts
from policyengine.lang.runtime import Env
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA
from tests.lang.widget_schema import order, widget

FILE = "errors.sched"


def compile_rule(rule: str) -> tuple[Program, CompiledRule]:
    # The rule sits on line 2; its body starts at column 1 of line 3.
    source = f'policy "p" {{\n  {rule}\n}}\n'
    result = compile_texts({FILE: source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    return result.program, result.program.policies[0].rules[0]


def env(program: Program, context: Any = None, **roots: Any) -> Env:
    """An env over a bare order and a bare widget that counts nothing (``roots`` replace them)."""
    roots.setdefault("order", order())
    roots.setdefault("widget", widget(count=0))
    return program.env(roots, context if context is not None else {})


def column_of(rule: str, fragment: str) -> int:
    """The 1-based column of ``fragment`` on line 2, where ``compile_rule`` puts the rule."""
    return 2 + rule.index(fragment) + 1


# (rule text, objects, expected message, the fragment whose position the error points at)
FILTER_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "filter ratio { widget.count / widget.count > 1 }",
        {},
        "division by zero",
        "widget.count / widget.count",
    ),
    (
        "filter modulo { order.priority % widget.count == 0 }",
        {},
        "modulo by zero",
        "order.priority % widget.count",
    ),
    (
        'filter exact { (widget.capacity["cpu"] ?? 0) / widget.count > 1 }',
        {},
        "division by zero",
        '(widget.capacity["cpu"] ?? 0) / widget.count',
    ),
    (
        "filter heavy { widget.weight * 2 > 1 }",
        {"widget": widget(count=0, weight=None)},
        "widget.weight is null, but it is declared float",
        "widget.weight",
    ),
    (
        "filter boom { explode() }",
        {},
        "explode() raised RuntimeError: boom",
        "explode()",
    ),
    (
        'filter broken_fn { broken() == "x" }',
        {},
        "broken() returned null, but it is declared string",
        "broken()",
    ),
    (
        'filter dyn_add { probe("a") + 1 > 0 }',
        {},
        "cannot apply '+' to string and int",
        'probe("a") + 1',
    ),
    (
        "filter dyn_compare { probe(null) < 1 }",
        {},
        "cannot compare null < int",
        "probe(null) < 1",
    ),
    (
        'filter dyn_index { probe(null)["a"] == "b" }',
        {},
        "cannot index null",
        'probe(null)["a"]',
    ),
    (
        'filter dyn_key { probe(["k"]) in widget.labels }',
        {},
        "cannot look for a list in a map",
        'probe(["k"]) in widget.labels',
    ),
    (
        "filter dyn_iter { any(x for x in probe(null)) }",
        {},
        "cannot iterate over a null",
        "probe(null)",
    ),
    (
        'filter dyn_method { probe(1).startswith("a") }',
        {},
        "cannot call startswith() on a int",
        'probe(1).startswith("a")',
    ),
    (
        "filter dyn_len { len(probe(1)) > 0 }",
        {},
        "len() cannot take a int",
        "len(probe(1))",
    ),
    (
        "filter dyn_body { probe(1) }",
        {},
        "a filter gives a bool or a list of reasons, not int",
        "probe(1)",
    ),
    (
        "filter in_guard when widget.count / 0 > 1 { true }",
        {},
        "division by zero",
        "widget.count / 0",
    ),
    (
        'filter in_reason { false } reason "ratio {1 / widget.count}"',
        {},
        "division by zero",
        "1 / widget.count",
    ),
]


SCORE_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("score per_unit { 100 / widget.count }", {}, "division by zero", "100 / widget.count"),
    (
        "score heavy { widget.weight * 10 }",
        {"widget": widget(count=0, weight=None)},
        "widget.weight is null, but it is declared float",
        "widget.weight",
    ),
    ("score boom { explode() }", {}, "explode() raised RuntimeError: boom", "explode()"),
    ('score text { probe("high") }', {}, "a score is a number, not string", 'probe("high")'),
    # Floats overflow to infinities, whose difference is NaN: neither can rank a node.
    ("score huge { 1e308 * 10.0 }", {}, "a score is a finite number, not inf", "1e308 * 10.0"),
    (
        "score nan { 1e308 * 10.0 - 1e308 * 10.0 }",
        {},
        "a score is a finite number, not NaN",
        "1e308 * 10.0 - 1e308 * 10.0",
    ),
    (
        "score guarded when widget.count / 0 > 1 { 1 }",
        {},
        "division by zero",
        "widget.count / 0",
    ),
]
