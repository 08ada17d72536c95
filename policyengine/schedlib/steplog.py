"""The snapshots derived one from the next, and which rows each step replaced.

The scheduler derives each cycle's snapshot from the last (an assume replaces one node's
``NodeInfo``); a watch loop applies events the same way. Whoever keeps something per node row
between cycles (kept sums, label columns, row maps) needs the rows replaced since the snapshot
it last looked at. ``note`` records each snapshot seen and, when it follows the last one, the
step that made it; ``changes_since`` follows those steps back (or compares every row when it
cannot); the step log indexes the steps by the label pairs and traits of the pods they moved
(``label_marks``), so a key that only such pods can change finds its rows by bisection
(``marked_changes``) instead of walking every step.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from policyengine.model.labels import IN, Selector
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo

# Past this share of replaced rows a fresh pass is as cheap as the corrections.
_REBUILD_SHARE = 4
# How many derivation steps (``ClusterSnapshot.derivation``) are remembered and followed.
_STEPS_KEPT = 8192
# generation -> (parent's generation, node name, the pods that node gained or lost in that
# step, or None when not known: the parent was not the last snapshot seen here, or the node
# object changed).
_steps: OrderedDict[int, tuple[int, str, Sequence[PodInfo] | None]] = OrderedDict()
_steps_lock = threading.Lock()
_last_seen: list[tuple[int, Sequence[NodeInfo]]] = []


def note(snapshot: ClusterSnapshot) -> None:
    """Record ``snapshot`` as the last one seen, logging the step that derived it (the rows
    it replaced and what the pods it moved carry) when it follows the last one."""
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
                nodes = snapshot.rows
                if len(old) == len(nodes):
                    moved = moved_pods(old[row], nodes[row])
                    logged = _LOG[0].extend(parent, generation, row, moved)
            _steps[generation] = (parent, name, moved)
            while len(_steps) > _STEPS_KEPT:
                _steps.popitem(last=False)
        if not logged and generation not in _LOG[0].at:
            _LOG[0] = _StepLog(generation, snapshot.num_nodes)
        _last_seen[:] = [(generation, snapshot.rows)]


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
    known: Sequence[NodeInfo],
    marks: Iterable[Hashable],
) -> list[int] | None:
    """The rows of ``snapshot.rows`` holding another ``NodeInfo`` than ``known`` (the nodes
    of the snapshot of ``generation``) where some step since moved a pod carrying one of
    ``marks`` or pods not known (``UNKNOWN``); the other replaced rows only gained or lost
    pods carrying none of them. None when the log does not reach from ``generation`` to the
    snapshot (the caller falls back to ``changes_since``)."""
    note(snapshot)
    nodes = snapshot.rows
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
    snapshot: ClusterSnapshot, generation: int, known: Sequence[NodeInfo]
) -> dict[int, list[PodInfo] | None] | None:
    """The rows of ``snapshot.rows`` holding another ``NodeInfo`` than ``known`` (the nodes
    of the snapshot of ``generation``), each with the pods it gained or lost since when every
    step is known (else None); None when they are not the same rows or too many changed.
    Follows the snapshots' derivation steps when every one since ``generation`` was seen
    here (a scheduler assumes one pod per cycle), else compares every row at C speed."""
    note(snapshot)
    nodes = snapshot.rows
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
    snapshot: ClusterSnapshot, generation: int, known: Sequence[NodeInfo]
) -> list[int] | None:
    """The rows of ``changes_since``."""
    changes = changes_since(snapshot, generation, known)
    return None if changes is None else list(changes)


def moved_pods(old: NodeInfo, new: NodeInfo) -> Sequence[PodInfo] | None:
    """The pods ``new`` gained or lost against ``old`` when it is the same node object with
    pods added at the end (an assume) or one pod removed; None otherwise."""
    found = signed_moved_pods(old, new)
    return None if found is None else found[0]


def signed_moved_pods(old: NodeInfo, new: NodeInfo) -> tuple[Sequence[PodInfo], int] | None:
    """``moved_pods`` with which way they moved: 1, the pods came; -1, the pod went."""
    if new.node is not old.node:
        return None
    before, after = old.pods, new.pods
    if len(after) >= len(before):
        if all(map(operator.is_, before, after)):
            return after[len(before) :], 1
        return None
    if len(after) != len(before) - 1:
        return None
    kept = set(map(id, after))
    gone = [info for info in before if id(info) not in kept]
    return (gone, -1) if len(gone) == 1 else None


def clear() -> None:
    """Forget the derivation steps (tests)."""
    with _steps_lock:
        _steps.clear()
        _last_seen.clear()
        _LOG[0] = _StepLog(0, 0)
