"""Overcommit in the engine: filter, scores and explain count allocatable cpu × ratio for
Burstable and BestEffort pods only, bounded by measured load when the policy says so."""

from __future__ import annotations

import random

import pytest

from policyengine.cli.explain import shortages
from policyengine.cli.render import _shortage_line
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.overcommit import policy_config
from policyengine.engine.reference_cycle import reference_decision
from policyengine.lang.compiler import compile_texts
from policyengine.model.load import NodeLoad
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from tests.model.builders import container, make_node, make_pod, pod_with_requests

FIT = """
policy "p" {
  %s
  filter node_resources_fit { resources_fit_reasons(pod, node) }
  score node_resources_fit weight 1 { least_allocated_score(pod, node) }
  score balanced_allocation weight 1 { balanced_allocation_score(pod, node) }
}
"""


def program(overcommit: str):
    result = compile_texts({"p.sched": FIT % overcommit}, default_schema())
    assert result.ok, result.diagnostics
    return result.program


def cluster(**loads: NodeLoad) -> ClusterSnapshot:
    """Two 4-cpu nodes, each already holding a Burstable pod that requests 3 cpu."""
    nodes = [make_node(name, cpu="4", memory="16Gi") for name in ("a", "b")]
    pods = [pod_with_requests(f"busy-{n}", node_name=n, cpu="3", memory="1Gi") for n in "ab"]
    return ClusterSnapshot.build(nodes, pods).with_loads(loads)


BURSTABLE = pod_with_requests("new", cpu="2", memory="1Gi")
GUARANTEED = make_pod(
    "new", containers=[container("c", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})]
)
BEST_EFFORT = make_pod("new", containers=[container("c")])
IDLE = NodeLoad(cpu=0.3, age=10)
BUSY = NodeLoad(cpu=0.9, age=10)


@pytest.mark.parametrize(
    ("overcommit", "pod", "loads", "feasible"),
    [
        ("", BURSTABLE, {}, ()),  # 3 + 2 > 4: kube's own answer
        ("overcommit cpu 1.5", BURSTABLE, {}, ("a", "b")),  # 5 <= 6
        ("overcommit cpu 1.5", GUARANTEED, {}, ()),  # Guaranteed pods never overcommit
        ("overcommit cpu 1.2", BURSTABLE, {}, ()),  # 5 > 4.8
        ("overcommit cpu 1.5 max_load 0.5", BURSTABLE, {"a": IDLE, "b": BUSY}, ("a",)),
        ("overcommit cpu 1.5 max_load 0.5", BURSTABLE, {"a": IDLE}, ("a",)),  # b: no load
        ("overcommit cpu 1.5 max_load 0.5", BURSTABLE, {}, ()),
        ("overcommit cpu 1.5 max_load 0.5", GUARANTEED, {"a": IDLE, "b": IDLE}, ()),
    ],
    ids=[
        "no-overcommit",
        "room-with-1.5",
        "guaranteed-never",
        "no-room-with-1.2",
        "idle-and-busy",
        "one-without-load",
        "no-loads",
        "guaranteed-idle",
    ],
)
def test_filter(overcommit: str, pod, loads, feasible) -> None:
    decision = schedule(program(overcommit), pod, cluster(**loads), random.Random(0))
    assert decision.feasible == feasible
    for node in {"a", "b"} - set(feasible):
        (rejection,) = decision.infeasible[node]
        assert (rejection.rule, tuple(rejection.reasons)) == (
            "node_resources_fit",
            ("Insufficient cpu",),
        )


def test_scores_count_the_overcommitted_allocatable() -> None:
    # BestEffort: LeastAllocated counts 100m cpu and 200Mi memory for it. Node a: 3000m + 100m
    # of 4000m leaves (900 * 100) // 4000 = 22 without overcommit, and of 6000m
    # (2900 * 100) // 6000 = 48 with 1.5; memory scores the same either way.
    # BalancedAllocation: BestEffort requests nothing, so it skips the pod (null, 0).
    snap = cluster()
    plain = schedule(program(""), BEST_EFFORT, snap, random.Random(0))
    over = schedule(program("overcommit cpu 1.5"), BEST_EFFORT, snap, random.Random(0))
    memory = (16 * 2**30 - 2**30 - 200 * 2**20) * 100 // (16 * 2**30)
    assert plain.scores["a"].raw["node_resources_fit"] == (22 + memory) // 2
    assert over.scores["a"].raw["node_resources_fit"] == (48 + memory) // 2


def test_balanced_allocation_caps_at_the_overcommitted_allocatable() -> None:
    # Burstable, 2 cpu + 1Gi on node a: cpu (3000 + 2000) / 4000 caps at 1 without overcommit,
    # 5000 / 8000 = 0.625 with 2.0; memory 2Gi / 16Gi = 0.125.
    snap = cluster()
    plain = schedule(program(""), BURSTABLE, snap, random.Random(0), CycleOptions())
    assert plain.feasible == ()
    over = schedule(program("overcommit cpu 2"), BURSTABLE, snap, random.Random(0))
    assert over.scores["a"].raw["balanced_allocation"] == int((1 - (0.625 - 0.125) / 2) * 100)


@pytest.mark.parametrize(
    "overcommit", ["", "overcommit cpu 1.5", "overcommit cpu 1.5 max_load 0.5"]
)
@pytest.mark.parametrize(
    "pod", [BURSTABLE, GUARANTEED, BEST_EFFORT], ids=["BURSTABLE", "GUARANTEED", "BEST_EFFORT"]
)
def test_fast_path_equals_the_reference(overcommit: str, pod) -> None:
    prog = program(overcommit)
    snap = cluster(a=IDLE, b=BUSY)
    fast = schedule(prog, pod, snap, random.Random(0), CycleOptions(all_filters=False))
    slow = reference_decision(prog, pod, snap, random.Random(0))
    assert fast.feasible == tuple(slow.feasible)
    assert {n: s.total for n, s in fast.scores.items()} == slow.totals
    assert fast.node == slow.node


def test_kube_default_config_is_untouched_without_overcommit() -> None:
    prog = program("")
    (policy,) = prog.policies
    assert policy_config(policy, BURSTABLE, DEFAULT_CONFIG) is DEFAULT_CONFIG
    over = program("overcommit cpu 1.5").policies[0]
    assert policy_config(over, GUARANTEED, DEFAULT_CONFIG) is DEFAULT_CONFIG
    # One derived configuration per (base, overcommit): the class cache keys on identity.
    assert policy_config(over, BURSTABLE, DEFAULT_CONFIG) is policy_config(
        over, BEST_EFFORT, DEFAULT_CONFIG
    )


def test_explain_shows_the_overcommitted_shortage() -> None:
    prog = program("overcommit cpu 1.5")
    big = pod_with_requests("big", cpu="4")
    decision = schedule(prog, big, cluster(), random.Random(0))
    (policy,) = prog.policies
    overcommit = policy_config(policy, big, DEFAULT_CONFIG).overcommit
    (shortage,) = shortages(decision.infeasible["a"], {"cpu": 4}, cluster(), "a", overcommit)
    assert (shortage.free, shortage.allocatable, shortage.overcommit) == (3, 6, 1.5)
    assert _shortage_line(shortage) == (
        "cpu: requests 4, free 3 of 6 allocatable (overcommitted 1.5×) (short by 1)"
    )
