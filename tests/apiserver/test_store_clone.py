"""``store.clone`` copies exactly as ``copy.deepcopy`` does, faster, for what the store holds."""

from __future__ import annotations

import copy
import datetime as dt
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback.store import clone

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def _shape(value: Any) -> Any:
    """The value with every container's type and every dict's key order made visible."""
    if isinstance(value, dict):
        return (type(value).__name__, [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value)


@given(JSON_VALUES)
def test_clone_equals_deepcopy_for_json(value: Any) -> None:
    copied = clone(value)
    assert _shape(copied) == _shape(copy.deepcopy(value)) == _shape(value)


@given(st.dictionaries(st.text(), st.lists(st.dictionaries(st.text(), st.text()), min_size=1)))
def test_clone_shares_nothing_with_the_original(value: dict[str, Any]) -> None:
    before = copy.deepcopy(value)
    copied = clone(value)
    for items in copied.values():
        items[0][object()] = "changed"  # type: ignore[index]
        items.append({})
    assert value == before


@pytest.mark.parametrize(
    "value",
    [
        {"when": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)},
        OrderedDict([("b", 1), ("a", [1, 2])]),
        {"nested": OrderedDict(a={"x": 1})},
    ],
    ids=[
        "when=datetime(2024,1,1,tzinfo=UTC)",
        "OrderedDict(b,1,a,1,2)",
        "nested=OrderedDict(a=x=1)",
    ],
)
def test_clone_falls_back_to_deepcopy_beyond_json(value: Any) -> None:
    copied = clone(value)
    assert copied == value and _shape(copied) == _shape(value)
    assert copied is not value
