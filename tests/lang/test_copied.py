"""``Copied`` reads as the list of results it stands for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policyengine.lang.compiler import compile_texts
from policyengine.lang.copied import Copied
from policyengine.lang.evaluators import NodeBatch
from tests.lang.fake_schema import TOTAL_SCHEMA as SCHEMA

ORDER = {"name": "o", "labels": {}, "wants": {}, "priority": 5, "tags": []}
WIDGETS: list[dict[str, Any]] = [
    {
        "name": name,
        "labels": {},
        "capacity": {},
        "parts": [],
        "weight": 1.0,
        "count": count,
        "colour": None,
    }
    for name, count in [("a", 0), ("b", 3), ("c", -2), ("d", 10), ("e", 1)]
]

# (results, each node's index into them, the list they stand for)
CASES = {
    "two results": (["x", "y"], [1, 0, 1, 1], ["y", "x", "y", "y"]),
    "one result": (["x"], [0, 0, 0], ["x", "x", "x"]),
    "no nodes": (["x"], [], []),
}


@pytest.mark.parametrize(("results", "inverse", "expected"), CASES.values(), ids=CASES)
def test_copied_reads_as_its_list(
    results: list[str], inverse: list[int], expected: list[str]
) -> None:
    copied = Copied(results, np.array(inverse, np.int64))
    assert list(copied) == expected and len(copied) == len(expected)
    assert [copied[i] for i in range(len(copied))] == expected
    assert copied[1:3] == expected[1:3]
    assert copied == expected and expected == copied
    assert copied != [*expected, "z"] and copied != "".join(expected)


# (rule, whether its verdicts over many widgets come back as ``Copied``): shared verdicts do,
# a reason formatted per widget does not.
SHARED = {
    "a reason of its own": ('filter f { widget.count > 0 } reason "none counted"', True),
    "every widget passes": ("filter f { widget.count > -5 }", True),
    "a guard passing the rest": ("filter f when widget.count > 0 { widget.count > 2 }", True),
    "a guard reading the order": ("filter f when order.priority > 9 { widget.count > 2 }", False),
    "a reason read from the widget": (
        'filter f { widget.count > 0 } reason "{widget.name}"',
        False,
    ),
}


@pytest.mark.parametrize(("source", "copied"), SHARED.values(), ids=SHARED)
def test_verdicts_over_many_widgets_equal_each_widget_s(source: str, copied: bool) -> None:
    text = f'policy "p" {{\n  {source}\n}}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None
    rule = result.program.policies[0].rules[0]
    widgets: list[dict[str, Any]] = WIDGETS * 8
    env = result.program.env(order=ORDER)
    want = [rule.filter(env.derive(widget=w)) for w in widgets]
    assert rule.filter_many is not None
    got = rule.filter_many(NodeBatch(env, {"widget": widgets}))
    assert got == want
    assert isinstance(got, Copied) == copied
