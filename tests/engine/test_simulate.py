"""Simulation: queue order, the assume step between pods, and the utilisation summary."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from policyengine.engine.simulate import queue_order, simulate
from policyengine.lang.compiler import compile_paths
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod, pod_with_requests, snapshot

KUBE_DEFAULT = Path(__file__).resolve().parents[2] / "policies" / "kube-default.sched"


def kube_default():
    result = compile_paths([KUBE_DEFAULT], default_schema())
    assert result.ok
    return result.program


def test_queue_order_is_priority_then_age_then_name() -> None:
    pods = [
        make_pod("low", priority=1),
        make_pod("high", priority=100),
        make_pod("mid-b", priority=50),
        make_pod("mid-a", priority=50),
    ]
    assert [p.name for p in queue_order(pods)] == ["high", "mid-a", "mid-b", "low"]


def test_older_pods_go_first_among_equal_priorities() -> None:
    from dataclasses import replace

    young = replace(make_pod("a-young", priority=5), creation_timestamp="2026-01-02T00:00:00Z")
    old = replace(make_pod("z-old", priority=5), creation_timestamp="2026-01-01T00:00:00Z")
    assert [p.name for p in queue_order([young, old])] == ["z-old", "a-young"]


def test_each_placement_is_assumed_before_the_next_pod() -> None:
    # Two 3-CPU pods on two 4-CPU nodes: the second must see the first and go elsewhere.
    nodes = [make_node("a", cpu="4"), make_node("b", cpu="4")]
    pending = [
        pod_with_requests("p1", cpu="3"),
        pod_with_requests("p2", cpu="3"),
        pod_with_requests("p3", cpu="3"),
    ]
    result = simulate(kube_default(), snapshot(nodes), pending, seed=1)
    placed = {d.pod: d.node for d in result.decisions}
    assert {placed["default/p1"], placed["default/p2"]} == {"a", "b"}
    assert placed["default/p3"] is None
    assert result.decisions[2].message == "0/2 nodes are available: 2 Insufficient cpu."
    assert result.scheduled == 2 and result.unschedulable == 1
    assert result.before["cpu"].allocated == 0
    assert result.after["cpu"].allocated == Fraction(6)
    assert result.after["cpu"].allocatable == Fraction(8)


def test_gated_pods_are_reported_not_tried() -> None:
    """kube-scheduler never queues a pod with scheduling gates: it takes no room, even of
    highest priority, and is reported after the others with kube-scheduler's words."""
    from dataclasses import replace

    nodes = [make_node("a", cpu="4")]
    gated = replace(
        pod_with_requests("first", cpu="3"), priority=100, scheduling_gates=("x.io/a", "x.io/b")
    )
    pending = [gated, pod_with_requests("p1", cpu="3")]
    result = simulate(kube_default(), snapshot(nodes), pending, seed=1)
    assert [(d.pod, d.node, d.message) for d in result.decisions][1:] == [
        ("default/first", None, "waiting for scheduling gates: [x.io/a x.io/b]")
    ]
    assert result.decisions[0].node == "a"  # p1 had the room the gated pod would have taken
    assert (result.scheduled, result.unschedulable, result.gated) == (1, 0, ("default/first",))


def test_same_seed_same_placements() -> None:
    nodes = [make_node(f"n{i}") for i in range(6)]
    pending = [pod_with_requests(f"p{i}", cpu="100m") for i in range(10)]
    runs = [
        [d.node for d in simulate(kube_default(), snapshot(nodes), pending, seed=7).decisions]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_gpu_fragmentation_counts_free_gpus_too_few_for_the_largest_request() -> None:
    gpu = "nvidia.com/gpu"
    nodes = [make_node("g1", extra={gpu: "8"}), make_node("g2", extra={gpu: "8"})]
    running = [make_pod("r1", requests={gpu: "6"}, node_name="g1")]
    pending = [make_pod("big", requests={gpu: "4"})]
    result = simulate(kube_default(), snapshot(nodes, running), pending)
    # big lands on g2 (only g2 has 4 free); g1 keeps 2 stranded, g2 keeps 4 usable.
    assert result.decisions[0].node == "g2"
    assert result.fragmentation.largest_request == 4
    assert result.fragmentation.free_gpus == 6
    assert result.fragmentation.fragmented_gpus == 2


def test_settled_decisions_report_what_the_whole_ones_do() -> None:
    # Three nodes, one too small and one cordoned; the pods fill what fits, the last fits nowhere.
    nodes = [
        make_node("a", cpu="4"),
        make_node("b", cpu="2"),
        make_node("c", cpu="8", unschedulable=True),
    ]
    pending = [pod_with_requests(f"p{i}", cpu="1500m") for i in range(5)]
    whole = simulate(kube_default(), snapshot(nodes), pending, seed=3)
    settled = simulate(kube_default(), snapshot(nodes), pending, seed=3, settle=True)
    assert len(settled.decisions) == len(whole.decisions) == 5
    for kept, full in zip(settled.decisions, whole.decisions, strict=True):
        assert (kept.pod, kept.node, kept.policy, kept.version, kept.num_nodes) == (
            full.pod,
            full.node,
            full.policy,
            full.version,
            full.num_nodes,
        )
        assert (kept.message, kept.errors, kept.gpu_devices) == (
            full.message,
            full.errors,
            full.gpu_devices,
        )
        # Only the chosen node's score is kept: what the placement table shows.
        assert dict(kept.scores) == (
            {} if full.node is None else {full.node: full.scores[full.node]}
        )
        assert (kept.feasible, kept.ranking, dict(kept.infeasible)) == ((), (), {})
    assert [d.node for d in settled.decisions].count(None) == 2
    assert settled.decisions[-1].message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    )


def test_learned_gpu_shapes_count_the_pending_pods_with_the_running_ones() -> None:
    from policyengine.engine.simulate import workload_of
    from policyengine.lang.compiler import compile_texts
    from policyengine.model.fragmentation import shape_key
    from policyengine.model.snapshot import ClusterSnapshot
    from tests.model.gpu_builders import gpu_node, gpu_pod

    running = gpu_pod("r", gpus=1, node="n1")
    pending = [gpu_pod(f"p{i}", share="cores=50") for i in range(3)]
    snap = ClusterSnapshot.build([gpu_node("n1"), gpu_node("n2")], [running])
    counted = workload_of(snap, pending)
    assert counted is not None
    assert counted.total == 4
    assert counted.counts[shape_key(running)] == 1
    assert counted.counts[shape_key(pending[0])] == 3
    assert workload_of(snapshot([make_node("cpu-only")]), pending) is None
    # The pending shares are the commonest shape from the first pod on: a policy reading the
    # learned shapes sees them before any share runs.
    source = """
policy "p" {
  let first = learned_gpu_shapes(0.5)[0] ?? {}
  filter share_first { (first["cores"] ?? 0) == 50 } reason "learned {first}"
}
"""
    compiled = compile_texts({"p.sched": source}, default_schema())
    assert compiled.program is not None, compiled.diagnostics
    result = simulate(compiled.program, snap, pending)
    assert all(d.node is not None for d in result.decisions)
