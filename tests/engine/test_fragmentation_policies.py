"""The FGD builtins and the ``device`` statement through the engine: the fast path (batch
forms, per-class columns kept between cycles) decides as the reference evaluator on generated
GPU clusters and arrivals, and the device a pod is given is the one the builtins measured."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gpu_placement import device_choice_for, with_devices
from policyengine.lang.compiler import Program, compile_texts
from policyengine.lang.runtime import Env
from policyengine.model.fragmentation import Workload
from policyengine.model.objects import Pod
from policyengine.model.openb import node_object, pod_object
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView
from tests.engine.agreement import decide_beside_the_reference

SHAPES = '[{"cores": 50, "cpu": 4, "weight": 3}, {"gpus": 1, "cpu": 8, "weight": 5}, {"cores": 25, "cpu": 2, "weight": 2}]'
DEVICES = [
    "",
    "device best_fit",
    "device spread",
    "device least_fragmentation { shapes }",
    "device least_fragmentation { learned_gpu_shapes(0.9) }",
]
SELECTS = [
    "",
    "select lowest { node.name }",
    "select highest { gpu_allocated_after(pod, node) ?? 0 }",
]
SHAPE_LETS = [f"let shapes = {SHAPES}", "let shapes = learned_gpu_shapes(0.95)"]
# Shapes for stranding with pods asking no GPU: declared (one asking 6 CPUs, no GPU), learned.
HOST_SHAPES = SHAPES[:-1] + ', {"cpu": 6, "weight": 7}]'
HOST_LETS = [
    f"let host_shapes = {HOST_SHAPES}",
    "let host_shapes = learned_host_shapes(0.95)",
    "let host_shapes = []",
]


def program(device: str, select: str, shapes: str, host: str = HOST_LETS[1]) -> Program:
    source = f"""
