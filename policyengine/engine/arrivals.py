"""Replaying an arrival list: pods come in a given order, each is placed at once or dropped.

``simulate`` orders pending pods as kube-scheduler's queue would; an arrival list is a trace
instead — the order *is* the input, a pod that does not fit when it arrives is dropped (it is
not retried after later pods), and the question is how much of the GPU demand that arrived the
policy managed to place. The report says so as the allocation ratio against arrived demand,
and records the moment of the first drop of a GPU pod: how much of the cluster's GPU compute
was allocated then, the figure fragmentation-aware policies are meant to raise.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from policyengine.engine.classcache import ClassCache
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.gpu_report import Shapes
from policyengine.engine.simulate import (
    Simulation,
    gpu_fragmentation,
    gpu_result,
    resource_use,
)
from policyengine.lang.compiler import Program
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig


@dataclass(frozen=True)
class ArrivalReport:
    arrived: int
    placed: int
    arrived_gpus: float  # GPU compute asked by the arrived pods (a 25% share is 0.25)
    placed_gpus: float
    first_drop: int | None  # 1-based position of the first GPU pod dropped
    allocation_at_first_drop: float | None  # cluster GPU allocation ratio at that moment

    @property
    def dropped(self) -> int:
        return self.arrived - self.placed

    @property
    def allocation_ratio(self) -> float:
        """Placed GPU demand over arrived GPU demand."""
        return self.placed_gpus / self.arrived_gpus if self.arrived_gpus else 0.0


def replay(
    program: Program,
    snapshot: ClusterSnapshot,
    arrivals: Sequence[Pod],
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
    gpu_shapes: Shapes | None = None,
    settle: bool = False,
) -> tuple[Simulation, ArrivalReport]:
    """``arrivals`` placed in file order; ``settle`` as for ``simulate``."""
    rng = random.Random(seed)
    before = resource_use(snapshot)
    options = CycleOptions(all_filters=False, scheduler_name=scheduler_name, cache=ClassCache())
    total_gpus = sum(info.gpus.total_gpus for info in snapshot.nodes)
    allocated = sum(info.gpus.allocated_gpus for info in snapshot.nodes)
    decisions = []
    arrived_gpus = placed_gpus = 0.0
    first_drop: int | None = None
    at_drop: float | None = None
    for index, pod in enumerate(arrivals):
        pod = pod.with_node_name("") if pod.node_name else pod
        demand = pod_demand(pod).gpus
        arrived_gpus += demand
        decision = schedule(program, pod, snapshot, rng, options, topology, config)
        decisions.append(decision.settled() if settle else decision)
        if decision.node is not None:
            info = snapshot.node(decision.node)
            placed = with_devices(pod, decision.node, decision.gpu_devices)
            snapshot = snapshot.with_pod(placed, decision.node)
            gained = snapshot.node(decision.node).gpus.allocated_gpus - info.gpus.allocated_gpus
            allocated += gained
            placed_gpus += gained
        elif demand and first_drop is None:
            first_drop = index + 1
            at_drop = allocated / total_gpus if total_gpus else 0.0
        if progress is not None:
            progress(index + 1, len(arrivals))
    simulation = Simulation(
        decisions=tuple(decisions),
        before=before,
        after=resource_use(snapshot),
        fragmentation=gpu_fragmentation(snapshot, arrivals),
        snapshot=snapshot,
        policy_version=program.version,
        seed=seed,
        gpu=gpu_result(snapshot, arrivals, gpu_shapes),
    )
    placed_count = sum(1 for d in decisions if d.node is not None)
    return simulation, ArrivalReport(
        len(arrivals), placed_count, arrived_gpus, placed_gpus, first_drop, at_drop
    )
