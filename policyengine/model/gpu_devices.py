"""Per-device GPU accounting: a node's GPUs one by one, and what each pod holds on each.

Kubernetes counts ``nvidia.com/gpu`` per node; a cluster that shares GPUs needs more: a pod
asking for a quarter of a GPU must find that quarter on *one* device, and the free slivers left
on many devices (fragmentation) are capacity no pod may be able to use. This module keeps, per
node, each device's capacity (compute in percent, 100 per device, and memory in MiB), what is
allocated on it and by which pod, and answers the questions placement asks:

* does a demand fit (a share on a single device; a pod asking for several whole GPUs takes
  entirely free devices; a pod asking for several shares takes that many distinct devices);
* which device(s) it would get, by a named rule (``best``: the fitting device left with the
  least free capacity; ``first``: the lowest index);
* how much free capacity no pod of a declared distribution of shapes could use
  (``fragmentation``), in GPUs of compute.

Everything is immutable: ``with_pod`` and ``without_pod`` return new ``NodeGpus`` and releasing a
pod frees exactly the share recorded for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from policyengine.model.frozen import EMPTY, FrozenDict

FULL_CORES = 100
DEFAULT_SLOTS = 10  # pods that may share one device (HAMi's deviceSplitCount default)

BEST_FIT = "best"
FIRST_FIT = "first"
# The fitting device left with the most free capacity: HAMi's GPU "spread" policy, one pod per
# device while devices are free.
MOST_FREE = "most-free"
RULES = (BEST_FIT, FIRST_FIT, MOST_FREE)


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One physical GPU: its identity and capacity."""

    index: int
    uuid: str
    model: str = ""
    memory_mib: int = 0
    cores: int = FULL_CORES
    slots: int = DEFAULT_SLOTS
    healthy: bool = True


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """What a pod asks of the GPUs, per device.

    ``whole``: ``devices`` entirely free devices. Otherwise ``devices`` distinct devices, each
    giving ``cores`` percent of compute and memory: ``memory_mib`` when set, else
    ``memory_percent`` of the device's memory.
    """

    devices: int = 0
    whole: bool = False
    cores: int = 0
    memory_mib: int = 0
    memory_percent: int = 0

    @property
    def empty(self) -> bool:
        return self.devices <= 0

    def memory_on(self, device: GpuDevice) -> int:
        if self.whole:
            return device.memory_mib
        if self.memory_mib:
            return self.memory_mib
        return device.memory_mib * self.memory_percent // 100

    def cores_on(self, device: GpuDevice) -> int:
        return device.cores if self.whole else self.cores

    @property
    def gpus(self) -> float:
        """The compute this demand takes, in GPUs (a whole device is 1)."""
        return float(self.devices) if self.whole else self.devices * self.cores / FULL_CORES


NO_DEMAND = GpuDemand()


def whole(devices: int) -> GpuDemand:
    return GpuDemand(devices=devices, whole=True) if devices > 0 else NO_DEMAND


def share(
    cores: int = 0, memory_mib: int = 0, memory_percent: int = 0, devices: int = 1
) -> GpuDemand:
    return GpuDemand(
        devices=devices, cores=cores, memory_mib=memory_mib, memory_percent=memory_percent
    )


@dataclass(frozen=True, slots=True)
class Grant:
    """What one pod holds on one device (the unit of HAMi's assignment annotation)."""

    uuid: str
    cores: int
    memory_mib: int
    model: str = ""


@dataclass(frozen=True, slots=True)
class DeviceUse:
    """A device and what is allocated on it."""

    device: GpuDevice
    used_cores: int = 0
    used_memory_mib: int = 0
    pods: int = 0

    @property
    def free_cores(self) -> int:
        return self.device.cores - self.used_cores

    @property
    def free_memory_mib(self) -> int:
        return self.device.memory_mib - self.used_memory_mib

    @property
    def whole_free(self) -> bool:
        return self.pods == 0 and self.device.healthy

    def fits(self, demand: GpuDemand) -> bool:
        """Can one device's worth of ``demand`` go here?"""
        if not self.device.healthy:
            return False
        if demand.whole:
            return self.pods == 0
        return (
            self.pods < self.device.slots
            and demand.cores <= self.free_cores
            and demand.memory_on(self.device) <= self.free_memory_mib
        )

    def leftover(self, demand: GpuDemand) -> float:
        """Free capacity left after placing ``demand`` here, as a fraction of the device
        (compute and memory averaged): what best fit minimises."""
        cores = (self.free_cores - demand.cores_on(self.device)) / max(self.device.cores, 1)
        memory = (self.free_memory_mib - demand.memory_on(self.device)) / max(
            self.device.memory_mib, 1
        )
        return cores + memory

    def plus(self, grant: Grant, sign: int) -> DeviceUse:
        return DeviceUse(
            self.device,
            self.used_cores + sign * grant.cores,
            self.used_memory_mib + sign * grant.memory_mib,
            self.pods + sign,
        )