policy "p" {{
  {shapes}
  {host}
  {device}
  {select}
  filter fits {{ gpu_fits(pod, node) }} reason "no device"
  filter cpu {{ node.free["cpu"] >= pod.requests["cpu"] }} reason "no cpu"
  score growth weight 3 normalize minmax {{ 0 - (gpu_fragmentation_growth(pod, node, shapes) ?? 0) }}
  score level weight 1 normalize minmax {{ 0 - gpu_fragmentation_fgd(node, shapes) }}
  score device weight 1 {{ gpu_device(pod, node) ?? 0 }}
  score stranding weight 2 normalize minmax {{ 0 - gpu_stranding_growth(pod, node, shapes) }}
  score stranded weight 1 normalize minmax {{ 0 - gpu_stranded(node, shapes) }}
  score placement weight 2 normalize none {{ gpu_placement_score(pod, node, shapes, host_shapes) ?? 0 }}
  score host weight 1 normalize minmax {{ 0 - gpu_stranding_growth(pod, node, host_shapes) }}
}}
"""
    result = compile_texts({"p.sched": source}, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def t4_cluster(cluster: list[tuple[int, int]]) -> ClusterSnapshot:
    """T4 nodes of (GPUs, CPU millicores) each, 64 GiB of memory."""
    return ClusterSnapshot.build(
        [
            parse_node(node_object(f"n{i}", cpu, 65536, gpus, "T4"))
            for i, (gpus, cpu) in enumerate(cluster)
        ]
    )


nodes_st = st.lists(
    st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([8000, 16000, 32000])),
    min_size=1,
    max_size=5,
)
# An arriving pod: GPUs (0: none), GPU compute in millis for a one-GPU share, CPU millicores.
arrival = st.tuples(
    st.sampled_from([0, 1, 1, 2]),
    st.sampled_from([1000, 250, 500, 600, 100]),
    st.sampled_from([1000, 2000, 4000, 8000]),
)
pods_st = st.lists(arrival, min_size=1, max_size=12)
# Long enough for the learned shapes to move under columns a class keeps.
long_arrivals = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 1, 2]),
        st.sampled_from([1000, 250, 500, 600, 100]),
        st.sampled_from([1000, 2000, 4000]),
    ),
    min_size=8,
    max_size=24,
)


def arriving_pod(index: int, gpus: int, milli: int, cpu: int) -> Pod:
    """The ``index``-th arrival: a whole GPU unless it asks exactly one, which it may share."""
    milli = 1000 if gpus != 1 else milli
    return parse_pod(pod_object(f"p{index}", cpu, 1024, gpus, milli if gpus else 0, ()))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    device=st.sampled_from(DEVICES),
    select=st.sampled_from(SELECTS),
    shapes=st.sampled_from(SHAPE_LETS),
    host=st.sampled_from(HOST_LETS),
    cluster=nodes_st,
    arrivals=pods_st,
    seed=st.integers(0, 9),
)
def test_fast_path_decides_as_the_reference(
    device, select, shapes, host, cluster, arrivals, seed
) -> None:
    prog = program(device, select, shapes, host)
    snap = t4_cluster(cluster)
    rng = random.Random(seed)
    workload = Workload(refresh=0.0)
    for index, arrived in enumerate(arrivals):
        pod = arriving_pod(index, *arrived)
        workload.add_pod(pod)
        options = CycleOptions(all_filters=False, workload=workload)
        decision, _ = decide_beside_the_reference(prog, pod, snap, rng, options)
        if decision.node is None:
            continue
        # The device the pod is given is the one gpu_device named on that node.
        context = CycleContext(snap, PodView(pod))
        context.workload = workload
        policy = prog.policies[0]
        context.device_choice = device_choice_for(policy, pod, Env({"pod": context.pod}, context))
        info = snap.node(decision.node)
        named = prog.policies[0].scores[2]
        if decision.gpu_devices:
            index_of = {u.device.uuid: u.device.index for u in info.gpus.uses}
            env = Env({"pod": context.pod, "node": NodeView(info)}, context)
            assert named.score(env).value == index_of[decision.gpu_devices[0].uuid]
        snap = snap.with_pod(with_devices(pod, decision.node, decision.gpu_devices), decision.node)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    device=st.sampled_from(DEVICES),
    select=st.sampled_from(SELECTS),
    host=st.sampled_from(HOST_LETS),
    cluster=nodes_st,
    arrivals=long_arrivals,
    seed=st.integers(0, 9),
)
def test_shapes_learned_from_the_snapshot_follow_it_through_a_class_cache(
    device, select, host, cluster, arrivals, seed
) -> None:
    # As ``simulate`` and ``run`` decide: no replay workload, the shapes learned from the pods
    # the snapshot holds, which every placement changes; the columns kept between cycles must
    # be recomputed when the learned shapes they read moved.
    prog = program(device, select, SHAPE_LETS[1], host)
    snap = t4_cluster(cluster)
    rng = random.Random(seed)
    classes = ClassCache()
    options = CycleOptions(all_filters=False, cache=classes)
    for index, arrived in enumerate(arrivals):
        pod = arriving_pod(index, *arrived)
        decision, _ = decide_beside_the_reference(prog, pod, snap, rng, options)
        if decision.node is not None:
            placed = with_devices(pod, decision.node, decision.gpu_devices)
            snap = snap.with_pod(placed, decision.node)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_running_workload_is_counted_as_a_recount_would_through_derived_snapshots(
    data: st.DataObject,
) -> None:
    # The counts are kept per node and corrected for the pods placed and removed since: after
    # any walk of derived snapshots they equal counting every running pod again.
    from policyengine.schedlib.gpu import workload

    names = [f"n{i}" for i in range(data.draw(st.integers(1, 4)))]
    snap = ClusterSnapshot.build(
        [parse_node(node_object(n, 32000, 262144, 8, "V100")) for n in names]
    )
    shapes = st.sampled_from([(0, 0), (1, 1000), (1, 500), (1, 250), (2, 1000)])
    placed: list[str] = []
    for index in range(data.draw(st.integers(1, 12))):
        if placed and data.draw(st.booleans()):
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        else:
            gpus, milli = data.draw(shapes)
            pod = parse_pod(pod_object(f"p{index}", 1000 * (index % 3 + 1), 1024, gpus, milli, ()))
            node = data.draw(st.sampled_from(names))
            snap = snap.with_pod(pod.with_node_name(node), node)
            placed.append(pod.key)
        ctx = CycleContext(snap, PodView(parse_pod(pod_object("q", 1000, 1024, 1, 1000, ()))))
        expected = Workload(refresh=0.0)
        for info in snap.nodes:
            for p in info.pods:
                expected.add_pod(p.pod)
        counted = workload(ctx)
        assert +counted.counts == +expected.counts and counted.total == expected.total
        assert (counted.host_only_cpu, counted.host_only_pods) == (
            expected.host_only_cpu,
            expected.host_only_pods,
        )
