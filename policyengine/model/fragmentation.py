"""GPU fragmentation as FGD defines it: the GPU capacity of a node that a typical pod cannot
use, given the node's free CPU and memory as well as its devices, weighted by how common each
typical pod is.

Weng et al. (USENIX ATC'23, "Beware of Fragmentation") measure a node against the *shapes* of
the cluster's workload — (CPU, memory, GPU) requests with their frequencies. For one shape:

* if the shape cannot go on the node at all (too little free CPU or memory, too few fitting
  devices), every free GPU share of the node is lost to it;
* otherwise the free shares on devices it cannot use are lost: for a share of one device, the
  devices left with less than the share (or out of sharers, or of device memory); for whole
  GPUs, the devices partly used.

The node's fragmentation is the weighted mean over the shapes, in GPUs (``NodeGpus``' own
``unusable_gpus`` does the device part). A pod is placed well where this grows least
(``growth``), and inside the node on the device where it grows least (``choose_device``).

The shapes come from the policy (written by hand) or from the workload itself
(``Workload.shapes``): the most common request shapes that together cover a given share of the
pods, each weighted by its count — FGD's "typical pods", learned as pods arrive and refreshed as
the workload grows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policyengine.model.gpu_devices import (
    BEST_FIT,
    FIRST_FIT,
    MOST_FREE,
    GpuDemand,
    Grant,
    NodeGpus,
)
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.resources import pod_requests, to_units
from policyengine.model.snapshot import NodeInfo

LEAST_FRAGMENTATION = "least-fragmentation"
DEVICE_RULES = (BEST_FIT, MOST_FREE, FIRST_FIT, LEAST_FRAGMENTATION)


@dataclass(frozen=True, slots=True)
class Shape:
    """A typical pod: its GPU demand, the host CPU (millicores) and memory (MiB) it asks, and
    how common it is."""

    demand: GpuDemand
    weight: float = 1.0
    cpu_milli: int = 0
    memory_mib: int = 0


Shapes = tuple[Shape, ...]


def free_gpus(gpus: NodeGpus) -> float:
    """Free GPU compute on the node's healthy devices, in GPUs."""
    return sum(
        u.free_cores / max(u.device.cores, 1)
        for u in gpus.uses
        if u.device.healthy and u.free_cores > 0
    )


def fragmentation(
    gpus: NodeGpus, free_cpu_milli: int, free_memory_mib: int, shapes: Sequence[Shape]
) -> float:
    """The node's GPU compute (in GPUs) the shapes cannot use, averaged by their weights."""
    total = sum(s.weight for s in shapes if s.weight > 0)
    if total <= 0 or not gpus.uses:
        return 0.0
    # The device part depends on the devices alone: kept on the (immutable) NodeGpus, by the
    # shapes and by which of them the host still fits.
    fits = tuple(s.cpu_milli <= free_cpu_milli and s.memory_mib <= free_memory_mib for s in shapes)
    key = ("fgd", tuple(shapes), fits)
    known = gpus._memo.get(key)
    if known is not None:
        return known
    everything = free_gpus(gpus)
    lost = 0.0
    for shape, fit in zip(shapes, fits, strict=True):
        if shape.weight <= 0:
            continue
        if not fit or not gpus.fits(shape.demand):
            lost += shape.weight * everything
        else:
            lost += shape.weight * gpus.unusable_gpus(shape.demand)
    value = lost / total
    if len(gpus._memo) >= 32:
        gpus._memo.clear()
    gpus._memo[key] = value
    return value


def choose_device(
    gpus: NodeGpus,
    demand: GpuDemand,
    rule: str,
    shapes: Sequence[Shape] = (),
    free_cpu_milli: int = 0,
    free_memory_mib: int = 0,
) -> tuple[Grant, ...] | None:
    """The grants ``demand`` gets under ``rule``; None when it does not fit. Under
    ``least-fragmentation`` a share goes to the fitting device that leaves the node's
    fragmentation (against ``shapes``, with the host's free CPU and memory *after* the pod)
    lowest, the best fit among equals; whole GPUs take free devices, which all leave the same."""
    if rule != LEAST_FRAGMENTATION:
        return gpus.choose(demand, rule)
    if demand.empty or demand.whole or not shapes:
        return gpus.choose(demand, BEST_FIT)
    fitting = [u for u in gpus.uses if u.fits(demand)]
    if len(fitting) < demand.devices:
        return None
    fitting.sort(key=lambda u: (u.leftover(demand), u.device.index))
    if demand.devices > 1:
        return gpus.choose(demand, BEST_FIT)
    best: tuple[float, int] | None = None
    chosen = fitting[0]
    for position, u in enumerate(fitting):
        grant = Grant(
            u.device.uuid, demand.cores_on(u.device), demand.memory_on(u.device), u.device.model
        )
        after = gpus.with_grants("\0candidate", (grant,))
        value = fragmentation(after, free_cpu_milli, free_memory_mib, shapes)
        if best is None or (value, position) < best:
            best = (value, position)
            chosen = u
    return (
        Grant(
            chosen.device.uuid,
            demand.cores_on(chosen.device),
            demand.memory_on(chosen.device),
            chosen.device.model,
        ),
    )


