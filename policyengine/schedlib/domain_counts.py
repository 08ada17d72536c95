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
(``steplog.changed_rows``), and is rebuilt only when the rows are not the same or too many
changed.

Its cluster key (``domain_pod_count_key``) is a row key (``schedlib.rowkeys``): per node row,
a stamp of the row's domain in each index of the pod's namespace, which changes only when a
node of that domain changed what it adds to the index. A cached result of a rule calling the
builtin stays valid on the nodes of every domain where no matching pod came or went.

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

import numpy as np

from policyengine.lang.vector import ints
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.domains import LabelColumn, label_column
from policyengine.schedlib.nested_counts import add_nested
from policyengine.schedlib.node_rows import rows_of, view_rows
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.steplog import changed_rows
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


# Stamps are never reused: a stamp names the counts of one domain between two changes.
_stamps = itertools.count(1)


class _Index:
    """For the nodes of one snapshot: ``counts[values][domain]``, the pods of ``namespace``
    whose labels ``names`` have ``values``, on the nodes of ``domain`` (only counts above 0).

    ``stamps[domain]`` (``base`` for a domain not in it) changes whenever a count of the
    domain may have: the row keys of ``domain_pod_count_key``."""

    __slots__ = (
        "base",
        "counts",
        "dirty",
        "generation",
        "key",
        "keyed",
        "names",
        "namespace",
        "nodes",
        "stamps",
        "table",
        "version",
    )

    def __init__(self, key: str, namespace: str, names: tuple[str, ...]):
        self.key = key
        self.namespace = namespace
        self.names = names
        self.generation = -1
        self.nodes: tuple[NodeInfo, ...] = ()
        self.counts: dict[Values, dict[str, int]] = {}
        self.stamps: dict[str, int] = {}
        self.base = next(_stamps)
        self.version = 0  # counts changes of ``stamps`` and ``base``
        # The last row column of stamps made: (version, label column, rows), and its table of
        # stamps by label code (kept to be corrected for the ``dirty`` domains alone).
        self.keyed: tuple[int, LabelColumn, np.ndarray] | None = None
        self.table: np.ndarray | None = None
        self.dirty: set[str] | None = None  # domains restamped since the table; None: all

    def _part(self, node: NodeInfo) -> tuple[str | None, dict[Values, int]]:
        """The node's domain and its matching pods per tuple of label values."""
        domain = node.node.labels.get(self.key)
        part: dict[Values, int] = {}
        if domain is None or not node.pods:
            return domain, part
        namespace, names = self.namespace, self.names
        for info in node.pods:
            pod = info.pod
            if pod.namespace != namespace:
                continue
            labels = pod.labels
            values = tuple(labels.get(name) for name in names)
            if None not in values:
                part[values] = part.get(values, 0) + 1  # type: ignore[index,arg-type]
        return domain, part

    def _add(self, domain: str | None, part: dict[Values, int], sign: int) -> None:
        if domain is None or not part:
            return
        self.stamps[domain] = next(_stamps)
        self.version += 1
        if self.dirty is not None:
            self.dirty.add(domain)
        for values, n in part.items():
            add_nested(self.counts, values, domain, sign * n)

    def follow(self, snapshot: ClusterSnapshot) -> None:
        """Make the index count ``snapshot``'s nodes."""
        nodes = snapshot.nodes
        if nodes is self.nodes:
            return
        rows = changed_rows(snapshot, self.generation, self.nodes) if self.nodes else None
        if rows is None:
            self.counts = {}
            self.stamps = {}
            self.base = next(_stamps)
            self.version += 1
            self.dirty = None
            for node in nodes:
                self._add(*self._part(node), 1)
        else:
            old = self.nodes
            for row in rows:
                before = self._part(old[row])
                after = self._part(nodes[row])
                if before != after:  # most replaced nodes got a pod the selector ignores
                    self._add(*before, -1)
                    self._add(*after, 1)
        self.nodes = nodes
        self.generation = snapshot.generation

    def row_stamps(self, snapshot: ClusterSnapshot) -> np.ndarray:
        """Per row of the snapshot it follows, the stamp of the row's domain (-1: the node
        lacks the label)."""
        column = label_column(snapshot, self.key)
        keyed = self.keyed
        if keyed is not None and keyed[0] == self.version and keyed[1] is column:
            return keyed[2]
        codes = column.values
        table = self.table
        if (
            keyed is not None
            and keyed[1] is column
            and table is not None
            and self.dirty is not None
        ):
            # The same label column: only the domains restamped since moved.
            for domain in self.dirty:
                code = codes.get(domain)
                if code is not None:
                    table[code] = self.stamps.get(domain, self.base)
        else:
            table = np.full(len(codes) + 1, self.base, np.int64)
            table[-1] = -1  # code -1: the node lacks the label
            for domain, stamp in self.stamps.items():
                code = codes.get(domain)
                if code is not None:
                    table[code] = stamp
            self.table = table
        self.dirty = set()
        rows = table[column.codes]
        self.keyed = (self.version, column, rows)
        return rows


# One index per call site's label key and selector names, per namespace: a handful.
_KEPT = 64
_indexes: OrderedDict[Hashable, _Index] = OrderedDict()
_lock = threading.Lock()


def kept_counts(
    snapshot: ClusterSnapshot, key: str, namespace: str, wanted: Wanted
) -> dict[str, int]:
    """``fresh_counts``, from the index kept for the last snapshot seen with this key,
    namespace and selector names (domains with no matching pod left out)."""
    names = tuple(name for name, _ in wanted)
    values = tuple(value for _, value in wanted)
    index_key = (key, namespace, names)
    with _lock:
        index = _indexes.pop(index_key, None) or _Index(key, namespace, names)
        index.follow(snapshot)
        _indexes[index_key] = index
        while len(_indexes) > _KEPT:
            _indexes.popitem(last=False)
        found = index.counts.get(values)
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
        lambda: kept_counts(ctx.snapshot, key, namespace, wanted),
    )


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
    """The cluster key of the builtin: per row, the stamp of the row's domain (-1: the node
    lacks the label) in every index kept for the pod's namespace, so a cached result stands
    while no count of its node's domains moved (``schedlib.rowkeys``).

    The key is made before the cycle's calls and cannot see their arguments: it covers every
    index of the namespace, which holds each call's counts once one call made it (a call
    making a new index changes the whole part, and every row is computed again)."""
    return ctx.prepared(("domain_pod_count", "row key"), lambda: _row_key(ctx))


def _row_key(ctx: CycleContext) -> RowKeyed:
    namespace = ctx.pod.pod.namespace
    snapshot = ctx.snapshot
    columns: list[np.ndarray] = []
    names: list[Hashable] = []
    with _lock:
        for index_key, index in _indexes.items():
            if index.namespace == namespace:
                index.follow(snapshot)
                columns.append(index.row_stamps(snapshot))
                names.append(index_key)
    whole = ("domain_pod_count", namespace, tuple(names))
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
