"""Topology domains as columns, and sums over every node kept up to date between cycles.

PodTopologySpread and InterPodAffinity read the cluster by topology domain (a label key and
one of its values): their PreFilters sum, over every node, what each node adds to each of its
domains, and their filters read those sums at the node's own domains. Done from scratch that
is a pass over every pod of the cluster per pod scheduled; but the scheduler changes one node
per cycle (the one the last pod was assumed onto), and each node's part depends only on that
node (an immutable ``NodeInfo``) and on what the caller's key names of the pod.

``node_sums`` keeps, per key, the sums of the nodes of the last snapshot it saw and corrects
them for the rows whose ``NodeInfo`` was replaced since (their old part out, their new part
in). ``label_column`` gives, per label key, each node row's value as a small integer code
(-1: the node lacks the label), kept the same way, so a domain's sum can be read for every row
at once with numpy (the row keys of ``topology_keys``).

Rows are the positions in ``snapshot.nodes``, the engine's frame rows. Both caches give
exactly what a fresh pass gives: ``tests/schedlib/test_domains.py`` replays assume/forget
sequences against fresh passes.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from policyengine.model.cached import cached_property
from policyengine.model.labels import IN, Selector
from policyengine.model.shared_list import Picked
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo

Pair = tuple[str, str]
Part = Callable[[NodeInfo], dict[Any, int]]
Relevant = Callable[[PodInfo], bool]

# Past this share of replaced rows a fresh pass is as cheap as the corrections.
_REBUILD_SHARE = 4
# How many derivation steps (``ClusterSnapshot.derivation``) are remembered and followed.
_STEPS_KEPT = 8192
# generation -> (parent's generation, node name, the pods that node gained or lost in that
# step, or None when not known: the parent was not the last snapshot seen here, or the node
# object changed).
_steps: OrderedDict[int, tuple[int, str, Sequence[PodInfo] | None]] = OrderedDict()
_steps_lock = threading.Lock()
_last_seen: list[tuple[int, tuple[NodeInfo, ...]]] = []


def _note(snapshot: ClusterSnapshot) -> None:
    generation = snapshot.generation
    if _last_seen and _last_seen[0][0] == generation:
        return
    step = snapshot.derivation
    with _steps_lock:
        logged = False
        if step is not None and generation not in _steps:
            parent, name = step
            moved = None
            if _last_seen and _last_seen[0][0] == parent:
                row = snapshot.node_positions[name]
                old = _last_seen[0][1]
                nodes = snapshot.nodes
                if len(old) == len(nodes):
                    moved = _moved_pods(old[row], nodes[row])
                    logged = _LOG[0].extend(parent, generation, row, moved)
            _steps[generation] = (parent, name, moved)
            while len(_steps) > _STEPS_KEPT:
                _steps.popitem(last=False)
        if not logged and generation not in _LOG[0].at:
            _LOG[0] = _StepLog(generation, len(snapshot.nodes))
        _last_seen[:] = [(generation, snapshot.nodes)]


# --- what a selector's pods carry, as the step log marks them ------------------------------


def _gates(selectors: Sequence[Selector]) -> list[tuple[str, frozenset[str]]] | None:
    """Each selector's first ``In`` requirement (a matchLabels entry) as (key, values), one of
    which labels must meet to match; None when a selector has none."""
    gates: list[tuple[str, frozenset[str]]] = []
    for selector in selectors:
        if selector.nothing:
            continue
        found = next((r for r in selector.requirements if r.operator == IN), None)
        if found is None:
            return None
        gates.append((found.key, found.values))
    return gates


def label_gate(selectors: Sequence[Selector]) -> Callable[[Any], bool] | None:
    """A quick test that labels can match one of ``selectors`` (``_gates``); None when a
    selector has no gate."""
    gates = _gates(selectors)
    if gates is None:
        return None
    if len(gates) == 1:
        key, values = gates[0]
        return lambda labels: labels.get(key) in values
    return lambda labels: any(labels.get(key) in values for key, values in gates)


def label_marks(selectors: Sequence[Selector]) -> tuple[tuple[str, str], ...] | None:
    """The step log's marks (``marked_changes``) of ``label_gate``: the label pairs
    one of which labels must carry to pass it; None when there is no gate."""
    gates = _gates(selectors)
    if gates is None:
        return None
    return tuple((key, value) for key, values in gates for value in sorted(values))


# --- the step log: one line of in-place steps, indexed by what the moved pods carry -------------
#
# A kept sum whose parts only pods with some label (a selector's ``matchLabels`` entry) or some
# trait can change need not look at every step since it was last asked: the log lists, per
# label pair and trait, the steps that moved a pod carrying it, so the rows to correct are
# found by a bisection per mark instead of a walk over every step since.

UNKNOWN = "unknown pods"  # mark of a step whose moved pods are not known (node object changed)
ANTI_AFFINITY = "required anti-affinity"  # mark of a pod with required pod anti-affinity
POD_AFFINITY = "pod affinity"  # mark of a pod with any pod (anti-)affinity stanza
_LOG_STEPS = 16384  # past this many steps a log starts afresh (older keys fall back)


class _StepLog:
    """The snapshots derived one from the next, in place, from ``root`` on: ``at`` numbers
    each one, ``rows[i]`` is the row step ``i`` replaced, ``marks`` lists per mark the
    steps (ascending) whose moved pods carry it."""

    __slots__ = ("at", "marks", "rows", "size", "tip")

    def __init__(self, root: int, size: int):
        self.at: dict[int, int] = {root: 0}
        self.rows: list[int] = [-1]
        self.marks: dict[Hashable, list[int]] = {}
        self.size = size
        self.tip = root

    def extend(
        self, parent: int, generation: int, row: int, moved: Sequence[PodInfo] | None
    ) -> bool:
        """Append the step to ``generation`` when it continues this log; whether it did."""
        if parent != self.tip or len(self.rows) > _LOG_STEPS:
            return False
        number = len(self.rows)
        self.rows.append(row)
        self.at[generation] = number
        self.tip = generation
        marks = self.marks
        found: set[Hashable] = set()
        if moved is None:
            found.add(UNKNOWN)
        else:
            for info in moved:
                pod = info.pod
                found.update(pod.labels.items())
                if pod.has_pod_affinity_constraints:
                    found.add(POD_AFFINITY)
                    if pod.has_required_anti_affinity:
                        found.add(ANTI_AFFINITY)
        for mark in found:
            steps = marks.get(mark)
            if steps is None:
                marks[mark] = [number]
            else:
                steps.append(number)
        return True


_LOG: list[_StepLog] = [_StepLog(0, 0)]


def marked_changes(
    snapshot: ClusterSnapshot,
    generation: int,
    known: tuple[NodeInfo, ...],
    marks: Iterable[Hashable],
) -> list[int] | None:
    """The rows of ``snapshot.nodes`` holding another ``NodeInfo`` than ``known`` (the nodes
    of the snapshot of ``generation``) where some step since moved a pod carrying one of
    ``marks`` or pods not known (``UNKNOWN``); the other replaced rows only gained or lost
    pods carrying none of them. None when the log does not reach from ``generation`` to the
    snapshot (the caller falls back to ``changes_since``)."""
    _note(snapshot)
    nodes = snapshot.nodes
    with _steps_lock:
        log = _LOG[0]
        start = log.at.get(generation)
        end = log.at.get(snapshot.generation)
        if start is None or end is None or start > end or log.size != len(nodes):
            return None
        if len(known) != len(nodes):
            return None
        found: set[int] = set()
        table = log.marks
        for mark in (*marks, UNKNOWN):
            steps = table.get(mark)
            if steps:
                first = bisect.bisect_right(steps, start)
                if first < len(steps):
                    found.update(steps[first : bisect.bisect_right(steps, end, first)])
        rows = log.rows
        picked = {rows[step] for step in found}
    return [row for row in picked if nodes[row] is not known[row]]


def changes_since(
    snapshot: ClusterSnapshot, generation: int, known: tuple[NodeInfo, ...]
) -> dict[int, list[PodInfo] | None] | None:
    """The rows of ``snapshot.nodes`` holding another ``NodeInfo`` than ``known`` (the nodes
    of the snapshot of ``generation``), each with the pods it gained or lost since when every
    step is known (else None); None when they are not the same rows or too many changed.
    Follows the snapshots' derivation steps when every one since ``generation`` was seen
    here (a scheduler assumes one pod per cycle), else compares every row at C speed."""
    _note(snapshot)
    nodes = snapshot.nodes
    if len(nodes) != len(known):
        return None
    limit = len(nodes) // _REBUILD_SHARE + 1
    by_name: dict[str, list[PodInfo] | None] = {}
    at = snapshot.generation
    while at != generation and len(by_name) <= limit:
        step = _steps.get(at)
        if step is None:
            break
        at, name, moved = step
        if name not in by_name:
            by_name[name] = [] if moved is not None else None
        pods = by_name[name]
        if pods is not None:
            if moved is None:
                by_name[name] = None
            else:
                pods.extend(moved)
    if at == generation:  # every step replaced a node in place: the rows are the same
        positions = snapshot.node_positions
        out = {positions[name]: pods for name, pods in by_name.items()}
        return {row: pods for row, pods in out.items() if nodes[row] is not known[row]}
    rows = list(itertools.compress(range(len(nodes)), map(operator.is_not, nodes, known)))
    if len(rows) > limit:
        return None
    return dict.fromkeys(rows)


def changed_rows(
    snapshot: ClusterSnapshot, generation: int, known: tuple[NodeInfo, ...]
) -> list[int] | None:
    """The rows of ``changes_since``."""
    changes = changes_since(snapshot, generation, known)
    return None if changes is None else list(changes)


def _moved_pods(old: NodeInfo, new: NodeInfo) -> Sequence[PodInfo] | None:
    """The pods ``new`` gained or lost against ``old`` when it is the same node object with
    pods added at the end (an assume) or one pod removed; None otherwise."""
    if new.node is not old.node:
        return None
    before, after = old.pods, new.pods
    if len(after) >= len(before):
        if all(map(operator.is_, before, after)):
            return after[len(before) :]
        return None
    if len(after) != len(before) - 1:
        return None
    kept = set(map(id, after))
    gone = [info for info in before if id(info) not in kept]
    return gone if len(gone) == 1 else None


# --- sums of per-node parts ------------------------------------------------------------------


class _Sums:
    """The sums over ``nodes`` of each node's part; ``present`` counts the nodes whose part
    names each pair (a pair stays while one does, even with a sum of 0)."""

    __slots__ = ("_histograms", "counts", "generation", "nodes", "present")

    def __init__(
        self,
        generation: int,
        nodes: tuple[NodeInfo, ...],
        counts: dict[Any, int],
        present: dict[Any, int],
        histograms: dict[Any, dict[int, int]] | None = None,
    ):
        self.generation = generation
        self.nodes = nodes
        self.counts = counts  # never changed once made: a correction makes a new dict
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


def add_nested(counts: dict[Any, dict[Any, int]], outer: Any, inner: Any, delta: int) -> None:
    """``counts[outer][inner] += delta``, keeping no zero count and no empty inner map (the
    kept sums compare equal to ones summed afresh)."""
    found = counts.get(outer)
    if found is None:
        found = counts[outer] = {}
    left = found.get(inner, 0) + delta
    if left:
        found[inner] = left
    else:
        del found[inner]
        if not found:
            del counts[outer]


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
    nodes = snapshot.nodes
    counts: dict[Any, int] = {}
    present: dict[Any, int] = {}
    for node in nodes:
        found = part(node)
        if found:
            _add(counts, present, found)
    return _Sums(snapshot.generation, nodes, counts, present)


def relevant_changes(
    snapshot: ClusterSnapshot,
    generation: int,
    known: tuple[NodeInfo, ...],
    relevant: Relevant | None,
    marks: Iterable[Hashable] | None = None,
) -> list[int] | None:
    """The rows of ``snapshot.nodes`` whose part may differ from the one taken of ``known``
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
    nodes = snapshot.nodes
    rows = []
    for row, stepped in changes.items():
        moved = _moved_pods(known[row], nodes[row]) if stepped is None else stepped
        if moved is None or any(map(relevant, moved)):
            rows.append(row)
    return rows


