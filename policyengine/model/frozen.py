"""An immutable, hashable ``dict`` for labels, annotations and resource lists.

Model objects are frozen dataclasses, but ``frozen`` is shallow: a plain ``dict`` field could
still be mutated behind the snapshot's back. ``FrozenDict`` is a real ``dict`` (fast lookups,
``json.dumps`` works, ``==`` with plain dicts works) whose mutators raise. ``HashedKey`` wraps a
frozen value used as a cache key cycle after cycle, its hash computed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenDict(dict[K, V]):
    """A ``dict`` that cannot be changed after construction."""

    __slots__ = ("_hash",)
    _hash: int  # set lazily by __hash__

    def _readonly(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError("FrozenDict is immutable")

    __setitem__ = _readonly
    __delitem__ = _readonly
    clear = _readonly
    pop = _readonly
    popitem = _readonly
    setdefault = _readonly
    update = _readonly
    __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            value = hash(frozenset(self.items()))
            object.__setattr__(self, "_hash", value)
            return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    # One copy, edited before anyone sees it (a snapshot derivation copies maps of thousands).
    def with_item(self, key: K, value: V) -> FrozenDict[K, V]:
        new = FrozenDict(self)
        dict.__setitem__(new, key, value)
        return new

    def without(self, key: K) -> FrozenDict[K, V]:
        new = FrozenDict(self)
        dict.pop(new, key, None)
        return new


EMPTY: FrozenDict[Any, Any] = FrozenDict()


def freeze(mapping: Mapping[K, V] | Iterable[tuple[K, V]] | None) -> FrozenDict[K, V]:
    if mapping is None:
        return EMPTY
    if isinstance(mapping, FrozenDict):
        return mapping
    return FrozenDict(mapping)


class HashedKey:
    """A hashable value as a cache key whose hash is computed once and which equals itself by
    identity first: callers that look their entries up with the very same key object cycle
    after cycle skip hashing and comparing a deep value each time. Keys of different
    subclasses never compare equal."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Any, hashed: int | None = None):
        """``hashed``: the hash of a part of ``value`` (equal values have equal parts)."""
        self.value = value
        self._hash = hash(value) if hashed is None else hashed

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return other is self or (
            type(other) is type(self) and other._hash == self._hash and other.value == self.value
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"
