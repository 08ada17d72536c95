"""One scheduling cycle, table-driven: which policy governs, filters, scores, selection."""

from __future__ import annotations

import random

import pytest

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.lang.compiler import compile_texts
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod, pod_with_requests, snapshot

GPU = "nvidia.com/gpu"


def program(source: str):
    result = compile_texts({"p.sched": source}, default_schema())
    assert result.ok, result.diagnostics
    return result.program


def gpu_node(name: str, gpus: int, product: str = "NVIDIA-L4", **kwargs):
    return make_node(
        name, extra={GPU: str(gpus)}, labels={"nvidia.com/gpu.product": product}, **kwargs
    )


GPU_POLICY = """
policy "gpu" {
  match pod.requests["nvidia.com/gpu"] > 0
  let model = pod.annotations["gpu.ai/model"] ?? "any"
  filter enough { node.free["nvidia.com/gpu"] >= pod.requests["nvidia.com/gpu"] } reason "not enough GPUs"
  filter model when model != "any" { node.gpu.product == model } reason "node has {node.gpu.product}, pod needs {model}"
  score binpack weight 2 { 100 * node.allocated["nvidia.com/gpu"] / node.allocatable["nvidia.com/gpu"] }
}
policy "rest" {
  filter small { node.allocatable["nvidia.com/gpu"] == 0 } reason "GPU nodes are for GPU pods"
}
"""


def gpu_pod(name: str, gpus: int, model: str | None = None, node: str = ""):
    pod = make_pod(name, requests={GPU: str(gpus)}, node_name=node)
    if model:
        from dataclasses import replace

        from policyengine.model.frozen import freeze

        pod = replace(pod, annotations=freeze({"gpu.ai/model": model}))
    return pod


def test_the_first_matching_policy_governs() -> None:
    prog = program(GPU_POLICY)
    snap = snapshot([gpu_node("g1", 4), make_node("c1")])
    assert schedule(prog, gpu_pod("p", 1), snap, random.Random(0)).policy == "gpu"
    assert schedule(prog, pod_with_requests("q", cpu="1"), snap, random.Random(0)).policy == "rest"


def test_no_matching_policy_is_reported() -> None:
    prog = program(
        'policy "only-gpu" { match pod.requests["nvidia.com/gpu"] > 0 filter t { true } }'
    )
    decision = schedule(
        prog, pod_with_requests("q", cpu="1"), snapshot([make_node("c1")]), random.Random(0)
    )
    assert decision.node is None
    assert decision.message == "no policy of profile policyengine matches the pod"


FILTER_CASES = [
    # pod, nodes, feasible, rejections of one node
    (
        gpu_pod("p", 2),
        [gpu_node("g1", 1), gpu_node("g2", 4)],
        ["g2"],
        ("g1", [("enough", ("not enough GPUs",))]),
    ),
    (
        gpu_pod("p", 1, model="NVIDIA-H100"),
        [gpu_node("g1", 4), gpu_node("g2", 4, product="NVIDIA-H100")],
        ["g2"],
        ("g1", [("model", ("node has NVIDIA-L4, pod needs NVIDIA-H100",))]),
    ),
    (
        # every filter is evaluated (all_filters), so both rejections show
        gpu_pod("p", 8, model="NVIDIA-H100"),
        [gpu_node("g1", 4)],
        [],
        (
            "g1",
            [
                ("enough", ("not enough GPUs",)),
                ("model", ("node has NVIDIA-L4, pod needs NVIDIA-H100",)),
            ],
        ),
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "feasible", "rejected"),
    FILTER_CASES,
    ids=["gpu_pod(p,2)", "gpu_pod(p,1,model=NVIDIA-H100)", "gpu_pod(p,8,model=NVIDIA-H100)"],
)
def test_filters(pod, nodes, feasible, rejected) -> None:
    decision = schedule(program(GPU_POLICY), pod, snapshot(nodes), random.Random(0))
    assert list(decision.feasible) == feasible
    node, expected = rejected
    assert [(r.rule, r.reasons) for r in decision.infeasible[node]] == expected


def test_first_rejection_only_when_not_all_filters() -> None:
    decision = schedule(
        program(GPU_POLICY),
        gpu_pod("p", 8, model="NVIDIA-H100"),
        snapshot([gpu_node("g1", 4)]),
        random.Random(0),
        CycleOptions(all_filters=False),
    )
    assert [r.rule for r in decision.infeasible["g1"]] == ["enough"]
    assert decision.message == "0/1 nodes are available: 1 not enough GPUs."


def test_binpack_scores_prefer_the_fuller_node() -> None:
    nodes = [gpu_node("empty", 8), gpu_node("half", 8)]
    running = [gpu_pod("r", 4, node="half")]
    decision = schedule(
        program(GPU_POLICY), gpu_pod("p", 1), snapshot(nodes, running), random.Random(0)
    )
    assert decision.scores["half"].rules == {"binpack": 50.0}
    assert decision.scores["half"].total == 100.0
    assert decision.scores["empty"].total == 0.0
    assert decision.ranking == ("half", "empty")
    assert decision.node == "half"


def test_ties_are_broken_by_the_seed_reproducibly() -> None:
    prog = program('policy "flat" { score same { 1 } }')
    snap = snapshot([make_node(f"n{i}") for i in range(8)])
    pod = pod_with_requests("p", cpu="1")
    first = [schedule(prog, pod, snap, random.Random(seed)).node for seed in range(6)]
    again = [schedule(prog, pod, snap, random.Random(seed)).node for seed in range(6)]
    assert first == again
    assert len(set(first)) > 1  # the seed matters: ties are not always broken the same way


def test_a_rule_failing_at_runtime_rejects_the_node_and_is_reported() -> None:
    prog = program('policy "p" { filter ratio { 100 / node.gpu.count > 1 } }')
    decision = schedule(
        prog, pod_with_requests("p", cpu="1"), snapshot([make_node("c1")]), random.Random(0)
    )
    assert decision.feasible == ()
    (rejection,) = decision.infeasible["c1"]
    assert rejection.reasons == ("rule ratio failed: division by zero at p.sched:1:29",)
    assert decision.errors == ("rule ratio failed: division by zero at p.sched:1:29",)
