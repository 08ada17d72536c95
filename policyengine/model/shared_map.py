"""An immutable mapping that a derived copy shares with its parent: ``with_item`` in O(1).

A snapshot's node map (5,000 nodes) and pod map (one entry per placed pod) are copied by
every assume step when they are ``FrozenDict``s: a copy increments every entry's reference
count and freeing the parent's decrements them all again, each a cache miss on another
object, and together they cost the assume step more than its own work. A ``SharedMap`` is a
``FrozenDict`` base shared by a chain of derived maps, plus the few changes made since: the
base keys replaced in place or removed (``_over``) and the keys added after them, in
insertion order (``_tail``). Once the changes outgrow a small bound, a derivation folds them
into a new base (one C copy of the base, amortised over that many derivations).

It reads exactly as the ``dict`` the same edits would have made: lookups, ``len``, ``==``
(with any mapping), and iteration order (a replaced key keeps its place; a removed key that
comes back goes last; new keys follow in the order they came).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from policyengine.model.frozen import EMPTY, FrozenDict

K = TypeVar("K")
V = TypeVar("V")

_GONE: Any = object()  # an ``_over`` entry: the base key is removed
_MISSING: Any = object()
# Changes kept before a derivation folds them into a new base: each derivation copies the
# changes, a fold copies the base (thousands of entries) once.
_FOLD = 64


class SharedMap(Mapping[K, V], Generic[K, V]):
    """A read-only mapping derived from a shared ``FrozenDict`` by a few edits."""

    __slots__ = ("_base", "_flat", "_len", "_over", "_tail")

    def __init__(self, base: Mapping[K, V] = EMPTY):
        self._base: FrozenDict[K, V] = base if isinstance(base, FrozenDict) else FrozenDict(base)
        self._over: dict[K, V] = {}
        self._tail: dict[K, V] = {}
        self._len = len(self._base)
        self._flat: FrozenDict[K, V] | None = self._base

    @staticmethod
    def of(mapping: Mapping[K, V]) -> SharedMap[K, V]:
        return mapping if isinstance(mapping, SharedMap) else SharedMap(mapping)

    def _derive(self, over: dict[K, V], tail: dict[K, V], size: int) -> SharedMap[K, V]:
        new: SharedMap[K, V] = _new_map(SharedMap)
        if len(over) + len(tail) > _FOLD:
            flat = _fold(self._base, over, tail)
            new._base, new._over, new._tail, new._flat = flat, {}, {}, flat
        else:
            new._base, new._over, new._tail, new._flat = self._base, over, tail, None
        new._len = size
        return new

    # -- derivations ---------------------------------------------------------------------

    def with_item(self, key: K, value: V) -> SharedMap[K, V]:
        """This map with ``key`` set to ``value`` (in place if present, else added last)."""
        over, tail = self._over, self._tail
        if key in tail:
            tail = {**tail, key: value}
            return self._derive(over, tail, self._len)
        if key in self._base and over.get(key, _MISSING) is not _GONE:
            return self._derive({**over, key: value}, tail, self._len)
        return self._derive(over, {**tail, key: value}, self._len + 1)

    def without(self, key: K) -> SharedMap[K, V]:
        """This map without ``key`` (unchanged content when it is absent)."""
        over, tail = self._over, self._tail
        if key in tail:
            tail = dict(tail)
            del tail[key]
            return self._derive(over, tail, self._len - 1)
        if key in self._base and over.get(key, _MISSING) is not _GONE:
            return self._derive({**over, key: _GONE}, tail, self._len - 1)
        return self

    def since_base(self) -> tuple[FrozenDict[K, V], tuple[K, ...]]:
        """The base this map shares and the keys set or removed since it (in no order): what
        a reader that kept something per base must look at again."""
        return self._base, (*self._over, *self._tail)

    # -- reading -------------------------------------------------------------------------

    def __getitem__(self, key: K) -> V:
        value = self._tail.get(key, _MISSING)
        if value is _MISSING:
            value = self._over.get(key, _MISSING)
            if value is _MISSING:
                return self._base[key]
            if value is _GONE:
                raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def get(self, key: K, default: Any = None) -> Any:
        value = self._tail.get(key, _MISSING)
        if value is _MISSING:
            value = self._over.get(key, _MISSING)
            if value is _MISSING:
                return self._base.get(key, default)
            if value is _GONE:
                return default
        return value

    def __contains__(self, key: object) -> bool:
        if key in self._tail:
            return True
        value = self._over.get(key, _MISSING)  # type: ignore[arg-type]
        if value is _MISSING:
            return key in self._base
        return value is not _GONE

    def __len__(self) -> int:
        return self._len

    def flat(self) -> FrozenDict[K, V]:
        """The content as a ``FrozenDict`` (built once, on first use)."""
        flat = self._flat
        if flat is None:
            flat = self._flat = _fold(self._base, self._over, self._tail)
        return flat

    def __iter__(self) -> Iterator[K]:
        return iter(self.flat())

    def keys(self) -> Any:
        return self.flat().keys()

    def values(self) -> Any:
        return self.flat().values()

    def items(self) -> Any:
        return self.flat().items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedMap):
            return self.flat() == other.flat()
        if isinstance(other, Mapping):
            return self.flat() == (other if isinstance(other, dict) else dict(other.items()))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.flat())

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedMap, (self.flat(),))

    def __repr__(self) -> str:
        return f"SharedMap({dict.__repr__(self.flat())})"


_new_map = object.__new__


def _fold(base: FrozenDict[K, V], over: dict[K, V], tail: dict[K, V]) -> FrozenDict[K, V]:
    """The dict the edits make: replaced keys keep their places, removed ones go, the tail
    follows (a removed base key that came back is removed first, then added last)."""
    if not over and not tail:
        return base
    out = dict(base)
    for key, value in over.items():
        if value is _GONE:
            del out[key]
        else:
            out[key] = value
    out.update(tail)
    return FrozenDict(out)
