"""Gangs: all-or-nothing inside one topology domain, tiers, best fit, late members, messages."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine import synthetic
from policyengine.engine import gangs as gangs_module
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.gangs import Gang, GangDecision, gangs_of, schedule_gang
from policyengine.engine.simulate import simulate
from policyengine.lang.compiler import Program, compile_paths, compile_texts
from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node
from policyengine.model.podgroup import POD_GROUP_LABEL, PodGroup, pod_group_key
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.quantity import parse_quantity
from policyengine.schedlib import default_schema
from tests.engine.gang_builders import (
    CLIQUE,
    FITS,
    GPU,
    RACK,
    cluster,
    gang,
    gpu_node,
    member,
    program,
)
from tests.model.builders import make_node, make_pod, node_dict
from tests.model.gpu_builders import gpu_node as shared_gpu_node
from tests.model.gpu_builders import gpu_pod as shared_gpu_pod

POLICIES = Path(__file__).resolve().parents[2] / "policies"


def ready_node(name: str, **kwargs: Any) -> Node:
    obj = node_dict(name, **kwargs)
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return parse_node(obj)


def place(prog: Program, g: Gang, snap: ClusterSnapshot) -> GangDecision:
    return schedule_gang(prog, g, snap, random.Random(0))


def nodes_of(decision: GangDecision) -> list[str | None]:
    return [d.node for d in decision.placements]


# --- all or nothing ----------------------------------------------------------------------


def test_a_gang_that_cannot_fit_places_nobody_and_says_so_once() -> None:
    snap = cluster(("c1", "r1", 2))
    decision = place(program("gang {}"), gang("job", 3), snap)
    assert not decision.scheduled
    assert nodes_of(decision) == [None, None, None]
    message = (
        "gang default/job cannot be placed: 3 members must fit together: the whole cluster: "
        "only 2 of the 3 members needed fit: default/job-2: "
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )
    assert decision.message == message
    assert {d.message for d in decision.placements} == {message}


def test_the_input_snapshot_is_never_changed() -> None:
    snap = cluster(("c1", "r1", 4))
    before = (snap.generation, dict(snap.pod_nodes))
    decision = place(program("gang { within nvlink_domain }"), gang("job", 3), snap)
    assert decision.scheduled
    assert (snap.generation, dict(snap.pod_nodes)) == before


def test_two_gangs_competing_for_one_rack_one_is_placed_whole_the_other_not_at_all() -> None:
    nodes = [gpu_node(f"n{i}", rack="r1") for i in range(4)]
    pending = [member("a", i) for i in range(3)] + [member("b", i) for i in range(3)]
    groups = [PodGroup("default", g, 3, None) for g in ("a", "b")]
    snap = ClusterSnapshot.build(nodes, pod_groups=groups)
    result = simulate(program("gang { within rack required }"), snap, pending, seed=0)
    placed = {d.pod: d.node for d in result.decisions}
    assert all(placed[f"default/a-{i}"] is not None for i in range(3))
    assert all(placed[f"default/b-{i}"] is None for i in range(3))
    a, b = result.gangs
    assert (a.scheduled, a.domain) == (True, ("rack", "r1"))
    assert not b.scheduled
    assert b.message == (
        "gang default/b cannot be placed: 3 members must fit together in one rack: "
        "1 rack domain(s) too small."
    )
    assert len(result.snapshot.pod_nodes) == 3


def test_min_member_below_the_gang_size_keeps_the_members_that_fit() -> None:
    snap = cluster(("c1", "r1", 3))
    decision = place(program("gang {}"), gang("job", 4, min_member=2), snap)
    assert decision.scheduled
    assert sorted(n for n in nodes_of(decision) if n) == ["c1-0", "c1-1", "c1-2"]
    assert nodes_of(decision).count(None) == 1


def test_a_gang_missing_members_waits() -> None:
    snap = cluster(("c1", "r1", 4))
    g = Gang("default/job", 4, None, tuple(member("job", i) for i in range(2)))
    decision = place(program("gang {}"), g, snap)
    assert not decision.scheduled
    assert decision.message == (
        "gang default/job has 2 of its 4 members (minMember); waiting for the rest"
    )


# --- spec.minResources (coscheduling's PreFilter) -----------------------------------------

OTHER = make_pod("other", requests={GPU: "8", "cpu": "60"}, node_name="c1-0")


def _with_min_resources(
    size: int, wanted: dict[str, str], placed: int = 0, min_member: int | None = None
) -> Gang:
    members = [member("job", i) for i in range(size)]
    on = tuple((replace(p, node_name=f"c1-{i}"), f"c1-{i}") for i, p in enumerate(members[:placed]))
    return Gang(
        "default/job",
        size if min_member is None else min_member,
        None,
        tuple(members[placed:]),
        on,
        min_resources=FrozenDict({k: parse_quantity(v) for k, v in wanted.items()}),
    )


@pytest.mark.parametrize(
    ("wanted", "running", "placed", "min_member", "gap"),
    [
        ({GPU: "16"}, (), 0, None, ""),  # two 8-GPU nodes: exactly enough
        ({GPU: "24"}, (), 0, None, "nvidia.com/gpu short by 8"),
        ({GPU: "16"}, (OTHER,), 0, None, "nvidia.com/gpu short by 8"),  # held by another pod
        (
            {GPU: "16", "cpu": "100"},
            (OTHER,),
            0,
            None,
            "cpu short by 32, nvidia.com/gpu short by 8",
        ),
        # The gang's own placed member holds 8 GPUs that count as free for the check.
        ({GPU: "16"}, (), 1, None, ""),
        # pods: minMember, against each node's allocatable pods (110) less the pods on it.
        ({"cpu": "1"}, (), 0, 221, "pods short by 1"),
        ({}, (OTHER,), 0, None, ""),  # no minResources: no check
    ],
    ids=[
        "exactly-enough",
        "gpus-short",
        "gpus-held-by-another",
        "cpu-and-gpus-short",
        "own-member-counts-as-free",
        "pods-short",
        "no-min-resources",
    ],
)
def test_min_resources_are_checked_against_the_clusters_free_resources(
    wanted: dict[str, str],
    running: tuple[Pod, ...],
    placed: int,
    min_member: int | None,
    gap: str,
) -> None:
    g = _with_min_resources(2 if min_member is None else min_member, wanted, placed)
    snap = ClusterSnapshot.build(
        [gpu_node("c1-0", "c1"), gpu_node("c1-1", "c1")], [*running, *(p for p, _ in g.placed)]
    )
    short = ", ".join(
        f"{n} short by {v}" for n, v in gangs_module.min_resources_gap(snap, g).items()
    )
    assert short == gap
    decision = place(program("gang {}"), g, snap)
    if gap:
        assert not decision.scheduled
        assert decision.message == (
            f"gang default/job: the cluster has not got its spec.minResources free ({gap})"
        )
    elif not running and min_member is None:
        assert decision.scheduled


# --- topology tiers ----------------------------------------------------------------------

TIERS = "gang { within nvlink_domain, rack required }"


@pytest.mark.parametrize(
    ("size", "domain"),
    [
        (2, ("nvlink_domain", "c1")),  # the first clique (name order: no score) holds two
        (3, ("nvlink_domain", "c2")),  # c1 is too small; c2 is the first with three nodes
        (5, ("rack", "r1")),  # no clique is that large; rack r1 (c1 + c2) is
        (7, None),  # nothing is, and the last level is required
    ],
    ids=["2-in-the-first-clique", "3-in-the-next-clique", "5-in-a-rack", "7-nowhere"],
)
def test_the_lowest_level_that_fits_wins(size: int, domain: tuple[str, str] | None) -> None:
    snap = cluster(("c1", "r1", 2), ("c2", "r1", 3), ("c3", "r2", 3))
    decision = place(program(TIERS), gang("job", size), snap)
    assert decision.domain == domain
    assert decision.scheduled == (domain is not None)
    if domain is not None:
        key = CLIQUE if domain[0] == "nvlink_domain" else RACK
        allowed = {info.name for info in snap.nodes if info.labels.get(key) == domain[1]}
        assert {d.node for d in decision.placements} <= allowed


def test_without_required_the_gang_falls_back_to_the_whole_cluster() -> None:
    snap = cluster(("c1", "r1", 2), ("c2", "r2", 2))
    decision = place(program("gang { within nvlink_domain, rack }"), gang("job", 4), snap)
    assert decision.scheduled
    assert decision.domain is None
    assert [o.outcome for o in decision.domains][-1] == "placed"
    assert decision.domains[-1].label == "the whole cluster"


def test_a_required_level_no_node_is_labelled_with_is_reported() -> None:
    snap = ClusterSnapshot.build([gpu_node("n0"), gpu_node("n1")])
    decision = place(program("gang { within block required }"), gang("job", 2), snap)
    assert not decision.scheduled
    assert decision.message == (
        "gang default/job cannot be placed: 2 members must fit together in one block: "
        "no node has a block label."
    )


# --- domain rules ------------------------------------------------------------------------

BEST_FIT = """gang {
    within nvlink_domain required
    score best_fit when domain.free["nvidia.com/gpu"] > 0 {
      100 * gang.requests["nvidia.com/gpu"] / domain.free["nvidia.com/gpu"]
    }
  }"""


def test_best_fit_picks_the_domain_left_with_the_least() -> None:
    snap = cluster(("big", "r1", 4), ("small", "r1", 2))
    assert place(
        program("gang { within nvlink_domain required }"), gang("job", 2), snap
    ).domain == (
        "nvlink_domain",
        "big",
    )
    decision = place(program(BEST_FIT), gang("job", 2), snap)
    assert decision.domain == ("nvlink_domain", "small")
    scores = {o.name: o.score for o in decision.domains}
    assert scores == {"small": 100.0}  # the first domain tried was placed


def test_a_gang_filter_rejects_a_domain_with_its_reason() -> None:
    block = """gang {
    within nvlink_domain required
    filter spare_node {
      domain.nodes > gang.pending
    } reason "{domain.name} has {domain.nodes} nodes, the gang {gang.pending} members"
  }"""
    snap = cluster(("c1", "r1", 2), ("c2", "r1", 3))
    decision = place(program(block), gang("job", 2), snap)
    assert decision.domain == ("nvlink_domain", "c2")
    rejected = [o for o in decision.domains if o.outcome == "rejected"]
    assert [(o.name, o.detail) for o in rejected] == [
        ("c1", "spare_node: c1 has 2 nodes, the gang 2 members")
    ]
    failed = place(program(block), gang("job", 3), snap)
    assert failed.message == (
        "gang default/job cannot be placed: 3 members must fit together in one nvlink_domain: "
        "1 nvlink_domain domain(s) too small; 1 nvlink_domain domain(s) rejected by spare_node."
    )


def test_members_land_on_distinct_gpus() -> None:
    # Two 4-GPU members fill one 8-GPU node; a third cannot share its GPUs.
    snap = cluster(("c1", "r1", 1))
    ok = place(program("gang { within nvlink_domain required }"), gang("two", 2, gpus=4), snap)
    assert nodes_of(ok) == ["c1-0", "c1-0"]
    too_many = place(
        program("gang { within nvlink_domain required }"), gang("three", 3, gpus=4), snap
    )
    assert not too_many.scheduled


# --- late members ------------------------------------------------------------------------


def test_late_members_join_the_domain_of_the_placed_ones() -> None:
    nodes = [gpu_node(f"c1-{i}", "c1", "r1") for i in range(4)] + [
        gpu_node(f"c2-{i}", "c2", "r1") for i in range(2)
    ]
    running = member("job", 0, node="c2-0")
    snap = ClusterSnapshot.build(nodes, [running], pod_groups=[PodGroup("default", "job", 2, None)])
    pending = [member("job", 1), member("job", 2)]
    (unit,) = gangs_of(pending, snap)
    assert isinstance(unit, Gang)
    assert unit.placed == ((running, "c2-0"),)
    decision = place(program(TIERS), unit, snap)
    assert decision.scheduled
    assert decision.domain == ("nvlink_domain", "c2")
    assert nodes_of(decision) == ["c2-1", None]
    assert decision.placements[1].message == (
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, "
        "4 node(s) outside the gang's nvlink_domain c2."
    )


# --- grouping ----------------------------------------------------------------------------


def test_gangs_of_groups_pods_by_pod_group_in_queue_order() -> None:
    snap = ClusterSnapshot.build(
        [gpu_node("n0")],
        pod_groups=[PodGroup("default", "a", 2, 60), PodGroup("other", "a", 1, None)],
    )
    lone = make_pod("lone")
    orphan = make_pod("orphan", labels={POD_GROUP_LABEL: "missing"})
    foreign = make_pod("x", namespace="other", labels={POD_GROUP_LABEL: "a"})
    units = gangs_of([lone, member("a", 0), orphan, foreign, member("a", 1)], snap)
    assert [u.key for u in units] == ["default/lone", "default/a", "default/missing", "other/a"]
    gang_a, missing = units[1], units[2]
    assert isinstance(gang_a, Gang) and isinstance(missing, Gang)
    assert (gang_a.min_member, gang_a.timeout_seconds, gang_a.group_missing) == (2, 60, False)
    assert [p.name for p in gang_a.pending] == ["a-0", "a-1"]
    # The coscheduling plugin's Permit denies a pod whose PodGroup it cannot find.
    assert missing.group_missing
    decision = place(program("gang {}"), missing, snap)
    assert not decision.scheduled
    assert [(d.pod, d.node, d.message) for d in decision.placements] == [
        (
            "default/orphan",
            None,
            "pod group default/missing not found; its pods wait until the PodGroup exists",
        )
    ]


# --- the shipped policy ------------------------------------------------------------------


def test_llm_training_keeps_more_whole_gpu_nodes_than_kube_default() -> None:
    """Same arrivals (four gangs of 2-GPU workers) on 16 8-GPU nodes: kube-default spreads
    them (LeastAllocated), llm-training packs each gang into the best-fitting clique."""
    nodes = [
        ready_node(
            f"{clique}-{i}",
            labels={
                CLIQUE: clique,
                RACK: rack,
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
            },
            cpu="96",
            memory="1Ti",
            extra={GPU: "8"},
        )
        for clique, rack in (("c1", "r1"), ("c2", "r1"), ("c3", "r2"), ("c4", "r2"))
        for i in range(4)
    ]
    groups = [PodGroup("train", f"job{j}", 4, None) for j in range(4)]
    pending = [
        make_pod(
            f"job{j}-{i}",
            namespace="train",
            labels={
                POD_GROUP_LABEL: f"job{j}",
                "workload.ai/kind": "training",
                "training.ai/job": f"job{j}",
            },
            requests={GPU: "2", "cpu": "8", "memory": "64Gi"},
        )
        for j in range(4)
        for i in range(4)
    ]
    snap = ClusterSnapshot.build(nodes, pod_groups=groups)

    def whole_nodes(policy: str) -> int:
        result = compile_paths([POLICIES / policy], default_schema())
        assert result.ok and result.program is not None
        sim = simulate(result.program, snap, pending, seed=3)
        assert sim.scheduled == len(pending)
        return sum(1 for info in sim.snapshot.nodes if not info.requested.get(GPU, 0))

    assert whole_nodes("kube-default.sched") == 0
    assert whole_nodes("llm-training.sched") >= 12


# --- the cycle's candidate set -----------------------------------------------------------


@pytest.mark.parametrize("all_filters", [True, False])
def test_candidates_make_every_other_feasible_node_infeasible(all_filters: bool) -> None:
    snap = cluster(("c1", "r1", 2), ("c2", "r1", 2))
    full = snap.with_pod(member("x", 0), "c2-0")
    options = CycleOptions(
        all_filters=all_filters,
        candidates=frozenset({"c2-0", "c2-1"}),
        candidates_reason="node(s) outside the gang's nvlink_domain c2",
    )
    decision = schedule(program("gang {}"), member("job", 0), full, random.Random(0), options)
    assert decision.node == "c2-1"
    assert decision.feasible == ("c2-1",)
    assert {name: [r.rule for r in rs] for name, rs in decision.infeasible.items()} == {
        "c1-0": ["gang_domain"],
        "c1-1": ["gang_domain"],
        "c2-0": ["fits"],
    }
    none_left = schedule(
        program("gang {}"),
        member("job", 0),
        full,
        random.Random(0),
        replace(options, candidates=frozenset({"c2-0"})),
    )
    assert none_left.message == (
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "3 node(s) outside the gang's nvlink_domain c2."
    )


def test_domains_whose_feasible_nodes_cannot_hold_alike_members_are_not_tried() -> None:
    # Clique a100 has the GPUs but not the product the members pin; it is skipped untried.
    nodes = [
        make_node(
            f"{c}-{i}", labels={CLIQUE: c, "gpu": c}, cpu="64", memory="512Gi", extra={GPU: "8"}
        )
        for c in ("a100", "h100")
        for i in range(2)
    ]
    pods = tuple(
        make_pod(
            f"job-{i}",
            labels={POD_GROUP_LABEL: "job"},
            requests={GPU: "8"},
            node_selector={"gpu": "h100"},
        )
        for i in range(2)
    )
    rules = FITS + '  filter product { node.labels["gpu"] == pod.node_selector["gpu"] }\n'
    decision = place(
        program(TIERS, rules), Gang("default/job", 2, None, pods), ClusterSnapshot.build(nodes)
    )
    assert decision.domain == ("nvlink_domain", "h100")
    assert [(o.name, o.outcome, o.detail) for o in decision.domains] == [
        ("a100", "too small", "its feasible nodes hold 0 of the 2 members needed"),
        ("h100", "placed", "2 of 2 pending members fit"),
    ]


@pytest.mark.parametrize("seed", [1, 2])
def test_on_the_synthetic_gang_cluster_llm_training_keeps_more_whole_nodes(seed: int) -> None:
    """``synthetic.gangs`` (32 8-GPU nodes, NVLink domains of 8) with 40 pending pods in gangs
    of 2 to 4: both policies place every pod, llm-training leaves more 8-GPU nodes empty."""
    loaded = parse_objects(
        synthetic.generate(synthetic.gangs(32, 40, min_gang=2, max_gang=4), seed)
    )
    snap, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, loaded.pod_groups
    )
    assert snap.pod_groups and all(pod_group_key(p) in snap.pod_groups for p in pending)

    def run(policy: str) -> tuple[int, int]:
        result = compile_paths([POLICIES / policy], default_schema())
        assert result.program is not None
        sim = simulate(result.program, snap, pending, seed=0)
        assert sim.scheduled == len(pending) and all(g.scheduled for g in sim.gangs)
        whole = sum(
            1
            for info in sim.snapshot.nodes
            if info.node.allocatable.get(GPU) == 8 and not info.requested.get(GPU, 0)
        )
        return sim.scheduled, whole

    kube = run("kube-default.sched")
    llm = run("llm-training.sched")
    assert kube[0] == llm[0] == 40
    assert llm[1] > kube[1]


# --- the "too small" shortcuts against trying every domain -------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cliques=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    used=st.lists(st.integers(0, 8), min_size=12, max_size=12),
    size=st.integers(1, 5),
    gpus=st.sampled_from([1, 2, 4, 8]),
    required=st.booleans(),
)
def test_skipping_small_domains_decides_as_trying_every_domain(
    monkeypatch: pytest.MonkeyPatch,
    cliques: list[int],
    used: list[int],
    size: int,
    gpus: int,
    required: bool,
) -> None:
    nodes, running = [], []
    for c, count in enumerate(cliques):
        for i in range(count):
            name = f"c{c}-{i}"
            nodes.append(gpu_node(name, f"c{c}", f"r{c // 2}"))
            taken = used[len(nodes) - 1]
            if taken:
                running.append(make_pod(f"run-{name}", requests={GPU: str(taken)}, node_name=name))
    snap = ClusterSnapshot.build(nodes, running)
    prog = program(f"gang {{ within nvlink_domain, rack{' required' if required else ''} }}")
    g = gang("job", size, gpus)
    fast = place(prog, g, snap)
    monkeypatch.setattr(gangs_module, "_member_slots", lambda *args: None)
    monkeypatch.setattr(gangs_module, "_too_small", lambda *args: "")
    slow = place(prog, g, snap)

    # Which nodes inside the domain may differ: ties are broken by the rng, which the domains
    # tried in vain also draw from.
    def outcome(d: GangDecision) -> tuple[bool, tuple[str, str] | None, int]:
        return d.scheduled, d.domain, sum(1 for n in nodes_of(d) if n is not None)

    assert outcome(fast) == outcome(slow)


def test_members_sharing_gpus_never_overfill_a_device() -> None:
    # Two devices; each member wants 60% of one device's cores, so one member a device.
    policy = 'policy "shares" {\n  filter gpu_devices { gpu_fits(pod, node) } reason "no device"\n  gang {}\n}\n'
    result = compile_texts({"s.sched": policy}, default_schema())
    assert result.program is not None, result.diagnostics
    snap = ClusterSnapshot.build([shared_gpu_node("n1", count=2)])

    def sharing(size: int) -> Gang:
        pods = tuple(
            replace(
                shared_gpu_pod(f"s{size}-{i}", share="cores=60"),
                labels=FrozenDict({POD_GROUP_LABEL: f"s{size}"}),
            )
            for i in range(size)
        )
        return Gang(f"default/s{size}", size, None, pods)

    two = place(result.program, sharing(2), snap)
    assert two.scheduled
    assert sorted(g.uuid for d in two.placements for g in d.gpu_devices) == ["n1-gpu0", "n1-gpu1"]
    three = place(result.program, sharing(3), snap)
    assert not three.scheduled
    assert [d.node for d in three.placements] == [None, None, None]