def growth(
    gpus: NodeGpus,
    free_cpu_milli: int,
    free_memory_mib: int,
    demand: GpuDemand,
    cpu_milli: int,
    memory_mib: int,
    shapes: Sequence[Shape],
    grants: Sequence[Grant],
) -> float:
    """How the node's fragmentation changes when a pod asking ``demand``, ``cpu_milli`` and
    ``memory_mib`` is placed on it with ``grants`` (its devices; empty for a pod asking no
    GPU)."""
    before = fragmentation(gpus, free_cpu_milli, free_memory_mib, shapes)
    after_gpus = gpus.with_grants("\0placed", grants) if grants else gpus
    after = fragmentation(
        after_gpus, free_cpu_milli - cpu_milli, free_memory_mib - memory_mib, shapes
    )
    return after - before


# --- learned shapes --------------------------------------------------------------------------

# A shape's key: GPU demand, CPU millicores, memory MiB.
ShapeKey = tuple[GpuDemand, int, int]


def learned(counts: Counter[ShapeKey], coverage: float, limit: int) -> Shapes:
    """The most common shapes of ``counts`` that together cover ``coverage`` of the pods
    counted (at most ``limit``), each weighted by its count; ties by the shape's order, so the
    result depends on the counts alone."""
    total = sum(counts.values())
    if total <= 0:
        return ()
    ordered = sorted(counts.items(), key=lambda item: (-item[1], _order(item[0])))
    out: list[Shape] = []
    covered = 0
    for (demand, cpu, memory), count in ordered:
        if len(out) >= limit or covered >= coverage * total:
            break
        out.append(Shape(demand, float(count), cpu, memory))
        covered += count
    return tuple(out)


def _order(key: ShapeKey) -> tuple[int, ...]:
    d, cpu, memory = key
    return (int(d.whole), d.devices, d.cores, d.memory_mib, d.memory_percent, cpu, memory)


class Workload:
    """The GPU pods a scheduler has seen, counted by shape: what learned shapes are drawn from.

    A replay adds every pod as it arrives (placed or not: FGD's typical pods are the
    workload's, not the cluster's); a cluster's running and pending pods can be added the same
    way. ``shapes`` is recomputed only once the count has grown by ``refresh`` (a fraction)
    since it was last computed, so a policy sees one stable shape set across many cycles and
    per-node results computed against it stay valid (``version`` says when it changed).
    """

    def __init__(self, refresh: float = 0.05):
        self.counts: Counter[ShapeKey] = Counter()
        self.total = 0
        self.refresh = refresh
        self.version = 0
        self._learned: dict[tuple[float, int], tuple[int, Shapes]] = {}

    def add(self, key: ShapeKey | None) -> None:
        if key is None:
            return
        self.counts[key] += 1
        self.total += 1

    def extend(self, keys: Iterable[ShapeKey | None]) -> None:
        for key in keys:
            self.add(key)

    def state_key(self, limit: int) -> tuple[tuple[float, Shapes], ...]:
        """The shapes ``shapes`` gives now for every coverage asked so far (refreshed first):
        equal keys, equal learned shapes."""
        return tuple(
            (coverage, self.shapes(coverage, limit))
            for coverage, kept_limit in sorted(self._learned)
            if kept_limit == limit
        )

    def shapes(self, coverage: float, limit: int) -> Shapes:
        kept = self._learned.get((coverage, limit))
        if kept is not None and self.total <= kept[0] * (1 + self.refresh):
            return kept[1]
        found = learned(self.counts, coverage, limit)
        if kept is None or kept[1] != found:
            self.version += 1
        self._learned[(coverage, limit)] = (self.total, found)
        return found


# --- what nodes and pods hold --------------------------------------------------------------

_MIB = 1024 * 1024


def host_free(info: NodeInfo) -> tuple[int, int]:
    """The node's free CPU (millicores) and memory (MiB): allocatable minus requested."""
    alloc = info.allocatable_units
    used = info.requested_units
    cpu = alloc.get("cpu", 0) - used.get("cpu", 0)
    memory = (alloc.get("memory", 0) - used.get("memory", 0)) // _MIB
    return cpu, memory


def pod_host(pod: Pod) -> tuple[int, int]:
    """The CPU (millicores) and memory (MiB, rounded up) the pod requests."""
    requests = pod_requests(pod)
    cpu = to_units("cpu", requests.get("cpu", 0))
    memory = -(-to_units("memory", requests.get("memory", 0)) // _MIB)
    return cpu, memory


def shape_key(pod: Pod) -> ShapeKey | None:
    """The pod's shape (None for a pod asking no GPU: it is not a typical GPU pod)."""
    demand = pod_demand(pod)
    if demand.empty:
        return None
    cpu, memory = pod_host(pod)
    return demand, cpu, memory
