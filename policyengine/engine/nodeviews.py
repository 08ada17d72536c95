"""The ``node`` values of a cycle and the per-row facts the caches key on, reused between cycles.

A ``NodeView`` computes what rules read of a node (allocatable maps, GPU facts, topology) on
first use. Building 5,000 of them per pod and throwing them away cost about as much as the
scheduling arithmetic itself. A view depends only on its ``NodeInfo`` (immutable) and the
topology configuration, so it is kept while the snapshot still holds that very ``NodeInfo``;
a node the assume step or the watch loop replaced gets a fresh view.

The same pass keeps a ``Frame`` per snapshot: the views, each row's ``NodeInfo`` identity as
an int64 column (what a cached rule result is valid for: ``classcache``), the node names and
their order. The assume step replaces one ``NodeInfo`` per pod, so each is updated in place of
the changed rows only; the per-pod cost of knowing what changed stays one C-speed pass.
"""

from __future__ import annotations

import itertools
import operator
import threading
from dataclasses import dataclass, field

import numpy as np

from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import TopologyConfig
from policyengine.schedlib.views import NodeView


@dataclass(eq=False)
class Frame:
    """One snapshot's nodes as the engine's columns see them.

    ``ids``: ``id()`` of each row's ``NodeInfo``; ``infos`` holds those objects (a column that
    copies ids from here also copies the objects, so an id is never reused while a column
    still names it). ``names``: each row's node name; ``ranks``: each row's position in name
    order (the ranking's tie-break), computed on first use and kept while the names stay.
    """

    views: list[NodeView]
    nodes: tuple[NodeInfo, ...]
    ids: np.ndarray
    infos: np.ndarray
    names: np.ndarray
    _ranks: list[np.ndarray] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def ranks(self) -> np.ndarray:
        if not self._ranks:
            ranks = np.empty(len(self.names), np.int64)
            ranks[np.argsort(self.names.astype(str), kind="stable")] = np.arange(len(self.names))
            self._ranks.append(ranks)
        return self._ranks[0]


def _objects(items: list[object]) -> np.ndarray:
    out = np.empty(len(items), object)
    out[:] = items
    return out


class NodeViews:
    """Views of the nodes of the snapshots one topology configuration sees, by node name."""

    def __init__(self, topology: TopologyConfig):
        self.topology = topology
        self._by_name: dict[str, NodeView] = {}
        self._last: tuple[ClusterSnapshot, Frame] | None = None
        self._lock = threading.Lock()

    def of(self, snapshot: ClusterSnapshot) -> list[NodeView]:
        """One view per node of ``snapshot``, in its node order."""
        return self.frame(snapshot).views

    def frame(self, snapshot: ClusterSnapshot) -> Frame:
        last = self._last
        if last is not None and last[0] is snapshot:
            return last[1]
        with self._lock:
            by_name = self._by_name
            nodes = snapshot.nodes
            previous = last[1] if last is not None else None
            if previous is not None and previous.size == len(nodes):
                # The assume step replaces one NodeInfo: find the replaced rows at C speed
                # instead of looking every node up by name.
                rows = list(
                    itertools.compress(
                        range(len(nodes)), map(operator.is_not, nodes, previous.nodes)
                    )
                )
                views = previous.views.copy()
                ids = previous.ids.copy()
                infos = previous.infos.copy()
                names = previous.names
                renamed = False
                for row in rows:
                    info = nodes[row]
                    views[row] = self._view(by_name, info)
                    ids[row] = id(info)
                    infos[row] = info
                    renamed = renamed or info.node.name != names[row]
                ranks = previous._ranks
                if renamed:
                    names = _objects([info.node.name for info in nodes])
                    ranks = []
                frame = Frame(views, nodes, ids, infos, names, ranks)
            else:
                views = [self._view(by_name, info) for info in nodes]
                frame = Frame(
                    views,
                    nodes,
                    np.fromiter(map(id, nodes), np.int64, len(nodes)),
                    _objects(list(nodes)),
                    _objects([info.node.name for info in nodes]),
                )
            if len(by_name) > 2 * len(views) + 64:  # nodes deleted long ago
                self._by_name = {view.info.name: view for view in views}
            self._last = (snapshot, frame)
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


def node_views(snapshot: ClusterSnapshot, topology: TopologyConfig) -> list[NodeView]:
    """The views of ``snapshot``'s nodes for ``topology``, shared between cycles."""
    return _views_for(topology).frame(snapshot).views


def node_frame(snapshot: ClusterSnapshot, topology: TopologyConfig) -> Frame:
    """``snapshot``'s frame for ``topology`` (views, row identities, names), shared between
    cycles."""
    return _views_for(topology).frame(snapshot)
