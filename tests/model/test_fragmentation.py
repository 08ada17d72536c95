"""FGD fragmentation on nodes small enough to work out by hand: what each shape loses, the
device a share gets under each rule, the growth of a placement, and learned shapes.

Shapes throughout: a 50% share asking 4 CPUs (weight 3), a whole GPU asking 8 CPUs (weight 5),
a 25% share asking 2 CPUs (weight 2); weights total 10.
"""

from __future__ import annotations

from collections import Counter

import pytest

from policyengine.model import fragmentation as f
from policyengine.model.gpu_devices import (
    BEST_FIT,
    MOST_FREE,
    GpuDevice,
    Grant,
    NodeGpus,
    share,
    whole,
)

HALF, QUARTER = share(cores=50, memory_percent=50), share(cores=25, memory_percent=25)
SHAPES = (f.Shape(HALF, 3.0, 4000), f.Shape(whole(1), 5.0, 8000), f.Shape(QUARTER, 2.0, 2000))


def node(*free: int) -> NodeGpus:
    """Devices d0, d1, … with ``free`` percent of compute left on each."""
    gpus = NodeGpus.of([GpuDevice(i, f"d{i}", slots=100) for i in range(len(free))])
    for i, left in enumerate(free):
        if left < 100:
            gpus = gpus.with_grants(f"p{i}", [Grant(f"d{i}", 100 - left, 0)])
    return gpus


@pytest.mark.parametrize(
    ("free", "cpu", "expected"),
    [
        # every shape fits an empty device: nothing lost
        ((100, 100), 32000, 0.0),
        # d0 half used: the whole GPU loses its 0.5 (5 of 10)
        ((50, 100), 32000, 0.25),
        # both half used: the whole GPU fits nowhere: it loses all 1.0 free (5/10); shares fit
        ((50, 50), 32000, 0.5),
        # d0 at 30%: the half share loses 0.3 (3/10), the whole 0.3 (5/10), the quarter fits
        ((30, 100), 32000, 0.24),
        # 6 CPUs free: the whole GPU (8 CPUs) loses all 1.5 free (5/10), the rest fit
        ((50, 100), 6000, 0.75),
        # 3 CPUs free: the half share (4 CPUs) loses all too: (3 + 5) / 10 of 1.5
        ((50, 100), 3000, 1.2),
        # nothing free: nothing to lose
        ((0, 0), 32000, 0.0),
    ],
    ids=[
        "empty",
        "one-half-used",
        "both-half-used",
        "sliver",
        "cpu-short-whole",
        "cpu-short-half",
        "full",
    ],
)
def test_fragmentation(free: tuple[int, ...], cpu: int, expected: float) -> None:
    assert f.fragmentation(node(*free), cpu, 100_000, SHAPES) == pytest.approx(expected)


def test_memory_short_loses_everything_too() -> None:
    shapes = (f.Shape(QUARTER, 1.0, 0, 4096),)
    assert f.fragmentation(node(50, 100), 32000, 4096, shapes) == pytest.approx(0.0)
    assert f.fragmentation(node(50, 100), 32000, 4095, shapes) == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("free", "demand", "rule", "device"),
    [
        # best fit: the device left with least free (d1: 60 → 10)
        ((100, 60, 80), HALF, BEST_FIT, "d1"),
        # spread: the most free (d0)
        ((100, 60, 80), HALF, MOST_FREE, "d0"),
        # least fragmentation: d0 would leave 50 (the whole GPU loses 0.5), d1 leaves 10 (the
        # half and the quarter cannot use it, nor the whole: 0.1 everywhere), d2 leaves 30: d1
        ((100, 60, 80), HALF, f.LEAST_FRAGMENTATION, "d1"),
        # a quarter: on d1 (60 → 35) or d2 (80 → 55) the whole GPU already loses both; on d0
        # the whole GPU loses d0 too: d1 leaves 35 (the half cannot use it), d2 leaves 55 (all
        # fit): d2 grows least, though best fit would take d1
        ((100, 60, 80), QUARTER, f.LEAST_FRAGMENTATION, "d2"),
        ((100, 60, 80), QUARTER, BEST_FIT, "d1"),
        # whole GPUs take free devices, by index
        ((50, 100, 100), whole(1), f.LEAST_FRAGMENTATION, "d1"),
    ],
    ids=[
        "best-fit",
        "spread",
        "least-frag-half",
        "least-frag-quarter",
        "best-fit-quarter",
        "whole",
    ],
)
def test_device_choice(free, demand, rule, device) -> None:
    grants = f.choose_device(node(*free), demand, rule, SHAPES, 32000, 100_000)
    assert grants is not None and [g.uuid for g in grants] == [device]


