"""The topology domains a gang may be placed in, and what each has free, kept between gangs.

``schedule_gang`` judges every domain of the levels its policy names, for every gang: which
nodes each domain holds and how much of each resource they have free in all. From scratch
that is a pass over every node of the cluster per gang, per level, several times over. But a
node's domains come from its ``Node`` object's labels, which placing pods never changes, and
its free resources from its ``NodeInfo`` alone, which a placement replaces on one node only.

So ``layout`` keeps the domains (their rows, node names and resource names) for the tuple of
``Node`` objects it last saw, and ``free_sums`` keeps the free units per (level, domain,
resource) with ``schedlib.domains.NodeSums``, corrected for the rows whose ``NodeInfo`` was
replaced since. Both give exactly what a fresh pass gives (``tests/engine/test_gang_domains.py``
replays placements and removals against fresh passes; ``schedlib.gangs.free_units`` is the
fresh pass). ``domain_view`` keeps, beside the layout, the ``DomainView`` each domain's gang
rules last saw: a gang places its members in one domain, and the domains it left alone are
judged again by the next gang with the sums their views already made.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from policyengine.model.objects import Node
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import TopologyConfig, topology_of
from policyengine.schedlib.domains import NodeSums
from policyengine.schedlib.gangs import DomainView


@dataclass(frozen=True, eq=False)
class Domain:
    """One domain of one level: its rows of ``snapshot.nodes`` (in node order), their names,
    and the resource names their allocatable holds, in the order a pass over the nodes meets
    them (the order of ``domain.free``'s keys)."""

    level: str
    name: str
    rows: tuple[int, ...]
    names: frozenset[str]
    resources: tuple[str, ...]

    def infos(self, nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        if len(self.rows) == 1:
            return [nodes[self.rows[0]]]
        return list(operator.itemgetter(*self.rows)(nodes))


@dataclass(frozen=True, eq=False)
class Layout:
    """Per level, its domains by label value, in the order of their first node; and the
    last ``DomainView`` made of each domain, with the ``NodeInfo``s it sums (``domain_view``).
    """

    nodes: tuple[Node, ...]
    levels: dict[str, dict[str, Domain]]
    views: dict[Domain, tuple[list[NodeInfo], DomainView]] = field(default_factory=dict)


_KEPT = 8
_layouts: OrderedDict[tuple[TopologyConfig, tuple[str, ...]], Layout] = OrderedDict()
_lock = threading.Lock()


def layout(snapshot: ClusterSnapshot, topology: TopologyConfig, levels: Sequence[str]) -> Layout:
    """The domains of ``levels`` over the snapshot's nodes (nodes without a level's label are
    in none of its domains)."""
    key = (topology, tuple(levels))
    nodes = tuple(info.node for info in snapshot.nodes)
    with _lock:
        known = _layouts.pop(key, None)
    if (
        known is None
        or len(known.nodes) != len(nodes)
        or not all(map(operator.is_, known.nodes, nodes))
    ):
        known = _laid_out(snapshot.nodes, nodes, topology, key[1])
    with _lock:
        _layouts[key] = known
        while len(_layouts) > _KEPT:
            _layouts.popitem(last=False)
    return known


def _laid_out(
    infos: Sequence[NodeInfo],
    nodes: tuple[Node, ...],
    topology: TopologyConfig,
    levels: tuple[str, ...],
) -> Layout:
    rows: dict[str, dict[str, list[int]]] = {level: {} for level in levels}
    for row, node in enumerate(nodes):
        where = topology_of(node, topology)
        for level in levels:
            value = where.domain(level)
            if value is not None:
                rows[level].setdefault(value, []).append(row)
    out: dict[str, dict[str, Domain]] = {}
    for level in levels:
        out[level] = {}
        for value, at in rows[level].items():
            resources = dict.fromkeys(name for row in at for name in infos[row].allocatable_units)
            out[level][value] = Domain(
                level,
                value,
                tuple(at),
                frozenset(nodes[row].name for row in at),
                tuple(resources),
            )
    return Layout(nodes, out)


# Per policy's gang levels and topology config: a handful.
_FREE = NodeSums(16)


def free_sums(
    snapshot: ClusterSnapshot, topology: TopologyConfig, levels: Sequence[str]
) -> dict[Any, int]:
    """``{(level, domain, resource): free units}`` summed over the domain's nodes, each node's
    shortfall counted as 0 (``schedlib.gangs.free_units``); every resource of a node's
    allocatable is named, 0 included."""
    wanted = tuple(levels)

    def part(info: NodeInfo) -> dict[Any, int]:
        where = topology_of(info.node, topology)
        allocatable = info.allocatable_units
        requested = info.requested_units
        out: dict[Any, int] = {}
        for level in wanted:
            value = where.domain(level)
            if value is None:
                continue
            for name, units in allocatable.items():
                left = units - requested.get(name, 0)
                out[(level, value, name)] = left if left > 0 else 0
        return out

    return _FREE.sums(("gang free", topology, wanted), snapshot, part)


def domain_free(sums: dict[Any, int], domain: Domain) -> dict[str, int]:
    """The free units of ``domain`` by resource, in ``domain.resources`` order."""
    level, name = domain.level, domain.name
    return {r: sums[(level, name, r)] for r in domain.resources}


def domain_view(
    shape: Layout, domain: Domain, nodes: Sequence[NodeInfo], sums: dict[Any, int]
) -> DomainView:
    """What a gang rule sees of ``domain`` (``sums``: ``free_sums``): the view made for an
    earlier gang when the domain's nodes are the same ``NodeInfo`` objects, otherwise a new
    one. A view reads nothing but those nodes (its sums are theirs, ``free`` included), so
    the kept one answers as a new one would, with the sums it already made; a placement
    changes a few domains, and the others are judged again for every gang."""
    infos = domain.infos(nodes)
    kept = shape.views.get(domain)
    if kept is not None and len(kept[0]) == len(infos) and all(map(operator.is_, kept[0], infos)):
        return kept[1]
    view = DomainView(domain.level, domain.name, infos, domain_free(sums, domain))
    shape.views[domain] = (infos, view)
    return view


def clear() -> None:
    """Forget the layouts and sums (tests)."""
    with _lock:
        _layouts.clear()
    _FREE.clear()
