"""The ``node`` values of a cycle and the per-row facts the caches key on, reused between cycles.

A ``NodeView`` computes what rules read of a node (allocatable maps, GPU facts, topology) on
first use. Building 5,000 of them per pod and throwing them away cost about as much as the
scheduling arithmetic itself. A view depends only on its ``NodeInfo`` (immutable) and the
topology configuration, so it is kept while the snapshot still holds that very ``NodeInfo``;
a node the assume step or the watch loop replaced gets a fresh view.

The same pass keeps a ``Frame`` per snapshot: the views (a ``SharedList``: a derived frame
shares its parent's and replaces a few), each row's ``NodeInfo`` identity and
its Node object's identity as int64 columns (what a cached rule result is valid for:
``fastpath.columns``), the node names and their order. The assume step replaces one ``NodeInfo`` per
pod, so each is updated in place of the changed rows only; the per-pod cost of knowing what
changed stays one C-speed pass. Frames are numbered, and the rows each one changed from the one
before are logged (``changed_since``), so a cache that last looked at an earlier frame learns
which rows to look at again without comparing every row.
"""

from __future__ import annotations

import itertools
import operator
import threading
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from policyengine.model.shared_list import SharedList
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import TopologyConfig
from policyengine.schedlib.views import NodeView


@dataclass(eq=False)
class Frame:
    """One snapshot's nodes as the engine's columns see them.

    ``ids``: ``id()`` of each row's ``NodeInfo``, the ``info`` of the row's view (a column
    that copies ids from here also keeps the objects, so an id is never reused while a column
    still names it). ``names``: each row's node name; ``ranks``: each row's position in name
    order (the ranking's tie-break), computed on first use and kept while the names stay.
    ``snapshot``: the snapshot the frame is of; its ``nodes`` tuple (a copy of every row's
    reference, for a snapshot an assume derived) is built only when read.
    """

    views: SharedList[NodeView]
    snapshot: ClusterSnapshot
    ids: np.ndarray
    names: np.ndarray
    _ranks: list[np.ndarray] = field(default_factory=list)
    # ``id()`` of each row's Node object (kept alive by ``nodes``): results of rules that read
    # only the Node object stay valid across the assume step, which keeps it.
    oids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # Where the frame stands in its views' log (``NodeViews.changed_since``).
    log: NodeViews | None = None
    seq: int = 0

    @property
    def size(self) -> int:
        return len(self.views)

    @property
    def nodes(self) -> tuple[NodeInfo, ...]:
        return self.snapshot.nodes

    @property
    def ranks(self) -> np.ndarray:
        if not self._ranks:
            ranks = np.empty(len(self.names), np.int64)
            ranks[np.argsort(self.names.astype(str), kind="stable")] = np.arange(len(self.names))
            self._ranks.append(ranks)
        return self._ranks[0]


def _node_ids(nodes: tuple[NodeInfo, ...]) -> np.ndarray:
    return np.fromiter((id(info.node) for info in nodes), np.int64, len(nodes))


# Frames remembered in the change log; a cache older than that looks at every row again.
_LOG = 4096


def _objects(items: list[object]) -> np.ndarray:
    out = np.empty(len(items), object)
    out[:] = items
    return out


def _replaced(snapshot: ClusterSnapshot, parent: Frame) -> list[tuple[int, NodeInfo]]:
    """The rows of ``parent`` (a frame of as many nodes) whose ``NodeInfo`` ``snapshot``
    replaced, with the new ones. The assume step replaces one in place, which the snapshot
    tells (``derivation``) without its ``nodes`` tuple being built; otherwise every row is
    compared, at C speed."""
    step = snapshot.derivation
    if step is not None and step[0] == parent.snapshot.generation:
        row = snapshot.node_positions.get(step[1])
        if row is not None and parent.names[row] == step[1]:
            return [(row, snapshot.node_infos[step[1]])]
    nodes = snapshot.nodes
    rows = itertools.compress(range(len(nodes)), map(operator.is_not, nodes, parent.nodes))
    return [(row, nodes[row]) for row in rows]


