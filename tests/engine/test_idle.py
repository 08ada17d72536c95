"""The cycle leaves out the rules a pod leaves idle, and decides as if it ran them.

``engine.idle`` picks the active plan from each rule's ``CompiledRule.idle``; the decision
still lists every score rule (an idle one with no raw value and a normalised 0) and equals the
reference evaluator's, which runs every rule.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from policyengine.engine.fastpath.idle import WithIdleRules, idle_tests, unscored, zero_at
from policyengine.engine.fastpath.sharekeys import policy_plan
from policyengine.lang.compiler import Program, compile_texts
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.schedlib import default_schema
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView
from tests.engine.agreement import decide_as_the_reference, incremental
from tests.model.builders import container, make_node, make_pod, snapshot

KUBE_DEFAULT = (Path(__file__).parents[2] / "policies" / "kube-default.sched").read_text()

POLICY = """
import "kube-default.sched"
policy "p" {
  use kube
  let gpus = pod.requests["nvidia.com/gpu"]
  filter gpu_nodes when gpus > 0 { node.allocatable["nvidia.com/gpu"] >= gpus }
  score packed weight 3 when gpus > 0 and node.allocatable["nvidia.com/gpu"] > 0 {
    100 * node.allocated["nvidia.com/gpu"] / node.allocatable["nvidia.com/gpu"]
  }
  score huge weight 9007199254740993 when gpus > 0 { 1 }
}
profile "policyengine" { policies "p" }
"""

ALWAYS = {
    "filters": ["node_unschedulable", "taint_toleration", "node_resources_fit"],
    "scores": ["taint_toleration", "node_resources_fit", "image_locality", "huge"],
}


def program() -> Program:
    result = compile_texts(
        {"kube-default.sched": KUBE_DEFAULT, "p.sched": POLICY}, default_schema()
    )
    assert result.program is not None, result.diagnostics
    return result.program


PROGRAM = program()

HARD_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}

# Pod shape → the rules left in beside ``ALWAYS`` (in rule order).
SHAPES: dict[str, tuple[dict, list[str], list[str]]] = {
    "best-effort": ({}, [], []),
    "cpu": ({"requests": {"cpu": "1"}}, [], ["balanced_allocation"]),
    "gpu": (
        {"requests": {"cpu": "1", "nvidia.com/gpu": "2"}},
        ["gpu_nodes"],
        ["balanced_allocation", "packed"],
    ),
    "named node": ({"node_name_wanted": True}, ["node_name"], []),
    "host port": (
        {"containers": [container("c", ports=[{"containerPort": 80, "hostPort": 80}])]},
        ["node_ports"],
        [],
    ),
    "node selector": ({"node_selector": {"zone": "a"}}, ["node_affinity"], []),
    "hard spread": (
        {"spread": [HARD_SPREAD]},
        ["pod_topology_spread"],
        [],
    ),
}


def pod_of(shape: str, name: str = "p") -> Pod:
    kwargs = dict(SHAPES[shape][0])
    if kwargs.pop("node_name_wanted", False):
        # A pod naming its node is bound by kube-scheduler's caller, not scheduled: the
        # rule still governs ``filter``/``explain`` of such a pod.
        return make_pod(name, labels={"app": "web"}, node_name="n1", **kwargs)
    return make_pod(name, labels={"app": "web"}, **kwargs)


def cluster() -> object:
    nodes = [
        make_node(f"n{i}", labels={"zone": "ab"[i % 2]}, cpu="8", extra={"nvidia.com/gpu": "4"})
        if i < 2
        else make_node(f"n{i}", labels={"zone": "ab"[i % 2]}, cpu="8")
        for i in range(4)
    ]
    return snapshot(nodes, [make_pod("running", labels={"app": "db"}, node_name="n0")])


def active_names(pod: Pod) -> tuple[list[str], list[str]]:
    snap = cluster()
    policy = PROGRAM.policies[-1]
    context = CycleContext(snap, PodView(pod))
    tests = idle_tests(policy_plan(policy))
    active = tests.active(Env({"pod": PodView(pod)}, context))
    return [r.rule.name for r in active.filters], [r.rule.name for r in active.scores]


def in_rule_order(names: list[str], kind: str) -> list[str]:
    policy = PROGRAM.policies[-1]
    rules = policy.filters if kind == "filters" else policy.scores
    return [r.name for r in rules if r.name in names]


@pytest.mark.parametrize("shape", list(SHAPES), ids=str)
def test_the_rules_a_pod_leaves_idle_are_left_out(shape: str) -> None:
    _, filters, scores = SHAPES[shape]
    got_filters, got_scores = active_names(pod_of(shape))
    assert got_filters == in_rule_order([*ALWAYS["filters"], *filters], "filters")
    assert got_scores == in_rule_order([*ALWAYS["scores"], *scores], "scores")


def test_pods_leaving_the_same_rules_idle_share_one_active_plan() -> None:
    policy = PROGRAM.policies[-1]
    plan = policy_plan(policy)
    tests = idle_tests(plan)
    assert idle_tests(plan) is tests
    snap = cluster()

    def active(pod: Pod) -> object:
        return tests.active(Env({"pod": PodView(pod)}, CycleContext(snap, PodView(pod))))

    assert active(pod_of("cpu", "a")) is active(pod_of("cpu", "b"))
    assert active(pod_of("cpu")) is not active(pod_of("gpu"))
    # A policy none of whose rules can be idle runs its own plan.
    bare = compile_texts(
        {"q.sched": 'policy "q" { filter f { node.pod_count < 3 } }'}, default_schema()
    ).program
    assert bare is not None
    bare_plan = policy_plan(bare.policies[0])
    assert idle_tests(bare_plan).active(Env({"pod": PodView(pod_of("cpu"))}, None)) is bare_plan


@pytest.mark.parametrize("shape", list(SHAPES), ids=str)
@pytest.mark.parametrize("all_filters", [False, True])
def test_a_cycle_without_its_idle_rules_decides_as_the_reference(
    shape: str, all_filters: bool
) -> None:
    snap = cluster()
    rng = random.Random(7)
    options = incremental(all_filters)
    for index in range(3):
        pod = pod_of(shape, f"p{index}")
        decision = decide_as_the_reference(PROGRAM, pod, snap, rng, options)
        if decision.node is not None and not pod.node_name:
            snap = snap.with_pod(pod, decision.node)
        for node in decision.feasible:
            score = decision.scores[node]
            assert list(score.rules) == [r.qualified_name for r in PROGRAM.policies[-1].scores]


def test_an_idle_score_rule_is_listed_with_no_score() -> None:
    options = incremental()
    decision = decide_as_the_reference(PROGRAM, pod_of("cpu"), cluster(), random.Random(1), options)
    assert decision.node is not None
    score = decision.scores[decision.node]
    assert score.raw["packed"] is None and score.rules["packed"] == 0.0
    assert score.raw["kube.pod_topology_spread"] is None
    assert score.rules["kube.inter_pod_affinity"] == 0.0


def test_listed_reads_the_active_rules_and_fills_the_idle_ones() -> None:
    listed = WithIdleRules(["a", "c"], (0, None, 1), "-")
    assert list(listed) == ["a", "-", "c"]
    assert listed[1:] == ["-", "c"]
    values, scored = unscored(5)
    assert not values.any() and not scored.any() and values.shape == scored.shape == (5,)
    assert unscored(5)[0] is values
    with pytest.raises(ValueError):
        values[0] = 1.0  # shared between cycles: never written
    assert zero_at(np.array([3, 1])).tolist() == [0.0, 0.0]


def test_idleness_is_asked_once_per_class_unless_the_rule_reads_the_pods_name() -> None:
    source = """
policy "q" {
  filter web when pod.labels["app"] == "web" { node.pod_count < 9 }
  filter mine when pod.name == "p1" { node.pod_count < 9 }
}
"""
    result = compile_texts({"q.sched": source}, default_schema())
    assert result.program is not None, result.diagnostics
    tests = idle_tests(policy_plan(result.program.policies[0]))
    snap = cluster()
    alike: dict = {}  # one class's states, as ``CycleContext.alike`` keeps them

    def active(name: str, app: str = "web") -> list[str]:
        pod = make_pod(name, labels={"app": app})
        context = CycleContext(snap, PodView(pod))
        context.alike = alike
        return [r.rule.name for r in tests.active(Env({"pod": PodView(pod)}, context)).filters]

    assert active("p1") == ["web", "mine"]
    assert active("p2") == ["web"]  # the name is asked again; the label is not
    assert alike[tests] == ()
    # A class is the pod without its name: a pod of another class asks everything again.
    alike.clear()
    assert active("p1", app="db") == ["mine"]
