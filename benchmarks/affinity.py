"""The affinity scenario: the basic cluster, with pods that make every node's answer depend on
the pods already placed.

30% of the pods carry a zone topology spread constraint (maxSkew 1, DoNotSchedule) and 20%
required hostname anti-affinity, each template split over 10 deployments; the rest are the
basic mix. These are the rules whose cost grows with the pods in the cluster, not only with
the nodes. Pods placed earlier in a run count for the later ones (the assume step), so the
scaled-down pod count sees less of that growth than a full 10,000-pod run would.
"""

from __future__ import annotations

from benchmarks.harness import Measurement
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload

NODES = 5000
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.005
DEFAULT_CHECK = 5


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    workload = Workload("affinity", nodes, scaled_pods(PODS, scale))
    return measure_workload("affinity", workload, runs, check, rate_target=">= 300 pods/s")