def _corrected(
    known: _Sums,
    snapshot: ClusterSnapshot,
    part: Part,
    relevant: Relevant | None,
    marks: Iterable[Hashable] | None = None,
) -> _Sums | None:
    rows = relevant_changes(snapshot, known.generation, known.nodes, relevant, marks)
    return None if rows is None else _recounted(known, snapshot, part, rows)


def _recounted(known: _Sums, snapshot: ClusterSnapshot, part: Part, rows: list[int]) -> _Sums:
    """``known`` with the parts of ``rows`` taken again from the snapshot's nodes."""
    nodes = snapshot.nodes
    if not rows:
        return _Sums(snapshot.generation, nodes, known.counts, known.present, known._histograms)
    old = known.nodes
    counts = dict(known.counts)
    present = dict(known.present)
    touched: set[Any] = set()
    for row in rows:
        gone, came = part(old[row]), part(nodes[row])
        _remove(counts, present, gone)
        _add(counts, present, came)
        touched.update(gone, came)
    was = known._histograms
    histograms = None
    if was is not None:  # carried: moved only at the pairs whose sums moved
        histograms = {key: dict(by_sum) for key, by_sum in was.items()}
        before = known.counts
        for pair in touched:
            then, now = before.get(pair), counts.get(pair)
            if then != now:
                if then is not None:
                    add_nested(histograms, pair[0], then, -1)
                if now is not None:
                    add_nested(histograms, pair[0], now, 1)
    return _Sums(snapshot.generation, nodes, counts, present, histograms)


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
        relevant; then only the steps that moved such a pod are looked at."""
        return self._kept_sums(key, snapshot, part, relevant, base, marks).counts_for(copy)

    def kept(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant | None = None,
        base: tuple[Hashable, Part] | None = None,
        marks: Iterable[Hashable] | None = None,
    ) -> _Sums:
        """``sums`` as the kept object: its ``counts`` (never to be changed) and, for sums
        over ``(key, value)`` pairs, its ``histograms``."""
        return self._kept_sums(key, snapshot, part, relevant, base, marks)

    def _kept_sums(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        part: Part,
        relevant: Relevant | None,
        base: tuple[Hashable, Part] | None,
        marks: Iterable[Hashable] | None = None,
    ) -> _Sums:
        _note(snapshot)
        with self._lock:
            known = self._known.pop(key, None)
        found = None
        if known is not None:
            same = known.nodes is snapshot.nodes
            found = (
                known
                if same
                else _corrected(known, snapshot, part, relevant, marks if relevant else None)
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
        # Only nodes holding a pod with one of the marks can hold a relevant one.
        rows = pair_rows(snapshot, marks)
        for node in nodes if rows is None else (nodes[row] for row in rows):
            pods = node.pods
            if pods and any(map(relevant, pods)):
                _remove(counts, present, base_part(node))
                _add(counts, present, part(node))
        return _Sums(snapshot.generation, snapshot.nodes, counts, present)

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
    def names(self) -> list[str]:
        """code -> value."""
        names = [""] * len(self.values)
        for value, code in self.values.items():
            names[code] = value
        return names

    def gather(self, by_value: dict[str, int], missing: int = 0, default: int = 0) -> np.ndarray:
        """Per row, ``by_value`` at the row's value (``default`` for values it lacks),
        ``missing`` where the row lacks the label."""
        table = np.full(len(self.values) + 1, default, np.int64)
        table[-1] = missing
        values = self.values
        for value, n in by_value.items():
            code = values.get(value)
            if code is not None:
                table[code] = n
        return table[self.codes]


def _codes_of(nodes: tuple[NodeInfo, ...], key: str, values: dict[str, int]) -> np.ndarray:
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
    """Values over the rows of ``snapshot.nodes`` kept per key from one snapshot to the next:
    for a later snapshot a key's value is patched at the rows the step log says changed
    (narrowed by ``marks``: only steps that moved a pod carrying one of them, or unknown
    steps), and built afresh when the log does not reach back. Least recently used keys are
    dropped beyond ``kept``."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._found: OrderedDict[Hashable, tuple[int, tuple[NodeInfo, ...], T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        key: Hashable,
        snapshot: ClusterSnapshot,
        marks: Iterable[Hashable] | None,
        build: Callable[[tuple[NodeInfo, ...]], T],
        patch: Callable[[T, tuple[NodeInfo, ...], tuple[NodeInfo, ...], list[int]], T],
    ) -> T:
        """``key``'s value for ``snapshot``: ``build(nodes)``, or ``patch(value, old nodes,
        nodes, changed rows)`` of the value kept for an earlier snapshot (which must not be
        changed in place: a cycle on that snapshot may still read it)."""
        _note(snapshot)
        nodes = snapshot.nodes
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

    def build(nodes: tuple[NodeInfo, ...]) -> LabelColumn:
        values: dict[str, int] = {}
        return LabelColumn(_codes_of(nodes, key, values), values)

    def patch(
        column: LabelColumn, old: tuple[NodeInfo, ...], nodes: tuple[NodeInfo, ...], rows: list[int]
    ) -> LabelColumn:
        return _relabelled(column, old, nodes, rows, key)

    return _COLUMNS.get(key, snapshot, (), build, patch)


