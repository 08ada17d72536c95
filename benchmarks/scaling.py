"""The scaling scenario: the basic workload at 500, 1,000, 5,000 and 15,000 nodes.

Evaluating every node makes the cost of a pod grow with the cluster; this shows how (the
per-node cost row should stay flat if the growth is linear, and fall once work is shared
across nodes). The same pending pods are placed at every size.
"""

from __future__ import annotations

from benchmarks.harness import Measurement
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload

SIZES = (500, 1000, 5000, 15_000)
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.005
DEFAULT_CHECK = 2


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    sizes: tuple[int, ...] = SIZES,
) -> list[Measurement]:
    rows: list[Measurement] = []
    pods = scaled_pods(PODS, scale)
    for nodes in sizes:
        measured = measure_workload("scaling", Workload("basic", nodes, pods), runs, check)
        rows.extend(measured)
        rows.append(_per_node(measured, nodes))
    return rows


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
