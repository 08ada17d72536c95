"""``schedlib.nested_counts``: deltas leave no zero count and no empty inner map behind."""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.schedlib.nested_counts import add_nested


@pytest.mark.parametrize(
    ("before", "step", "after"),
    [
        ({}, ("a", 1, 2), {"a": {1: 2}}),
        ({"a": {1: 2}}, ("a", 1, 3), {"a": {1: 5}}),
        ({"a": {1: 2, 2: 1}}, ("a", 1, -2), {"a": {2: 1}}),
        ({"a": {1: 2}, "b": {1: 1}}, ("a", 1, -2), {"b": {1: 1}}),
    ],
    ids=["a new count", "added to", "a count gone to zero", "an inner map emptied"],
)
def test_add_nested(
    before: dict[Any, dict[Any, int]], step: tuple[Any, Any, int], after: Any
) -> None:
    counts = {outer: dict(inner) for outer, inner in before.items()}
    add_nested(counts, *step)
    assert counts == after
