"""Topology domains as columns, and sums over every node kept up to date between cycles.

PodTopologySpread and InterPodAffinity read the cluster by topology domain (a label key and
one of its values): their PreFilters sum, over every node, what each node adds to each of its
domains, and their filters read those sums at the node's own domains. Done from scratch that
is a pass over every pod of the cluster per pod scheduled; but the scheduler changes one node
per cycle (the one the last pod was assumed onto), and each node's part depends only on that
node (an immutable ``NodeInfo``) and on what the caller's key names of the pod.

``NodeSums`` keeps, per key, the sums of the nodes of the last snapshot it saw and corrects
them for the rows whose ``NodeInfo`` was replaced since (their old part out, their new part
in; ``steplog`` says which). ``label_column`` gives, per label key, each node row's value as a small integer code
(-1: the node lacks the label), kept the same way, so a domain's sum can be read for every row
at once with numpy (the row keys of ``topology_keys``).

Rows are the positions in ``snapshot.nodes``, the engine's frame rows. Both caches give
exactly what a fresh pass gives: ``tests/schedlib/test_domains.py`` replays assume/forget
sequences against fresh passes.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from policyengine.model.cached import cached_property
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.schedlib import node_rows, steplog
from policyengine.schedlib.nested_counts import add_nested
from policyengine.schedlib.node_rows import pair_rows
from policyengine.schedlib.steplog import (
    changed_rows,
    changes_since,
    marked_changes,
    moved_pods,
    note,
    signed_moved_pods,
)

Pair = tuple[str, str]
Part = Callable[[NodeInfo], dict[Any, int]]
Relevant = Callable[[PodInfo], bool]


class NamedPart:
    """A part empty on every node but the ones named (a pod pinned by its required node
    affinity to a few nodes, which every constraint honours): summed afresh over those nodes
    alone instead of the whole snapshot."""

    __slots__ = ("names", "part")

    def __init__(self, part: Part, names: frozenset[str]):
        self.part = part
        self.names = names

    def __call__(self, node: NodeInfo) -> dict[Any, int]:
        return self.part(node)

    def nodes(self, snapshot: ClusterSnapshot) -> list[NodeInfo]:
        """The named nodes ``snapshot`` holds: the only ones whose part may be non-empty."""
        return [node for node in map(snapshot.get, sorted(self.names)) if node is not None]


# ``step(node, pods)``: how much ``part`` grows when ``pods`` come to ``node`` (the same node
# object: the pairs its part names stay), naming only pairs that part names.
Step = Callable[[NodeInfo, Sequence[PodInfo]], dict[Any, int]]

# --- sums of per-node parts ------------------------------------------------------------------


class _Sums:
    """The sums over ``nodes`` of each node's part; ``present`` counts the nodes whose part
    names each pair (a pair stays while one does, even with a sum of 0)."""

    __slots__ = ("_histograms", "counts", "generation", "nodes", "present")

    def __init__(
        self,
        generation: int,
        nodes: Sequence[NodeInfo],
        counts: dict[Any, int],
        present: dict[Any, int],
        histograms: dict[Any, dict[int, int]] | None = None,
    ):
        self.generation = generation
        self.nodes = nodes
        self.counts = counts  # changed by a correction only while nothing else holds it
        self.present = present
        self._histograms = histograms

    def counts_for(self, copy: bool) -> dict[Any, int]:
        return dict(self.counts) if copy else self.counts

    def histograms(self) -> dict[Any, dict[int, int]]:
        """For sums over ``(key, value)`` pairs: per key, how many of its pairs hold each sum
        (``{key: {sum: pairs}}``), made once and then carried through corrections (a
        hostname key has a pair per node; its minimum is read every cycle)."""
        found = self._histograms
        if found is None:
            found = {}
            for (key, _), n in self.counts.items():
                add_nested(found, key, n, 1)
            self._histograms = found
        return found


def _never(info: PodInfo) -> bool:
    return False


def _add(counts: dict[Any, int], present: dict[Any, int], part: dict[Any, int]) -> None:
    for pair, n in part.items():
        counts[pair] = counts.get(pair, 0) + n
        present[pair] = present.get(pair, 0) + 1


def _remove(counts: dict[Any, int], present: dict[Any, int], part: dict[Any, int]) -> None:
    for pair, n in part.items():
        left = present[pair] - 1
        if left:
            present[pair] = left
            counts[pair] -= n
        else:
            del present[pair], counts[pair]


def _summed(snapshot: ClusterSnapshot, part: Part) -> _Sums:
    counts: dict[Any, int] = {}
    present: dict[Any, int] = {}
    nodes: Iterable[NodeInfo] = snapshot.nodes
    if isinstance(part, NamedPart):
        nodes = part.nodes(snapshot)
    for node in nodes:
        found = part(node)
        if found:
            _add(counts, present, found)
    return _Sums(snapshot.generation, snapshot.rows, counts, present)


def relevant_changes(
    snapshot: ClusterSnapshot,
    generation: int,
    known: Sequence[NodeInfo],
    relevant: Relevant | None,
    marks: Iterable[Hashable] | None = None,
) -> list[int] | None:
    """The rows of ``snapshot.rows`` whose part may differ from the one taken of ``known``
    (the nodes of the snapshot of ``generation``): the rows holding another ``NodeInfo``, but
    for those whose node object stayed and whose added or removed pods are not ``relevant``
    (``NodeSums.sums``). With ``marks``, only the steps that moved pods carrying one are looked
    at (``marked_changes``). None when the rows are not the same or too many changed."""
    if marks is not None:
        marked = marked_changes(snapshot, generation, known, marks)
        if marked is not None:
            return marked
    changes = changes_since(snapshot, generation, known)
    if changes is None:
        return None
    if relevant is None:
        return list(changes)
    # A node whose object stayed and whose added or removed pods cannot count keeps its part:
    # most replaced nodes got a pod of some other workload.
    nodes = snapshot.rows
    rows = []
    for row, stepped in changes.items():
        moved = moved_pods(known[row], nodes[row]) if stepped is None else stepped
        if moved is None or any(map(relevant, moved)):
            rows.append(row)
    return rows


def _corrected(
    known: _Sums,
    snapshot: ClusterSnapshot,
    part: Part,
    relevant: Relevant | None,
    marks: Iterable[Hashable] | None = None,
    step: Step | None = None,
) -> _Sums | None:
    rows = relevant_changes(snapshot, known.generation, known.nodes, relevant, marks)
    return None if rows is None else _recounted(known, snapshot, part, rows, step)


def _recounted(
    known: _Sums, snapshot: ClusterSnapshot, part: Part, rows: list[int], step: Step | None = None
) -> _Sums:
    """``known`` with the parts of ``rows`` taken again from the snapshot's nodes: by
    ``step`` from the pods that came or went where the node object stayed (an assume step:
    one pod, not every pod of the node twice over), else old part out, new part in."""
    nodes = snapshot.rows
    if not rows:
        return _Sums(snapshot.generation, nodes, known.counts, known.present, known._histograms)
    old = known.nodes
    changes: list[tuple[dict[Any, int], dict[Any, int]]] = []
    shifts: list[dict[Any, int]] = []
    for row in rows:
        replaced, replacing = old[row], nodes[row]
        found = None if step is None else signed_moved_pods(replaced, replacing)
        if step is None or found is None:
            changes.append((part(replaced), part(replacing)))
            continue
        moved, sign = found
        if moved:
            shift = step(replacing, moved)
            shifts.append(shift if sign > 0 else {pair: -n for pair, n in shift.items()})
    was = known._histograms
    touched: set[Any] = set()
    if was is not None:  # the histograms move at the pairs whose sums move: their sums now
        for gone, came in changes:
            touched.update(gone, came)
        for shift in shifts:
            touched.update(shift)
    before = {pair: known.counts.get(pair) for pair in touched}
    # The kept dicts are corrected in place when nothing but ``known`` (taken out of the cache
    # by this caller) holds them: a per-hostname sum holds a pair per node, and copying two
    # such dicts at every correction cost more than the rest of it. A dict someone still
    # reads (a PreFilter state of an earlier cycle, another thread) is copied first.
    counts = known.counts if _references(known.counts) <= _ALONE else dict(known.counts)
    present = known.present if _references(known.present) <= _ALONE else dict(known.present)
    for gone, came in changes:
        _remove(counts, present, gone)
        _add(counts, present, came)
    for shift in shifts:
        for pair, n in shift.items():
            counts[pair] += n
    histograms = None
    if was is not None:  # carried: moved only at the pairs whose sums moved
        histograms = {key: dict(by_sum) for key, by_sum in was.items()}
        for pair in touched:
            then, now = before[pair], counts.get(pair)
            if then != now:
                if then is not None:
                    add_nested(histograms, pair[0], then, -1)
                if now is not None:
                    add_nested(histograms, pair[0], now, 1)
    return _Sums(snapshot.generation, nodes, counts, present, histograms)


def _references(value: object) -> int:
    return sys.getrefcount(value)


def _alone() -> int:
    """What ``_references`` counts for a dict held by one attribute alone, read as
    ``_recounted`` reads them (the count includes the call's own references, which differ
    between interpreter versions)."""
    probe = _Sums(0, (), {}, {})
    return _references(probe.counts)


_ALONE = _alone()


class NodeSums:
    """Per key, the sums of ``part(node)`` over the nodes of the last snapshot asked about;
    the least recently used keys are dropped past ``kept``."""

    def __init__(self, kept: int):
        self._kept = kept
        self._known: OrderedDict[Hashable, _Sums] = OrderedDict()
        self._lock = threading.Lock()

    def sums(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant | None = None,
        copy: bool = True,
        base: tuple[Hashable, Part] | None = None,
        marks: Iterable[Hashable] | None = None,
        step: Step | None = None,
    ) -> dict[Any, int]:
        """``{pair: sum over the snapshot's nodes of part(node)[pair]}`` for the pairs some
        node's part names; a new dict the caller may keep (the cache never changes it).
        ``relevant(pod)`` False promises that adding or removing that pod leaves a node's part
        as it was (the node object the same). ``copy=False``: the kept dict itself, which
        the caller must not change; it is the same object while the sums stay the same.
        ``base`` (with ``relevant``): ``(base_key, base_part)`` where ``base_part(node)`` is
        what ``part(node)`` gives a node holding no relevant pod and reads only the node
        object (and what ``base_key`` names): a key met for the first time starts from the
        kept sums of ``base_part`` and computes ``part`` only for nodes holding relevant
        pods. ``marks`` (with ``relevant``): marks of the step log (label pairs,
        ``ANTI_AFFINITY``, ``POD_AFFINITY``) such that a pod carrying none of them is not
        relevant; then only the steps that moved such a pod are looked at. ``step``: how a
        node's part moves with the pods that come to it (``Step``), so that a node which only
        gained or lost pods is corrected from those pods alone."""
        return self._kept_sums(key, snapshot, part, relevant, base, marks, step).counts_for(copy)

    def kept(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant | None = None,
        base: tuple[Hashable, Part] | None = None,
        marks: Iterable[Hashable] | None = None,
        step: Step | None = None,
    ) -> _Sums:
        """``sums`` as the kept object: its ``counts`` (never to be changed) and, for sums
        over ``(key, value)`` pairs, its ``histograms``."""
        return self._kept_sums(key, snapshot, part, relevant, base, marks, step)

    def _kept_sums(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant | None,
        base: tuple[Hashable, Part] | None,
        marks: Iterable[Hashable] | None = None,
        step: Step | None = None,
    ) -> _Sums:
        note(snapshot)
        with self._lock:
            known = self._known.pop(key, None)
        found = None
        if known is not None:
            same = known.nodes is snapshot.rows
            found = (
                known
                if same
                else _corrected(known, snapshot, part, relevant, marks if relevant else None, step)
            )
        if found is None:
            if base is not None and relevant is not None:
                found = self._from_base(snapshot, part, relevant, *base, marks=marks)
            else:
                found = _summed(snapshot, part)
        with self._lock:
            self._known[key] = found
            while len(self._known) > self._kept:
                self._known.popitem(last=False)
        return found

    def _from_base(
        self,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant,
        base_key: Hashable,
        base_part: Part,
        marks: Iterable[Hashable] | None = None,
    ) -> _Sums:
        kept = self._kept_sums(("base", base_key), snapshot, base_part, _never, None, ())
        counts = dict(kept.counts)
        present = dict(kept.present)
        nodes = snapshot.nodes
        walked: Iterable[NodeInfo]
        if isinstance(base_part, NamedPart):
            # Every other node's parts are empty: the named nodes alone can move the sums.
            walked = base_part.nodes(snapshot)
        else:
            # Only nodes holding a pod with one of the marks can hold a relevant one.
            rows = pair_rows(snapshot, marks)
            walked = nodes if rows is None else [nodes[row] for row in rows]
        for node in walked:
            pods = node.pods
            if pods and any(map(relevant, pods)):
                _remove(counts, present, base_part(node))
                _add(counts, present, part(node))
        return _Sums(snapshot.generation, snapshot.rows, counts, present)

    def clear(self) -> None:
        with self._lock:
            self._known.clear()


# --- label values as integer columns -----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LabelColumn:
    """``codes[row]``: the code of the row's value of the label (-1: no such label);
    ``values``: value -> code (it may also hold values no row has any more). Neither changes
    once the column is made (a relabelled column is a new one)."""

    codes: np.ndarray
    values: dict[str, int]

    @cached_property
    def complete(self) -> bool:
        """Whether every row has the label (a hostname column mostly does)."""
        return bool((self.codes >= 0).all())

    @cached_property
    def names(self) -> list[str]:
        """code -> value."""
        names = [""] * len(self.values)
        for value, code in self.values.items():
            names[code] = value
        return names

    def gather(self, by_value: dict[str, int], missing: int = 0, default: int = 0) -> np.ndarray:
        """Per row, ``by_value`` at the row's value (``default`` for values it lacks),
        ``missing`` where the row lacks the label."""
        return self.table(by_value, missing, default)[self.codes]

    def table(self, by_value: dict[str, int], missing: int = 0, default: int = 0) -> np.ndarray:
        """``gather``'s table: per code, ``by_value`` at its value; ``missing`` last (code -1,
        the rows lacking the label)."""
        table = np.full(len(self.values) + 1, default, np.int64)
        table[-1] = missing
        values = self.values
        for value, n in by_value.items():
            code = values.get(value)
            if code is not None:
                table[code] = n
        return table


def _codes_of(nodes: Sequence[NodeInfo], key: str, values: dict[str, int]) -> np.ndarray:
    codes = [_code(values, node.node.labels.get(key)) for node in nodes]
    return np.array(codes, np.int64) if codes else np.zeros(0, np.int64)


def _code(values: dict[str, int], value: str | None) -> int:
    if value is None:
        return -1
    code = values.get(value)
    if code is None:
        code = values[value] = len(values)
    return code


T = TypeVar("T")


class RowColumns(Generic[T]):
    """Values over the rows of ``snapshot.rows`` kept per key from one snapshot to the next:
    for a later snapshot a key's value is patched at the rows the step log says changed
    (narrowed by ``marks``: only steps that moved a pod carrying one of them, or unknown
    steps), and built afresh when the log does not reach back. Least recently used keys are
    dropped beyond ``kept``."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._found: OrderedDict[Hashable, tuple[int, Sequence[NodeInfo], T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        marks: Iterable[Hashable] | None,
        build: Callable[[Sequence[NodeInfo]], T],
        patch: Callable[[T, Sequence[NodeInfo], Sequence[NodeInfo], list[int]], T],
    ) -> T:
        """``key``'s value for ``snapshot``: ``build(nodes)``, or ``patch(value, old nodes,
        nodes, changed rows)`` of the value kept for an earlier snapshot (which must not be
        changed in place: a cycle on that snapshot may still read it)."""
        nodes = snapshot.rows
        known = self._found.get(key)
        if known is not None and known[1] is nodes:  # read already for this snapshot
            return known[2]
        note(snapshot)
        with self._lock:
            known = self._found.pop(key, None)
        value: T | None = None
        if known is not None:
            generation, old, value = known
            if old is not nodes:
                rows = None if marks is None else marked_changes(snapshot, generation, old, marks)
                if rows is None:
                    rows = changed_rows(snapshot, generation, old)
                value = None if rows is None else patch(value, old, nodes, rows)
        if value is None:
            value = build(nodes)
        with self._lock:
            self._found[key] = (snapshot.generation, nodes, value)
            while len(self._found) > self._kept:
                self._found.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._found.clear()


