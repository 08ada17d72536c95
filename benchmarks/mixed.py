"""The mixed scenario: a cluster's ordinary pod mix, not one shape at a time.

5,000 nodes (the basic cluster, its GPU nodes tainted ``dedicated=gpu``), 3,000 running pods,
and 10,000 pending pods of 24 templates arriving interleaved (``synthetic.mixed``):
Deployments with soft spread by zone and by hostname (``ScheduleAnyway``), hard spread by zone
and by hostname, StatefulSet-like replicas one per node (required hostname anti-affinity), an
app preferring its cache's zone, Jobs, a priority class, whole-GPU pods (by count, model and
node selector) and shared-GPU pods (``policyengine.io/gpu-share``), placed under the shipped
policy directory as a user runs it. Beside the whole mix's throughput, each template's own,
so a slow shape cannot hide in the average: its pods over the CPU time they took in the mix
(where each class meets the placements of 23 others between its cycles), and over the CPU time
they took placed on their own, with no other pod in the queue (``workload.place_alone``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from benchmarks.harness import Measurement, full_size, summarise
from benchmarks.perpod import measure_workload, scaled_pods
from benchmarks.workload import Workload, template_of

NODES = 5000
PODS = 10_000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0
DEFAULT_CHECK = 5


def per_template(result: dict[str, Any], names: list[str]) -> dict[str, float]:
    """Each template's pods over the CPU seconds they took in the mix."""
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for app, cpu in zip(result["apps"], result["cpu"], strict=True):
        name = template_of(app, names)
        spent[name] += cpu
        count[name] += 1
    return {name: count[name] / max(spent[name], 1e-9) for name in count}


def alone(result: dict[str, Any]) -> dict[str, float]:
    """Each template's pods over the CPU seconds they took placed on their own."""
    return {name: own["pods"] / max(own["cpu"], 1e-9) for name, own in result["alone"].items()}


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    from policyengine.synthetic.presets import _mixed_templates

    pods = scaled_pods(PODS, scale)
    names = [t.name for t in _mixed_templates()]
    target = full_size(">= 500 pods/s", pods, PODS)

    def templates(results: list[dict[str, Any]]) -> list[Measurement]:
        rows = []
        for rates_of, how in (
            (alone, " on its own"),
            (lambda r: per_template(r, names), ""),
        ):
            rates: dict[str, list[float]] = defaultdict(list)
            for result in results:
                for name, rate in rates_of(result).items():
                    rates[name].append(rate)
            rows += [
                summarise(
                    "mixed",
                    f"template {name}{how} (CPU time)",
                    rates[name],
                    "pods/s",
                    target=target,
                )
                for name in sorted(rates, key=lambda n: statistics.median(rates[n]))
            ]
        return rows

    workload = Workload("mixed", nodes, pods)
    return measure_workload(
        "mixed",
        workload,
        runs,
        check,
        rate_target=full_size(">= 1000 pods/s", pods, PODS),
        more=templates,
        alone=names,
    )