@dataclass(frozen=True)
class NodeGpus:
    """A node's devices with what is allocated on each, and each pod's grants."""

    uses: tuple[DeviceUse, ...] = ()
    grants: FrozenDict[str, tuple[Grant, ...]] = field(default=EMPTY)
    # fragmentation by shapes: the state never changes, and scoring asks again for every pod
    _memo: dict[object, float] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(devices: Iterable[GpuDevice]) -> NodeGpus:
        return NodeGpus(tuple(DeviceUse(d) for d in sorted(devices, key=lambda d: d.index)))

    @property
    def devices(self) -> tuple[GpuDevice, ...]:
        return tuple(u.device for u in self.uses)

    def _position(self, uuid: str) -> int:
        for i, u in enumerate(self.uses):
            if u.device.uuid == uuid:
                return i
        return -1

    # -- questions -----------------------------------------------------------------------

    def fits(self, demand: GpuDemand) -> bool:
        return demand.empty or self.choose(demand, FIRST_FIT) is not None

    def choose(self, demand: GpuDemand, rule: str = BEST_FIT) -> tuple[Grant, ...] | None:
        """The grants ``demand`` would get under ``rule``; None when it does not fit."""
        if demand.empty:
            return ()
        fitting = [u for u in self.uses if u.fits(demand)]
        if len(fitting) < demand.devices:
            return None
        if rule == BEST_FIT and not demand.whole:
            fitting.sort(key=lambda u: (u.leftover(demand), u.device.index))
        elif rule == MOST_FREE and not demand.whole:
            fitting.sort(key=lambda u: (-u.leftover(demand), u.device.index))
        chosen = fitting[: demand.devices]
        return tuple(
            Grant(
                u.device.uuid, demand.cores_on(u.device), demand.memory_on(u.device), u.device.model
            )
            for u in chosen
        )

    @property
    def total_gpus(self) -> int:
        return sum(1 for u in self.uses if u.device.healthy)

    @property
    def allocated_gpus(self) -> float:
        """Compute allocated, in GPUs (each device's used percent / 100)."""
        return sum(min(u.used_cores, u.device.cores) / max(u.device.cores, 1) for u in self.uses)

    @property
    def allocated_memory_mib(self) -> int:
        return sum(u.used_memory_mib for u in self.uses)

    @property
    def total_memory_mib(self) -> int:
        return sum(u.device.memory_mib for u in self.uses)

    def unusable_gpus(self, demand: GpuDemand) -> float:
        """Free compute, in GPUs, on devices where no placement of ``demand`` could go."""
        free_whole = sum(1 for u in self.uses if u.whole_free)
        lost = 0.0
        for u in self.uses:
            if not u.device.healthy or u.free_cores <= 0:
                continue
            if demand.whole:
                usable = u.whole_free and free_whole >= demand.devices
            else:
                usable = u.fits(demand)
            if not usable:
                lost += u.free_cores / max(u.device.cores, 1)
        # A multi-device share needs that many fitting devices on this node.
        if (
            not demand.whole
            and demand.devices > 1
            and sum(1 for u in self.uses if u.fits(demand)) < demand.devices
        ):
            lost = sum(
                u.free_cores / max(u.device.cores, 1)
                for u in self.uses
                if u.device.healthy and u.free_cores > 0
            )
        return lost

    def fragmentation(self, shapes: Sequence[tuple[GpuDemand, float]]) -> float:
        """Free compute (GPUs) the shapes could not use, averaged by the shapes' weights."""
        key = tuple(shapes)
        known = self._memo.get(key)
        if known is not None:
            return known
        total = sum(w for _, w in shapes)
        value = (
            sum(w * self.unusable_gpus(d) for d, w in shapes if w > 0) / total if total > 0 else 0.0
        )
        if len(self._memo) < 8:
            self._memo[key] = value
        return value

    # -- derivations -----------------------------------------------------------------------

    def with_grants(self, key: str, grants: Sequence[Grant]) -> NodeGpus:
        """``key`` holds ``grants``; grants naming a device this node lacks are dropped."""
        uses = list(self.uses)
        kept = []
        for g in grants:
            i = self._position(g.uuid)
            if i < 0:
                continue
            uses[i] = uses[i].plus(g, 1)
            kept.append(g)
        if not kept:
            return self
        return NodeGpus(tuple(uses), self.grants.with_item(key, tuple(kept)))

    def with_pod(
        self, key: str, demand: GpuDemand, grants: Sequence[Grant] | None = None
    ) -> NodeGpus:
        """``key`` placed here: on ``grants`` when given (an assignment annotation), else on
        the first devices that fit (running pods without an annotation). A demand that fits
        nowhere is not recorded on any device."""
        if key in self.grants:
            return self
        if grants:
            return self.with_grants(key, grants)
        if demand.empty:
            return self
        chosen = self.choose(demand, FIRST_FIT)
        return self if chosen is None else self.with_grants(key, chosen)

    def without_pod(self, key: str) -> NodeGpus:
        """Release exactly what ``key`` holds."""
        grants = self.grants.get(key)
        if grants is None:
            return self
        uses = list(self.uses)
        for g in grants:
            i = self._position(g.uuid)
            uses[i] = uses[i].plus(g, -1)
        return NodeGpus(tuple(uses), self.grants.without(key))


EMPTY_GPUS = NodeGpus()