class NodeViews:
    """Views of the nodes of the snapshots one topology configuration sees, by node name."""

    def __init__(self, topology: TopologyConfig):
        self.topology = topology
        self._by_name: dict[str, NodeView] = {}
        self._last: Frame | None = None  # the last frame made (``Frame.snapshot``: of what)
        self._lock = threading.Lock()
        # Rows each frame changed from the one before (None: every row), for frames
        # ``_first`` … ``_seq`` in order.
        self._log: list[list[int] | None] = []
        self._first = 1
        self._seq = 0

    def _record(self, rows: list[int] | None) -> int:
        self._seq += 1
        self._log.append(rows)
        if len(self._log) > 2 * _LOG:
            del self._log[:_LOG]
            self._first += _LOG
        return self._seq

    def changed_since(self, frame: Frame | int, now: Frame) -> set[int] | None:
        """The rows whose ``NodeInfo`` may differ between ``frame`` (or the frame numbered so)
        and ``now`` (a later frame of these views); None when the log no longer reaches back
        (or the rows moved)."""
        if isinstance(frame, Frame):
            if frame.log is not self:
                return None
            frame = frame.seq
        if now.log is not self or frame > now.seq:
            return None
        if frame == now.seq:
            return set()
        with self._lock:
            first = self._first
            if frame + 1 < first or now.seq > self._seq:
                return None
            entries = self._log[frame + 1 - first : now.seq + 1 - first]
        # A class meets hundreds of frames between its cycles: joined at C speed.
        if None in entries:
            return None
        return set(itertools.chain.from_iterable(cast("list[list[int]]", entries)))

    def frame(self, snapshot: ClusterSnapshot) -> Frame:
        previous = self._last
        if previous is not None and previous.snapshot is snapshot:
            return previous
        with self._lock:
            by_name = self._by_name
            if previous is not None and previous.size == len(snapshot):
                replaced = _replaced(snapshot, previous)
                views = previous.views.replaced(
                    (row, self._view(by_name, info)) for row, info in replaced
                )
                ids = previous.ids.copy()
                oids = previous.oids.copy()
                names = previous.names
                renamed = False
                for row, info in replaced:
                    ids[row] = id(info)
                    oids[row] = id(info.node)
                    renamed = renamed or info.node.name != names[row]
                ranks = previous._ranks
                if renamed:
                    names = _objects([view.info.node.name for view in views])
                    ranks = []
                seq = self._record(None if renamed else [row for row, _ in replaced])
                frame = Frame(views, snapshot, ids, names, ranks, oids, self, seq)
            else:
                nodes = snapshot.nodes
                views = SharedList(self._view(by_name, info) for info in nodes)
                seq = self._record(None)
                frame = Frame(
                    views,
                    snapshot,
                    np.fromiter(map(id, nodes), np.int64, len(nodes)),
                    _objects([info.node.name for info in nodes]),
                    oids=_node_ids(nodes),
                    log=self,
                    seq=seq,
                )
            if len(by_name) > 2 * len(views) + 64:  # nodes deleted long ago
                self._by_name = {view.info.name: view for view in views}
            self._last = frame
        return frame

    def _view(self, by_name: dict[str, NodeView], info: NodeInfo) -> NodeView:
        view = by_name.get(info.node.name)
        if view is None or view.info is not info:
            view = by_name[info.node.name] = NodeView(info, self.topology)
        return view


_CACHES: dict[int, tuple[TopologyConfig, NodeViews]] = {}
_CACHES_LOCK = threading.Lock()


def _views_for(topology: TopologyConfig) -> NodeViews:
    entry = _CACHES.get(id(topology))
    if entry is None or entry[0] is not topology:
        with _CACHES_LOCK:
            if len(_CACHES) > 16:
                _CACHES.clear()
            entry = _CACHES[id(topology)] = (topology, NodeViews(topology))
    return entry[1]


def node_frame(snapshot: ClusterSnapshot, topology: TopologyConfig) -> Frame:
    """``snapshot``'s frame for ``topology`` (views, row identities, names), shared between
    cycles."""
    return _views_for(topology).frame(snapshot)
