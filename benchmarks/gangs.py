"""The gangs scenario: 1,000 GPU nodes in NVLink domains of 8, 300 gangs of 8 to 64 pods, each
placed all-or-nothing inside one NVLink domain or one rack by ``policies/llm-training.sched``.

The cluster is ``synthetic.gangs`` (60% H100, 40% A100, 8 GPUs a node, four NVLink domains a
rack) with enough pending pods for 300 PodGroups; members ask for 8, 4, 2 or 1 GPUs, the 8- and
4-GPU ones pinned to a GPU model. That is about three times the GPUs the cluster has, so the
later gangs find no domain left: a failing gang costs time too, and is part of the figure.
Gangs are placed in queue order as ``simulate`` places them (``schedule_gang`` on the snapshot,
then its placements assumed); ``--scale`` is the fraction of the queue's gangs placed per run
(default 0.1: the first 30). The figure is member pods per second: the pending members of the
gangs placed over the summed time of their ``schedule_gang`` calls.

Outside the timings, ``--check`` members (default 8) are compared with the reference
evaluator: the first gangs' members, each tried in the domain ``schedule_gang`` chose for its
gang on the snapshot the members before it were assumed into (``CycleOptions.candidates``, on
the caches the runs left), against ``reference_decision`` under the same candidates from the
same rng state.
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.agreement import Agreement, differences, reference_decision
from benchmarks.harness import (
    Measurement,
    frozen_heap,
    full_size,
    note,
    percentile,
    progress,
    summarise,
)
from policyengine import synthetic
from policyengine.engine.classcache import ClassCache
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.gangs import Gang, assume_gang, gangs_of, schedule_gang
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import Program, compile_paths
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.model.topology import DEFAULT_TOPOLOGY, topology_of
from policyengine.schedlib import default_schema

NODES = 1000
GANGS = 300
PODS_PER_GANG = 30  # the preset's sizes (8, 16, 32, 64) average about this
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0  # every gang of the queue
DEFAULT_CHECK = 8  # members compared with the reference evaluator
POLICY = Path(__file__).resolve().parent.parent / "policies" / "llm-training.sched"


@dataclass(frozen=True)
class GangRun:
    members: int  # pending members of the gangs placed
    placed_gangs: int
    placed_members: int
    wall: list[float]  # per gang
    cpu: list[float]


def build(nodes: int, gangs: int) -> tuple[Program, ClusterSnapshot, list[Gang]]:
    spec = synthetic.gangs(nodes, max(8, gangs * PODS_PER_GANG))
    loaded = parse_objects(synthetic.generate(spec, seed=1))
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, loaded.pod_groups
    )
    units = gangs_of(queue_order(pending), snapshot)
    result = compile_paths([POLICY], default_schema())
    assert result.program is not None, result.diagnostics
    return result.program, snapshot, [u for u in units if isinstance(u, Gang)]


def place(program: Program, snapshot: ClusterSnapshot, gangs: list[Gang], seed: int = 0) -> GangRun:
    rng = random.Random(seed)
    options = CycleOptions(all_filters=False, cache=ClassCache())
    wall: list[float] = []
    cpu: list[float] = []
    placed_gangs = placed_members = 0
    for gang in gangs:
        start, start_cpu = time.perf_counter(), time.process_time()
        decision = schedule_gang(program, gang, snapshot, rng, options)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        if decision.scheduled:
            placed_gangs += 1
            placed_members += sum(1 for d in decision.placements if d.node is not None)
            snapshot = assume_gang(snapshot, gang, decision)  # as ``simulate`` assumes them
    members = sum(len(g.pending) for g in gangs)
    return GangRun(members, placed_gangs, placed_members, wall, cpu)


def agreement(
    program: Program, snapshot: ClusterSnapshot, gangs: list[Gang], count: int
) -> Agreement:
    """Up to ``count`` members of the first gangs placed, each member cycle in its gang's
    domain against the reference evaluator's (module docstring)."""
    found = Agreement()
    rng = random.Random(1)
    for gang in gangs:
        if found.checked >= count:
            break
        decision = schedule_gang(program, gang, snapshot, random.Random(0), CycleOptions(False))
        if not decision.scheduled:
            continue
        candidates = None
        reason = "node(s) outside the gang's topology domain"
        if decision.domain is not None:
            level, name = decision.domain
            candidates = frozenset(
                info.name
                for info in snapshot.nodes
                if topology_of(info.node, DEFAULT_TOPOLOGY).domain(level) == name
            )
            reason = f"node(s) outside the gang's {level} {name}"
        options = CycleOptions(False, candidates=candidates, candidates_reason=reason)
        snap = snapshot
        for pod in gang.pending[: count - found.checked]:
            state = rng.getstate()
            member = schedule(program, pod, snap, rng, options)
            replay = random.Random()
            replay.setstate(state)
            reference = reference_decision(
                program, pod, snap, replay, candidates=candidates, candidates_reason=reason
            )
            found.record(pod.key, differences(member, reference))
            if member.node is not None:
                snap = snap.with_pod(
                    with_devices(pod, member.node, member.gpu_devices), member.node
                )
        snapshot = assume_gang(snapshot, gang, decision)
    return found


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    nodes: int = NODES,
    gangs: int = GANGS,
    check: int = DEFAULT_CHECK,
) -> list[Measurement]:
    progress(f"gangs: building {nodes:,} nodes and {gangs} gangs")
    program, snapshot, queue = build(nodes, gangs)
    chosen = queue[: max(1, round(len(queue) * scale))]
    place(program, snapshot, chosen[:1])  # warm-up: caches, imports
    results = []
    with frozen_heap():
        gc.freeze()  # the cluster and the warm caches: see frozen_heap
        for i in range(runs):
            progress(f"gangs: run {i + 1}/{runs}, {len(chosen)} gangs")
            results.append(place(program, snapshot, chosen))
    if check:
        progress(f"gangs: comparing {check} members with the reference evaluator")
    agreed = agreement(program, snapshot, chosen, check)
    first = results[0]
    head = f"{nodes:,} nodes, {len(chosen)} of {len(queue)} gangs ({first.members:,} member pods)"
    note(
        "gangs",
        **{
            head: {
                "gangs_in_queue": len(queue),
                "gangs_placed": first.placed_gangs,
                "members_placed": first.placed_members,
                "runs_agree": len({(r.placed_gangs, r.placed_members) for r in results}) == 1,
                "reference_checked": agreed.checked,
                "reference_agreed": agreed.agreed,
                "reference_differences": agreed.differences,
            }
        },
    )
    rows = [
        summarise(
            "gangs",
            f"{head}: member pods/s (wall)",
            [r.members / sum(r.wall) for r in results],
            "pods/s",
            target=full_size(">= 500 pods/s", len(chosen), len(queue)),
        ),
        summarise(
            "gangs",
            f"{head}: member pods/s (CPU time)",
            [r.members / max(sum(r.cpu), 1e-9) for r in results],
            "pods/s",
        ),
        summarise(
            "gangs",
            f"{head}: per-gang latency p50",
            [percentile(r.wall, 0.5) for r in results],
            "ms",
            1000,
        ),
        summarise(
            "gangs",
            f"{head}: per-gang latency p99",
            [percentile(r.wall, 0.99) for r in results],
            "ms",
            1000,
        ),
        Measurement(
            "gangs",
            f"{head}: gangs placed whole",
            first.placed_gangs,
            f"of {len(chosen)}",
            1,
            first.placed_gangs,
            first.placed_gangs,
        ),
    ]
    if agreed.checked:
        rows.append(
            Measurement(
                "gangs",
                f"{head}: members deciding as the reference evaluator",
                float(agreed.agreed),
                f"of {agreed.checked}",
                1,
                float(agreed.agreed),
                float(agreed.agreed),
                f"= {agreed.checked}",
            )
        )
    return rows
