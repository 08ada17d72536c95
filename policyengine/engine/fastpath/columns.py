"""A rule's results per node row, and how long each row stays valid.

A column holds one rule's result per node row: each filter's verdict (pass, the shared
``Rejection``, the error) or each score's raw value (never normalised values: normalisation
reads all feasible nodes), and for each row the identity of the ``NodeInfo`` it was computed
for and of its Node object. A row is reused while the snapshot still holds that very
``NodeInfo`` and, for rules whose functions read other nodes (``Function.cluster_key``:
spread and inter-pod affinity counts, image spread), while that key compares equal; a rule
calling a function that does not say what it reads is re-evaluated every cycle.

Most rules read nothing of a node but its Node object (labels, taints, allocatable, the GPU
model: ``schedlib.records.NODE_STABLE_PATHS``, and builtins declaring ``stable_only``), and
the assume step gives a node a new ``NodeInfo`` but keeps that object: such a rule's rows stay
valid while the Node object does (the flag is part of the column's key, so a rule that is
stable for one pod and not for another never mixes the two).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policyengine.engine.decision import Rejection
from policyengine.engine.fastpath.nodeviews import Frame
from policyengine.engine.fastpath.sharekeys import STALE
from policyengine.lang.compiler import CompiledRule
from policyengine.lang.copied import Copied

# Every store into a column takes the next stamp, so a cache that remembers the stamp it last
# saw knows which rows were computed since (``Column.stamps``).
_STAMPS = itertools.count(1)


def next_stamp() -> int:
    return next(_STAMPS)


# Partial invalidations (``by_row``) a column remembers; a cache older than them starts over.
_DROPS = 64
# Tables a column tracks between two stores; lent to more, the next store copies regardless.
_BORROWERS = 8


def _nones(size: int) -> np.ndarray:
    """An object array of ``size`` Nones: numpy fills a new object array with None, in a
    third of the time ``np.full(size, None, object)`` takes (a new class's first cycle makes
    one per rule)."""
    return np.empty(size, object)


@dataclass(eq=False)
class Column:
    """Rows valid for a node while ``ids`` holds its current ``NodeInfo``'s identity (0: not
    computed), or, for results that read only the Node object, while ``oids`` holds its Node
    object's; ``infos`` keeps those objects alive so an identity is never reused meanwhile:
    the views of the frames rows were stored from (a few lists sharing most of their items,
    not an item per row; ``_mark``).

    What a cache of whole cycles (``engine.cycle``) needs to trust rows it does not look at:
    ``epoch`` counts invalidations of every row, ``drops`` logs the rows ``by_row`` dropped
    (stamp, rows), ``stamps`` the stamp of each row's last store. Decisions read the result
    arrays later (``lend``): a store after a lend copies them first, unless every table they
    were lent to is gone (most decisions are dropped once their node is read).
    """

    ids: np.ndarray
    infos: list[Any]
    key: Any = STALE
    row_keys: np.ndarray | None = None  # the row parts of the cluster keys, one row per node
    oids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    stamps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    stamp: int = 0  # the last store's stamp: no row of ``stamps`` is later
    epoch: int = 0
    drops: list[tuple[int, np.ndarray]] = field(default_factory=list)
    drops_since: int = 0  # ``drops`` holds every drop stamped after this
    errors: int = 0  # rows holding an error
    lent: bool = False
    # The tables the arrays were lent to since the last store (None: copy whatever they are).
    borrowers: list[weakref.ref[Any]] | None = field(default_factory=list)
    busy: bool = False  # checked out by a cycle (``ClassCache``)

    @property
    def size(self) -> int:
        return len(self.ids)

    def by_row(self, keys: np.ndarray | None) -> None:
        """Rows whose part of the cluster keys moved since they were computed are no longer
        valid (``schedlib.rowkeys``); the whole part is compared by ``key``."""
        old, self.row_keys = self.row_keys, keys
        if old is None and keys is None:
            return
        if old is None or keys is None or old.shape != keys.shape:
            self.invalidate()
            return
        self.drop(_moved_rows(old, keys))

    def drop(self, rows: np.ndarray) -> None:
        """``rows`` are no longer valid: logged (``drops``) so that a cache trusting the
        column since an earlier stamp recomputes them rather than the whole column."""
        if len(rows):
            self.ids[rows] = 0
            self.oids[rows] = 0
            self.drops.append((next_stamp(), rows))
            if len(self.drops) > _DROPS:
                self.drops_since = self.drops.pop(0)[0]

    def dropped_since(self, stamp: int) -> np.ndarray | None:
        """Rows ``by_row`` dropped after ``stamp``; None when the log does not reach back."""
        if stamp < self.drops_since:
            return None
        # Drops are logged in stamp order and mostly asked about since a recent stamp: the
        # later ones are found from the end, not by a walk over the whole log.
        drops = self.drops
        first = len(drops)
        while first and drops[first - 1][0] > stamp:
            first -= 1
        if first == len(drops):
            return _NO_ROWS
        if first == len(drops) - 1:
            return drops[first][1]
        return np.concatenate([rows for _, rows in drops[first:]])

    def valid(self, frame: Frame, stable: bool = False) -> np.ndarray:
        if stable:
            return self.oids == frame.oids
        return self.ids == frame.ids

    def valid_at(self, frame: Frame, stable: bool, rows: np.ndarray) -> np.ndarray:
        if stable:
            return self.oids[rows] == frame.oids[rows]
        return self.ids[rows] == frame.ids[rows]

    def invalidate(self) -> None:
        self.ids[:] = 0
        self.oids[:] = 0
        self.epoch += 1

    def _mark(self, rows: np.ndarray, frame: Frame) -> None:
        stamp = self.stamp = next_stamp()
        if len(rows) == len(self.ids):
            self.ids = frame.ids.copy()
            self.oids = frame.oids.copy()
            self.infos = [frame.views]
            self.stamps[:] = stamp
            return
        self.ids[rows] = frame.ids[rows]
        self.oids[rows] = frame.oids[rows]
        self.stamps[rows] = stamp
        infos = self.infos
        if infos and infos[-1] is frame.views:
            return
        if len(infos) < _FRAMES_KEPT:
            infos.append(frame.views)
            return
        # The identities rows hold other than the frame's are already stale for it (and only
        # as new as an older frame's): forgotten, so only this frame's objects need keeping.
        self.ids[self.ids != frame.ids] = 0
        self.oids[self.oids != frame.oids] = 0
        self.infos = [frame.views]

    def lend(self, borrower: object = None) -> None:
        """The result arrays are read by ``borrower`` (a decision's table; None: by anything)
        from now on: the next store copies them while it is alive."""
        self.lent = True
        borrowers = self.borrowers
        if borrowers is not None:
            if borrower is None or len(borrowers) >= _BORROWERS:
                self.borrowers = None
            else:
                borrowers.append(weakref.ref(borrower))

    def _own(self) -> None:
        if self.lent:
            borrowers = self.borrowers
            if borrowers is None or any(ref() is not None for ref in borrowers):
                self._copy_results()
            self.lent = False
            self.borrowers = []

    def _copy_results(self) -> None:
        raise NotImplementedError


_NO_ROWS = np.zeros(0, np.int64)


def _moved_rows(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The rows where two (rows, columns) key arrays differ: the columns' differences or-ed
    one column at a time (``any(axis=1)`` reduces along the short axis, several times slower)."""
    differs = old != new
    moved = differs[:, 0].copy() if differs.shape[1] else np.zeros(len(differs), bool)
    for column in range(1, differs.shape[1]):
        moved |= differs[:, column]
    return moved.nonzero()[0]


def _ids(size: int) -> tuple[np.ndarray, list[Any]]:
    return np.zeros(size, np.int64), []


# Frames whose views a column keeps alive before it forgets the rows only they hold.
_FRAMES_KEPT = 16


@dataclass(eq=False)
class FilterColumn(Column):
    """One filter rule's verdicts per node row: ``codes`` indexes ``made``, the rejections
    the column has met (0: None, it passed). A decision reads the codes later and ``made``
    only grows, so lending the codes costs an int copy at the next store, not an object one."""

    passed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None
    made: list[Rejection | None] = field(default_factory=lambda: [None])
    _made: dict[tuple[Any, ...], int] = field(default_factory=dict)

    @classmethod
    def empty(cls, size: int) -> FilterColumn:
        return cls(
            *_ids(size),
            oids=np.zeros(size, np.int64),
            stamps=np.zeros(size, np.int64),
            passed=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            codes=np.zeros(size, np.int32),
            error=_nones(size),
        )

    def rejection(self, row: int) -> Rejection | None:
        return self.made[self.codes[row]]

    def store(
        self, rows: np.ndarray, rule: CompiledRule, verdicts: Sequence[Any], frame: Frame
    ) -> None:
        if len(self.made) > 2 * len(self.ids) + 256:
            self._compact()
        if (
            len(verdicts) <= _FEW_RESULTS
            and not self.errors
            and type(verdicts) is not Copied
            and all(verdict.error is None for verdict in verdicts)
        ):
            # A few rows (a cycle re-examining the nodes changed since its class's last):
            # verdict by verdict, without grouping equal ones first.
            few = [0 if v.passed else self._code(v.reasons, None, rule) for v in verdicts]
            self._own()
            self._mark(rows, frame)
            self.passed[rows] = [verdict.passed for verdict in verdicts]
            self.codes[rows] = few
            return
        ids, distinct = _distinct(verdicts)
        passed = np.empty(len(distinct), bool)
        codes = np.zeros(len(distinct), np.int32)
        error = _nones(len(distinct))
        failed = False
        for index, verdict in enumerate(distinct):
            passed[index] = verdict.passed
            if verdict.error is not None:
                error[index] = str(verdict.error)
                failed = True
            if verdict.passed:
                continue
            codes[index] = self._code(verdict.reasons, verdict.error, rule)
        self._own()
        self._mark(rows, frame)
        self.passed[rows] = passed[ids]
        self.codes[rows] = codes[ids]
        if failed or self.errors:  # otherwise every row holds no error already
            self.error[rows] = error[ids]
            self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)
            self.errors = int(np.count_nonzero(self.errored))

    def _code(self, reasons: Sequence[str], error: Any, rule: CompiledRule) -> int:
        """The code of the rejection with ``reasons`` and ``error``: thousands of nodes fail
        for the same reasons, and one (frozen) ``Rejection`` serves them."""
        key = (reasons, error)
        code = self._made.get(key)
        if code is None:
            code = self._made[key] = len(self.made)
            self.made.append(
                Rejection(rule.qualified_name, tuple(reasons), str(error) if error else None)
            )
        return code

    def _compact(self) -> None:
        """Forget the rejections no row holds (reasons that name nodes or counts would
        otherwise pile up); decisions holding the old codes keep the old list."""
        live = np.unique(self.codes)
        remap = np.zeros(len(self.made), np.int32)
        made: list[Rejection | None] = [None]
        for code in live.tolist():
            if code:
                remap[code] = len(made)
                made.append(self.made[code])
        self.codes = remap[self.codes]
        self.lent = False
        self.borrowers = []
        self.made = made
        self._made = {}
        for code, rejection in enumerate(made):
            if rejection is not None:
                key = (rejection.reasons, rejection.error)
                self._made.setdefault(key, code)

    def _copy_results(self) -> None:
        self.codes = self.codes.copy()  # what a decision reads (``passed`` is not)


