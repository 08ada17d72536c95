"""``model.frozen``: a frozen dict refuses changes; a hashed key equals what its value equals,
within its own kind, and keeps the hash it was given."""

from __future__ import annotations

import pytest

from policyengine.model.frozen import FrozenDict, HashedKey


class _OtherKey(HashedKey):
    __slots__ = ()


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (HashedKey(("a", 1)), HashedKey(("a", 1)), True),
        (HashedKey(("a", 1)), HashedKey(("a", 2)), False),
        (HashedKey(("a", 1)), ("a", 1), False),  # a key is not its value
        (HashedKey(("a", 1)), _OtherKey(("a", 1)), False),  # nor a key of another kind
        # equal values with a hash of an equal part: equal keys
        (HashedKey(("a", [1]), hashed=7), HashedKey(("a", [1]), hashed=7), True),
    ],
    ids=["same", "other-value", "key-and-its-value", "other-kind", "equal-hashed-parts"],
)
def test_hashed_keys_equal_by_value_within_their_kind(
    left: HashedKey, right: object, equal: bool
) -> None:
    assert (left == right) is equal
    assert left == left


def test_a_hashed_key_finds_its_entry_and_keeps_the_given_hash() -> None:
    table = {HashedKey(("x", FrozenDict({"k": "v"}))): 1}
    assert table[HashedKey(("x", FrozenDict({"k": "v"})))] == 1
    assert hash(HashedKey(["unhashable"], hashed=3)) == 3
    assert repr(_OtherKey(("a",))) == "_OtherKey(('a',))"


def test_a_frozen_dict_refuses_changes() -> None:
    frozen = FrozenDict({"a": 1})
    with pytest.raises(TypeError, match="FrozenDict is immutable"):
        frozen["b"] = 2
    assert frozen == {"a": 1}
