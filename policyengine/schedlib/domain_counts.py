"""``domain_pod_count``: pods matching a selector per topology domain, kept between cycles.

The builtin counts the pods of the pod's namespace carrying some labels on the nodes that share
a node's value of a label key (its NVLink domain, its rack). Counted from scratch that is a
pass over every pod of the cluster, per call site, per cycle; a gang of 64 members tried in a
domain is 64 cycles, each on a snapshot one pod away from the one before.

So the counts are kept in an index per (label key, namespace, names of the selector's labels):
for each tuple of those labels' values some pod carries, its count per domain. One index
serves every job (``{"training.ai/job": job}`` differs only in the value), and it follows the
snapshots: each node's part depends only on that node (an immutable ``NodeInfo``), so after
a placement the index takes out the replaced rows' old parts and adds their new ones
(``domains.relevant_changes``: the rows where a pod it may count came or went), and is
rebuilt only when the rows are not the same or too many changed.

Its cluster key (``domain_pod_count_key``) is a row key (``schedlib.rowkeys``): per node row,
the count at the row's domain of each selector the pod's class asked before. A cached result of
a rule calling the builtin stays valid on the nodes of every domain whose counts it read did
not move, whatever other apps' pods came or went.

``fresh_counts`` is the pass from scratch; ``tests/schedlib/test_batch_forms.py`` holds the
kept counts, the per-node function and its batch form equal to a count over every pod along
assume/forget sequences, ``tests/schedlib/test_domain_counts.py`` the row keys and the cached
results that follow them.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from policyengine.lang.vector import ints
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.domains import LabelColumn, label_column, relevant_changes
from policyengine.schedlib.nested_counts import add_nested
from policyengine.schedlib.node_rows import rows_of, view_rows
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.steplog import signed_moved_pods
from policyengine.schedlib.views import NodeView, PodView

Wanted = tuple[tuple[str, str], ...]  # the selector's labels, sorted by name
Values = tuple[str, ...]


def _node_count(node: NodeInfo, namespace: str, wanted: Wanted) -> int:
    count = 0
    for info in node.pods:
        pod = info.pod
        if pod.namespace == namespace and all(pod.labels.get(k) == v for k, v in wanted):
            count += 1
    return count


def fresh_counts(
    snapshot: ClusterSnapshot, key: str, namespace: str, wanted: Wanted
) -> dict[str, int]:
    """Per value of label ``key``: the matching pods on the nodes holding that value (values
    no matching pod is on may be missing or 0)."""
    counts: dict[str, int] = {}
    for info in snapshot.nodes:
        value = info.node.labels.get(key)
        if value is not None:
            counts[value] = counts.get(value, 0) + _node_count(info, namespace, wanted)
    return counts


# --- the kept index ------------------------------------------------------------------------


# Versions are never reused: a version names the counts of one tuple of label values between
# two changes.
_versions = itertools.count(1)


class _Index:
    """For the nodes of one snapshot: ``counts[values][domain]``, the pods of ``namespace``
    whose labels ``names`` have ``values``, on the nodes of ``domain`` (only counts above 0).

    ``versions[values]`` (``base`` for values not in it) changes whenever a count of those
    values may have; ``tables[values]`` keeps their last row column of counts (and the table
    by label code it was read from, corrected for the ``dirty`` domains alone)."""

    __slots__ = (
        "base",
        "counts",
        "dirty",
        "generation",
        "key",
        "names",
        "namespace",
        "nodes",
        "tables",
        "versions",
    )

    def __init__(self, key: str, namespace: str, names: tuple[str, ...]):
        self.key = key
        self.namespace = namespace
        self.names = names
        self.generation = -1
        self.nodes: Sequence[NodeInfo] = ()
        self.counts: dict[Values, dict[str, int]] = {}
        self.versions: dict[Values, int] = {}
        self.base = next(_versions)
        # Per tuple of values: (label column, table by code, rows, version).
        self.tables: dict[Values, tuple[LabelColumn, np.ndarray, np.ndarray, int]] = {}
        self.dirty: dict[Values, set[str]] = {}  # domains recounted since the values' table

    def _part(self, node: NodeInfo) -> tuple[str | None, dict[Values, int]]:
        """The node's domain and its matching pods per tuple of label values."""
        domain = node.node.labels.get(self.key)
        if domain is None or not node.pods:
            return domain, {}
        return domain, self._counted(node.pods)

    def _counted(self, pods: Sequence[PodInfo]) -> dict[Values, int]:
        """The matching pods among ``pods`` per tuple of label values."""
        part: dict[Values, int] = {}
        namespace, names = self.namespace, self.names
        for info in pods:
            pod = info.pod
            if pod.namespace != namespace:
                continue
            labels = pod.labels
            values = tuple(labels.get(name) for name in names)
            if None not in values:
                part[values] = part.get(values, 0) + 1  # type: ignore[index,arg-type]
        return part

    def _may_count(self, info: PodInfo) -> bool:
        """Whether the index may count the pod (moving any other leaves a node's part)."""
        pod = info.pod
        labels = pod.labels
        return pod.namespace == self.namespace and all(name in labels for name in self.names)

    def _add(self, domain: str | None, part: dict[Values, int], sign: int) -> None:
        if domain is None or not part:
            return
        for values, n in part.items():
            add_nested(self.counts, values, domain, sign * n)
            self.versions[values] = next(_versions)
            if values in self.tables:
                self.dirty.setdefault(values, set()).add(domain)

    def follow(self, snapshot: ClusterSnapshot) -> None:
        """Make the index count ``snapshot``'s nodes."""
        nodes = snapshot.rows
        if nodes is self.nodes:
            return
        rows = (
            relevant_changes(snapshot, self.generation, self.nodes, self._may_count)
            if self.nodes
            else None
        )
        if rows is None:
            self.counts = {}
            self.versions = {}
            self.base = next(_versions)
            self.tables = {}
            self.dirty = {}
            for node in nodes:
                self._add(*self._part(node), 1)
        else:
            old = self.nodes
            for row in rows:
                was, now = old[row], nodes[row]
                found = signed_moved_pods(was, now)
                if found is not None:
                    # The same node object (its domain too): only the pods that came or went
                    # move its part, not a recount of every pod it holds.
                    moved, sign = found
                    self._add(now.node.labels.get(self.key), self._counted(moved), sign)
                    continue
                before = self._part(was)
                after = self._part(now)
                if before != after:  # most replaced nodes got a pod the selector ignores
                    self._add(*before, -1)
                    self._add(*after, 1)
        self.nodes = nodes
        self.generation = snapshot.generation

    def row_counts(self, snapshot: ClusterSnapshot, values: Values) -> np.ndarray:
        """Per row of the snapshot it follows, the count of ``values`` at the row's domain
        (-1: the node lacks the label)."""
        column = label_column(snapshot, self.key)
        version = self.versions.get(values, self.base)
        kept = self.tables.get(values)
        counts = self.counts.get(values, {})
        codes = column.values
        if kept is not None and kept[0] is column:
            if kept[3] == version:
                return kept[2]
            table = kept[1]
            # The same label column: only the domains recounted since moved.
            for domain in self.dirty.get(values, ()):
                code = codes.get(domain)
                if code is not None:
                    table[code] = counts.get(domain, 0)
        else:
            table = np.zeros(len(codes) + 1, np.int64)
            table[-1] = -1  # code -1: the node lacks the label
            for domain, n in counts.items():
                code = codes.get(domain)
                if code is not None:
                    table[code] = n
        self.dirty[values] = set()
        rows = table[column.codes]
        self.tables[values] = (column, table, rows, version)
        return rows


