"""The benchmark suite keeps working: every scenario at a tiny size, one run.

Nothing here is about speed (the machines are shared and noisy; figures belong in
``benchmarks/README.md``). What is checked: each scenario runs and returns the rows it
promises, the measured loop places pods exactly as ``simulate`` does, the reference check
looks at the pods it says it looks at, and ``--json`` writes something a later run can read.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks import (
    affinity,
    basic,
    bigsnapshot,
    e2e,
    e2e_mixed,
    e2e_slow,
    gangs,
    memory,
    mixed,
    reload,
    scaling,
    shapes,
    steady,
    storage,
)
from benchmarks import compile as compile_scenario
from benchmarks.__main__ import SCENARIOS, main
from benchmarks.agreement import Agreement, check
from benchmarks.harness import Measurement, notes, pending, percentile, render, to_json
from benchmarks.workload import Workload, build, evenly, place_all, place_alone, template_of
from policyengine.engine.simulate import simulate

pytestmark = pytest.mark.slow  # processes, servers or seconds of work

TINY = {"runs": 1, "scale": 0.0005, "check": 1, "nodes": 20}  # 5 pods on 20 nodes


def _metrics(rows: list[Measurement]) -> list[str]:
    return [r.metric for r in rows]


def _timed(rows: list[Measurement]) -> list[Measurement]:
    return [r for r in rows if not math.isnan(r.median)]


@pytest.mark.parametrize("scenario", [basic, affinity], ids=["basic", "affinity"])
def test_per_pod_scenario_reports_throughput_latency_memory_and_the_check(scenario) -> None:
    rows = scenario.run(**TINY)
    metrics = _metrics(rows)
    assert all(m.startswith("20 nodes, 5 pods: ") for m in metrics), metrics
    for suffix in (
        "throughput (wall)",
        "throughput (CPU time)",
        "per-pod latency p50",
        "per-pod latency p99",
        "peak RSS",
        "pods deciding as the reference evaluator",
    ):
        assert any(m.endswith(suffix) for m in metrics), suffix
    checked = next(r for r in rows if r.metric.endswith("reference evaluator"))
    assert checked.unit == "of 1"
    assert all(r.median > 0 for r in _timed(rows) if r.unit in ("pods/s", "ms", "MB"))


def test_scaling_reports_every_size_and_the_cost_per_node() -> None:
    rows = scaling.run(runs=1, scale=0.0002, check=0, sizes=(10, 20), base=10)
    for nodes in (10, 20):
        assert any(r.metric == f"{nodes} nodes, 2 pods: CPU time per pod per node" for r in rows)
    ratios = [r for r in rows if r.unit == "x"]
    assert [r.metric for r in ratios] == [
        "20 over 10 nodes, 2 pods: mean CPU per pod, ratio",
        "20 over 10 nodes, 2 pods: p50 per pod, ratio",
    ]
    assert all(r.median > 0 and r.target == "" for r in ratios)  # not the full sizes
    assert not any(r.metric.endswith("reference evaluator") for r in rows)  # check=0


def test_memory_reports_peak_and_held_rss_for_both_variants() -> None:
    rows = memory.run(runs=1, nodes=10, running=40)
    assert _metrics(rows) == [
        f"10 nodes, 40 running pods, {variant}: {what}"
        for variant in memory.VARIANTS
        for what in ("peak RSS", "RSS above an idle interpreter")
    ]
    assert all(r.median > 0 for r in rows)


def test_e2e_binds_pods_through_policyengine_run() -> None:
    rows = e2e.run(runs=1, scale=0.001, nodes=40)  # 5 pods
    if len(rows) == 1 and rows[0].metric.startswith("pending:"):
        pytest.skip(rows[0].metric)
    metrics = _metrics(rows)
    assert "40 nodes, 5 pods: bound pods per second" in metrics
    assert "40 nodes, 5 pods: start to last binding" in metrics
    assert "40 nodes, 5 pods: scheduler CPU per bound pod" in metrics
    assert "40 nodes, 5 pods: API server CPU per bound pod" in metrics
    assert "40 nodes, 5 pods: scheduler CPU per scheduling cycle" in metrics
    assert "40 nodes, 5 pods: scheduler CPU per bound pod outside its cycles" in metrics
    assert "40 nodes, 5 pods: pods bound (the others told FailedScheduling)" in metrics
    share = "40 nodes, 5 pods: the loop's own CPU over its cycles' CPU, per bound pod"
    assert [r.target for r in rows if r.metric == share] == [""]  # a target for e2e_mixed only
    assert not [m for m in metrics if "neither bound nor told" in m]


# The end-to-end variants: the mix under the shipped policies, and an API server slow to write.
E2E_VARIANTS = {
    "mixed pods": (e2e_mixed, "e2e_mixed", 0.004, 60, "60 nodes, 20 pods"),
    "slow writes": (e2e_slow, "e2e_slow", 0.001, 40, "40 nodes, 5 pods"),
}


@pytest.mark.parametrize(
    ("module", "scenario", "scale", "nodes", "head"), E2E_VARIANTS.values(), ids=E2E_VARIANTS
)
def test_e2e_variants_bind_their_pods(
    module: Any, scenario: str, scale: float, nodes: int, head: str
) -> None:
    rows = module.run(runs=1, scale=scale, nodes=nodes)
    if len(rows) == 1 and rows[0].metric.startswith("pending:"):
        pytest.skip(rows[0].metric)
    assert {r.scenario for r in rows} == {scenario}
    assert f"{head}: bound pods per second" in _metrics(rows)
    assert f"{head}: the loop's own CPU over its cycles' CPU, per bound pod" in _metrics(rows)
    assert not [m for m in _metrics(rows) if "neither bound nor told" in m]


def test_reload_times_a_configmap_update_through_policyengine_run() -> None:
    rows = reload.run(runs=1, scale=0.001, nodes=10, debounces=(0.05,))  # 1 waiting pod
    if len(rows) == 1 and rows[0].metric.startswith("pending:"):
        pytest.skip(rows[0].metric)
    head = "10 nodes, 1 waiting pod, debounce 50 ms: update to "
    assert _metrics(rows) == [
        head + "first binding by the new version",
        head + "binding of a pod created just after it",
    ]  # and no flag row: every binding was decided by the new version
    assert all(r.runs == 1 and r.median > 0 for r in rows)
    assert rows[0].target == reload.TARGET


def test_gangs_scenario_reports_member_throughput_latency_and_gangs_placed() -> None:
    rows = gangs.run(runs=1, scale=1.0, nodes=24, gangs=2)
    head = rows[0].metric.split(": ", 1)[0]
    # The generator draws each gang's size, so the pod count makes about two gangs.
    count = int(head.split(", ")[1].split(" of ")[0])
    assert head.startswith(f"24 nodes, {count} of {count} gangs (") and count >= 1
    assert all(r.metric.startswith(head + ": ") for r in rows), _metrics(rows)
    suffixes = [r.metric.split(": ", 1)[1] for r in rows]
    assert suffixes == [
        "member pods/s (wall)",
        "member pods/s (CPU time)",
        "per-gang latency p50",
        "per-gang latency p99",
        "gangs placed whole",
        "members deciding as the reference evaluator",
    ]
    assert all(r.median > 0 for r in rows[:4])
    assert rows[4].unit == f"of {count}" and 1 <= rows[4].median <= count
    # Every member compared (a gang placed holds at least 8) decided as the reference.
    assert (rows[5].unit, rows[5].median) == ("of 8", 8)
    assert "nan" not in render(rows)


def test_steady_times_a_class_s_cycle_at_each_count_of_changed_nodes() -> None:
    rows = steady.run(runs=1, scale=0.001, nodes=20)
    assert _metrics(rows) == [
        f"20 nodes, 10 pods placed, {changed} nodes changed: {what}"
        for changed in steady.CHANGED
        for what in ("CPU per cycle", "decides as the reference")
    ]
    assert all(r.median > 0 and r.unit == "µs" for r in rows[::2])
    assert all((r.median, r.unit) == (1, "of 1") for r in rows[1::2])


def test_storage_places_pods_with_claims_and_checks_them() -> None:
    rows = storage.run(runs=1, scale=0.01, check=2, nodes=40)
    assert [r.unit for r in rows] == ["pods/s"] * 5
    found = notes()["storage"]
    for kind in ("a local or zonal claim", "a zonal claim", "a local claim"):
        claimed = next(v for k, v in found.items() if f"with {kind}" in k)
        assert claimed["placed"] >= 2 and claimed["reference_differences"] == 0


def test_shapes_reshapes_every_cpu_app_and_checks_each_shape() -> None:
    objects, shape_of = shapes.reshaped(60, 150)
    assert set(shape_of.values()) == {*shapes.SHAPES, shapes.GPU_SHAPE}
    gpu_pods = [
        o
        for o in objects
        if o["kind"] == "Pod" and shape_of.get(o["metadata"]["name"]) == shapes.GPU_SHAPE
    ]
    assert gpu_pods and all(shapes.KIND not in o["metadata"]["labels"] for o in gpu_pods)
    rows = shapes.run(runs=1, scale=0.02, check=1, nodes=60)
    assert rows[0].unit == "pods/s" and rows[0].median > 0
    assert rows[1].median == len(shapes.SHAPES) + 1  # one pod of each shape, as the reference
    *by_shape, rollout, agreed = rows[2:]
    assert {r.metric.removeprefix("shape ").removesuffix(" (CPU time)") for r in by_shape} == {
        *shapes.SHAPES,
        shapes.GPU_SHAPE,
    }
    assert "DaemonSet rolled out to 50 of 60 nodes" in rollout.metric and rollout.median > 0
    assert agreed.median == 1 and agreed.unit == "of 1"


def test_compile_scenario_still_runs() -> None:
    rows = compile_scenario.run(runs=1)
    assert len(rows) == 3


def test_the_measured_loop_places_pods_as_simulate_does() -> None:
    cluster = build(Workload("affinity", 30, 12))
    placed = place_all(cluster, seed=3)
    simulated = simulate(cluster.program, cluster.snapshot, cluster.pending, seed=3)
    assert placed.nodes == [d.node for d in simulated.decisions]
    assert len(placed.latencies) == len(placed.cpu) == 12


def test_the_reference_check_sees_the_sampled_pods_with_the_rng_they_started_with() -> None:
    cluster = build(Workload("basic", 20, 6))
    agreement = Agreement()
    seen: list[str] = []

    def inspect(pod, decision, snapshot, state) -> None:  # type: ignore[no-untyped-def]
        seen.append(pod.key)
        check(agreement, cluster.program, pod, decision, snapshot, state)

    place_all(cluster, inspect=inspect, sample=evenly(3, 6))
    assert seen == [cluster.pending[i].key for i in (0, 2, 5)]
    assert agreement.checked == 3
    assert agreement.agreed + len(agreement.differences) == 3


def test_json_output_and_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["compile", "--runs", "1", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:2] == ["scenario", "metric"]
    document = json.loads(out.read_text())
    assert document["scenarios"] == ["compile"]
    assert {r["scenario"] for r in document["rows"]} == {"compile"}
    assert all(r["median"] > 0 for r in document["rows"])


def test_rows_without_numbers_print_and_serialise_as_blanks() -> None:
    row = pending("gangs", "something")
    assert row.metric == "pending: needs something"
    assert math.isnan(row.median)
    assert "nan" not in render([row])
    assert json.loads(to_json([row]))["rows"][0]["median"] is None


def test_every_scenario_is_registered() -> None:
    modules = {p.stem for p in Path(basic.__file__).parent.glob("*.py")}
    assert set(SCENARIOS) <= modules
    assert {"basic", "affinity", "scaling", "memory", "e2e", "reload", "gangs"} <= set(SCENARIOS)


def test_helpers() -> None:
    assert evenly(3, 10) == [0, 4, 9]
    assert evenly(5, 3) == [0, 1, 2]
    assert evenly(0, 3) == []
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0


def test_mixed_reports_the_mix_and_each_template_it_placed() -> None:
    rows = mixed.run(runs=1, scale=0.003, check=1, nodes=40)  # 30 pods
    templates = [r for r in rows if r.metric.startswith("template ")]
    assert templates and all(r.unit == "pods/s" and r.median > 0 for r in templates)
    alone = " on its own (CPU time)"
    own = {r.metric.removesuffix(alone) for r in templates if r.metric.endswith(alone)}
    in_mix = {r.metric.removesuffix(" (CPU time)") for r in templates if alone not in r.metric}
    assert own and own == in_mix  # each template the mix placed, placed on its own too
    assert any(r.metric.endswith("throughput (CPU time)") for r in rows)
    assert not any(r.target for r in rows if r.unit == "pods/s")  # full size only


@pytest.mark.parametrize(
    ("app", "template"),
    [
        ("web", "web"),
        ("web-3", "web"),
        ("gpu-share-half-1", "gpu-share-half"),  # the longest name it starts with
        ("webby", "webby"),  # no name followed by "-": its own
        ("", ""),
    ],
)
def test_template_of_names_the_template_an_app_comes_from(app: str, template: str) -> None:
    assert template_of(app, ["web", "gpu-share", "gpu-share-half"]) == template


def test_place_alone_places_each_template_s_pods_from_the_cluster_s_snapshot() -> None:
    cluster = build(Workload("mixed", 40, 30))
    names = ["web", "etcd", "gpu-share-half"]
    settled: list[int] = []
    by_template = place_alone(cluster, names, before=lambda: settled.append(len(settled)))
    assert len(settled) == len(by_template)  # once ahead of each template
    assert sum(len(placed.nodes) for placed in by_template.values()) == len(cluster.pending)
    for name, placed in by_template.items():
        pods = [p for p in cluster.pending if template_of(p.labels.get("app", ""), names) == name]
        # Alone, each group decides as a cluster whose queue holds only its pods.
        assert placed.nodes == place_all(replace(cluster, pending=tuple(pods))).nodes


def test_bigsnapshot_times_simulate_and_filter_on_a_dump_as_the_api_returns_it() -> None:
    rows = bigsnapshot.run(runs=1, scale=0.01, nodes=20)  # 6 pending pods, 174 running
    metrics = [row.metric.split(": ", 1)[1] for row in rows]
    assert metrics == ["simulate (wall)", "simulate peak RSS", "filter one pod (wall)"]
    assert all(row.median > 0 for row in rows)


def test_a_command_s_peak_rss_is_its_own_not_its_parent_s() -> None:
    # A child's ru_maxrss starts at the parent's size (Linux carries it over exec): a large
    # parent made a small command look large. 400 MiB held here, touched page by page.
    held = bytearray(400 * 2**20)
    held[::4096] = b"x" * len(held[::4096])
    _, peak_mib = bigsnapshot._timed(["lint", "policies/kube-default.sched"])
    assert 0 < peak_mib < 300
    del held
