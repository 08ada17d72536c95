"""``CompiledRule.idle``: told from the pod alone that a rule passes every node or scores none.

The engine leaves such a rule out of the cycle (``engine.idle``), so the test must never be
true where some node would get another answer or an error: a guard read false before anything
per node (the guard whole, or the leftmost operand of its ``and`` chain), or a body that is a
call of a function telling itself idle (``Function.idle``) with bare roots for arguments and a
guard that cannot fail at a node. The table runs each rule's test and, where it says idle,
every widget through the rule itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.lang.compiler import CompiledRule, compile_texts
from policyengine.lang.runtime import EvalError
from policyengine.lang.schema import Function, Param, Schema
from policyengine.lang.types import INT, STRING, ListType, Nullable
from tests.lang.fake_schema import ORDER, SCHEMA, WIDGET
from tests.lang.widget_schema import order, widget


def _quiet(context: dict[str, Any]) -> bool:
    return bool(context.get("quiet"))


def _reasons(context: dict[str, Any], order: dict, widget: dict) -> list[str]:
    return [] if context.get("quiet") else [f"{widget['name']} is loud"]


def _score(context: dict[str, Any], order: dict, widget: dict) -> int | None:
    return None if context.get("quiet") else widget["count"]


def _context_function(name: str, returns: Any, impl: Any) -> Function:
    return Function(
        name,
        (Param("order", ORDER), Param("widget", WIDGET)),
        returns,
        impl,
        "quiet when the context says so",
        needs_context=True,
        varies_per_node=True,
        idle=_quiet,
    )


IDLE_SCHEMA = Schema(
    roots=SCHEMA.roots,
    functions={
        **SCHEMA.functions,
        "loud_reasons": _context_function("loud_reasons", ListType(STRING, bound=4), _reasons),
        "loud_score": _context_function("loud_score", Nullable(INT), _score),
        # Told idle, but its empty value is no null a score can read: never used.
        "loud_count": _context_function("loud_count", INT, lambda c, o, w: 0),
    },
    normalizers=SCHEMA.normalizers,
    compressible_resources=SCHEMA.compressible_resources,
    known_resources=SCHEMA.known_resources,
)

VIP = order(labels={"tier": "vip"})
PLAIN = order()
QUIET: dict[str, Any] = {"quiet": True}
LOUD: dict[str, Any] = {}

# (rule, order, context, idle: True/False, or None when the rule has no test)
CASES = [
    ("filter f { widget.count > 2 }", PLAIN, LOUD, None),
    ('filter f when order.labels["tier"] == "vip" { widget.count > 2 }', PLAIN, LOUD, True),
    ('filter f when order.labels["tier"] == "vip" { widget.count > 2 }', VIP, LOUD, False),
    ("filter f when false { widget.count > 2 }", VIP, LOUD, True),
    (
        'filter f when order.labels["tier"] == "vip" and widget.count > 2 { widget.count > 3 }',
        PLAIN,
        LOUD,
        True,
    ),
    (
        'filter f when order.labels["tier"] == "vip" and widget.count > 2 { widget.count > 3 }',
        VIP,
        LOUD,
        False,
    ),
    # The leftmost operand decides alone; one read per node comes first here.
    (
        'filter f when widget.count > 2 and order.labels["tier"] == "vip" { widget.count > 3 }',
        PLAIN,
        LOUD,
        None,
    ),
    (
        'filter f when order.priority > 5 and order.labels["tier"] == "vip" and widget.count > 2'
        " { widget.count > 3 }",
        PLAIN,
        LOUD,
        True,
    ),
    # ``or`` decides nothing from its left operand being false.
    (
        'filter f when order.labels["tier"] == "vip" or widget.count > 2 { widget.count > 3 }',
        PLAIN,
        LOUD,
        None,
    ),
    ("filter f { loud_reasons(order, widget) }", PLAIN, QUIET, True),
    ("filter f { loud_reasons(order, widget) }", PLAIN, LOUD, False),
    (
        'filter f when order.labels["tier"] == "vip" { loud_reasons(order, widget) }',
        VIP,
        QUIET,
        True,
    ),
    (
        'filter f when order.labels["tier"] == "vip" { loud_reasons(order, widget) }',
        VIP,
        LOUD,
        False,
    ),
    (
        'filter f when order.labels["tier"] == "vip" { loud_reasons(order, widget) }',
        PLAIN,
        LOUD,
        True,
    ),
    # A guard reading the widget may fail at one: the body's emptiness tells nothing then.
    ("filter f when widget.count > 2 { loud_reasons(order, widget) }", PLAIN, QUIET, None),
    # Not a bare call of the function: its value is read, not passed on.
    ("filter f { len(loud_reasons(order, widget)) == 0 }", PLAIN, QUIET, None),
    ("score s { loud_score(order, widget) }", PLAIN, QUIET, True),
    ("score s { loud_score(order, widget) }", PLAIN, LOUD, False),
    ("score s { loud_score(order, widget) ?? 5 }", PLAIN, QUIET, None),
    ("score s { loud_count(order, widget) }", PLAIN, QUIET, None),
    # A filter body is empty with an empty list; a score's with a null: never the other.
    ("score s { len(loud_reasons(order, widget)) }", PLAIN, QUIET, None),
    (
        'score s when order.labels["tier"] == "vip" and widget.count > 2 { widget.count }',
        PLAIN,
        LOUD,
        True,
    ),
    # Through a let read once per pod.
    ("score s when vip and widget.count > 2 { widget.count }", PLAIN, LOUD, True),
    ("score s when vip and widget.count > 2 { widget.count }", VIP, LOUD, False),
]


def compiled_rule(rule: str) -> tuple[Any, CompiledRule]:
    source = f'policy "p" {{\n  let vip = order.labels["tier"] == "vip"\n  {rule}\n}}\n'
    result = compile_texts({"p.sched": source}, IDLE_SCHEMA)
    assert result.program is not None, result.diagnostics
    policy = result.program.policies[0]
    return result.program, (*policy.filters, *policy.scores)[0]


@pytest.mark.parametrize(
    ("rule", "pod", "context", "idle"),
    CASES,
    ids=[
        f"{rule}-{'vip' if pod is VIP else 'plain'}-{'quiet' if context is QUIET else 'loud'}"
        for rule, pod, context, _ in CASES
    ],
)
def test_a_rule_is_told_idle_only_where_it_passes_or_scores_none_everywhere(
    rule: str, pod: dict, context: dict, idle: bool | None
) -> None:
    program, compiled = compiled_rule(rule)
    if idle is None:
        assert compiled.idle is None
        return
    assert compiled.idle is not None
    assert compiled.idle(program.env({"order": pod}, dict(context))) is idle
    if idle:
        for count in (0, 3, 9):
            env = program.env({"order": pod, "widget": widget(count=count)}, dict(context))
            if compiled.kind == "filter":
                assert compiled.filter(env).passed
            else:
                assert compiled.score(env).value is None


def test_a_guard_that_fails_tells_nothing_by_raising() -> None:
    program, compiled = compiled_rule(
        "filter f when 10 / (order.priority - 1) > 1 and widget.count > 2 { true }"
    )
    assert compiled.idle is not None
    with pytest.raises(EvalError, match="division by zero"):
        compiled.idle(program.env({"order": order(priority=1)}, {}))
    assert compiled.idle(program.env({"order": order(priority=30)}, {})) is True
