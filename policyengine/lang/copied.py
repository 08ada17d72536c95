"""Results shared by many nodes, told once each with every node's index into them.

A rule over five thousand nodes mostly gives a handful of distinct answers (every node passes,
or fails for one of a few reasons). Handed on as a list, each of the thousands of copies is
looked at again by whoever stores them; as ``Copied`` the few results travel with one array of
indexes, which a column stores in a couple of array operations (``fastpath.columns``). The
evaluators give it when their verdicts are shared objects (``evaluators``), and so do rules
evaluated once per distinct row key (``fastpath.rowgroups``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


class Copied(Sequence[Any]):
    """Each node's result is ``results[inverse[i]]``."""

    __slots__ = ("inverse", "results")

    def __init__(self, results: Sequence[Any], inverse: np.ndarray):
        self.results = list(results)
        self.inverse = inverse

    def __len__(self) -> int:
        return len(self.inverse)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.results[i] for i in self.inverse[index].tolist()]
        return self.results[int(self.inverse[index])]

    def __iter__(self) -> Iterator[Any]:
        return map(self.results.__getitem__, self.inverse.tolist())

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same results in the same order (a list included)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(map(operator.eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which do not hash
