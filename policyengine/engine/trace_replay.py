"""Replaying a GPU trace as the FGD paper does, and its metric: unallocated GPUs against the
GPU demand that arrived.

The method (Weng et al., USENIX ATC'23, and its artifact) is fixed so figures compare across
schedulers: the trace's pods in a seeded random order, topped up by pods drawn from the trace
at random (with replacement) until the GPU demand that arrived reaches ``demand`` times the
cluster's GPUs; no departures; each pod placed at once or dropped, never retried. After every
pod the cluster's unallocated GPU share (100 − allocated GPU compute / GPUs × 100) is known; the
paper's figure is its value at the moment the arrived demand reaches 100% of the GPUs, and the
curve is that value against the arrived demand. A replay is reproducible by its seed: the seed
draws the order and breaks the policy's random ties.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gpu_placement import with_devices
from policyengine.lang.compiler import Program
from policyengine.model.fragmentation import Workload
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

# The arrived demand at which the paper reads its figure, in percent of the cluster's GPUs.
AT_PERCENT = 100


@dataclass(frozen=True)
class Point:
    """The cluster when the arrived GPU demand first reached ``arrived`` percent."""

    arrived: float  # GPU demand arrived, percent of the cluster's GPUs
    unallocated: float  # GPU compute not allocated, percent of the cluster's GPUs
    pods: int  # pods arrived so far


@dataclass(frozen=True)
class SeedRun:
    seed: int
    arrived: int  # pods
    placed: int
    dropped_gpu_pods: int
    unallocated_at: float | None  # at AT_PERCENT arrived; None when the replay stops short
    curve: tuple[Point, ...]
    seconds: float


def arrival_order(
    pods: Sequence[Pod], gpu_milli: Sequence[int], total_gpus: int, seed: int, demand: float
) -> list[Pod]:
    """The paper's arrival list: every pod in a seeded random order, then pods drawn at random
    (with replacement) until the arrived GPU demand reaches ``demand`` × the GPUs. A drawn pod
    is renamed ``<name>-<n>`` (its n-th copy) so every arrival is a distinct pod."""
    rng = random.Random(seed)
    order = list(range(len(pods)))
    rng.shuffle(order)
    target = demand * total_gpus * 1000
    arrived = sum(gpu_milli)
    if arrived < target and not any(gpu_milli):
        raise ValueError("no pod of the trace asks for a GPU: the demand cannot be reached")
    copies = [0] * len(pods)
    out = [pods[i] for i in order]
    while arrived < target:
        i = rng.randrange(len(pods))
        copies[i] += 1
        pod = pods[i]
        out.append(replace(pod, name=f"{pod.name}-{copies[i]}"))
        arrived += gpu_milli[i]
    return out


def replay_trace(
    program: Program,
    snapshot: ClusterSnapshot,
    arrivals: Sequence[Pod],
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
    step: float = 1.0,
) -> SeedRun:
    """``arrivals`` placed in order on ``snapshot`` (ties broken by a generator seeded with
    ``seed``); the curve has a point each time the arrived demand crosses a multiple of
    ``step`` percent."""
    started = time.perf_counter()
    rng = random.Random(seed)
    # Learned shapes are drawn from the pods seen so far, the arriving one included. The class
    # cache is the replay's own: each cycle starts from the last of its pod's class and
    # re-examines only the nodes placed on since (without one every cycle is a full pass).
    workload = Workload()
    options = CycleOptions(
        all_filters=False, scheduler_name=scheduler_name, workload=workload, cache=ClassCache()
    )
    total = sum(info.gpus.total_gpus for info in snapshot.nodes)
    allocated = sum(info.gpus.allocated_gpus for info in snapshot.nodes)
    arrived_gpus = 0.0
    placed = dropped = 0
    at: float | None = None
    curve: list[Point] = []
    next_mark = step
    for index, pod in enumerate(arrivals):
        demand = pod_demand(pod).gpus
        arrived_gpus += demand
        workload.add_pod(pod)
        decision = schedule(program, pod, snapshot, rng, options, topology, config)
        if decision.node is not None:
            before = snapshot.node(decision.node).gpus.allocated_gpus
            snapshot = snapshot.with_pod(
                with_devices(pod, decision.node, decision.gpu_devices), decision.node
            )
            allocated += snapshot.node(decision.node).gpus.allocated_gpus - before
            placed += 1
        elif demand:
            dropped += 1
        if total:
            arrived_percent = 100 * arrived_gpus / total
            unallocated = 100 - 100 * allocated / total
            if at is None and arrived_percent >= AT_PERCENT - 1e-9:
                at = unallocated
            if arrived_percent >= next_mark - 1e-9:
                curve.append(Point(round(arrived_percent, 4), round(unallocated, 4), index + 1))
                while next_mark <= arrived_percent + 1e-9:
                    next_mark += step
        if progress is not None:
            progress(index + 1, len(arrivals))
    return SeedRun(
        seed, len(arrivals), placed, dropped, at, tuple(curve), time.perf_counter() - started
    )


def mean_curve(runs: Sequence[SeedRun], step: float = 1.0) -> list[tuple[float, float]]:
    """The runs' curves averaged on the grid of ``step`` percent: at each grid value, each
    run's unallocated share at its first point at or past it (grid values every run reaches)."""
    if not runs:
        return []
    out = []
    mark = step
    limit = (
        min(run.curve[-1].arrived for run in runs if run.curve)
        if all(run.curve for run in runs)
        else 0.0
    )
    cursors = [0] * len(runs)
    while mark <= limit + 1e-9:
        values = []
        for r, run in enumerate(runs):
            curve = run.curve
            while cursors[r] < len(curve) - 1 and curve[cursors[r]].arrived < mark - 1e-9:
                cursors[r] += 1
            values.append(curve[cursors[r]].unallocated)
        out.append((round(mark, 4), round(sum(values) / len(values), 4)))
        mark += step
    return out