@dataclass(eq=False)
class ScoreColumn(Column):
    """One score rule's raw values per node row; ``scored`` is False where it gave null."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    scored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None
    # Every row normalised (kind, the facts, the stamp of the last store they read, the
    # values): ``engine.cycle`` reads them while no row was stored since.
    normalised: tuple[str, Any, int, np.ndarray] | None = None

    @classmethod
    def empty(cls, size: int) -> ScoreColumn:
        return cls(
            *_ids(size),
            oids=np.zeros(size, np.int64),
            stamps=np.zeros(size, np.int64),
            values=np.zeros(size, np.float64),
            scored=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            error=_nones(size),
        )

    def store(self, rows: np.ndarray, results: Sequence[Any], frame: Frame) -> None:
        if (
            len(results) <= _FEW_RESULTS
            and not self.errors
            and all(result.error is None for result in results)
        ):
            # A few rows (a cycle re-examining the nodes changed since its class's last):
            # straight from the values, without grouping equal results first.
            given = [result.value for result in results]
            self._own()
            self._mark(rows, frame)
            self.values[rows] = np.array(
                [0.0 if value is None else value for value in given], np.float64
            )
            self.scored[rows] = [value is not None for value in given]
            return
        ids, distinct = _distinct(results)
        values = np.zeros(len(distinct), np.float64)
        scored = np.zeros(len(distinct), bool)
        error = _nones(len(distinct))
        failed = False
        for index, result in enumerate(distinct):
            if result.value is not None:
                values[index] = result.value
                scored[index] = True
            if result.error is not None:
                error[index] = str(result.error)
                failed = True
        self._own()
        self._mark(rows, frame)
        self.values[rows] = values[ids]
        self.scored[rows] = scored[ids]
        if failed or self.errors:  # otherwise every row holds no error already
            self.error[rows] = error[ids]
            self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)
            self.errors = int(np.count_nonzero(self.errored))

    def store_array(
        self, rows: np.ndarray, values: np.ndarray, scored: np.ndarray, frame: Frame
    ) -> None:
        """``store`` of results given as their values (``CompiledRule.score_numbers``: the
        floats, 0.0 where ``scored`` is False; never an error)."""
        self._own()
        self._mark(rows, frame)
        self.values[rows] = values
        self.scored[rows] = scored
        if self.errors:
            self.error[rows] = None
            self.errored[rows] = False
            self.errors = int(np.count_nonzero(self.errored))

    def keep_unscored(self) -> None:
        """The rule's key moved but its guard reads nothing the key covers
        (``RulePlan.guard_keeps``): the valid rows its guard excluded stay valid, the rows it
        scored (or failed at) are dropped."""
        held = (self.ids != 0) | (self.oids != 0)
        self.drop(np.flatnonzero((self.scored | self.errored) & held))

    def _copy_results(self) -> None:
        self.values = self.values.copy()
        self.scored = self.scored.copy()


# Results a store takes value by value rather than grouped (``ScoreColumn.store``).
_FEW_RESULTS = 16


def _distinct(items: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Each item's position among the distinct objects of ``items`` (by identity), and those
    objects. Verdicts are mostly shared objects (``PASSED``, one rejection per reason), so the
    per-node work is a few C-level passes instead of a Python loop."""
    if type(items) is Copied:  # one result per distinct row key, copied (``rowgroups``)
        return items.inverse, items.results
    ids = list(map(id, items))
    first = dict(zip(ids, items, strict=True))
    position = {key: index for index, key in enumerate(first)}
    return np.fromiter(map(position.__getitem__, ids), np.int64, len(ids)), list(first.values())
