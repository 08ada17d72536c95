"""What the resource plugins read of each node, as int64 rows kept between cycles.

NodeResourcesFit's filter, LeastAllocated and BalancedAllocation read of a node its pod count,
its allocatable and requested cpu, memory and ephemeral storage, its non-zero cpu and memory
sums and, for extended resources, the allocatable and requested amounts of each. The first pod
of a new request shape asks all three about every node; building that table from each node's
maps (a Python tuple per node, then ``np.array`` over 5,000 tuples) cost more than the
arithmetic itself. A ``NodeInfo`` is immutable, so its row is computed once and kept in a
store shared by every cycle: a call gathers the rows of the nodes it is given (one C-speed
dict lookup per node and one numpy take) and computes rows only for nodes it has not met
(after an assume, the one replaced node). Columns of an extended resource are built for every
held row the first time a pod asks for it, then kept up to date as rows are added.

The store holds the ``NodeInfo`` objects it has rows for (so an ``id`` it keys on is never
reused by another object meanwhile) and starts afresh when it holds many more rows than the
calls ask about (replaced nodes accumulate). Rows whose values could overflow the int64
arithmetic of ``schedlib.batch`` are marked, and the callers fall back to the plugin's own
per-node step for any call touching them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from policyengine.model.cached import kept_on
from policyengine.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from policyengine.model.snapshot import NodeInfo

# The base columns, one row per node.
PODS_COUNT, ALLOWED, A_CPU, A_MEM, A_EPH, U_CPU, U_MEM, U_EPH, NZ_CPU, NZ_MEM = range(10)
WIDTH = 10
# Values at most this: (alloc - req) * 100 and sums of a few of them stay within int64.
LIMIT = 1 << 55
# Extended resources with kept columns; a pod asking for more names computes them per call.
_SCALARS_KEPT = 32


def facts_row(info: NodeInfo) -> tuple[int, ...]:
    """``info``'s base row, kept on it (``NodeInfo`` is immutable)."""
    return kept_on(info, "_resource_facts", _facts_row)


def _facts_row(info: NodeInfo) -> tuple[int, ...]:
    alloc = info.allocatable_units
    used = info.requested_units
    return (
        len(info.pods),
        alloc.get(PODS, 0),
        alloc.get(CPU, 0),
        alloc.get(MEMORY, 0),
        alloc.get(EPHEMERAL_STORAGE, 0),
        used.get(CPU, 0),
        used.get(MEMORY, 0),
        used.get(EPHEMERAL_STORAGE, 0),
        info.non_zero_cpu,
        info.non_zero_memory,
    )


def _in_range(values: Sequence[int]) -> bool:
    return all(0 <= v <= LIMIT for v in values)


