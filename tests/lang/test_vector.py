"""Columnar forms of expressions (``lang.vector``) give every node its single answer.

Each case is one rule over the fake schema's widgets; ``filter_many``/``score_many`` over a
batch of widgets must equal the rule's single evaluator on each widget's env, and, for the
cases marked columnar, must get there without building a per-node env (the columnar form ran
and did not fall back). The short circuits are the point of several cases: a division that
the guard, ``and``, ``or``, ``??`` or ``if`` keeps away from a zero must not be evaluated
there (it would raise and send the whole batch node by node).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from policyengine.lang.compiler import compile_texts
from policyengine.lang.runtime import NodeBatch
from tests.lang.fake_schema import TOTAL_SCHEMA as SCHEMA

WIDGETS: list[dict[str, Any]] = [
    {
        "name": name,
        "labels": labels,
        "capacity": capacity,
        "parts": [],
        "weight": weight,
        "count": count,
        "colour": colour,
    }
    for name, labels, capacity, weight, count, colour in [
        ("a", {"k": "abc"}, {"cpu": Fraction(2)}, 0.5, 0, None),
        ("x,y", {}, {}, 2.5, 3, "red"),
        ("abc", {"k": "A1"}, {"cpu": Fraction(1, 2)}, -1.0, -2, ""),
        ("", {"k": ""}, {"mem": Fraction(8)}, 3.0, 10, "red"),
        ("fast", {}, {"cpu": Fraction(0)}, 0.0, 1, None),
    ]
]
ORDER = {"name": "o", "labels": {"k": "abc"}, "wants": {}, "priority": 5, "tags": ["a"]}

# (rule, whether the batch must be evaluated without a per-node env)
CASES = [
    ('filter f { (widget.colour ?? "none") == "red" }', True),
    ("filter f when widget.count > 0 { 10 / widget.count > 2 }", True),
    ("filter f { widget.count == 0 or 10 / widget.count > 2 }", True),
    ("filter f { widget.count != 0 and 10 / widget.count > 2 }", True),
    ("filter f { not (widget.count > 1) }", True),
    ('filter f { widget.name in ["a", "x,y", "fast"] }', True),
    ('filter f { widget.name not in ["a"] and widget.name.startswith("a") }', True),
    ('filter f { (widget.labels["k"] ?? "").matches("^[a-z]+$") }', True),
    ('filter f { widget.labels["k"] ?? order.name == "o" }', True),
    ("filter f { widget.count > order.priority }", True),
    ("filter f when order.priority > 0 { widget.weight >= 0.5 }", True),
    ("score s { if widget.count > 0 then 100 / widget.count else widget.weight }", True),
    ("score s when widget.count != 0 { 30 / widget.count }", True),
    ('score s { widget.capacity["cpu"] ?? 1 }', True),
    ("score s { -widget.count + order.priority }", True),
    ("score s { len(widget.labels) * 2 }", True),
    ("score s { if order.priority > 1 then widget.count else widget.weight }", True),
    # Errors on some nodes: the batch falls back and reports them node by node.
    ("filter f { 10 / widget.count > 2 }", False),
    ("score s { 100 / widget.count }", False),
    ("score s { len(widget.labels) / widget.weight }", False),
]


def _rule(source: str) -> Any:
    text = f'policy "p" {{\n  {source}\n}}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None, [d.message for d in result.diagnostics]
    return result.program, result.program.policies[0].rules[0]


@pytest.mark.parametrize(("source", "columnar"), CASES)
def test_the_batch_gives_each_node_its_single_answer(
    source: str, columnar: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, rule = _rule(source)
    pod_env = program.env(order=ORDER)
    want = [
        (rule.filter if rule.kind == "filter" else rule.score)(pod_env.derive(widget=w))
        for w in WIDGETS
    ]
    many = rule.filter_many if rule.kind == "filter" else rule.score_many
    assert many is not None
    envs: list[int] = []
    original = NodeBatch.env_at

    def counted(self: NodeBatch, position: int) -> Any:
        envs.append(position)
        return original(self, position)

    monkeypatch.setattr(NodeBatch, "env_at", counted)
    got = many(NodeBatch(pod_env, {"widget": WIDGETS}))
    assert got == want
    if columnar:
        assert envs == []
    else:
        assert envs  # fell back to the single evaluator, which reports the errors
    narrowed = many(NodeBatch(pod_env, {"widget": WIDGETS}).take([4, 0, 2]))
    assert narrowed == [want[4], want[0], want[2]]
