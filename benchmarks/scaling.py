"""The scaling scenario: the basic workload at 500, 1,000, 5,000 and 15,000 nodes.

Evaluating every node makes the cost of a pod grow with the cluster; this shows how (the
per-node cost row should stay flat if the growth is linear, and fall once work is shared
across nodes). The same pending pods are placed at every size: 1,000 by default, enough that
the first pod of each template (which evaluates every node) weighs in the mean as it does in
a queue, not as one pod in two or three as with 50. The target row is the mean
CPU time per pod at the largest size over that at 1,000 nodes, ≤ 3×; the p50 ratio beside it.
"""

from __future__ import annotations

from benchmarks.harness import Measurement
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload

SIZES = (500, 1000, 5000, 15_000)
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.1  # 1,000 pods a run
BASE = 1000  # the size the target's ratio is taken against
TARGET = "<= 3x"
DEFAULT_CHECK = 2


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    sizes: tuple[int, ...] = SIZES,
    base: int = BASE,
) -> list[Measurement]:
    rows: list[Measurement] = []
    pods = scaled_pods(PODS, scale)
    by_size: dict[int, list[Measurement]] = {}
    for nodes in sizes:
        measured = by_size[nodes] = measure_workload(
            "scaling", Workload("basic", nodes, pods), runs, check
        )
        rows.extend(measured)
        rows.append(_per_node(measured, nodes))
    largest = max(sizes)
    if base in by_size and largest > base:
        target = TARGET if (base, largest) == (BASE, max(SIZES)) else ""
        rows.extend(_ratios(by_size[largest], by_size[base], (largest, base), pods, target))
    return rows


def _ratios(
    large: list[Measurement],
    base: list[Measurement],
    sizes: tuple[int, int],
    pods: int,
    target: str,
) -> list[Measurement]:
    """Per-pod cost at the larger of ``sizes`` over that at the smaller: the mean CPU time
    (from the CPU throughput medians) and the p50 latency, each a ratio of medians."""

    def median(rows: list[Measurement], ending: str) -> float:
        return next(r.median for r in rows if r.metric.endswith(ending))

    head = f"{sizes[0]:,} over {sizes[1]:,} nodes, {pods:,} pods"
    cpu = "throughput (CPU time)"
    mean = median(base, cpu) / median(large, cpu)
    p50 = median(large, "latency p50") / median(base, "latency p50")
    return [
        Measurement(
            "scaling", f"{head}: mean CPU per pod, ratio", mean, "x", 1, mean, mean, target
        ),
        Measurement("scaling", f"{head}: p50 per pod, ratio", p50, "x", 1, p50, p50),
    ]


def _per_node(rows: list[Measurement], nodes: int) -> Measurement:
    """CPU time per pod divided by the nodes evaluated for it, from the CPU throughput row."""
    cpu = next(r for r in rows if r.metric.endswith("throughput (CPU time)"))
    head = cpu.metric.rsplit(":", 1)[0]

    def per_node(rate: float) -> float:
        return 1e6 / (rate * nodes)

    return Measurement(
        "scaling",
        f"{head}: CPU time per pod per node",
        per_node(cpu.median),
        "µs",
        cpu.runs,
        per_node(cpu.high),
        per_node(cpu.low),
    )