def test_growth_counts_the_device_and_the_cpu_taken() -> None:
    gpus = node(50, 100)  # 0.25 before (see the table above)
    # a half share on d0: both full but d1: nothing lost (0), the CPU left (32 - 4) fits all
    grants = f.choose_device(gpus, HALF, BEST_FIT, SHAPES, 28000, 100_000)
    assert f.growth(gpus, 32000, 100_000, HALF, 4000, 0, SHAPES, grants) == pytest.approx(-0.25)
    # the same with 10 CPUs free: 6 left after, the whole GPU (8 CPUs) loses all of d1 (5/10)
    assert f.growth(gpus, 10000, 100_000, HALF, 4000, 0, SHAPES, grants) == pytest.approx(0.25)
    # a pod asking no GPU, 4 CPUs of 10: the whole GPU loses all 1.5 (5/10) instead of 0.5
    assert f.growth(gpus, 10000, 100_000, share(), 4000, 0, SHAPES, ()) == pytest.approx(0.5)


def test_placement_growth_is_none_where_no_device_has_room() -> None:
    assert (
        f.placement_growth(node(20, 30), 32000, 100_000, HALF, 0, 0, BEST_FIT, (), SHAPES) is None
    )


@pytest.mark.parametrize(
    ("counts", "coverage", "limit", "expected"),
    [
        # 10 pods: 6 + 3 cover 90%
        ({"a": 6, "b": 3, "c": 1}, 0.9, 8, [("a", 6.0), ("b", 3.0)]),
        ({"a": 6, "b": 3, "c": 1}, 0.95, 8, [("a", 6.0), ("b", 3.0), ("c", 1.0)]),
        ({"a": 6, "b": 3, "c": 1}, 0.5, 8, [("a", 6.0)]),
        ({"a": 6, "b": 3, "c": 1}, 1.0, 2, [("a", 6.0), ("b", 3.0)]),
        # equal counts: in the shapes' own order (b's 50% before c's 75%)
        ({"c": 2, "b": 2}, 0.5, 8, [("b", 2.0)]),
    ],
    ids=["coverage-90", "coverage-95", "coverage-50", "limit", "ties"],
)
def test_learned_shapes(counts, coverage, limit, expected) -> None:
    keys = {
        "a": (whole(1), 8000, 0),
        "b": (HALF, 4000, 0),
        "c": (share(cores=75, memory_percent=75), 2000, 0),
    }
    found = f.learned(Counter({keys[k]: v for k, v in counts.items()}), coverage, limit)
    assert [(s.demand, s.cpu_milli, s.weight) for s in found] == [
        (keys[k][0], keys[k][1], w) for k, w in expected
    ]


def test_a_workload_refreshes_its_shapes_as_it_grows() -> None:
    workload = f.Workload(refresh=0.5)
    key = (whole(1), 8000, 0)
    other = (HALF, 4000, 0)
    workload.extend([key, key])
    first = workload.shapes(1.0, 8)
    assert [s.weight for s in first] == [2.0]
    workload.add(other)  # 3 pods: not yet 50% more than 2
    assert workload.shapes(1.0, 8) is first
    workload.add(other)  # 4 pods: refreshed
    assert [(s.demand, s.weight) for s in workload.shapes(1.0, 8)] == [(HALF, 2.0), (whole(1), 2.0)]
    assert workload.state_key(8) == ((1.0, workload.shapes(1.0, 8)),)