def _relabelled(
    column: LabelColumn,
    old: tuple[NodeInfo, ...],
    nodes: tuple[NodeInfo, ...],
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
    """Forget the label columns and derivation steps (tests)."""
    _COLUMNS.clear()
    with _steps_lock:
        _steps.clear()
        _last_seen.clear()
        _LOG[0] = _StepLog(0, 0)
    with _PAIRS_LOCK:
        _PAIRS.clear()


_ROWS: list[tuple[int, tuple[NodeInfo, ...], dict[int, int]]] = []
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
    nodes: tuple[NodeInfo, ...]
    rows: dict[tuple[str, str], dict[int, int]]  # label pair -> {row: pods carrying it}


_PAIRS: list[_PairIndex] = []
_PAIRS_LOCK = threading.Lock()


def _node_pairs(node: NodeInfo) -> list[tuple[str, str]]:
    return [pair for info in node.pods for pair in info.pod.labels.items()]


def _indexed(nodes: tuple[NodeInfo, ...]) -> dict[tuple[str, str], dict[int, int]]:
    rows: dict[tuple[str, str], dict[int, int]] = {}
    for row, node in enumerate(nodes):
        for pair in _node_pairs(node):
            add_nested(rows, pair, row, 1)
    return rows


def _pair_index(snapshot: ClusterSnapshot) -> _PairIndex:
    _note(snapshot)
    nodes = snapshot.nodes
    with _PAIRS_LOCK:
        known = _PAIRS[0] if _PAIRS else None
    if known is not None and known.nodes is nodes:
        return known
    changed = None if known is None else changed_rows(snapshot, known.generation, known.nodes)
    if known is None or changed is None or len(changed) > len(nodes) // 4:
        rows = _indexed(nodes)
    else:
        rows = dict(known.rows)  # the pairs the changed rows touch get maps of their own
        copied: set[tuple[str, str]] = set()
        for row in changed:
            for delta, node in ((-1, known.nodes[row]), (1, nodes[row])):
                for pair in _node_pairs(node):
                    if pair not in copied:
                        copied.add(pair)
                        rows[pair] = dict(rows.get(pair, {}))
                    add_nested(rows, pair, row, delta)
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
        held = index.get(mark)  # type: ignore[call-overload]
        if held:
            found.update(held)
    return sorted(found)


def rows_by_id(snapshot: ClusterSnapshot) -> dict[int, int]:
    """``{id(node info): row}`` over ``snapshot.nodes`` (the snapshot keeps them alive, so an
    id names one node info), kept from one snapshot to the next."""
    _note(snapshot)
    nodes = snapshot.nodes
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
