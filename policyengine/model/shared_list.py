"""An immutable sequence that a derived copy shares with its parent: a few rows replaced.

Every cycle's frame holds one ``NodeView`` per node (5,000 of them), and the assume step
replaces one of them. Copying the list for it touched every view's reference count, twice
with the parent's list freed: about a twentieth of a steady cycle. A ``SharedList`` is a list
shared by a chain of derived sequences plus the rows replaced since (``_over``); once those
outgrow a small bound a derivation folds them into a new list (one copy per that many
derivations), as ``SharedMap`` does for the snapshot's maps.

It reads exactly as the list the same replacements would have made. Reading a few rows
(``pick``) looks them up; reading many or all of them (iteration, ``flat``) builds that list
once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

_MISSING: Any = object()
# Replaced rows kept before a derivation folds them into a new list.
_FOLD = 64


class SharedList(Sequence[T], Generic[T]):
    """A read-only sequence: a shared list with some rows replaced."""

    __slots__ = ("_base", "_flat", "_over")

    def __init__(self, items: Iterable[T] = ()):
        self._base: list[T] = list(items)
        self._over: dict[int, T] = {}
        self._flat: list[T] | None = self._base

    def replaced(self, rows: Iterable[tuple[int, T]]) -> SharedList[T]:
        """This sequence with each ``(row, item)`` of ``rows`` in place of its row."""
        base = self._base if self._flat is None else self._flat
        over = {} if self._flat is not None else self._over
        changes = dict(rows)
        for row in changes:
            if not 0 <= row < len(base):
                raise IndexError(f"row {row} of {len(base)}")
        new: SharedList[T] = SharedList.__new__(SharedList)
        if len(over) + len(changes) > _FOLD:
            folded = list(base)
            for row, item in (*over.items(), *changes.items()):
                folded[row] = item
            new._base, new._over, new._flat = folded, {}, folded
        else:
            new._base, new._over, new._flat = base, {**over, **changes}, None
        return new

    def flat(self) -> list[T]:
        """Every row as a list (built once, on first use; never to be written)."""
        flat = self._flat
        if flat is None:
            flat = list(self._base)
            for row, item in self._over.items():
                flat[row] = item
            self._flat = flat
        return flat

    def pick(self, rows: Sequence[int]) -> Picked[T]:
        """The items at ``rows`` (non-negative): looked up one by one when few, read from the
        whole list (built once) when many. The list says where they came from (``Picked``)."""
        flat = self._flat
        if flat is None and len(rows) > _FOLD:
            flat = self.flat()
        if flat is not None:
            items = itemgetter(*rows)(flat) if len(rows) > 1 else [flat[r] for r in rows]
        else:
            base, over = self._base, self._over
            items = [
                base[row] if (item := over.get(row, _MISSING)) is _MISSING else item for row in rows
            ]
        return Picked(items, rows, self)

    def __len__(self) -> int:
        return len(self._base)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if type(index) is int and 0 <= index < len(self._base) and self._flat is None:
            item = self._over.get(index, _MISSING)
            return self._base[index] if item is _MISSING else item
        return self.flat()[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self.flat())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedList):
            return self.flat() == other.flat()
        if isinstance(other, Sequence):
            return self.flat() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which do not hash

    def __repr__(self) -> str:
        return f"SharedList({self.flat()!r})"


class Picked(list[T]):
    """Items a ``SharedList`` gave for some rows, with those rows and the list they came from:
    whoever knows what the list's rows stand for (a frame's views are a snapshot's nodes, row
    for row) need not look each item up again."""

    __slots__ = ("of", "rows")

    def __init__(self, items: Iterable[T], rows: Sequence[int], of: SharedList[T]):
        super().__init__(items)
        self.rows = rows
        self.of = of