# One index per call site's label key and selector names, per namespace: a handful.
_KEPT = 64
_indexes: OrderedDict[Hashable, _Index] = OrderedDict()
_lock = threading.Lock()


def _index(snapshot: ClusterSnapshot, index_key: tuple[str, str, tuple[str, ...]]) -> _Index:
    """The kept index for ``index_key`` following ``snapshot`` (the caller holds ``_lock``)."""
    index = _indexes.pop(index_key, None) or _Index(*index_key)
    index.follow(snapshot)
    _indexes[index_key] = index
    while len(_indexes) > _KEPT:
        _indexes.popitem(last=False)
    return index


def kept_counts(
    snapshot: ClusterSnapshot, key: str, namespace: str, wanted: Wanted
) -> dict[str, int]:
    """``fresh_counts``, from the index kept for the last snapshot seen with this key,
    namespace and selector names (domains with no matching pod left out)."""
    names = tuple(name for name, _ in wanted)
    values = tuple(value for _, value in wanted)
    with _lock:
        found = _index(snapshot, (key, namespace, names)).counts.get(values)
        return dict(found) if found else {}


# --- the builtin ---------------------------------------------------------------------------


def _cycle_counts(
    ctx: CycleContext, pod: PodView, key: str, labels: Mapping[str, str]
) -> dict[str, int]:
    """The counts for this cycle's snapshot, looked up once per cycle and call arguments."""
    wanted = tuple(sorted(labels.items()))
    namespace = pod.pod.namespace
    return ctx.prepared(
        ("domain_pod_count", key, namespace, wanted),
        lambda: _counted(ctx, key, namespace, wanted),
    )


def _counted(ctx: CycleContext, key: str, namespace: str, wanted: Wanted) -> dict[str, int]:
    counts = kept_counts(ctx.snapshot, key, namespace, wanted)
    if ctx.alike is not None:
        # What pods of the class asked: their row key covers these counts from now on.
        asked: dict[Asked, None] = ctx.prepared(_ASKED, dict, pod_only=True)
        pair = ((key, namespace, tuple(name for name, _ in wanted)), tuple(v for _, v in wanted))
        if pair not in asked:
            global _epoch
            with _lock:
                asked[pair] = None
                _epoch += 1
    return counts


