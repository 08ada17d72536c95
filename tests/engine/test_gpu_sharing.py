"""GPU sharing through the engine: device choice in simulate, arrival replay, and the
fragmentation-aware policy against first-fit and random placement."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.arrivals import replay
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.simulate import simulate
from policyengine.lang.compiler import Program, compile_paths, compile_texts
from policyengine.model.hami import ALLOCATED, GPU_POLICY
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from policyengine.synthetic.gpu import gpu_arrivals, gpu_nodes
from tests.model.gpu_builders import gpu_node, gpu_pod

SHIPPED = Path(__file__).resolve().parents[2] / "policies" / "gpu-share-binpack.sched"

FIRST_FIT = """
policy "first-fit" {
  filter gpu_devices { gpu_fits(pod, node) } reason "no device"
  score first weight 1 normalize reverse {
    0.5 + (int(node.labels["sim.policyengine.io/index"] ?? "0") ?? 0)
  }
}
"""
RANDOM = """
policy "random" {
  filter gpu_devices { gpu_fits(pod, node) } reason "no device"
}
"""


def program(text: str | None = None) -> Program:
    result = (
        compile_texts({"p.sched": text}, default_schema())
        if text
        else compile_paths([SHIPPED], default_schema())
    )
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program


def test_simulate_writes_devices_and_reports_gpu_use() -> None:
    snap = ClusterSnapshot.build([gpu_node("n1", count=2, memory_mib=40960)])
    pending = [
        gpu_pod("a", share="cores=50,memory=20Gi"),
        gpu_pod("b", share="cores=25,memory=10Gi"),
        gpu_pod("c", gpus=1),
        gpu_pod("d", gpus=1),
    ]
    sim = simulate(program(), snap, pending)
    placed = {d.pod: d for d in sim.decisions}
    assert [g.uuid for g in placed["default/a"].gpu_devices] == ["n1-gpu0"]
    # best fit: b joins a's device, leaving gpu1 whole for c; d finds no free device
    assert [g.uuid for g in placed["default/b"].gpu_devices] == ["n1-gpu0"]
    assert [g.uuid for g in placed["default/c"].gpu_devices] == ["n1-gpu1"]
    assert placed["default/d"].node is None
    pod_b = sim.snapshot.pod("default/b")
    assert pod_b is not None and pod_b.annotations[ALLOCATED] == "n1-gpu0,NVIDIA,10240,25:;"
    assert sim.gpu is not None
    assert sim.gpu.allocated_gpus == pytest.approx(1.75)
    assert sim.gpu.allocation_ratio == pytest.approx(0.875)


@pytest.mark.parametrize(
    ("policy", "devices"),
    [
        ("binpack", ["n1-gpu0", "n1-gpu0", "n1-gpu0"]),  # best fit: one device fills first
        ("spread", ["n1-gpu0", "n1-gpu1", "n1-gpu2"]),  # HAMi's spread: the emptiest device
        ("", ["n1-gpu0", "n1-gpu0", "n1-gpu0"]),  # no annotation: binpack
    ],
    ids=["binpack", "spread", "''"],
)
def test_a_pods_gpu_scheduler_policy_picks_its_device(policy: str, devices: list[str]) -> None:
    snap = ClusterSnapshot.build([gpu_node("n1", count=3, memory_mib=40960)])
    wanted = {GPU_POLICY: policy} if policy else {}
    pending = [
        gpu_pod(name, share="cores=30,memory=10Gi", annotations=wanted) for name in ("a", "b", "c")
    ]
    sim = simulate(program(), snap, pending)
    assert [[g.uuid for g in d.gpu_devices] for d in sim.decisions] == [[u] for u in devices]


def test_replay_keeps_the_arrival_order_and_drops_what_does_not_fit() -> None:
    snap = ClusterSnapshot.build([gpu_node("n1", count=2)])
    arrivals = [
        gpu_pod("z", gpus=1),
        gpu_pod("y", share="cores=60"),
        gpu_pod("x", share="cores=60"),  # no device has 60% left: dropped
        gpu_pod("w", share="cores=40"),
    ]
    sim, report = replay(program(), snap, arrivals)
    assert [(d.pod, d.node) for d in sim.decisions] == [
        ("default/z", "n1"),
        ("default/y", "n1"),
        ("default/x", None),
        ("default/w", "n1"),
    ]
    assert (report.arrived, report.placed, report.dropped) == (4, 3, 1)
    assert report.arrived_gpus == pytest.approx(2.6)
    assert report.placed_gpus == pytest.approx(2.0)
    assert report.allocation_ratio == pytest.approx(2.0 / 2.6)
    assert report.first_drop == 3
    assert report.allocation_at_first_drop == pytest.approx(0.8)


def test_fragmentation_aware_policy_allocates_more_before_the_first_drop() -> None:
    policies = {
        "fragmentation": program(),
        "first-fit": program(FIRST_FIT),
        "random": program(RANDOM),
    }
    at_drop: dict[str, list[float]] = {name: [] for name in policies}
    for seed in range(6):
        snap = ClusterSnapshot.build([parse_node(d) for d in gpu_nodes(16, seed)])
        arrivals = [parse_pod(d) for d in gpu_arrivals(160, seed)]
        for name, prog in policies.items():
            _, report = replay(prog, snap, arrivals, seed=seed)
            assert report.first_drop is not None and report.allocation_at_first_drop is not None
            at_drop[name].append(report.allocation_at_first_drop)
    for frag, first, rand in zip(
        at_drop["fragmentation"], at_drop["first-fit"], at_drop["random"], strict=True
    ):
        assert frag >= first
        assert frag > rand
    assert sum(at_drop["fragmentation"]) > sum(at_drop["first-fit"])
    assert sum(at_drop["fragmentation"]) > sum(at_drop["random"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), nodes=st.integers(2, 8), arrivals=st.integers(5, 30))
def test_the_fast_path_decides_gpu_pods_as_the_reference_evaluator(
    seed: int, nodes: int, arrivals: int
) -> None:
    """Cached per-node results (keyed by the pod's GPU demand) never change a decision: every
    arrival is decided as the reference evaluator decides it on the same snapshot."""
    prog = program()
    snap = ClusterSnapshot.build([parse_node(d) for d in gpu_nodes(nodes, seed)])
    options = CycleOptions(all_filters=False, cache=ClassCache())
    for pod in (parse_pod(d) for d in gpu_arrivals(arrivals, seed)):
        decision = schedule(prog, pod, snap, random.Random(seed), options)
        reference = reference_decision(prog, pod, snap, random.Random(seed))
        assert differences(decision, reference) == []
        if decision.node is not None:
            placed = with_devices(pod, decision.node, decision.gpu_devices)
            snap = snap.with_pod(placed, decision.node)