# Labels change only with the node object: only steps of unknown pods can move them.
_COLUMNS: RowColumns[LabelColumn] = RowColumns(32)


def label_column(snapshot: ClusterSnapshot, key: str) -> LabelColumn:
    """Each row's value of label ``key`` as a code (``LabelColumn``)."""

    def build(nodes: Sequence[NodeInfo]) -> LabelColumn:
        values: dict[str, int] = {}
        return LabelColumn(_codes_of(nodes, key, values), values)

    def patch(
        column: LabelColumn, old: Sequence[NodeInfo], nodes: Sequence[NodeInfo], rows: list[int]
    ) -> LabelColumn:
        return _relabelled(column, old, nodes, rows, key)

    return _COLUMNS.get(key, snapshot, (), build, patch)


def _relabelled(
    column: LabelColumn,
    old: Sequence[NodeInfo],
    nodes: Sequence[NodeInfo],
    rows: list[int],
    key: str,
) -> LabelColumn:
    # Mostly the node object is the same (a pod was assumed onto it): its labels are too.
    moved = [
        row for row in rows if nodes[row].node.labels.get(key) != old[row].node.labels.get(key)
    ]
    if not moved:
        return column
    values = dict(column.values)  # the old column's dict stays as its codes were made
    codes = column.codes.copy()
    for row in moved:
        codes[row] = _code(values, nodes[row].node.labels.get(key))
    return LabelColumn(codes, values)


def clear() -> None:
    """Forget the label columns, derivation steps and row maps (tests)."""
    _COLUMNS.clear()
    steplog.clear()
    node_rows.clear()
