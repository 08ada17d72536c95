"""Cluster keys with a part per node row, so a cache recomputes only the rows whose key moved.

A context function's ``cluster_key`` (``lang.schema.Function``) guards every cached per-node
result at once: while it compares equal, every result stands. For PodTopologySpread and
InterPodAffinity that key had to change with every placement of a matching pod, throwing away
the results of thousands of nodes whose answer could not have changed (a pod placed in zone A
changes nothing for the nodes of zone B; one placed on a node under hostname anti-affinity
changes only that node). A ``RowKeyed`` key says more: ``whole`` guards every row as a plain
key does, and ``rows`` holds, for each row of ``snapshot.nodes``, what that row's result reads
of the cluster (one int64 per column): a row's result stands while its row of ``rows`` is
unchanged too. ``engine.fastpath.columns`` compares them row by row.

Compared with ``==`` it is equal only when both parts are, so a cache that knows nothing of
rows stays right by treating it as one opaque key.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np


class RowKeyed:
    __slots__ = ("rows", "whole")

    def __init__(self, whole: Hashable, rows: np.ndarray):
        self.whole = whole
        self.rows = rows.reshape(len(rows), -1) if rows.ndim != 2 else rows

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is RowKeyed
            and self.whole == other.whole
            and self.rows.shape == other.rows.shape
            and bool(np.array_equal(self.rows, other.rows))
        )

    def __hash__(self) -> int:
        return hash(self.whole)

    def __repr__(self) -> str:
        return f"RowKeyed({self.whole!r}, {self.rows.shape[0]} rows x {self.rows.shape[1]})"


def split_keys(keys: tuple[Hashable, ...]) -> tuple[tuple[Hashable, ...], np.ndarray | None]:
    """The whole parts of ``keys`` (plain keys as they are) and their row parts side by side
    (None when no key has rows)."""
    if not any(type(k) is RowKeyed for k in keys):
        return keys, None
    whole: list[Hashable] = []
    rows: list[np.ndarray] = []
    for k in keys:
        if type(k) is RowKeyed:
            whole.append(k.whole)
            rows.append(k.rows)
        else:
            whole.append(k)
    return tuple(whole), rows[0] if len(rows) == 1 else np.hstack(rows)
