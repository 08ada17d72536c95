"""The affinity scenario: the basic cluster, with pods that make every node's answer depend on
the pods already placed.

30% of the pods carry a zone topology spread constraint (maxSkew 1, DoNotSchedule) and 20%
required hostname anti-affinity, each template split over 10 deployments; the rest are the
basic mix. These are the rules whose cost grows with the pods in the cluster, not only with
the nodes. Pods placed earlier in a run count for the later ones (the assume step), so a
scaled-down run (``--scale``) sees less of that growth than the full 10,000 pods.
"""

from __future__ import annotations

from benchmarks.harness import Measurement, full_size
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload

NODES = 5000
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0  # the full 10,000 pods
DEFAULT_CHECK = 5


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    pods = scaled_pods(PODS, scale)
    target = full_size(">= 300 pods/s", pods, PODS)
    workload = Workload("affinity", nodes, pods)
    return measure_workload("affinity", workload, runs, check, rate_target=target)
