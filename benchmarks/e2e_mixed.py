"""The end-to-end scenario on an ordinary cluster's pod mix: ``policyengine run`` with the
shipped policy directory binding the ``mixed`` pods (``synthetic.mixed``: Deployments behind
Services, hard and soft spread, anti-affinity, Jobs, whole and shared GPUs) on 1,000 nodes,
through the loopback API server. How it measures is ``benchmarks.e2e``'s; beside the rate,
the scheduling cycle's time per attempt and what a bound pod costs the scheduler outside its
cycles (the loop's own overhead: decoding, queue, assume, bind, event)."""

from __future__ import annotations

from benchmarks.e2e import DEFAULT_RUNS, DEFAULT_SCALE, NODES, measure
from benchmarks.harness import Measurement
from benchmarks.workload import SHIPPED


def run(
    runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE, nodes: int = NODES
) -> list[Measurement]:
    # The loop's own work per bound pod well below a cycle's: at most half of it.
    return measure("e2e_mixed", "mixed", SHIPPED, runs, scale, nodes, overhead_target="<= 0.5x")