def _int_table(rows: list[tuple[int, ...]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` as an int64 table, and which rows are within range (the others are zeros)."""
    try:
        table = np.array(rows, np.int64).reshape(len(rows), width)
    except OverflowError:
        ok = np.fromiter(map(_in_range, rows), bool, len(rows))
        kept = [row if good else (0,) * width for row, good in zip(rows, ok.tolist(), strict=True)]
        return np.array(kept, np.int64).reshape(len(rows), width), ok
    within = np.asarray(((table >= 0) & (table <= LIMIT)).all(axis=1), bool)
    table[~within] = 0
    return table, within


def _put(
    table: np.ndarray, ok: np.ndarray, start: int, end: int, rows: np.ndarray, rows_ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` written at ``start:end`` of ``table`` (grown by doubling when full). Rows below
    ``start`` never change, so a caller's earlier view of them stays valid."""
    if end > len(table):
        capacity = max(end, 2 * len(table), 64)
        grown = np.zeros((capacity, table.shape[1]), np.int64)
        grown[:start] = table[:start]
        grown_ok = np.zeros(capacity, bool)
        grown_ok[:start] = ok[:start]
        table, ok = grown, grown_ok
    table[start:end] = rows
    ok[start:end] = rows_ok
    return table, ok


def _scalar_row(info: NodeInfo, name: str) -> tuple[int, int, int]:
    """(holds ``name`` in its allocatable, allocatable, requested) of ``info``."""
    alloc = info.allocatable_units
    return (
        int(name in alloc),
        alloc.get(name, 0),
        info.requested_units.get(name, 0),
    )


class ResourceFacts:
    """Rows of ``facts_row`` (and extended-resource columns) for the nodes met so far."""

    def __init__(self, spare: int = 4096) -> None:
        self._lock = threading.Lock()
        self._spare = spare  # rows held beyond twice the widest call before starting afresh
        self._reset()

    def _reset(self) -> None:
        self._infos: list[NodeInfo] = []
        self._table = np.zeros((0, WIDTH), np.int64)
        self._ok = np.zeros(0, bool)
        self._scalars: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # name: (table, ok)
        self._widest = 0  # the most nodes one call asked about since the reset
        # The ids of the held infos, sorted, and the row of each: a call's ids are looked up
        # with one ``searchsorted`` instead of a dict lookup per node.
        self._sorted_ids = np.zeros(0, np.int64)
        self._sorted_rows = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self._infos)

    def gather(self, infos: Sequence[NodeInfo]) -> Gathered:
        """The rows of ``infos``, adding rows for the ones the store has not met."""
        ids = np.fromiter(map(id, infos), np.int64, len(infos))
        with self._lock:
            if len(self._infos) > 2 * max(self._widest, len(infos)) + self._spare:
                self._reset()
            self._widest = max(self._widest, len(infos))
            rows, missing = self._find(ids)
            if len(missing):
                # Each node once, though a call may name one twice.
                new = {id(infos[i]): infos[i] for i in missing.tolist()}
                self._add(list(new.values()))
                rows, _ = self._find(ids)
            size = len(self._infos)
            return Gathered(self, rows, self._table[:size], self._ok[:size], self._infos)

    def _find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding ``ids``, and the positions of the ids the store has no row for."""
        known = self._sorted_ids
        if not len(known):
            return np.zeros(len(ids), np.int64), np.arange(len(ids))
        at = np.minimum(np.searchsorted(known, ids), len(known) - 1)
        return self._sorted_rows[at], np.flatnonzero(known[at] != ids)

    def _scalar(self, held: list[NodeInfo], name: str, rows: np.ndarray) -> np.ndarray | None:
        with self._lock:
            kept = self._scalars.get(name) if held is self._infos else None
            if kept is None and held is self._infos and len(self._scalars) < _SCALARS_KEPT:
                kept = self._scalars[name] = _scalar_columns(self._infos, name)
        if kept is None:
            return _scalar_table([held[r] for r in rows.tolist()], name)
        table, ok = kept
        if not ok[rows].all():
            return None
        return table[rows]

    def _add(self, infos: list[NodeInfo]) -> None:
        start = len(self._infos)
        end = start + len(infos)
        table, ok = _int_table([facts_row(info) for info in infos], WIDTH)
        self._table, self._ok = _put(self._table, self._ok, start, end, table, ok)
        for name, (columns, fits) in list(self._scalars.items()):
            more, more_ok = _scalar_columns(infos, name)
            self._scalars[name] = _put(columns, fits, start, end, more, more_ok)
        self._infos.extend(infos)
        ids = np.fromiter(map(id, infos), np.int64, len(infos))
        rows = np.arange(start, end)
        if len(infos) == 1:  # the usual case (an assumed pod's node): two slices, no sort
            at = int(np.searchsorted(self._sorted_ids, ids[0]))
            known, held = self._sorted_ids, self._sorted_rows
            self._sorted_ids = np.concatenate((known[:at], ids, known[at:]))
            self._sorted_rows = np.concatenate((held[:at], rows, held[at:]))
            return
        order = np.argsort(ids)
        at_many = np.searchsorted(self._sorted_ids, ids[order])
        self._sorted_ids = np.insert(self._sorted_ids, at_many, ids[order])
        self._sorted_rows = np.insert(self._sorted_rows, at_many, rows[order])


class Gathered:
    """The rows of one call's nodes in the store, and the store's arrays when it gathered them
    (rows are only added while those arrays are current; a reset makes new ones)."""

    __slots__ = ("_base", "_held", "_ok", "_store", "_table", "rows")

    def __init__(
        self,
        store: ResourceFacts,
        rows: np.ndarray,
        table: np.ndarray,
        ok: np.ndarray,
        held: list[NodeInfo],
    ):
        self._store = store
        self.rows = rows
        self._table = table
        self._ok = ok
        self._held = held
        self._base: list[np.ndarray | None] = []

    def base(self) -> np.ndarray | None:
        """The base columns of the nodes, (n, WIDTH); None when a value is out of range."""
        if not self._base:
            rows = self.rows
            self._base.append(self._table[rows] if self._ok[rows].all() else None)
        return self._base[0]

    def patched(self, positions: list[int], part: Gathered) -> Gathered | None:
        """These nodes but the ones at ``positions``, which are ``part``'s (gathered later);
        None when the store started afresh in between (the rows no longer match)."""
        if part._held is not self._held:
            return None
        rows = self.rows.copy()
        rows[positions] = part.rows
        return Gathered(self._store, rows, part._table, part._ok, part._held)

    def scalar(self, name: str) -> np.ndarray | None:
        """(holds ``name``, its allocatable, its requested) of the nodes, (n, 3); None when a
        value is out of range."""
        return self._store._scalar(self._held, name, self.rows)


def _scalar_columns(infos: Sequence[NodeInfo], name: str) -> tuple[np.ndarray, np.ndarray]:
    return _int_table([_scalar_row(info, name) for info in infos], 3)


def _scalar_table(infos: Sequence[NodeInfo], name: str) -> np.ndarray | None:
    table, ok = _scalar_columns(infos, name)
    return table if ok.all() else None


class Direct:
    """The facts of a few nodes, computed for the call (``Gathered``'s reading methods): the
    cycles after the first of a pod class ask about the one or two nodes that changed, for
    which the store's bookkeeping costs more than the rows."""

    __slots__ = ("_infos",)

    def __init__(self, infos: Sequence[NodeInfo]):
        self._infos = infos

    def base(self) -> np.ndarray | None:
        table, ok = _int_table([facts_row(info) for info in self._infos], WIDTH)
        return table if ok.all() else None

    def scalar(self, name: str) -> np.ndarray | None:
        return _scalar_table(self._infos, name)


STORE = ResourceFacts()
