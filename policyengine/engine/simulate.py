"""Placing a snapshot's pending pods one by one, as the scheduler would, with no cluster.

Pods are taken in kube-scheduler's queue order (higher priority first, then older first, then
by name for a stable order). Each placement is assumed into the snapshot before the next pod is
scheduled — its requests count as allocated and it counts for affinity and spread, the volumes
its waiting claims bind to are taken and the claims it has provisioned name its node — exactly
as kube-scheduler's assume step makes the next cycle see it. A pod with scheduling gates is not
placed (kube-scheduler never takes it into its queue): it is reported after the others, unplaced,
with kube-scheduler's ``waiting for scheduling gates: [...]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gang_preemption import preempt_gang_in_simulation
from policyengine.engine.gangs import Gang, GangDecision, assume_gang, gangs_of, schedule_gang
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.gpu_report import GpuReport, Shapes, gpu_report, shapes_of
from policyengine.engine.preemption import PreemptionDecision, preempt_in_simulation
from policyengine.engine.volumes import assume_volumes
from policyengine.lang.compiler import Program
from policyengine.model.fragmentation import Workload
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
    gangs: tuple[GangDecision, ...] = ()  # one per PodGroup among the pending pods
    gpu: GpuReport | None = None  # device-level GPU use after the run (None: no GPU devices)
    # Pods that fit nowhere and evicted lower-priority pods to run, in queue order.
    preemptions: tuple[PreemptionDecision, ...] = ()
    # Pods held by scheduling gates (never tried), by key; their decisions come last.
    gated: tuple[str, ...] = ()

    @property
    def scheduled(self) -> int:
        return sum(1 for d in self.decisions if d.scheduled)

    @property
    def unschedulable(self) -> int:
        """Pods tried and placed nowhere (gated pods were not tried)."""
        return len(self.decisions) - self.scheduled - len(self.gated)


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
    gpu_shapes: Shapes | None = None,
    settle: bool = False,
) -> Simulation:
    """``pending`` placed in queue order. ``settle``: keep each decision settled
    (``Decision.settled``: what ``simulate``'s outputs read), not with the per-node detail
    that keeps every cycle's columns and snapshot alive."""
    keep = Decision.settled if settle else _whole
    rng = random.Random(seed)
    before = resource_use(snapshot)
    # Gated pods never enter kube-scheduler's queue: reported, in queue order, after the rest.
    ordered = queue_order(p for p in pending if not p.scheduling_gates)
    gated = queue_order(p for p in pending if p.scheduling_gates)
    decisions: list[Decision] = []
    options = CycleOptions(
        all_filters=False,
        scheduler_name=scheduler_name,
        cache=ClassCache(),
        workload=workload_of(snapshot, pending),
    )
    gangs: list[GangDecision] = []
    preemptions: list[PreemptionDecision] = []
    done = 0
    # Members of a PodGroup are placed together, at their first member's place in the queue.
    for unit in gangs_of(ordered, snapshot):
        if isinstance(unit, Gang):
            outcome = schedule_gang(program, unit, snapshot, rng, options, topology, config)
            if not outcome.scheduled:
                outcome, snapshot, preempted = preempt_gang_in_simulation(
                    program, unit, snapshot, outcome, rng, options, topology, config
                )
                if preempted is not None:
                    preemptions.append(preempted)
            snapshot = assume_gang(snapshot, unit, outcome)
            outcome = replace(outcome, placements=tuple(map(keep, outcome.placements)))
            gangs.append(outcome)
            decisions.extend(outcome.placements)
            done += len(unit.pending)
        else:
            decision = schedule(program, unit, snapshot, rng, options, topology, config)
            if decision.node is None:
                decision, snapshot, preempted = preempt_in_simulation(
                    program, unit, snapshot, decision, topology, config, scheduler_name, rng
                )
                if preempted is not None:
                    preemptions.append(preempted)
            decisions.append(keep(decision))
            if decision.node is not None:
                placed = with_devices(unit, decision.node, decision.gpu_devices)
                snapshot = snapshot.with_pod(placed, decision.node)
                if decision.volumes:
                    snapshot = assume_volumes(snapshot, decision.node, decision.volumes)
            done += 1
        if progress is not None:
            progress(done, len(ordered))
    decisions.extend(
        Decision(pod.key, None, program.version, None, len(snapshot), message=pod.gated_message)
        for pod in gated
    )
    return Simulation(
        decisions=tuple(decisions),
        before=before,
        after=resource_use(snapshot),
        fragmentation=gpu_fragmentation(snapshot, ordered),
        snapshot=snapshot,
        policy_version=program.version,
        seed=seed,
        gangs=tuple(gangs),
        preemptions=tuple(preemptions),
        gpu=gpu_result(snapshot, ordered, gpu_shapes),
        gated=tuple(pod.key for pod in gated),
    )


def workload_of(snapshot: ClusterSnapshot, pending: Sequence[Pod]) -> Workload | None:
    """What learned GPU shapes are drawn from in a simulation: the running GPU pods and the
    pending ones alike (FGD's typical pods are the workload's, placed or not), fixed for the
    run — placing a pending pod moves it, the workload stays the same. None on a cluster
    without GPUs, where no shape is asked for."""
    if not any(info.gpus.total_gpus for info in snapshot.nodes):
        return None
    workload = Workload(refresh=0.0)
    for info in snapshot.nodes:
        for p in info.pods:
            workload.add_pod(p.pod)
    for pod in pending:
        workload.add_pod(pod)
    return workload


def _whole(decision: Decision) -> Decision:
    return decision


def gpu_result(
    snapshot: ClusterSnapshot, pods: Sequence[Pod], shapes: Shapes | None
) -> GpuReport | None:
    """The GPU report after placing ``pods`` (fragmentation against ``shapes``, else against
    the pods' own demands); None for a cluster without GPUs."""
    report = gpu_report(snapshot, shapes_of(pods) if shapes is None else shapes)
    return report if report.total_gpus else None
