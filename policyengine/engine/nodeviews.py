"""The ``node`` values of a cycle, reused from one cycle to the next.

A ``NodeView`` computes what rules read of a node (allocatable maps, GPU facts, topology) on
first use. Building 5,000 of them per pod and throwing them away cost about as much as the
scheduling arithmetic itself. A view depends only on its ``NodeInfo`` (immutable) and the
topology configuration, so it is kept while the snapshot still holds that very ``NodeInfo``;
a node the assume step or the watch loop replaced gets a fresh view.
"""

from __future__ import annotations

import itertools
import operator
import threading

from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import TopologyConfig
from policyengine.schedlib.views import NodeView


class NodeViews:
    """Views of the nodes of the snapshots one topology configuration sees, by node name."""

    def __init__(self, topology: TopologyConfig):
        self.topology = topology
        self._by_name: dict[str, NodeView] = {}
        self._last: tuple[ClusterSnapshot, list[NodeView], tuple[NodeInfo, ...]] | None = None
        self._lock = threading.Lock()

    def of(self, snapshot: ClusterSnapshot) -> list[NodeView]:
        """One view per node of ``snapshot``, in its node order."""
        last = self._last
        if last is not None and last[0] is snapshot:
            return last[1]
        with self._lock:
            by_name = self._by_name
            nodes = snapshot.nodes
            if last is not None and len(last[1]) == len(nodes):
                # The assume step replaces one NodeInfo: find the replaced rows at C speed
                # instead of looking every node up by name.
                views = last[1].copy()
                previous = last[2]
                for row in itertools.compress(
                    range(len(nodes)), map(operator.is_not, nodes, previous)
                ):
                    views[row] = self._view(by_name, nodes[row])
            else:
                views = [self._view(by_name, info) for info in nodes]
            if len(by_name) > 2 * len(views) + 64:  # nodes deleted long ago
                self._by_name = {view.info.name: view for view in views}
            self._last = (snapshot, views, nodes)
        return views

    def _view(self, by_name: dict[str, NodeView], info: NodeInfo) -> NodeView:
        view = by_name.get(info.node.name)
        if view is None or view.info is not info:
            view = by_name[info.node.name] = NodeView(info, self.topology)
        return view


_CACHES: dict[int, tuple[TopologyConfig, NodeViews]] = {}


def node_views(snapshot: ClusterSnapshot, topology: TopologyConfig) -> list[NodeView]:
    """The views of ``snapshot``'s nodes for ``topology``, shared between cycles."""
    entry = _CACHES.get(id(topology))
    if entry is None or entry[0] is not topology:
        if len(_CACHES) > 16:
            _CACHES.clear()
        entry = _CACHES[id(topology)] = (topology, NodeViews(topology))
    return entry[1].of(snapshot)