def test_host_per_gpu_weighs_the_shapes() -> None:
    # GPUs asked: 3 x 0.5 + 5 x 1 + 2 x 0.25 = 7; CPU: 3 x 4 + 5 x 8 + 2 x 2 = 56 cores
    assert f.host_per_gpu(SHAPES) == pytest.approx((8000.0, 0.0))
    with_memory = (f.Shape(whole(1), 1.0, 0, 16384), f.Shape(whole(2), 1.0, 0, 16384))
    assert f.host_per_gpu(with_memory) == pytest.approx((0.0, 32768 / 3))
    assert f.host_per_gpu(()) == (0.0, 0.0)
    assert f.host_per_gpu((f.Shape(share(), 1.0, 4000),)) == (0.0, 0.0)  # asks no GPU


@pytest.mark.parametrize(
    ("free", "cpu", "memory", "expected"),
    [
        # 32 CPUs accompany 4 GPUs at 8 per GPU: both free GPUs are served
        ((100, 100), 32000, 0, 0.0),
        # 8 CPUs accompany one of the two
        ((100, 100), 8000, 0, 1.0),
        # 1.5 free, 4 CPUs accompany 0.5
        ((50, 100), 4000, 0, 1.0),
        # no CPU left (or less than none): every free GPU is stranded
        ((100, 50), -1000, 0, 1.5),
        # nothing free: nothing stranded
        ((0, 0), 0, 0, 0.0),
    ],
    ids=["cpu-to-spare", "cpu-for-one", "partial", "no-cpu", "full"],
)
def test_stranded(free, cpu, memory, expected) -> None:
    assert f.stranded(node(*free), cpu, memory, SHAPES) == pytest.approx(expected)


def test_memory_strands_too() -> None:
    shapes = (f.Shape(whole(1), 1.0, 0, 16384),)  # 16 GiB of host memory per GPU
    assert f.stranded(node(100, 100), 0, 16384, shapes) == pytest.approx(1.0)
    assert f.stranded(node(100, 100), 0, 40000, shapes) == 0.0


def test_stranding_growth() -> None:
    gpus = node(100, 100)  # 12 CPUs accompany 1.5 of the 2 free GPUs: 0.5 stranded
    # a quarter share with 4 CPUs: 1.75 free, 8 CPUs accompany 1: 0.75 stranded
    assert f.stranding_growth(gpus, 12000, 0, QUARTER, 4000, 0, SHAPES) == pytest.approx(0.25)
    # a pod asking no GPU and 8 CPUs: 2 free, 4 CPUs accompany 0.5: 1.5 stranded
    assert f.stranding_growth(gpus, 12000, 0, share(), 8000, 0, SHAPES) == pytest.approx(1.0)
    # a whole GPU with 8 CPUs: 1 free, 4 CPUs accompany 0.5: 0.5 stranded, as before
    assert f.stranding_growth(gpus, 12000, 0, whole(1), 8000, 0, SHAPES) == pytest.approx(0.0)
    # with CPU to spare nothing changes
    assert f.stranding_growth(gpus, 64000, 0, share(), 8000, 0, SHAPES) == 0.0


def test_the_batch_of_stranding_growths_is_each_nodes() -> None:
    from policyengine.model.openb import node_object
    from policyengine.model.parse import parse_node
    from policyengine.model.snapshot import ClusterSnapshot

    snap = ClusterSnapshot.build(
        [
            parse_node(node_object(f"n{cpu}", cpu, memory, gpus, "T4"))
            for cpu, memory, gpus in [(8000, 1024, 2), (12000, 65536, 2), (64000, 8192, 4)]
        ]
    )
    infos = snap.nodes
    with_memory = (*SHAPES, f.Shape(whole(1), 1.0, 0, 4096))
    for shapes in (SHAPES, with_memory):
        for demand, cpu, memory in [(QUARTER, 4000, 512), (share(), 8000, 0), (whole(2), 1000, 0)]:
            batch = f.stranding_growths(infos, demand, cpu, memory, shapes)
            each = [
                f.stranding_growth(i.gpus, *f.host_free(i), demand, cpu, memory, shapes)
                for i in infos
            ]
            assert batch == pytest.approx(each)


# --- the CPU pods asking no GPU take from the GPU pods ------------------------------------------
# SHAPES ask 8 CPUs per GPU (56 cores for 7 GPUs).


