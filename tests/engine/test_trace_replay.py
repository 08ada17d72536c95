"""The paper's replay method: the arrival list (a seeded permutation, then draws until the
demand factor is reached) and the metric (unallocated GPUs when the arrived demand reaches
100%), on cases small enough to follow by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from policyengine.engine.trace_replay import Point, SeedRun, arrival_order, mean_curve, replay_trace
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.gpu_share import pod_demand
from policyengine.model.openb import read_nodes, read_pods
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema

DEVICE_FIT = """
policy "device-fit" {
  filter gpu_devices { gpu_fits(pod, node) } reason "no device"
}
"""

PODS = read_pods(
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
    "whole,1000,1024,1,1000\n"
    "big,1000,1024,1,600\n"
    "big2,1000,1024,1,600\n"
    "small,1000,1024,1,400\n"
    "cpu,1000,1024,0,0\n"
)


def program(text: str) -> Program:
    result = compile_texts({"p.sched": text}, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


@pytest.mark.parametrize(("seed", "demand"), [(0, 1.3), (7, 2.0), (3, 0.5)])
def test_arrivals_are_every_pod_once_then_draws_until_the_demand(seed: int, demand: float) -> None:
    pods = [p.pod for p in PODS]
    milli = [p.gpu_milli for p in PODS]
    order = arrival_order(pods, milli, 2, seed, demand)
    first = order[: len(pods)]
    assert sorted(p.name for p in first) == sorted(p.name for p in pods)
    by_name = {p.pod.name: p.gpu_milli for p in PODS}
    asked = [by_name[p.name.rsplit("-", 1)[0] if p not in first else p.name] for p in order]
    # the last arrival is the one that reaches the target, not one more
    target = demand * 2 * 1000
    assert sum(asked) >= target
    if len(order) > len(pods):
        assert sum(asked[:-1]) < target
    copies = Counter(p.name for p in order)
    assert max(copies.values()) == 1  # every arrival is its own pod
    assert arrival_order(pods, milli, 2, seed, demand) == order  # the seed decides


def test_the_metric_is_read_when_the_arrived_demand_reaches_100_percent() -> None:
    # One node with two GPUs. In order: a whole GPU (gpu0), a 60% share (gpu1), a second 60%
    # share (dropped: 40% left), a 40% share (gpu1). Arrived 50%, 80%, 110%, 130% of the
    # GPUs; unallocated 50%, 20%, 20%, 0%: the figure at 100% arrived is 20%.
    (node,) = read_nodes("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,65536,2,T4\n")
    snapshot = ClusterSnapshot.build([node])
    arrivals = [PODS[0].pod, PODS[1].pod, PODS[2].pod, PODS[3].pod]
    run = replay_trace(program(DEVICE_FIT), snapshot, arrivals, seed=0)
    assert (run.arrived, run.placed, run.dropped_gpu_pods) == (4, 3, 1)
    assert run.unallocated_at == pytest.approx(20.0)
    assert [(p.arrived, p.unallocated, p.pods) for p in run.curve] == [
        (50.0, 50.0, 1),
        (80.0, 20.0, 2),
        (110.0, 20.0, 3),
        (130.0, 0.0, 4),
    ]
    assert sum(pod_demand(p).gpus for p in arrivals) == pytest.approx(2.6)


def test_the_mean_curve_reads_each_run_at_its_first_point_past_the_mark() -> None:
    a = SeedRun(0, 2, 2, 0, None, (Point(1.5, 98.0, 1), Point(3.0, 96.0, 2)), 0.0)
    b = SeedRun(
        1, 3, 3, 0, None, (Point(1.0, 99.0, 1), Point(2.0, 97.0, 2), Point(4.0, 95.0, 3)), 0.0
    )
    # at 1%: 98 and 99; at 2%: 96 and 97; at 3%: 96 and 95 (b's first point past 3%)
    assert mean_curve([a, b]) == [(1.0, 98.5), (2.0, 96.5), (3.0, 95.5)]
