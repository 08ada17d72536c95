"""What a policy's ``gang`` block sees: the gang being placed and one candidate domain.

A gang rule judges a topology domain (an NVLink domain, a rack, a block, ...) as a whole for a
whole gang, before any member is tried on a node: ``gang.requests`` is the demand of the members
still to place, ``domain.free`` what the domain's nodes have left in all. The engine builds one
``GangView`` per gang and one ``DomainView`` per candidate domain; these records declare what the
language may read of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from operator import attrgetter

from policyengine.lang.types import INT, STRING, Nullable
from policyengine.model.cached import cached_property
from policyengine.model.resources import from_units
from policyengine.model.snapshot import NodeInfo
from policyengine.schedlib.records import RESOURCES, _field, _record
from policyengine.schedlib.views import ResourceMap

GANG = _record(
    "Gang",
    "The gang (PodGroup) being placed, inside a gang block.",
    _field("name", STRING, attrgetter("name"), "The PodGroup as namespace/name."),
    _field("min_member", INT, attrgetter("min_member"), "spec.minMember of the PodGroup."),
    _field("size", INT, attrgetter("size"), "Members known: pending plus already placed."),
    _field("pending", INT, attrgetter("pending"), "Members waiting to be placed."),
    _field("placed", INT, attrgetter("placed"), "Members already bound or assumed."),
    _field(
        "requests",
        RESOURCES,
        attrgetter("requests"),
        "Requests of the pending members summed; a missing resource reads 0.",
        cost=2,
    ),
    _field(
        "timeout_seconds",
        Nullable(INT),
        attrgetter("timeout_seconds"),
        "spec.scheduleTimeoutSeconds (null when unset).",
    ),
)

DOMAIN = _record(
    "Domain",
    "One topology domain a gang may be placed in, inside a gang block.",
    _field("level", STRING, attrgetter("level"), "The level: nvlink_domain, rack, block, ..."),
    _field("name", STRING, attrgetter("name"), "The domain's label value, e.g. clique-3."),
    _field("nodes", INT, attrgetter("nodes"), "Nodes in the domain."),
    _field(
        "allocatable",
        RESOURCES,
        attrgetter("allocatable"),
        "status.allocatable summed over the domain's nodes.",
        cost=2,
    ),
    _field(
        "allocated",
        RESOURCES,
        attrgetter("allocated"),
        "Requests of the pods on the domain's nodes summed.",
        cost=2,
    ),
    _field(
        "free",
        RESOURCES,
        attrgetter("free"),
        "Free resources summed over the domain's nodes (a node over-committed counts 0).",
        cost=2,
    ),
    _field(
        "empty_nodes",
        INT,
        attrgetter("empty_nodes"),
        "Nodes with no pod requesting anything on them (whole nodes free).",
    ),
)

GANG_RECORDS = (GANG, DOMAIN)

_ZERO = Fraction(0)


class GangView:
    """What the language sees as ``gang``."""

    def __init__(
        self,
        name: str,
        min_member: int,
        pending_requests: Sequence[ResourceMap],
        placed: int,
        timeout_seconds: int | None,
    ):
        self.name = name
        self.min_member = min_member
        self.pending = len(pending_requests)
        self.placed = placed
        self.size = self.pending + placed
        self.timeout_seconds = timeout_seconds
        self._pending_requests = pending_requests

    @cached_property
    def requests(self) -> ResourceMap:
        total: dict[str, Fraction] = {}
        for requests in self._pending_requests:
            for name, value in requests.items():
                total[name] = total.get(name, _ZERO) + value
        return ResourceMap(total)


class DomainView:
    """What the language sees as ``domain``: sums over the domain's nodes."""

    def __init__(
        self,
        level: str,
        name: str,
        nodes: Iterable[NodeInfo],
        free: Mapping[str, int] | None = None,
    ):
        """``free``: the domain's free units by resource when the caller keeps them
        (``engine.gang_domains``), equal to ``free_units(nodes)`` in its order."""
        self.level = level
        self.name = name
        self._infos = tuple(nodes)
        self.nodes = len(self._infos)
        self._free = free

    # Sums in kube's integer units (milli-CPU, bytes, counts): a domain is summed for every
    # gang that considers it, and Fractions made that the cost of placing a gang.
    @cached_property
    def allocatable(self) -> ResourceMap:
        return _quantities(_sum_units(info.allocatable_units for info in self._infos))

    @cached_property
    def allocated(self) -> ResourceMap:
        return _quantities(_sum_units(info.requested_units for info in self._infos))

    @cached_property
    def free(self) -> ResourceMap:
        # A node over its allocatable has nothing to give; it must not hide another's room.
        if self._free is not None:
            return _quantities(self._free)
        return _quantities(free_units(self._infos))

    @cached_property
    def empty_nodes(self) -> int:
        return sum(1 for info in self._infos if not any(info.requested.values()))


def free_units(infos: Iterable[NodeInfo], names: Iterable[str] | None = None) -> dict[str, int]:
    """Free units per resource summed over ``infos`` (each node's shortfall counted as 0);
    only ``names`` when given."""
    total: dict[str, int] = {}
    for info in infos:
        requested = info.requested_units
        allocatable = info.allocatable_units
        for name in allocatable if names is None else names:
            left = allocatable.get(name, 0) - requested.get(name, 0)
            total[name] = total.get(name, 0) + (left if left > 0 else 0)
    return total


def _sum_units(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for units in lists:
        for name, value in units.items():
            total[name] = total.get(name, 0) + value
    return total


def _quantities(units: Mapping[str, int]) -> ResourceMap:
    return ResourceMap({name: _quantity(name, value) for name, value in units.items()})


# Every gang reads every candidate domain's sums; they take few distinct values (free GPUs,
# free milli-CPU of whole nodes), and a Fraction is immutable.
_quantity = lru_cache(maxsize=1 << 16)(from_units)