@pytest.mark.parametrize(
    ("host_only", "cluster_cpu", "cluster_gpus", "expected"),
    [
        # 10 CPUs per GPU: 2 to spare per GPU cover the 1.5 the CPU pods ask
        (1500, 40000, 4, 0),
        # they ask 5 per GPU: 3 beyond the 2 to spare
        (5000, 40000, 4, 3000),
        # 6 CPUs per GPU, fewer than the shapes ask: nothing to spare, all 5 count
        (5000, 24000, 4, 5000),
        # no pod asking no GPU, or no GPUs: nothing
        (0, 24000, 4, 0),
        (5000, 24000, 0, 0),
    ],
    ids=["spare-covers", "beyond-spare", "no-spare", "no-cpu-pods", "no-gpus"],
)
def test_host_only_excess(host_only, cluster_cpu, cluster_gpus, expected) -> None:
    assert f.host_only_excess(SHAPES, host_only, cluster_cpu, cluster_gpus) == expected


def test_with_host_only_adds_the_excess_as_a_shape_asking_no_gpu() -> None:
    shapes = f.with_host_only(SHAPES, 5000, 40000, 4, 64)
    # the excess (3 CPUs per GPU) weighted by the 7 GPUs the shapes ask
    assert shapes == (*SHAPES, f.Shape(whole(0), 7.0, 3000, 0))
    assert f.with_host_only(SHAPES, 5000, 40000, 4, 64) is shapes  # kept: found again
    assert f.host_per_gpu(shapes) == pytest.approx((11000.0, 0.0))
    # no excess: the shapes themselves
    assert f.with_host_only(SHAPES, 1500, 40000, 4, 64) is SHAPES
    # at most ``limit``: the least common GPU shape gives way
    assert f.with_host_only(SHAPES, 5000, 40000, 4, 3)[:2] == SHAPES[:2]
    assert len(f.with_host_only(SHAPES, 5000, 40000, 4, 3)) == 3


def test_fragmentation_skips_a_shape_asking_no_gpu() -> None:
    shapes = (*SHAPES, f.Shape(whole(0), 7.0, 3000, 0))
    assert f.fragmentation(node(50, 100), 32000, 0, shapes) == pytest.approx(0.25)
    assert f.fragmentation(node(50, 100), 6000, 0, shapes) == pytest.approx(0.75)
    # stranding counts its CPU: 11 CPUs per GPU, 12 CPUs accompany 12/11 of 2 free GPUs
    assert f.stranded(node(100, 100), 12000, 0, shapes) == pytest.approx(2 - 12 / 11)


def test_a_workload_counts_the_cpu_of_pods_asking_no_gpu() -> None:
    from policyengine.model.openb import pod_object
    from policyengine.model.parse import parse_pod

    workload = f.Workload(refresh=0.5)
    workload.add_pod(parse_pod(pod_object("g", 8000, 1024, 1, 1000, ())))
    workload.add_pod(parse_pod(pod_object("h", 4000, 1024, 1, 500, ())))
    workload.add_pod(parse_pod(pod_object("c", 6000, 1024, 0, 0, ())))
    assert (workload.total, workload.host_only_cpu, workload.host_only_pods) == (2, 6000, 1)
    # 6 CPUs per the 1.5 GPUs the GPU pods ask
    assert workload.host_only_per_gpu(1.0, 8) == pytest.approx(4000.0)
    workload.add_pod(parse_pod(pod_object("d", 6000, 1024, 0, 0, ())))
    # as it was when the shapes were learned: they are not refreshed yet (2 GPU pods)
    assert workload.host_only_per_gpu(1.0, 8) == pytest.approx(4000.0)
    workload.add_pod(parse_pod(pod_object("e", 3000, 1024, 1, 1000, ())))
    assert workload.host_only_per_gpu(1.0, 8) == pytest.approx(4000.0)  # 3: not 50% more
    workload.add_pod(parse_pod(pod_object("f", 3000, 1024, 1, 1000, ())))  # 4: refreshed
    assert workload.host_only_per_gpu(1.0, 8) == pytest.approx(12000 / 3.5)
    assert workload.host_state_key(8) == (
        (1.0, workload.shapes(1.0, 8), pytest.approx(12000 / 3.5)),
    )


