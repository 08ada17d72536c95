"""Placing a snapshot's pending pods one by one, as the scheduler would, with no cluster.

Pods are taken in kube-scheduler's queue order (higher priority first, then older first, then
by name for a stable order). Each placement is assumed into the snapshot before the next pod is
scheduled — its requests count as allocated and it counts for affinity and spread — exactly as
kube-scheduler's assume step makes the next cycle see it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.lang.compiler import Program
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.resources import NVIDIA_GPU, PODS, pod_requests
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ResourceUse:
    allocated: Fraction
    allocatable: Fraction

    @property
    def ratio(self) -> float:
        return float(self.allocated / self.allocatable) if self.allocatable else 0.0


@dataclass(frozen=True)
class GpuFragmentation:
    """Free GPUs stranded on nodes that cannot host the largest pending GPU request."""

    largest_request: int
    free_gpus: int
    fragmented_gpus: int


@dataclass(frozen=True)
class Simulation:
    decisions: tuple[Decision, ...]
    before: dict[str, ResourceUse]
    after: dict[str, ResourceUse]
    fragmentation: GpuFragmentation
    snapshot: ClusterSnapshot
    policy_version: str
    seed: int
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def scheduled(self) -> int:
        return sum(1 for d in self.decisions if d.scheduled)

    @property
    def unschedulable(self) -> int:
        return len(self.decisions) - self.scheduled


def queue_order(pods: Iterable[Pod]) -> list[Pod]:
    return sorted(
        pods, key=lambda p: (-p.priority, getattr(p, "creation_timestamp", "") or "", p.key)
    )


def resource_use(snapshot: ClusterSnapshot) -> dict[str, ResourceUse]:
    allocatable: dict[str, Fraction] = {}
    allocated: dict[str, Fraction] = {}
    for info in snapshot.nodes:
        for name, value in info.node.allocatable.items():
            allocatable[name] = allocatable.get(name, Fraction(0)) + value
        for name, value in info.requested.items():
            allocated[name] = allocated.get(name, Fraction(0)) + value
    # Pods are counted, not requested: allocatable.pods against the pods on each node.
    allocated[PODS] = Fraction(sum(len(info.pods) for info in snapshot.nodes))
    names = sorted(set(allocatable) | set(allocated))
    return {
        n: ResourceUse(allocated.get(n, Fraction(0)), allocatable.get(n, Fraction(0)))
        for n in names
    }


def gpu_fragmentation(snapshot: ClusterSnapshot, pending: Sequence[Pod]) -> GpuFragmentation:
    largest = max((int(pod_requests(p).get(NVIDIA_GPU, 0)) for p in pending), default=0)
    free_total = 0
    stranded = 0
    for info in snapshot.nodes:
        free = int(info.node.allocatable.get(NVIDIA_GPU, 0) - info.requested.get(NVIDIA_GPU, 0))
        if free <= 0:
            continue
        free_total += free
        if largest and free < largest:
            stranded += free
    return GpuFragmentation(largest, free_total, stranded)


def simulate(
    program: Program,
    snapshot: ClusterSnapshot,
    pending: Sequence[Pod],
    seed: int = 0,
    progress: Progress | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
) -> Simulation:
    rng = random.Random(seed)
    before = resource_use(snapshot)
    ordered = queue_order(pending)
    decisions = []
    options = CycleOptions(all_filters=False, scheduler_name=scheduler_name)
    for index, pod in enumerate(ordered):
        decision = schedule(program, pod, snapshot, rng, options, topology, config)
        decisions.append(decision)
        if decision.node is not None:
            snapshot = snapshot.with_pod(pod, decision.node)
        if progress is not None:
            progress(index + 1, len(ordered))
    return Simulation(
        decisions=tuple(decisions),
        before=before,
        after=resource_use(snapshot),
        fragmentation=gpu_fragmentation(snapshot, ordered),
        snapshot=snapshot,
        policy_version=program.version,
        seed=seed,
    )
