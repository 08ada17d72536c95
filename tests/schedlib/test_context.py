"""``CycleContext.prepared``: a per-pod state made once per cycle, pod-only ones per class."""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.schedlib.context import CycleContext


def _counting(value: Any) -> tuple[list[int], Any]:
    made: list[int] = []

    def factory() -> Any:
        made.append(1)
        return value

    return made, factory


# (the state's value, pod_only, whether the cycle has a class memo) -> factory calls over two
# cycles of pods alike, two reads each.
CASES = [
    ("state", False, True, 2),  # once per cycle
    ("state", True, True, 1),  # pod-only: once per class
    ("state", True, False, 2),  # pod-only, class unknown: once per cycle
    (None, False, True, 2),  # a None state is kept too (a skipped plugin's)
    (None, True, True, 1),
    (0, True, True, 1),
]


@pytest.mark.parametrize(("value", "pod_only", "with_class", "calls"), CASES)
def test_a_state_is_made_once_per_cycle_or_class(
    value: Any, pod_only: bool, with_class: bool, calls: int
) -> None:
    made, factory = _counting(value)
    memo: dict[Any, Any] = {}
    for _ in range(2):
        context = CycleContext(None, None)
        context.alike = memo if with_class else None
        assert context.prepared("key", factory, pod_only) is value
        assert context.prepared("key", factory, pod_only) is value
    assert len(made) == calls


def test_states_under_other_keys_are_apart() -> None:
    context = CycleContext(None, None)
    assert context.prepared(("a", "filter"), lambda: 1) == 1
    assert context.prepared(("a", "score"), lambda: 2) == 2
    assert context.prepared(("a", "filter"), lambda: 3) == 1
