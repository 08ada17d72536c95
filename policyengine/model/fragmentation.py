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

from policyengine.model.cached import kept_on
from policyengine.model.gpu_devices import (
    BEST_FIT,
    FIRST_FIT,
    MOST_FREE,
    NO_DEMAND,
    DeviceUse,
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


# A device as fragmentation sees it: free compute (percent), compute, free memory (MiB),
# memory, sharers left, pods on it, healthy. A node's *signature* is its devices' entries in
# sorted order: fragmentation reads nothing else of the devices and does not depend on their
# order, so nodes alike (every empty node of a model) share one computation.
Entry = tuple[int, int, int, int, int, int, bool]
Signature = tuple[Entry, ...]


def _entry(u: DeviceUse) -> Entry:
    d = u.device
    return (
        u.free_cores,
        d.cores,
        u.free_memory_mib,
        d.memory_mib,
        d.slots - u.pods,
        u.pods,
        d.healthy,
    )


_SIGNATURES: dict[int, tuple[NodeGpus, Signature]] = {}


def signature(gpus: NodeGpus) -> Signature:
    kept = _SIGNATURES.get(id(gpus))
    if kept is not None and kept[0] is gpus:
        return kept[1]
    found = tuple(sorted(_entry(u) for u in gpus.uses))
    if len(_SIGNATURES) >= 50_000:
        _SIGNATURES.clear()
    _SIGNATURES[id(gpus)] = (gpus, found)
    return found


def _free(e: Entry) -> float:
    return e[0] / max(e[1], 1) if e[6] and e[0] > 0 else 0.0


def _fits(e: Entry, d: GpuDemand) -> bool:
    """``DeviceUse.fits`` on an entry."""
    if not e[6]:
        return False
    if d.whole:
        return e[5] == 0
    memory = d.memory_mib if d.memory_mib else e[3] * d.memory_percent // 100
    return e[4] > 0 and d.cores <= e[0] and memory <= e[2]


def _lost(sig: Signature, d: GpuDemand, everything: float) -> float:
    """``NodeGpus.unusable_gpus`` on a signature, with no placement possible counted whole."""
    fitting = [_fits(e, d) for e in sig]
    if sum(fitting) < d.devices:
        return everything
    return sum(_free(e) for e, fit in zip(sig, fitting, strict=True) if not fit)


class _Tokens:
    """Small integers for shape sets, kept with the sets (a key part hashed in O(1)). A token
    is never given twice, even once the sets it was kept with are forgotten: memoised values
    keyed by it must not be read back for another set."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Sequence[Shape], int]] = {}
        self.issued = 0

    def __call__(self, shapes: Sequence[Shape]) -> int:
        kept = self.by_id.get(id(shapes))
        if kept is not None and kept[0] is shapes:
            return kept[1]
        if len(self.by_id) > 256:
            self.by_id.clear()
        self.issued += 1
        self.by_id[id(shapes)] = (shapes, self.issued)
        return self.issued


_token = _Tokens()
_MEMO: dict[tuple[object, ...], float] = {}
_MEMO_GENERATION = [0]
_MEMO_LIMIT = 200_000


def _remember(key: tuple[object, ...], value: float) -> float:
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
        _MEMO_GENERATION[0] += 1
    _MEMO[key] = value
    return value


def _host_fits(shapes: Sequence[Shape], cpu: int, memory: int) -> tuple[bool, ...]:
    return tuple(s.cpu_milli <= cpu and s.memory_mib <= memory for s in shapes)


def signature_fragmentation(
    sig: Signature, host_fits: tuple[bool, ...], shapes: Sequence[Shape]
) -> float:
    """Fragmentation of devices ``sig`` against ``shapes``, each shape's host part fitting
    or not as ``host_fits`` says."""
    key = (sig, host_fits, _token(shapes))
    known = _MEMO.get(key)
    if known is not None:
        return known
    total = sum(s.weight for s in shapes if s.weight > 0 and not s.demand.empty)
    if total <= 0 or not sig:
        return _remember(key, 0.0)
    everything = sum(_free(e) for e in sig)
    lost = 0.0
    for shape, fit in zip(shapes, host_fits, strict=True):
        if shape.weight <= 0 or shape.demand.empty:  # a pod asking no GPU loses none
            continue
        lost += shape.weight * (_lost(sig, shape.demand, everything) if fit else everything)
    return _remember(key, lost / total)


def fragmentation(
    gpus: NodeGpus, free_cpu_milli: int, free_memory_mib: int, shapes: Sequence[Shape]
) -> float:
    """The node's GPU compute (in GPUs) the shapes cannot use, averaged by their weights."""
    return signature_fragmentation(
        signature(gpus), _host_fits(shapes, free_cpu_milli, free_memory_mib), shapes
    )


def _taken(e: Entry, d: GpuDemand) -> Entry:
    """An entry once one device's worth of ``d`` is placed on it."""
    cores = e[1] if d.whole else d.cores
    memory = e[3] if d.whole else (d.memory_mib or e[3] * d.memory_percent // 100)
    return (e[0] - cores, e[1], e[2] - memory, e[3], e[4] - 1, e[5] + 1, e[6])


def _after(sig: Signature, taken: Sequence[Entry], d: GpuDemand) -> Signature:
    entries = list(sig)
    for e in taken:
        entries.remove(e)
    entries.extend(_taken(e, d) for e in taken)
    return tuple(sorted(entries))


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
    lowest, the best fit among equals (then the lowest index); whole GPUs take free devices,
    which all leave the same."""
    if rule != LEAST_FRAGMENTATION:
        return gpus.choose(demand, rule)
    if demand.empty or demand.whole or demand.devices > 1 or not shapes:
        return gpus.choose(demand, BEST_FIT)
    fitting = [u for u in gpus.uses if u.fits(demand)]
    if not fitting:
        return None
    sig = signature(gpus)
    host = _host_fits(shapes, free_cpu_milli, free_memory_mib)
    values: dict[Entry, float] = {}
    best: tuple[float, float, int] | None = None
    chosen = fitting[0]
    for u in fitting:
        e = _entry(u)
        value = values.get(e)
        if value is None:
            value = values[e] = signature_fragmentation(_after(sig, (e,), demand), host, shapes)
        rank = (value, u.leftover(demand), u.device.index)
        if best is None or rank < best:
            best, chosen = rank, u
    d = chosen.device
    return (Grant(d.uuid, demand.cores_on(d), demand.memory_on(d), d.model),)


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
    sig = signature(gpus)
    before = signature_fragmentation(
        sig, _host_fits(shapes, free_cpu_milli, free_memory_mib), shapes
    )
    if grants:
        by_uuid = {u.device.uuid: u for u in gpus.uses}
        sig = _after(sig, [_entry(by_uuid[g.uuid]) for g in grants], demand)
    host = _host_fits(shapes, free_cpu_milli - cpu_milli, free_memory_mib - memory_mib)
    return signature_fragmentation(sig, host, shapes) - before


_GROWTH: dict[tuple[object, ...], tuple[float | None, int]] = {}
_ORDERED: dict[int, tuple[NodeGpus, tuple[Entry, ...]]] = {}


def _ordered(gpus: NodeGpus) -> tuple[Entry, ...]:
    """The devices' entries in device order, kept per (immutable) ``NodeGpus``."""
    kept = _ORDERED.get(id(gpus))
    if kept is not None and kept[0] is gpus:
        return kept[1]
    found = tuple(_entry(u) for u in gpus.uses)
    if len(_ORDERED) >= 50_000:
        _ORDERED.clear()
    _ORDERED[id(gpus)] = (gpus, found)
    return found


def placement_growths(
    infos: Sequence[NodeInfo],
    demand: GpuDemand,
    cpu_milli: int,
    memory_mib: int,
    rule: str,
    choice_shapes: Sequence[Shape],
    shapes: Sequence[Shape],
) -> list[float | None]:
    """``placement_growth`` on each node of ``infos`` (the batch form: one call, the key
    parts that do not vary per node made once)."""
    tokens = (rule, _token(choice_shapes), _token(shapes))
    generation = _MEMO_GENERATION[0]
    out: list[float | None] = []
    append = out.append
    get = _GROWTH.get
    for info in infos:
        gpus = info.gpus
        cpu, memory = host_free(info)
        key = (_ordered(gpus), cpu, memory, demand, cpu_milli, memory_mib, *tokens)
        kept = get(key)
        if kept is not None and kept[1] == generation:
            append(kept[0])
        else:
            append(
                placement_growth(
                    gpus, cpu, memory, demand, cpu_milli, memory_mib, rule, choice_shapes, shapes
                )
            )
    return out


def placement_growth(
    gpus: NodeGpus,
    free_cpu_milli: int,
    free_memory_mib: int,
    demand: GpuDemand,
    cpu_milli: int,
    memory_mib: int,
    rule: str,
    choice_shapes: Sequence[Shape],
    shapes: Sequence[Shape],
) -> float | None:
    """``growth`` of placing the pod on the devices ``choose_device`` gives it under ``rule``
    (weighing ``choice_shapes``); None when no device has room. Kept by everything it reads:
    the devices' entries in device order (which device a rule picks among equals depends on
    it), the free and asked host resources, the demand, the rule and both shape sets."""
    key = (
        _ordered(gpus),
        free_cpu_milli,
        free_memory_mib,
        demand,
        cpu_milli,
        memory_mib,
        rule,
        _token(choice_shapes),
        _token(shapes),
    )
    kept = _GROWTH.get(key)
    if kept is not None and kept[1] == _MEMO_GENERATION[0]:
        return kept[0]
    grants = choose_device(
        gpus,
        demand,
        rule,
        choice_shapes,
        free_cpu_milli - cpu_milli,
        free_memory_mib - memory_mib,
    )
    value = (
        None
        if grants is None
        else growth(
            gpus, free_cpu_milli, free_memory_mib, demand, cpu_milli, memory_mib, shapes, grants
        )
    )
    if len(_GROWTH) >= _MEMO_LIMIT:
        _GROWTH.clear()
    _GROWTH[key] = (value, _MEMO_GENERATION[0])
    return value


# --- GPUs the host strands ------------------------------------------------------------------
#
# FGD looks one pod ahead: a node is not fragmented while a typical pod still fits it. A node
# whose free CPU covers one more typical pod but not the GPUs it has left is already losing
# them: the pods that would use those GPUs bring CPU with them, about as much per GPU as the
# workload asks on average. So a node's *stranded* GPUs are its free GPUs beyond what its free
# CPU (and memory) can accompany at the workload's CPU (memory) per GPU — the ratio learned
# from the same shapes, nothing picked by hand. A CPU-only pod on a GPU node whose CPU is just
# enough for its GPUs strands them; the same pod on a node with CPU to spare strands nothing.


def host_per_gpu(shapes: Sequence[Shape]) -> tuple[float, float]:
    """The shapes' CPU (millicores) and memory (MiB) per GPU of compute they ask, weighted
    by how common each is: (Σ w·cpu / Σ w·gpus, Σ w·memory / Σ w·gpus); (0, 0) when the
    shapes ask no GPU."""
    key = ("per-gpu", _token(shapes))
    kept = _PER_GPU.get(key)
    if kept is not None:
        return kept
    gpus = sum(s.weight * s.demand.gpus for s in shapes if s.weight > 0)
    if gpus <= 0:
        found = (0.0, 0.0)
    else:
        cpu = sum(s.weight * s.cpu_milli for s in shapes if s.weight > 0)
        memory = sum(s.weight * s.memory_mib for s in shapes if s.weight > 0)
        found = (cpu / gpus, memory / gpus)
    if len(_PER_GPU) > 256:
        _PER_GPU.clear()
    _PER_GPU[key] = found
    return found


_PER_GPU: dict[tuple[object, ...], tuple[float, float]] = {}


def stranded_gpus(
    free_gpus: float, free_cpu_milli: int, free_memory_mib: int, per_gpu: tuple[float, float]
) -> float:
    """The free GPUs (compute, in GPUs) beyond what the free CPU and memory can accompany at
    ``per_gpu`` (CPU millicores, memory MiB per GPU; 0: that resource is not counted)."""
    cpu, memory = per_gpu
    out = 0.0
    if cpu > 0:
        out = max(out, free_gpus - max(free_cpu_milli, 0) / cpu)
    if memory > 0:
        out = max(out, free_gpus - max(free_memory_mib, 0) / memory)
    return out


_FREE_GPUS: dict[int, tuple[NodeGpus, float]] = {}


def free_gpus(gpus: NodeGpus) -> float:
    """The node's free compute on healthy devices, in GPUs (kept per immutable ``NodeGpus``:
    every cycle asks it of every node)."""
    kept = _FREE_GPUS.get(id(gpus))
    if kept is not None and kept[0] is gpus:
        return kept[1]
    found = sum(_free(e) for e in signature(gpus))
    if len(_FREE_GPUS) >= 50_000:
        _FREE_GPUS.clear()
    _FREE_GPUS[id(gpus)] = (gpus, found)
    return found


def stranded(
    gpus: NodeGpus, free_cpu_milli: int, free_memory_mib: int, shapes: Sequence[Shape]
) -> float:
    """The node's GPUs stranded by its host: free GPUs its free CPU and memory cannot
    accompany at the shapes' CPU and memory per GPU."""
    return stranded_gpus(free_gpus(gpus), free_cpu_milli, free_memory_mib, host_per_gpu(shapes))


def stranding_growth(
    gpus: NodeGpus,
    free_cpu_milli: int,
    free_memory_mib: int,
    demand: GpuDemand,
    cpu_milli: int,
    memory_mib: int,
    shapes: Sequence[Shape],
) -> float:
    """How ``stranded`` changes when a pod asking ``demand``, ``cpu_milli`` and ``memory_mib``
    is placed on the node (which devices it gets does not matter: only how much)."""
    per_gpu = host_per_gpu(shapes)
    free = free_gpus(gpus)
    before = stranded_gpus(free, free_cpu_milli, free_memory_mib, per_gpu)
    after = stranded_gpus(
        max(free - demand.gpus, 0.0),
        free_cpu_milli - cpu_milli,
        free_memory_mib - memory_mib,
        per_gpu,
    )
    return after - before


def stranding_growths(
    infos: Sequence[NodeInfo],
    demand: GpuDemand,
    cpu_milli: int,
    memory_mib: int,
    shapes: Sequence[Shape],
) -> list[float]:
    """``stranding_growth`` on each node of ``infos`` (the batch form: one call per cycle)."""
    per_cpu, per_memory = host_per_gpu(shapes)
    if per_cpu <= 0 and per_memory <= 0:
        return [0.0] * len(infos)
    # ``stranded_gpus`` before and after, written out: this runs for every node in every cycle.
    gpus = demand.gpus
    out: list[float] = []
    append = out.append
    for info in infos:
        free, cpu, memory = _node_state(info)
        left = free - gpus if free > gpus else 0.0
        cpu_after, memory_after = cpu - cpu_milli, memory - memory_mib
        before = after = 0.0
        if per_cpu > 0:
            before = free - (cpu if cpu > 0 else 0) / per_cpu
            after = left - (cpu_after if cpu_after > 0 else 0) / per_cpu
        if per_memory > 0:
            before = max(before, free - (memory if memory > 0 else 0) / per_memory)
            after = max(after, left - (memory_after if memory_after > 0 else 0) / per_memory)
        append((after if after > 0 else 0.0) - (before if before > 0 else 0.0))
    return out


_STATES: dict[int, tuple[NodeInfo, tuple[float, int, int]]] = {}


def _node_state(info: NodeInfo) -> tuple[float, int, int]:
    """The node's free GPUs, CPU and memory, kept per immutable ``NodeInfo``."""
    kept = _STATES.get(id(info))
    if kept is not None and kept[0] is info:
        return kept[1]
    cpu, memory = host_free(info)
    found = (free_gpus(info.gpus), cpu, memory)
    if len(_STATES) >= 20_000:
        _STATES.clear()
    _STATES[id(info)] = (info, found)
    return found


# --- CPU the pods asking no GPU take from the GPUs -------------------------------------------
#
# Pods asking no GPU need CPU too. They first take the CPU the cluster has beyond its GPUs'
# share (what its GPUs need at the GPU pods' CPU per GPU); whatever they need beyond that is
# taken from the GPU pods, so the free CPU of a node accompanies fewer GPUs than the GPU pods'
# own ratio says. ``with_host_only`` adds that excess to the shapes as one shape asking no GPU
# (fragmentation skips it; ``host_per_gpu`` counts its CPU): nothing when the cluster's spare
# CPU covers those pods, as in a workload whose GPUs run out before its CPU.

_WITH_HOST_ONLY: dict[tuple[object, ...], tuple[Sequence[Shape], Shapes]] = {}


def host_only_excess(
    shapes: Sequence[Shape], host_only_per_gpu: float, cluster_cpu_milli: int, cluster_gpus: int
) -> int:
    """The CPU (millicores) per GPU the pods asking no GPU (``host_only_per_gpu`` of it) need
    beyond the cluster's spare CPU per GPU (its CPU per GPU less the shapes' CPU per GPU, at
    least 0); 0 when the spare covers them, or the cluster has no GPUs."""
    if cluster_gpus <= 0 or host_only_per_gpu <= 0:
        return 0
    per_cpu, _ = host_per_gpu(shapes)
    spare = max(cluster_cpu_milli / cluster_gpus - per_cpu, 0.0)
    return max(round(host_only_per_gpu - spare), 0)


def with_host_only(
    shapes: Shapes, host_only_per_gpu: float, cluster_cpu_milli: int, cluster_gpus: int, limit: int
) -> Shapes:
    """``shapes`` and, when ``host_only_excess`` is above 0, one shape asking no GPU with that
    CPU, weighted by the GPUs the shapes ask (so ``host_per_gpu`` grows by the excess); at most
    ``limit`` shapes (the least common GPU shape gives way). The same tuple for the same
    arguments: results kept by shape set are found again."""
    excess = host_only_excess(shapes, host_only_per_gpu, cluster_cpu_milli, cluster_gpus)
    if excess <= 0:
        return shapes
    key = (_token(shapes), excess, limit)
    kept = _WITH_HOST_ONLY.get(key)
    if kept is not None and kept[0] is shapes:
        return kept[1]
    gpus = sum(s.weight * s.demand.gpus for s in shapes if s.weight > 0)
    if gpus <= 0:
        return shapes
    base = shapes[: limit - 1] if len(shapes) >= limit else shapes
    found = (*base, Shape(NO_DEMAND, float(gpus), excess, 0))
    if len(_WITH_HOST_ONLY) > 256:
        _WITH_HOST_ONLY.clear()
    _WITH_HOST_ONLY[key] = (shapes, found)
    return found


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
        # The CPU (millicores) the pods asking no GPU ask, in all, and how many they are.
        self.host_only_cpu = 0
        self.host_only_pods = 0
        self._learned: dict[tuple[float, int], tuple[int, Shapes]] = {}
        # Per learned set: the pods asking no GPU, CPU per GPU the GPU pods ask, when learned.
        self._host_only: dict[tuple[float, int], float] = {}

    def add(self, key: ShapeKey | None) -> None:
        if key is None:
            return
        self.counts[key] += 1
        self.total += 1

    def extend(self, keys: Iterable[ShapeKey | None]) -> None:
        for key in keys:
            self.add(key)

    def add_pod(self, pod: Pod) -> None:
        """Count ``pod``: a GPU pod by its shape, a pod asking no GPU by its CPU."""
        key = shape_key(pod)
        if key is not None:
            self.add(key)
            return
        cpu, _ = pod_host(pod)
        if cpu > 0:
            self.host_only_cpu += cpu
            self.host_only_pods += 1

    def host_only_per_gpu(self, coverage: float, limit: int) -> float:
        """The CPU (millicores) the pods asking no GPU ask per GPU the GPU pods ask, as it was
        when ``shapes(coverage, limit)`` was last computed (so it changes with the shapes)."""
        self.shapes(coverage, limit)
        return self._host_only.get((coverage, limit), 0.0)

    def _host_only_per_gpu(self) -> float:
        """The CPU the pods asking no GPU ask per GPU the GPU pods ask, now."""
        gpus = sum(key[0].gpus * count for key, count in self.counts.items())
        return self.host_only_cpu / gpus if gpus > 0 else 0.0

    def learn_as(self, other: Workload) -> None:
        """Take over the shapes ``other`` learned for each coverage, as learned when it learned
        them: ``shapes`` keeps them until the count has grown by ``refresh`` since, so a
        workload a few pods away from ``other`` reads the same shapes (and the CPU per GPU
        beside them) and results keyed by them stay valid. Learned anew where the count has
        shrunk by more than ``refresh``; with ``refresh`` 0, unless both count the same GPU
        pods (placing a pod asking no GPU moves only the CPU per GPU beside them)."""
        if not other._learned:
            return
        same = self.counts == other.counts
        for (coverage, limit), (total, shapes) in other._learned.items():
            if self.refresh > 0 and self.total * (1 + self.refresh) >= total:
                self._learned[(coverage, limit)] = (total, shapes)
                self._host_only[(coverage, limit)] = other._host_only.get((coverage, limit), 0.0)
            elif same:
                self._learned[(coverage, limit)] = (self.total, shapes)
                self._host_only[(coverage, limit)] = self._host_only_per_gpu()
            else:
                self.shapes(coverage, limit)

    def learned_coverages(self) -> int:
        """How many (coverage, limit) pairs shapes were learned for."""
        return len(self._learned)

    def state_key(self, limit: int) -> tuple[tuple[float, Shapes], ...]:
        """The shapes ``shapes`` gives now for every coverage asked so far (refreshed first):
        equal keys, equal learned shapes."""
        return tuple(
            (coverage, self.shapes(coverage, limit))
            for coverage, kept_limit in sorted(self._learned)
            if kept_limit == limit
        )

    def host_state_key(self, limit: int) -> tuple[tuple[float, Shapes, float], ...]:
        """``state_key`` with, per coverage, ``host_only_per_gpu`` beside the shapes."""
        return tuple(
            (coverage, shapes, self._host_only.get((coverage, limit), 0.0))
            for coverage, shapes in self.state_key(limit)
        )

    def shapes(self, coverage: float, limit: int) -> Shapes:
        kept = self._learned.get((coverage, limit))
        if kept is not None and self.total <= kept[0] * (1 + self.refresh):
            return kept[1]
        found = learned(self.counts, coverage, limit)
        host_only = self._host_only_per_gpu()
        if kept is None or kept[1] != found or self._host_only.get((coverage, limit)) != host_only:
            self.version += 1
        self._learned[(coverage, limit)] = (self.total, found)
        self._host_only[(coverage, limit)] = host_only
        return found


# --- what nodes and pods hold --------------------------------------------------------------

_MIB = 1024 * 1024


_HOST_FREE: dict[int, tuple[NodeInfo, tuple[int, int]]] = {}


def host_free(info: NodeInfo) -> tuple[int, int]:
    """The node's free CPU (millicores) and memory (MiB): allocatable minus requested (kept
    per immutable ``NodeInfo``: the GPU builtins ask it of every node in every cycle)."""
    kept = _HOST_FREE.get(id(info))
    if kept is not None and kept[0] is info:
        return kept[1]
    alloc = info.allocatable_units
    used = info.requested_units
    cpu = alloc.get("cpu", 0) - used.get("cpu", 0)
    memory = (alloc.get("memory", 0) - used.get("memory", 0)) // _MIB
    if len(_HOST_FREE) >= 20_000:
        _HOST_FREE.clear()
    _HOST_FREE[id(info)] = (info, (cpu, memory))
    return cpu, memory


def pod_host(pod: Pod) -> tuple[int, int]:
    """The CPU (millicores) and memory (MiB, rounded up) the pod requests (kept on the pod:
    the workload's sums ask it of every pod of each node a placement replaces)."""
    return kept_on(pod, "_fragmentation_host", _pod_host)


def _pod_host(pod: Pod) -> tuple[int, int]:
    requests = pod_requests(pod)
    cpu = to_units("cpu", requests.get("cpu", 0))
    memory = -(-to_units("memory", requests.get("memory", 0)) // _MIB)
    return cpu, memory


def shape_key(pod: Pod) -> ShapeKey | None:
    """The pod's shape: its GPU demand and CPU, as FGD's typical pods are (CPU, GPU) pairs —
    memory requests vary too finely to group pods by, and rarely decide where a GPU pod fits.
    None for a pod asking no GPU: it is not a typical GPU pod. Kept on the pod."""
    return kept_on(pod, "_fragmentation_shape", _shape_key)


def _shape_key(pod: Pod) -> ShapeKey | None:
    demand = pod_demand(pod)
    return None if demand.empty else (demand, pod_host(pod)[0], 0)