# A class's calls: (index key, label values), in first-asked order (a dict: ordered).
Asked = tuple[tuple[str, str, tuple[str, ...]], Values]
_ASKED = object()  # the prepared key of a class's asked counts
# Moves whenever a class asks counts it had not asked before (``domain_pod_count_key``).
_epoch = 0


def domain_pod_count(
    ctx: CycleContext, pod: PodView, node: NodeView, key: str, labels: Mapping[str, str]
) -> int:
    """Pods (of the pod's namespace) carrying all ``labels`` on nodes sharing ``node``'s value
    of label ``key``; 0 when the node lacks the label."""
    value = node.node.labels.get(key)
    if value is None:
        return 0
    return _cycle_counts(ctx, pod, key, labels).get(value, 0)


def domain_pod_count_batch(
    ctx: CycleContext,
    pod: PodView,
    nodes: Sequence[NodeView],
    key: str,
    labels: Mapping[str, str],
) -> list[int]:
    """``domain_pod_count`` for each of ``nodes``: one lookup of the counts, then one per node
    (a node without the label reads 0)."""
    counts = _cycle_counts(ctx, pod, key, labels)
    if not counts:
        return [0] * len(nodes)
    if len(nodes) > _FEW:
        # Thousands of nodes: the label's kept column, gathered at the nodes' rows.
        snapshot = ctx.snapshot
        at = view_rows(ctx, nodes)
        if at is None:
            listed = rows_of(snapshot, list(map(_INFO_OF, nodes)))
            at = None if listed is None else np.asarray(listed, np.int64)
        if at is not None:
            found = label_column(snapshot, key).gather(counts)
            return ints(found[at])  # type: ignore[return-value]
    get = counts.get
    return [0 if (v := view.node.labels.get(key)) is None else get(v, 0) for view in nodes]


_FEW = 64  # fewer nodes are looked up one by one: numpy's fixed costs are higher
_INFO_OF = operator.attrgetter("info")


def domain_pod_count_key(ctx: CycleContext) -> Hashable:
    """The cluster key of the builtin: per row, the count at the row's domain (-1: the node
    lacks the label) of each selector the pod's class asked in its earlier cycles, so a
    cached result stands while no count it read moved (``schedlib.rowkeys``); pods of other
    apps placed meanwhile move nothing.

    The key is made before the cycle's calls and cannot see their arguments. A call asking
    counts its class had not asked moves a process-wide epoch held in the whole part: a result
    computed from counts outside its key is then never read again under that key. A pod
    without a class (``CycleContext.alike``) is keyed apart every cycle."""
    return ctx.prepared(("domain_pod_count", "row key"), lambda: _row_key(ctx, None))


def domain_pod_count_key_by(ctx: CycleContext, keys: frozenset[Any]) -> Hashable:
    """``domain_pod_count_key`` for a rule whose calls all count by one of the label
    ``keys`` (``Function.narrowed_key``): it covers only the counts asked by those keys, so
    a rule counting per hostname keeps its rows when a zone's count moves."""
    return ctx.prepared(("domain_pod_count", "row key", keys), lambda: _row_key(ctx, keys))


def _row_key(ctx: CycleContext, keys: frozenset[Any] | None) -> RowKeyed:
    snapshot = ctx.snapshot
    alike = ctx.alike
    if alike is None:
        return RowKeyed(("domain_pod_count", object()), np.zeros((snapshot.num_nodes, 0), np.int64))
    asked = tuple(
        pair
        for pair in alike.get(_ASKED) or {}
        if keys is None or pair[0][0] in keys  # (index key, values); the index's label key
    )
    columns: list[np.ndarray] = []
    with _lock:
        whole = ("domain_pod_count", _epoch, asked)
        for index_key, values in asked:
            columns.append(_index(snapshot, index_key).row_counts(snapshot, values))
    if not columns:
        return RowKeyed(whole, np.zeros((snapshot.num_nodes, 0), np.int64))
    # ``np.stack``'s checks cost more than filling the few columns (a cycle of every gang
    # member makes this key).
    rows = np.empty((len(columns[0]), len(columns)), np.int64)
    for at, column in enumerate(columns):
        rows[:, at] = column
    return RowKeyed(whole, rows)


def domain_pod_count_pod_key(ctx: CycleContext) -> Hashable:
    """What the builtin reads of the pod: its namespace (the rest comes in as arguments)."""
    return ctx.pod.pod.namespace


def clear() -> None:
    """Forget the kept indexes (tests)."""
    with _lock:
        _indexes.clear()
