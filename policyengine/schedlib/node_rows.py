"""Where nodes sit in a snapshot's rows: by identity, by the engine's views, by their pods'
labels.

Columnar builtins gather at rows of ``snapshot.nodes`` (the engine's frame rows), but are
handed node objects. ``rows_of`` looks them up by identity (a map kept from one snapshot to
the next); views the engine picked from its frame say their rows (``view_rows``,
``node_infos``) and ``rows_at`` asks them first. ``pair_rows`` tells which rows hold pods
carrying a label pair, so what a new selector sums is built from those nodes alone.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Hashable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from policyengine.model.shared_list import Picked
from policyengine.model.shared_map import SharedMap
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.schedlib.nested_counts import add_count, add_nested
from policyengine.schedlib.steplog import changed_rows, note

_ROWS: list[tuple[int, Sequence[NodeInfo], dict[int, int]]] = []
_ROWS_LOCK = threading.Lock()


def rows_of(snapshot: ClusterSnapshot, infos: Sequence[NodeInfo]) -> list[int] | None:
    """The rows of ``snapshot.nodes`` holding ``infos`` (None: one is not there). The
    snapshot holds its ``NodeInfo`` objects alive, so their ids name them."""
    nodes = snapshot.nodes
    if len(infos) == len(nodes) and all(map(operator.is_, infos, nodes)):
        return list(range(len(nodes)))
    by_id = rows_by_id(snapshot)
    try:
        rows = list(map(by_id.__getitem__, map(id, infos)))
        picked = operator.itemgetter(*rows)(nodes) if len(rows) > 1 else (nodes[rows[0]],)
    except (KeyError, IndexError):
        return None
    # Checked: the map may have moved on to a later snapshot meanwhile.
    return rows if all(map(operator.is_, picked, infos)) else None


def view_rows(ctx: Any, views: Sequence[Any]) -> np.ndarray | None:
    """The rows of the cycle's ``snapshot.nodes`` that node views stand for, when they are
    the engine's views of them (``CycleContext.views``) or some of those picked by row
    (``shared_list.Picked``); None otherwise (look them up: ``rows_of``)."""
    own = getattr(ctx, "views", None)
    if own is None:
        return None
    if views is own:
        return np.arange(len(own))
    if type(views) is Picked and views.of is own:
        return np.asarray(views.rows, np.int64)
    return None


class RowInfos(list[NodeInfo]):
    """``NodeInfo``s that know their rows in one snapshot (``rows_at`` asks ``rows_in``)."""

    __slots__ = ("_rows", "_snapshot")

    def __init__(self, infos: Iterable[NodeInfo], rows: np.ndarray, snapshot: ClusterSnapshot):
        super().__init__(infos)
        self._rows = rows
        self._snapshot = snapshot

    def rows_in(self, snapshot: ClusterSnapshot) -> np.ndarray | None:
        return self._rows if snapshot is self._snapshot else None


_INFO_OF = operator.attrgetter("info")


def node_infos(ctx: Any, views: Sequence[Any]) -> list[NodeInfo]:
    """The ``NodeInfo`` of each node view, knowing their rows where ``view_rows`` does."""
    infos = map(_INFO_OF, views)
    rows = view_rows(ctx, views)
    return list(infos) if rows is None else RowInfos(infos, rows, ctx.snapshot)


_last_rows = threading.local()


def rows_at(snapshot: ClusterSnapshot, infos: Sequence[NodeInfo]) -> np.ndarray | None:
    """The rows of ``snapshot.nodes`` holding ``infos`` (``rows_of``), kept for the last list
    asked about: a cycle's PreScores and scores ask about the same feasible nodes, in lists of
    their own. A sequence that knows its rows (the engine's feasible nodes: ``rows_in``)
    says them."""
    told = getattr(infos, "rows_in", None)
    if told is not None:  # asked first: the sequence is not gathered to be compared
        rows = told(snapshot)
        if rows is not None:
            return rows
    last = getattr(_last_rows, "last", None)
    if (
        last is not None
        and last[0] is snapshot
        and len(last[1]) == len(infos)
        and all(map(operator.is_, last[1], infos))
    ):
        return last[2]
    found = rows_of(snapshot, infos)
    rows = None if found is None else np.asarray(found, np.int64)
    _last_rows.last = (snapshot, tuple(infos), rows)
    return rows


# --- rows holding pods with a label ---------------------------------------------------------
#
# A kept sum or column met for the first time (a new Deployment's selector) was built by a walk
# over every pod of every node; only the nodes holding a pod with one of its selector's label
# pairs (its marks: ``label_marks``) can add anything. This index says which, kept from one
# snapshot to the next like ``rows_by_id`` (each snapshot's index its own: a build reading an
# older one never sees rows of a newer).


@dataclass(frozen=True, eq=False)
class _PairIndex:
    generation: int
    nodes: Sequence[NodeInfo]
    # label pair -> {row: pods carrying it}; shared with the index it was derived from but for
    # the pairs the changed rows carry (thousands of pairs, a few changed per placement)
    rows: SharedMap[tuple[str, str], dict[int, int]]


_PAIRS: list[_PairIndex] = []
_PAIRS_LOCK = threading.Lock()


def _node_pairs(node: NodeInfo) -> list[tuple[str, str]]:
    return [pair for info in node.pods for pair in info.pod.labels.items()]


def _indexed(nodes: Sequence[NodeInfo]) -> dict[tuple[str, str], dict[int, int]]:
    rows: dict[tuple[str, str], dict[int, int]] = {}
    for row, node in enumerate(nodes):
        for pair in _node_pairs(node):
            add_nested(rows, pair, row, 1)
    return rows


def _pair_index(snapshot: ClusterSnapshot) -> _PairIndex:
    note(snapshot)
    nodes = snapshot.rows
    with _PAIRS_LOCK:
        known = _PAIRS[0] if _PAIRS else None
    if known is not None and known.nodes is nodes:
        return known
    changed = None if known is None else changed_rows(snapshot, known.generation, known.nodes)
    if known is None or changed is None or len(changed) > len(nodes) // 4:
        rows = SharedMap(_indexed(nodes))
    else:
        # The pairs the changed rows carry get maps of their own; the others stay shared.
        touched: dict[tuple[str, str], dict[int, int]] = {}
        for row in changed:
            for delta, node in ((-1, known.nodes[row]), (1, nodes[row])):
                for pair in _node_pairs(node):
                    if pair not in touched:
                        touched[pair] = dict(known.rows.get(pair, {}))
                    add_count(touched[pair], row, delta)
        rows = known.rows
        for pair, held in touched.items():
            if held:
                rows = rows.with_item(pair, held)
            elif pair in rows:
                rows = rows.without(pair)
    found = _PairIndex(snapshot.generation, nodes, rows)
    with _PAIRS_LOCK:
        _PAIRS[:] = [found]
    return found


def pair_rows(snapshot: ClusterSnapshot, marks: Iterable[Hashable] | None) -> list[int] | None:
    """The rows of ``snapshot.nodes`` holding a pod that carries one of the label pairs
    ``marks``, ascending; None when there are none to go by (a mark that is no label pair)."""
    if marks is None:
        return None
    wanted = list(marks)
    if not all(type(mark) is tuple and len(mark) == 2 for mark in wanted):
        return None
    index = _pair_index(snapshot).rows
    found: set[int] = set()
    for mark in wanted:
        held = index.get(mark)  # type: ignore[arg-type]
        if held:
            found.update(held)
    return sorted(found)


def rows_by_id(snapshot: ClusterSnapshot) -> dict[int, int]:
    """``{id(node info): row}`` over ``snapshot.nodes`` (the snapshot keeps them alive, so an
    id names one node info), kept from one snapshot to the next."""
    note(snapshot)
    nodes = snapshot.rows
    with _ROWS_LOCK:
        known = _ROWS[0] if _ROWS else None
    if known is not None and known[1] is nodes:
        return known[2]
    rows = None if known is None else changed_rows(snapshot, known[0], known[1])
    if known is None or rows is None:
        found = dict(zip(map(id, nodes), range(len(nodes)), strict=True))
    else:
        # Changed in place: a cycle still reading it for an older snapshot misses only the
        # node infos replaced since (a KeyError its caller handles), never gets a wrong row.
        found = known[2]
        old = known[1]
        for row in rows:
            found.pop(id(old[row]), None)
        for row in rows:
            found[id(nodes[row])] = row
    with _ROWS_LOCK:
        _ROWS[:] = [(snapshot.generation, nodes, found)]
    return found


def clear() -> None:
    """Forget the kept row maps (tests)."""
    with _ROWS_LOCK:
        _ROWS.clear()
    with _PAIRS_LOCK:
        _PAIRS.clear()


_NODE_NAME = attrgetter("node.name")
# Up to this many names, each is looked up (by row, or searched for in C); more, each item's
# name is tested against them.
_FEW_NAMES = 8


def named_positions(
    items: Sequence[Any], names: AbstractSet[str], snapshot: ClusterSnapshot
) -> list[int]:
    """The positions in ``items`` (node infos or views of ``snapshot``) of the nodes ``names``
    names, ascending: a DaemonSet's pod names one node among thousands. When ``items`` are
    the snapshot's rows in order (a full pass), each named node's row is its position, told
    by ``rows_by_id``; otherwise the names are searched for."""
    if len(items) == len(snapshot.rows) and len(names) <= _FEW_NAMES:
        by_id = rows_by_id(snapshot)
        rows: list[int] = []
        for name in names:
            info = snapshot.get(name)
            row = None if info is None else by_id.get(id(info))
            if row is None:
                if info is None:
                    continue  # no such node: nothing to find
                break
            item = items[row]
            if item is not info and getattr(item, "info", None) is not info:
                break  # other rows, or in another order: searched below
            rows.append(row)
        else:
            return sorted(rows)
    found = list(map(_NODE_NAME, items))
    if len(names) > _FEW_NAMES:
        return [at for at, name in enumerate(found) if name in names]
    at: list[int] = []
    for name in names:
        try:
            at.append(found.index(name))
        except ValueError:
            continue
    return sorted(at)
