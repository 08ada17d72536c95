"""The preemption scenario: a pod that fits nowhere on 1,000 full nodes, each holding 8 pods of
lower priority, preempts under ``policies/kube-default.sched``.

Every node is a candidate, so the figure is the cost of the bounded candidate search
(``engine.preemption``): kube's defaults try about 100 nodes from a seeded random offset. The
same preemptions with the bound lifted (every node dry-run, as before the search was bounded)
are measured beside it. ``--scale`` is the fraction of the default 1,000 nodes (at least 20);
each run preempts for 5 pods, each with its own seed.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import Measurement, note, progress, summarise
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.preemption import preempt
from policyengine.lang.compiler import Program, compile_paths
from policyengine.model.objects import Pod
from policyengine.model.parse import parse_pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import default_schema

NODES = 1000
PODS_PER_NODE = 8
PREEMPTORS = 5
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0
POLICY = Path(__file__).resolve().parent.parent / "policies" / "kube-default.sched"


def _pod(name: str, cpu: str, priority: int, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def build(nodes: int) -> tuple[Program, ClusterSnapshot, list[Pod]]:
    objects: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            }
        )
        for j in range(PODS_PER_NODE):
            objects.append(_pod(f"low-{i}-{j}", "1", (i * 7 + j) % 50, name))
    loaded = parse_objects([{"apiVersion": "v1", "kind": "List", "items": objects}])
    snapshot = ClusterSnapshot.build(loaded.nodes, loaded.pods)
    preemptors = [parse_pod(_pod(f"urgent-{k}", "3", 1000)) for k in range(PREEMPTORS)]
    result = compile_paths([POLICY], default_schema())
    assert result.program is not None, result.diagnostics
    return result.program, snapshot, preemptors


def preempt_all(
    program: Program, snapshot: ClusterSnapshot, pods: list[Pod], config: SchedulerConfig
) -> list[float]:
    """Seconds per preemption; the failing cycle before each is not counted."""
    seconds = []
    for seed, pod in enumerate(pods):
        rng = random.Random(seed)
        decision = schedule(program, pod, snapshot, rng, CycleOptions(all_filters=False))
        assert decision.node is None
        start = time.perf_counter()
        outcome = preempt(program, pod, snapshot, decision, config=config, rng=rng)
        seconds.append(time.perf_counter() - start)
        assert outcome.node is not None
    return seconds


def run(runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE) -> list[Measurement]:
    nodes = max(20, round(NODES * scale))
    progress(f"preemption: building {nodes:,} nodes x {PODS_PER_NODE} pods")
    program, snapshot, pods = build(nodes)
    whole = DEFAULT_CONFIG.with_(min_candidate_nodes_absolute=nodes)
    head = f"{nodes:,} nodes x {PODS_PER_NODE} lower-priority pods"
    rows: list[Measurement] = []
    for label, config in (
        ("bounded search (kube's 10%/100)", DEFAULT_CONFIG),
        ("every node", whole),
    ):
        preempt_all(program, snapshot, pods[:1], config)  # warm-up
        samples = []
        for i in range(runs):
            progress(f"preemption: {label}, run {i + 1}/{runs}")
            per = preempt_all(program, snapshot, pods, config)
            samples.append(sum(per) / len(per))
        rows.append(
            summarise("preemption", f"{head}: {label}, per preemption", samples, "ms", 1000)
        )
    note("preemption", **{head: {"preemptors_per_run": len(pods)}})
    return rows