@pytest.mark.parametrize(
    ("later", "carried"),
    [
        pytest.param([(6000, 0, 0)], True, id="a pod asking no gpu: shapes carried"),
        pytest.param([], True, id="the same pods: shapes carried"),
        pytest.param([(2000, 1, 250)], False, id="a gpu pod: shapes learned anew"),
    ],
)
def test_a_workload_learns_as_another_what_a_fresh_one_would(
    later: list[tuple[int, int, int]], carried: bool
) -> None:
    # A snapshot's workload is made afresh for each snapshot and asked every coverage its
    # predecessor was: carried or learned, its shapes and CPU per GPU are a fresh one's.
    from policyengine.model.openb import pod_object
    from policyengine.model.parse import parse_pod

    pods = [(8000, 1, 1000), (4000, 1, 500), (4000, 1, 500), (6000, 0, 0)]

    def made(spec: list[tuple[int, int, int]]) -> f.Workload:
        workload = f.Workload(refresh=0.0)
        for i, (cpu, gpus, milli) in enumerate(spec):
            workload.add_pod(parse_pod(pod_object(f"p{i}", cpu, 1024, gpus, milli, ())))
        return workload

    before = made(pods)
    before.shapes(0.9, 8)
    before.shapes(1.0, 4)
    after = made(pods + later)
    after.learn_as(before)
    fresh = made(pods + later)
    fresh.shapes(0.9, 8)
    fresh.shapes(1.0, 4)
    assert after.host_state_key(8) == fresh.host_state_key(8)
    assert after.host_state_key(4) == fresh.host_state_key(4)
    assert (after.shapes(0.9, 8) is before.shapes(0.9, 8)) == carried


@pytest.mark.parametrize(
    ("pods", "kept"),
    [
        pytest.param(4, True, id="the same GPU pods: kept"),
        pytest.param(5, True, id="grown by less than the refresh: kept"),
        pytest.param(7, False, id="grown by more: learned anew"),
        pytest.param(3, True, id="shrunk by less than the refresh: kept"),
        pytest.param(2, False, id="shrunk by more: learned anew"),
    ],
)
def test_a_refreshing_workload_keeps_the_shapes_another_learned_until_its_count_moves(
    pods: int, kept: bool
) -> None:
    # The live path makes a workload afresh for each snapshot: a few pods placed or deleted
    # since the last one leave the shapes, and the CPU per GPU beside them, as they were.
    from policyengine.model.openb import pod_object
    from policyengine.model.parse import parse_pod

    def made(gpu_pods: int, cpu_pods: int) -> f.Workload:
        workload = f.Workload(refresh=0.5)
        for i in range(gpu_pods):
            cpu, milli = (8000, 1000) if i % 2 else (4000, 500)
            workload.add_pod(parse_pod(pod_object(f"g{i}", cpu, 1024, 1, milli, ())))
        for i in range(cpu_pods):
            workload.add_pod(parse_pod(pod_object(f"c{i}", 6000, 1024, 0, 0, ())))
        return workload

    before = made(4, 1)
    learned = before.shapes(1.0, 8)
    after = made(pods, 3)
    after.learn_as(before)
    assert (after.shapes(1.0, 8) is learned) is kept
    if kept:
        assert after.host_state_key(8) == before.host_state_key(8)
    else:
        fresh = made(pods, 3)
        fresh.shapes(1.0, 8)
        assert after.host_state_key(8) == fresh.host_state_key(8)


def test_a_pod_s_host_and_shape_are_kept_on_it_and_not_on_a_replaced_copy() -> None:
    import dataclasses

    from policyengine.model.openb import pod_object
    from policyengine.model.parse import parse_pod

    pod = parse_pod(pod_object("g", 8000, 2048, 1, 500, ()))
    assert f.pod_host(pod) == (8000, 2048)
    assert f.pod_host(pod) is f.pod_host(pod)  # computed once
    shape = f.shape_key(pod)
    assert shape is not None and shape[1:] == (8000, 0)
    other = parse_pod(pod_object("h", 2000, 1024, 0, 0, ()))
    moved = dataclasses.replace(pod, containers=other.containers, annotations=other.annotations)
    assert f.pod_host(moved) == (2000, 1024)  # the copy's own requests, not the kept ones
    assert f.shape_key(moved) is None
    assert f.shape_key(other) is None and f.shape_key(other) is None  # a kept None
