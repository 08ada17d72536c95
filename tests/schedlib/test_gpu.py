"""The GPU-sharing builtins and records, on views of a small snapshot and through policies."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from policyengine.engine.cycle import schedule
from policyengine.lang.compiler import compile_texts
from policyengine.model.hami import ALLOCATED
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from policyengine.schedlib.gpu import (
    best_fit_device,
    gpu_allocated_after,
    gpu_fits,
    gpu_fragmentation,
    gpu_fragmentation_delta,
    gpu_placement_score,
    gpu_stranded,
    gpu_stranding_growth,
    host_shape,
    learned_host_shapes,
    loss_score,
    shape_demand,
)
from policyengine.schedlib.views import NodeView, PodView
from tests.model.gpu_builders import gpu_node, gpu_pod

Gi = 1024**3
SHAPES = [{"cores": 25, "memory": 10 * Gi}, {"gpus": 1}]


def cluster() -> ClusterSnapshot:
    # n1: gpu0 holds 60% (24 GiB), gpu1 holds 20% (8 GiB); n2 is empty.
    running = [
        gpu_pod(
            "a",
            share="cores=60,memory=24Gi",
            node="n1",
            annotations={ALLOCATED: "n1-gpu0,NVIDIA,24576,60:;"},
        ),
        gpu_pod(
            "b",
            share="cores=20,memory=8Gi",
            node="n1",
            annotations={ALLOCATED: "n1-gpu1,NVIDIA,8192,20:;"},
        ),
    ]
    return ClusterSnapshot.build([gpu_node("n1", count=2), gpu_node("n2", count=2)], running)


def view(snap: ClusterSnapshot, name: str) -> NodeView:
    return NodeView(snap.node(name))


def test_node_gpus_records() -> None:
    records = view(cluster(), "n1").gpus
    assert [
        (d.index, d.id, d.free_cores, d.free_memory, d.used_by, d.whole_free) for d in records
    ] == [
        (0, "n1-gpu0", 40, Fraction(16 * Gi), 1, False),
        (1, "n1-gpu1", 80, Fraction(32 * Gi), 1, False),
    ]
    assert records[0].memory == Fraction(40 * Gi) and records[0].cores == 100


@pytest.mark.parametrize(
    ("pod_args", "fits_n1", "device_n1", "device_n2"),
    [
        ({"share": "cores=30,memory=10Gi"}, True, 0, 0),  # best fit: the fuller device
        ({"share": "cores=50,memory=10Gi"}, True, 1, 0),  # only gpu1 has 50% left
        ({"share": "cores=30,memory=20Gi"}, True, 1, 0),  # memory decides
        ({"gpus": 1}, False, None, 0),  # no entirely free device on n1
        ({}, True, None, None),  # no GPU asked
    ],
    ids=[
        "share=cores=30,memory=10Gi",
        "share=cores=50,memory=10Gi",
        "share=cores=30,memory=20Gi",
        "gpus=1",
        "empty",
    ],
)
def test_fit_and_best_fit_device(
    pod_args: dict[str, str], fits_n1: bool, device_n1: int | None, device_n2: int | None
) -> None:
    snap = cluster()
    pod = PodView(gpu_pod("p", **pod_args))  # type: ignore[arg-type]
    assert gpu_fits(pod, view(snap, "n1")) is fits_n1
    assert best_fit_device(pod, view(snap, "n1")) == device_n1
    assert best_fit_device(pod, view(snap, "n2")) == device_n2


def test_fragmentation_builtins() -> None:
    snap = cluster()
    # 25%-shapes fit both n1 devices; whole-GPU shapes lose all of n1's 1.2 free GPUs.
    assert gpu_fragmentation(view(snap, "n1"), SHAPES) == pytest.approx(0.6)
    assert gpu_fragmentation(view(snap, "n2"), SHAPES) == 0
    quarter = PodView(gpu_pod("q", share="cores=25,memory=10Gi"))
    # On n1 the quarter leaves gpu0 with 15% (lost to both shapes): +0.15 * 1/2 ... on n2 it
    # breaks a whole GPU: the 75% left is lost to whole-GPU shapes.
    assert gpu_fragmentation_delta(quarter, view(snap, "n1"), SHAPES) == pytest.approx(
        -0.125 + 0.075
    )
    assert gpu_fragmentation_delta(quarter, view(snap, "n2"), SHAPES) == pytest.approx(0.375)
    assert gpu_fragmentation_delta(PodView(gpu_pod("w", gpus=1)), view(snap, "n1"), SHAPES) is None
    assert gpu_allocated_after(quarter, view(snap, "n1")) == pytest.approx((0.8 + 0.25) / 2)


def test_stranding_builtins() -> None:
    snap = cluster()  # both nodes have 64 CPUs free; n1 1.2 GPUs free, n2 2
    shapes = [{"gpus": 1, "cpu": 48}]  # 48 CPUs per GPU: 64 CPUs accompany 4/3 of a GPU
    assert gpu_stranded(view(snap, "n1"), shapes) == 0.0
    assert gpu_stranded(view(snap, "n2"), shapes) == pytest.approx(2 - 4 / 3)
    cpu_pod = PodView(gpu_pod("c", resources={"cpu": "32"}))
    # 32 CPUs left on n2 accompany 2/3 of a GPU: 4/3 stranded, 2/3 more than before
    assert gpu_stranding_growth(None, cpu_pod, view(snap, "n2"), shapes) == pytest.approx(2 / 3)
    # on n1 the 32 CPUs left still accompany 2/3 of its 1.2 free GPUs: 0.533 stranded
    assert gpu_stranding_growth(None, cpu_pod, view(snap, "n1"), shapes) == pytest.approx(
        1.2 - 2 / 3
    )


@pytest.mark.parametrize(
    ("loss", "score"),
    [
        (0.0, 50),  # no loss
        (1.0, 26),  # 100 / (1 + e) = 26.9
        (-1.0, 73),  # 100 / (1 + 1/e) = 73.1
        (0.03, 49),  # 49.25: a few hundredths of a GPU tie with slightly less
        (2.0 + 2 / 3, 6),  # 100 / (1 + e^2.667) = 6.5
        (1000.0, 0),  # past what exp holds
        (-1000.0, 100),
        (None, None),  # no device has room
    ],
    ids=["zero", "one", "minus-one", "tiny", "large", "huge", "huge-gain", "none"],
)
def test_loss_score(loss: float | None, score: int | None) -> None:
    assert loss_score(loss) == score


def test_placement_score() -> None:
    snap = cluster()  # both nodes have 64 CPUs free; n1 1.2 GPUs free (no whole device), n2 2
    shapes = [{"gpus": 1, "cpu": 48}]
    cpu_pod = PodView(gpu_pod("c", resources={"cpu": "32"}))
    # n2: the whole-GPU shape no longer fits (32 CPUs left): fragmentation +2; stranding +2/3
    assert gpu_placement_score(None, cpu_pod, view(snap, "n2"), shapes, shapes) == 6
    # n1: its 1.2 free GPUs were lost to the shape already; stranding +0.533: 100/(1+e^0.533)
    assert gpu_placement_score(None, cpu_pod, view(snap, "n1"), shapes, shapes) == 36
    # fragmentation alone
    assert gpu_placement_score(None, cpu_pod, view(snap, "n2"), shapes, []) == 11
    assert gpu_placement_score(None, cpu_pod, view(snap, "n1"), shapes, []) == 50
    # no device has room for a whole GPU on n1
    whole_pod = PodView(gpu_pod("w", gpus=1))
    assert gpu_placement_score(None, whole_pod, view(snap, "n1"), shapes, shapes) is None


def test_a_shape_asking_no_gpu() -> None:
    shape = host_shape({"cpu": 6, "weight": 7})
    assert (shape.demand.empty, shape.weight, shape.cpu_milli) == (True, 7.0, 6000)
    with pytest.raises(ValueError, match="a shape needs gpus"):
        shape_demand({"cpu": 6})  # the device-only builtins take none
    with pytest.raises(ValueError, match="a shape needs gpus"):
        host_shape({"weight": 2})  # nor a shape asking nothing


def test_learned_host_shapes() -> None:
    from policyengine.model.fragmentation import Workload
    from policyengine.model.openb import node_object, pod_object
    from policyengine.model.parse import parse_node, parse_pod
    from policyengine.schedlib.context import CycleContext

    # 40 CPUs for 4 GPUs: 10 per GPU; the GPU pods ask 8 per GPU, so 2 per GPU are spare
    snap = ClusterSnapshot.build([parse_node(node_object("n", 40000, 65536, 4, "T4"))])
    workload = Workload(refresh=0.0)
    for name, cpu, gpus in [("g1", 8000, 1), ("g2", 8000, 1), ("c1", 4000, 0), ("c2", 6000, 0)]:
        workload.add_pod(parse_pod(pod_object(name, cpu, 1024, gpus, 1000 * gpus, ())))
    context = CycleContext(snap, PodView(parse_pod(pod_object("q", 1000, 1024, 1, 1000, ()))))
    context.workload = workload
    # the pods asking no GPU ask 10 CPUs for the 2 GPUs asked: 5 per GPU, 3 beyond the spare
    shapes = learned_host_shapes(context, 0.95)
    assert [(m.get("gpus"), m["cpu"], m["weight"]) for m in shapes] == [
        (1, 8, 2),
        (None, 3, 2),
    ]
    # with 64 CPUs (16 per GPU) the spare covers them: the GPU shapes alone
    roomy = ClusterSnapshot.build([parse_node(node_object("n", 64000, 65536, 4, "T4"))])
    context = CycleContext(roomy, context.pod)
    context.workload = workload
    assert [m["cpu"] for m in learned_host_shapes(context, 0.95)] == [8]


@pytest.mark.parametrize(
    ("shape", "error"),
    [
        (
            {"size": 1},
            "unknown shape key 'size' (expected one of gpus, cores, memory, memory_percent, cpu, host_memory, weight)",
        ),
        ({"weight": 2}, "a shape needs gpus, cores, memory or memory_percent"),
        ({"cores": -1}, "shape key 'cores' must not be negative"),
        (
            {"memory_percent": 150},
            "shape key 'memory_percent' must be at most 100 (a share of one device)",
        ),
    ],
    ids=["size=1", "weight=2", "cores=-1", "memory_percent=150"],
)
def test_bad_shapes(shape: dict[str, int], error: str) -> None:
    with pytest.raises(ValueError) as info:
        shape_demand(shape)
    assert str(info.value) == error


POLICY = """
policy "share" {
  let shapes = [{"cores": 25, "memory": 10Gi}, {"gpus": 1}]
  filter devices { gpu_fits(pod, node) } reason "no device"
  filter roomy { any(d.free_memory >= pod.gpu_request.memory for d in node.gpus) } reason "no memory"
  score frag weight 1 normalize minmax { 0 - (gpu_fragmentation_delta(pod, node, shapes) ?? 0) }
}
"""


def test_a_policy_places_the_pod_and_the_decision_names_its_device() -> None:
    result = compile_texts({"share.sched": POLICY}, default_schema())
    assert result.ok, result.diagnostics
    snap = cluster()
    decision = schedule(
        result.program, gpu_pod("q", share="cores=25,memory=10Gi"), snap, random.Random(0)
    )
    assert decision.node == "n1"
    assert [(g.uuid, g.cores, g.memory_mib) for g in decision.gpu_devices] == [
        ("n1-gpu0", 25, 10240)
    ]
    whole = schedule(result.program, gpu_pod("w", gpus=2), snap, random.Random(0))
    assert whole.node == "n2"
    assert [g.uuid for g in whole.gpu_devices] == ["n2-gpu0", "n2-gpu1"]
    assert dict(whole.infeasible)["n1"][0].rule == "devices"


def test_the_workload_keys_count_nothing_until_shapes_are_asked() -> None:
    from policyengine.model.openb import node_object, pod_object
    from policyengine.model.parse import parse_node, parse_pod
    from policyengine.schedlib import gpu
    from policyengine.schedlib.context import CycleContext
    from policyengine.schedlib.gpu import learned_gpu_shapes

    gpu.clear()
    running = [parse_pod(pod_object("g1", 8000, 1024, 1, 1000, ()))]
    running[0] = running[0].with_node_name("n")
    snap = ClusterSnapshot.build([parse_node(node_object("n", 40000, 65536, 4, "T4"))], running)
    context = CycleContext(snap, PodView(parse_pod(pod_object("q", 1000, 1024, 1, 1000, ()))))
    capacity = gpu.cluster_capacity(context)
    # No coverage asked yet: empty keys, and the running pods not counted for them.
    assert gpu._workload_key(context) == ()
    assert gpu._host_workload_key(context) == ((), capacity)
    assert not gpu._WORKLOADS
    asked = learned_gpu_shapes(context, 0.9)
    assert [m["gpus"] for m in asked] == [1]
    # Asked once: every later key names the shapes learned for that coverage.
    assert [coverage for coverage, _ in gpu._workload_key(context)] == [0.9]
    assert gpu._host_workload_key(context)[0][0][:2] == gpu._workload_key(context)[0]
    gpu.clear()
