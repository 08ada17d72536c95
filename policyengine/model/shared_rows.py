"""A snapshot's node rows, shared with the snapshot it was derived from: ``with_row`` in O(1).

Every assume step replaces one node's ``NodeInfo``, and the caches that keep something per
node row between cycles (kept sums, label columns, the step log) ask the new snapshot for its
rows: only to compare them with the rows they last saw and to read the few that changed. A
tuple of the rows is a copy of thousands of references per step (each a cache miss on
another object, once to take it and once more when the old tuple is freed) for a handful of
reads. ``SharedRows`` is a tuple shared by a chain of derived rows plus the few rows replaced
since (``_over``); once those outgrow a small bound, a derivation folds them into a new base
tuple (one C copy, amortised over that many steps).

It reads as the tuple the same replacements would have made: indexing by row, ``len``,
iteration and ``flat()`` (that tuple, built once on first use).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

# Rows kept replaced before a derivation folds them into a new base: each derivation copies
# the replaced rows, a fold copies the base (thousands of references) once.
_FOLD = 64


class SharedRows(Sequence[T], Generic[T]):
    """A read-only sequence derived from a shared tuple by replacing a few of its items."""

    __slots__ = ("_base", "_flat", "_over")

    def __init__(self, base: Sequence[T] = ()):
        self._base: tuple[T, ...] = base if isinstance(base, tuple) else tuple(base)
        self._over: dict[int, T] = {}
        self._flat: tuple[T, ...] | None = self._base

    def with_row(self, row: int, item: T) -> SharedRows[T]:
        """These rows with ``row`` (an index inside them) holding ``item``."""
        if not 0 <= row < len(self._base):
            raise IndexError(row)
        new: SharedRows[T] = _new_rows(SharedRows)
        over = {**self._over, row: item}
        if len(over) > _FOLD:
            flat = _fold(self._base, over)
            new._base, new._over, new._flat = flat, {}, flat
        else:
            new._base, new._over, new._flat = self._base, over, None
        return new

    @overload
    def __getitem__(self, row: int) -> T: ...

    @overload
    def __getitem__(self, row: slice) -> tuple[T, ...]: ...

    def __getitem__(self, row: Any) -> Any:
        if type(row) is slice:
            return self.flat()[row]
        over = self._over
        if over:  # a numpy integer finds its row too: it hashes and compares as the int
            found = over.get(row if row >= 0 else row + len(self._base), _MISSING)
            if found is not _MISSING:
                return found
        return self._base[row]

    def __len__(self) -> int:
        return len(self._base)

    def __iter__(self) -> Iterator[T]:
        return iter(self.flat())

    def flat(self) -> tuple[T, ...]:
        """The rows as a tuple (built once, on first use)."""
        flat = self._flat
        if flat is None:
            flat = self._flat = _fold(self._base, self._over)
        return flat

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedRows):
            return self.flat() == other.flat()
        if isinstance(other, tuple):
            return self.flat() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.flat())

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedRows, (self.flat(),))

    def __repr__(self) -> str:
        return f"SharedRows({self.flat()!r})"


_MISSING: Any = object()
_new_rows = object.__new__


def _fold(base: tuple[T, ...], over: dict[int, T]) -> tuple[T, ...]:
    if not over:
        return base
    items = list(base)
    for row, item in over.items():
        items[row] = item
    return tuple(items)
