"""The gpushare scenario: an arrival list of whole and fractional GPU pods replayed on 1,000
GPU nodes of four models under ``policies/gpu-share-binpack.sched``.

10,000 arrivals (``synthetic.gpu``: shares of 20–75% of a GPU, some memory-heavy, some
compute-heavy, and pods of 1, 2, 4 or 8 whole GPUs) on 1,000 nodes of A100-80GB, A100-40GB,
L4 and T4 GPUs (about 6,400 devices), each arrival placed at once on its best-fit device or
dropped (``engine.arrivals``). Speed: arrivals per second and per-arrival latency; what the
policy is for: the share of the arrived GPU demand placed, the GPU allocation when the first
GPU pod was dropped, and the fragmented share of the free GPU compute at the end. The
placement figures only mean something once the cluster fills up, which takes most of the
10,000 arrivals: run with ``--scale 1`` for them.
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.harness import Measurement, flag, note, percentile, progress, summarise
from policyengine.engine.arrivals import ArrivalReport, replay
from policyengine.engine.simulate import Simulation
from policyengine.lang.compiler import compile_paths
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from policyengine.synthetic.gpu import gpu_arrivals, gpu_nodes

NODES = 1000
ARRIVALS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.02  # 200 arrivals a run: a full replay takes minutes
SEED = 7
POLICY = Path(__file__).resolve().parent.parent / "policies" / "gpu-share-binpack.sched"


def _one_run(
    label: str, snapshot: ClusterSnapshot, arrivals: list, seed: int
) -> tuple[list[float], float, Simulation, ArrivalReport]:
    result = compile_paths([POLICY], default_schema())
    assert result.program is not None, result.diagnostics
    stamps: list[float] = []

    def tick(done: int, total: int) -> None:
        stamps.append(time.perf_counter())
        if done % 50 == 0 or done == total:
            progress(f"{label}: {done}/{total} arrivals")

    start = time.perf_counter()
    simulation, report = replay(result.program, snapshot, arrivals, seed, tick)
    wall = time.perf_counter() - start
    latencies = [b - a for a, b in zip([start, *stamps], stamps, strict=False)]
    return latencies, wall, simulation, report


def run(
    runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE, nodes: int = NODES
) -> list[Measurement]:
    count = max(1, round(ARRIVALS * scale))
    snapshot = ClusterSnapshot.build([parse_node(d) for d in gpu_nodes(nodes, SEED)])
    arrivals = [parse_pod(d) for d in gpu_arrivals(count, SEED)]
    prefix = f"{nodes:,} GPU nodes, {count:,} arrivals"
    rates, p50s, p99s = [], [], []
    outcome: tuple[Simulation, ArrivalReport] | None = None
    for i in range(runs):
        latencies, wall, simulation, report = _one_run(
            f"gpushare: run {i + 1}/{runs}", snapshot, arrivals, SEED
        )
        rates.append(wall / count)
        p50s.append(percentile(latencies, 0.5))
        p99s.append(percentile(latencies, 0.99))
        outcome = (simulation, report)
    assert outcome is not None
    simulation, report = outcome
    note(
        "gpushare",
        arrivals=count,
        nodes=nodes,
        placed=report.placed,
        dropped=report.dropped,
        first_drop=report.first_drop,
    )
    rows = [
        summarise("gpushare", f"{prefix}: throughput", [1 / r for r in rates], "arrivals/s"),
        summarise("gpushare", f"{prefix}: per-arrival latency p50", p50s, "ms", 1000),
        summarise("gpushare", f"{prefix}: per-arrival latency p99", p99s, "ms", 1000),
        summarise(
            "gpushare", f"{prefix}: arrived GPU demand placed", [report.allocation_ratio], "%", 100
        ),
    ]
    if report.allocation_at_first_drop is None:
        rows.append(flag("gpushare", f"{prefix}: no GPU pod dropped (the cluster never filled)"))
    else:
        rows.append(
            summarise(
                "gpushare",
                f"{prefix}: GPU allocation at the first drop (arrival {report.first_drop:,})",
                [report.allocation_at_first_drop],
                "%",
                100,
            )
        )
    if simulation.gpu is not None:
        rows.append(
            summarise(
                "gpushare",
                f"{prefix}: free GPU compute fragmented at the end",
                [simulation.gpu.fragmentation_ratio],
                "%",
                100,
            )
        )
    return rows
