"""``model.cached``: ``cached_property`` and ``kept_on`` compute once per instance."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from policyengine.model.cached import cached_property, kept_on

COMPUTED: list[int] = []


@dataclass(frozen=True)
class Box:
    value: int

    @cached_property
    def doubled(self) -> int:
        """Twice the value."""
        COMPUTED.append(self.value)
        return 2 * self.value


@pytest.mark.parametrize(("values", "reads", "computed"), [
    ([3], 1, [3]),
    ([3], 4, [3]),  # later reads find the kept value
    ([3, 5], 2, [3, 5]),  # one value per instance
], ids=["computed", "kept", "per-instance"])  # fmt: skip
def test_a_value_is_computed_once_per_instance(
    values: list[int], reads: int, computed: list[int]
) -> None:
    COMPUTED.clear()
    boxes = [Box(v) for v in values]
    for _ in range(reads):
        assert [box.doubled for box in boxes] == [2 * v for v in values]
    assert computed == COMPUTED
    assert all(box.__dict__["doubled"] == 2 * box.value for box in boxes)  # kept on a frozen one


def test_read_on_the_class_it_is_the_descriptor_with_the_function_s_name_and_doc() -> None:
    descriptor = Box.doubled
    assert isinstance(descriptor, cached_property)
    assert descriptor.attrname == "doubled"
    assert descriptor.__doc__ == "Twice the value."


def _halved_or_none(box: Box) -> int | None:
    COMPUTED.append(box.value)
    return box.value // 2 if box.value % 2 == 0 else None


@pytest.mark.parametrize(
    ("value", "expected"),
    [pytest.param(4, 2, id="a value"), pytest.param(3, None, id="None is kept too")],
)
def test_kept_on_computes_once_per_instance(value: int, expected: int | None) -> None:
    COMPUTED.clear()
    box = Box(value)
    assert [kept_on(box, "_halved", _halved_or_none) for _ in range(3)] == [expected] * 3
    assert [value] == COMPUTED
    assert kept_on(Box(value), "_halved", _halved_or_none) == expected  # another instance
    assert [value, value] == COMPUTED
