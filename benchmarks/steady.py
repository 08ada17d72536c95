"""The steady scenario: what one basic pod's cycle costs once its class has met the cluster.

A basic run's figure mixes the first pods of each template (every node evaluated) with the
steady cycles that follow, and on this shared machine whole runs of the same tree read up to
1.5x apart. This scenario times the steady cycle alone, precisely enough to size an engine
step of a few percent: on the basic cluster (5,000 nodes) with the first ``--scale`` share of
its queue placed, one CPU pod is decided again and again, and between two of its cycles ``K``
other nodes change (a pod without requests assumed on each, its frame made outside the
timing), for K = 0 (nothing changed since the class's last cycle: the fixed cost), 1 and 12
(about the mean at 10,000 pods). Each run is batches of cycles with the collector frozen and
off; a run's figure is its fastest batch's mean (the least disturbed by other work), the
table the median over runs. Every cycle's decision is checked against the reference evaluator
once per K.
"""

from __future__ import annotations

import dataclasses
import gc
import random
import time

from benchmarks.agreement import differences, reference_decision
from benchmarks.harness import Measurement, frozen_heap, progress, summarise
from benchmarks.workload import Cluster, Workload, build, place_one, warm_up
from policyengine.engine.nodeviews import node_frame
from policyengine.model.objects import Pod
from policyengine.model.resources import pod_requests
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY

NODES = 5000
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.1  # 1,000 pods placed first: every template's class met
CHANGED = (0, 1, 12)
GPU = "nvidia.com/gpu"
BATCHES = 5
CYCLES = 60  # per batch


def run(
    runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE, nodes: int = NODES
) -> list[Measurement]:
    placed = max(1, round(PODS * scale))
    progress(f"steady: building {nodes:,} nodes and placing {placed:,} pods")
    cluster = build(Workload("basic", nodes, placed + 50))
    warm_up(cluster)
    snapshot = _place(cluster, placed)
    pod = next(p for p in cluster.pending[placed:] if not pod_requests(p).get(GPU))
    rows = []
    with frozen_heap():
        gc.freeze()
        for changed in CHANGED:
            samples = []
            for i in range(runs):
                progress(f"steady: {changed} nodes changed, run {i + 1}/{runs}")
                best, snapshot = _fastest_batch(cluster, pod, snapshot, changed)
                samples.append(best)
            agreed = _agrees(cluster, pod, snapshot)
            what = f"{nodes:,} nodes, {placed:,} pods placed, {changed} nodes changed"
            rows.append(summarise("steady", f"{what}: CPU per cycle", samples, "µs", 1e6))
            check = f"{what}: decides as the reference"
            rows.append(Measurement("steady", check, agreed, "of 1", 1, agreed, agreed, "= 1"))
    return rows


def _place(cluster: Cluster, count: int) -> ClusterSnapshot:
    rng = random.Random(0)
    snapshot = cluster.snapshot
    for pod in cluster.pending[:count]:
        decision = place_one(cluster, pod, snapshot, rng)
        if decision.node is not None:
            snapshot = snapshot.with_pod(pod, decision.node)
    return snapshot


def _fastest_batch(
    cluster: Cluster, pod: Pod, snapshot: ClusterSnapshot, changed: int
) -> tuple[float, ClusterSnapshot]:
    """The fastest batch's mean CPU seconds per cycle, and the snapshot the batches left."""
    names = sorted(snapshot.node_infos)
    empty = dataclasses.replace(pod, containers=(), init_containers=())
    best = float("inf")
    serial = len(snapshot.pod_nodes)
    gc.disable()
    try:
        for _ in range(BATCHES):
            spent = 0.0
            for _ in range(CYCLES):
                for _ in range(changed):
                    serial += 1
                    filler = dataclasses.replace(empty, name=f"filler-{serial}", uid=f"f{serial}")
                    snapshot = snapshot.with_pod(filler, names[(serial * 37) % len(names)])
                    node_frame(snapshot, DEFAULT_TOPOLOGY)  # the assume's frame, untimed
                start = time.process_time()
                place_one(cluster, pod, snapshot, random.Random(1))
                spent += time.process_time() - start
            best = min(best, spent / CYCLES)
    finally:
        gc.enable()
    return best, snapshot


def _agrees(cluster: Cluster, pod: Pod, snapshot: ClusterSnapshot) -> float:
    decision = place_one(cluster, pod, snapshot, random.Random(1))
    reference = reference_decision(cluster.program, pod, snapshot, random.Random(1))
    return 0.0 if differences(decision, reference) else 1.0
