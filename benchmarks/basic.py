"""The basic scenario: plain and GPU pods on a 5,000-node cluster, every node evaluated.

5,000 nodes (4,000 CPU nodes; 1,000 GPU nodes with 8 GPUs of three models; 5 zones, 100 racks;
a few cordoned and PreferNoSchedule-tainted nodes) and pending pods from the 20 benchmark
templates (70% CPU-only, 30% asking for 1, 2, 4 or 8 GPUs), under ``policies/basic.sched``:
``kube-default.sched`` plus a GPU-model filter and a GPU bin-packing score. This is the number
the fast evaluation path is for: kube-scheduler's own benchmark holds 5,000 nodes above 680
pods/s while looking at 10% of them; we look at all of them.
"""

from __future__ import annotations

from benchmarks.harness import Measurement, full_size
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload

NODES = 5000
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0  # the full 10,000 pods: a few seconds a run
DEFAULT_CHECK = 5


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    pods = scaled_pods(PODS, scale)
    return measure_workload(
        "basic",
        Workload("basic", nodes, pods),
        runs,
        check,
        rate_target=full_size(">= 1000 pods/s", pods, PODS),
        p99_target=full_size("<= 10 ms", pods, PODS),
    )
