"""Preemption: eligibility, candidates, victims per node, the choice between nodes, budgets,
gangs, and the policy's ``preempt`` rules — kube-scheduler's DefaultPreemption."""

from __future__ import annotations

import random
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.engine import preemption
from policyengine.engine.cycle import schedule
from policyengine.engine.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    failed_scheduling_message,
    num_candidates,
    preempt,
    review_victims,
    with_nominated,
)
from policyengine.lang.compiler import Program, compile_paths, compile_texts
from policyengine.model.objects import Pod
from policyengine.model.parse import parse_pod
from policyengine.model.pdb import PodDisruptionBudget, parse_pdb
from policyengine.model.plugins import DEFAULT_CONFIG, KUBE_1_28
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod

ROOT = Path(__file__).resolve().parents[2]
KUBE_DEFAULT = ROOT / "policies" / "kube-default.sched"
CASES = sorted((ROOT / "tests" / "data" / "kube-scheduler-cases").glob("c*.yaml"))


@cache
def kube_program() -> Program:
    result = compile_paths([KUBE_DEFAULT], default_schema())
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program


@pytest.fixture(scope="module")
def kube() -> Program:
    return kube_program()


def with_kube(policy: str) -> Program:
    text = KUBE_DEFAULT.read_text()
    policy += '\nprofile "policyengine" { policies "p" }\n'
    result = compile_texts({"kube-default.sched": text, "p.sched": policy}, default_schema())
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program


def running(node: str, name: str, cpu: str, priority: int, **kw: Any) -> Pod:
    pod = make_pod(name, node_name=node, requests={"cpu": cpu}, priority=priority, **kw)
    stamp = kw.pop("start", None)
    return replace(pod, creation_timestamp=stamp) if stamp else pod


def started(pod: Pod, stamp: str) -> Pod:
    return replace(pod, creation_timestamp=stamp)


def pending(cpu: str = "3", priority: int = 100, **kw: Any) -> Pod:
    return make_pod("preemptor", requests={"cpu": cpu}, priority=priority, **kw)


def cluster(*pods: Pod, nodes: int = 2, cpu: str = "4", pdbs: tuple = ()) -> ClusterSnapshot:
    names = [f"n{i}" for i in range(1, nodes + 1)]
    return ClusterSnapshot.build([make_node(n, cpu=cpu) for n in names], pods, pdbs=pdbs)


def victims(decision: Any) -> list[str]:
    return [p.name for p in decision.victims]


# --- victim choice -------------------------------------------------------------------------

CHOICE_CASES: list[tuple[str, list[Pod], str, list[str]]] = [
    (
        "the node needing the fewest evictions (all equal priority)",
        [
            running("n1", "a1", "2", 1),
            running("n1", "a2", "2", 1),
            running("n2", "b1", "2", 1),
            running("n2", "b2", "1", 1),
        ],
        "n2",
        ["b1"],
    ),
    (
        "the lowest highest-victim priority wins over fewer victims",
        [
            running("n1", "big", "4", 50),
            running("n2", "s1", "2", 10),
            running("n2", "s2", "2", 10),
        ],
        "n2",
        ["s1", "s2"],
    ),
    (
        "reprieve: the higher-priority pod stays, only what must go goes",
        [
            running("n1", "keep", "1", 90),
            running("n1", "go", "3", 5),
            running("n2", "x", "4", 95),
        ],
        "n1",
        ["go"],
    ),
    (
        "equal top priority: the smaller sum of priorities wins",
        [
            running("n1", "p1", "2", 10),
            running("n1", "p2", "2", 10),
            running("n2", "q1", "2", 10),
            running("n2", "q2", "2", 1),
        ],
        "n2",
        ["q1", "q2"],
    ),
    (
        "pods of equal or higher priority are never victims",
        [
            running("n1", "same", "3", 100),
            running("n2", "low", "3", 99),
        ],
        "n2",
        ["low"],
    ),
]


@pytest.mark.parametrize(
    "pods,node,expected", [c[1:] for c in CHOICE_CASES], ids=[c[0] for c in CHOICE_CASES]
)
def test_victim_choice(kube: Program, pods: list[Pod], node: str, expected: list[str]) -> None:
    decision = preempt(kube, pending(), cluster(*pods))
    assert decision.node == node, decision
    assert victims(decision) == expected


def test_latest_start_among_highest_priority_victims_breaks_a_tie(kube: Program) -> None:
    pods = [
        started(running("n1", "old", "4", 10), "2026-01-01T00:00:00Z"),
        started(running("n2", "young", "4", 10), "2026-01-02T00:00:00Z"),
    ]
    decision = preempt(kube, pending(), cluster(*pods))
    assert (decision.node, victims(decision)) == ("n2", ["young"])


def test_victims_are_listed_most_important_first(kube: Program) -> None:
    pods = [running("n1", "a", "2", 5), running("n1", "b", "2", 20)]
    decision = preempt(kube, pending("4"), cluster(*pods, nodes=1))
    assert victims(decision) == ["b", "a"]


def test_no_lower_priority_pods_means_no_victims(kube: Program) -> None:
    pods = [running("n1", "a", "4", 100), running("n2", "b", "4", 200)]
    snap = cluster(*pods)
    decision = preempt(kube, pending(), snap)
    assert decision.node is None
    assert (
        decision.message
        == "0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


NONE_FOUND = ("No preemption victims found for incoming pod",)


@pytest.mark.parametrize(
    ("small", "statuses"),
    [
        # every pod ranks at or above the preemptor: every node is told in one pass
        (300, {"n1": NONE_FOUND, "n2": NONE_FOUND, "n3": NONE_FOUND}),
        # one lower-ranked pod, but too small to make room: the dry run says why
        (1, {"n1": NONE_FOUND, "n2": NONE_FOUND, "n3": ("Insufficient cpu",)}),
    ],
    ids=["none-ranked-lower", "lower-but-too-small"],
)
def test_nodes_without_lower_ranked_pods_have_no_victims(
    kube: Program, small: int, statuses: dict[str, tuple[str, ...]]
) -> None:
    pods = [running(n, f"big-{n}", "3", p) for n, p in (("n1", 100), ("n2", 300), ("n3", 300))]
    pods.append(running("n3", "small", "1", small))  # n3: 3 + 1 CPUs of 4
    decision = preempt(kube, pending("2"), cluster(*pods, nodes=3))
    assert decision.node is None and decision.statuses == statuses


def test_a_node_still_too_small_without_its_victims_is_no_candidate(kube: Program) -> None:
    pods = [running("n1", "a", "1", 1), running("n2", "b", "1", 1)]
    decision = preempt(kube, pending("8"), cluster(*pods))
    assert decision.node is None
    assert decision.message == "0/2 nodes are available: 2 Insufficient cpu."


def test_unresolvable_rejections_make_no_candidates(kube: Program) -> None:
    tainted = make_node("n1", cpu="4", taints=[("gpu", "x", "NoSchedule")])
    other = make_node("n2", cpu="4", labels={"zone": "b"})
    snap = ClusterSnapshot.build(
        [tainted, other], [running("n1", "a", "4", 1), running("n2", "b", "4", 1)]
    )
    pod = pending(node_selector={"zone": "a"})
    decision = preempt(kube, pod, snap)
    assert decision.node is None
    assert decision.statuses == {
        "n1": ("Preemption is not helpful for scheduling",),
        "n2": ("Preemption is not helpful for scheduling",),
    }


def test_preemption_policy_never_does_not_preempt(kube: Program) -> None:
    pod = pending(preemptionPolicy="Never")
    decision = preempt(kube, pod, cluster(running("n1", "a", "4", 1), nodes=1))
    assert decision.node is None
    assert decision.message == NOT_ELIGIBLE_NEVER


DELETED = "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("deleted", "by_preemption", "priority", "outcome"),
    [
        # kube's podTerminatingByPreemption: deletion started and DisruptionTarget set by a
        # scheduler: the preemptor waits for its victim.
        (DELETED, True, 1, None),
        # Deleted by someone else (its owner, a drain): no reason to wait. Both nodes free
        # room with one victim of priority 1: the node whose victim started later (b) wins.
        (DELETED, False, 1, ("n2", ("default/b",))),
        # Marked but not deleted (the scheduler's DELETE has not landed): not waiting yet.
        (None, True, 1, ("n2", ("default/b",))),
        # Of higher priority than the preemptor: not its victim, so not what it waits for.
        (DELETED, True, 200, ("n2", ("default/b",))),
    ],
    ids=["being-preempted", "deleted-by-another", "marked-not-deleted", "higher-priority"],
)
def test_a_pod_waits_on_its_nominated_node_only_for_a_victim_being_preempted(
    kube: Program, deleted: str | None, by_preemption: bool, priority: int, outcome: Any
) -> None:
    dying = replace(
        running("n1", "dying", "4", priority, start="2026-01-01T00:00:00Z"),
        deletion_timestamp=deleted,
        preempted_by_scheduler=by_preemption,
    )
    b = running("n2", "b", "4", 1, start="2026-01-02T00:00:00Z")
    pod = replace(pending(), nominated_node_name="n1")
    decision = preempt(kube, pod, cluster(dying, b))
    if outcome is None:
        assert decision.node is None
        assert decision.message == NOT_ELIGIBLE_TERMINATING
    else:
        assert (decision.node, tuple(v.key for v in decision.victims)) == outcome


def test_a_terminating_pod_is_still_a_potential_victim(kube: Program) -> None:
    """As in kube: it holds its node's resources until it is gone (the loop sends nothing
    for it, ``controller.preemption``)."""
    dying = replace(running("n1", "dying", "4", 1), deletion_timestamp=DELETED)
    decision = preempt(kube, pending(), cluster(dying, running("n2", "keep", "4", 200)))
    assert (decision.node, [v.key for v in decision.victims]) == ("n1", ["default/dying"])


DRA = (
    "pod default/preemptor uses dynamic resource allocation (spec.resourceClaims: gpu), which "
    "policyengine does not allocate: schedule it with kube-scheduler (schedulerName: "
    "default-scheduler)"
)


@pytest.mark.parametrize(
    ("program", "pod", "message"),
    [
        # Devices from dynamic resource allocation: not placed, and nothing to preempt for.
        ("kube", replace(pending("1"), resource_claims=("gpu",)), DRA),
        # No policy governs the pod: its own reason, once (no "preemption:" repeating it).
        ("gpu-only", pending("1"), "no policy of profile policyengine matches the pod"),
    ],
    ids=["kube", "gpu-only"],
)
def test_pods_policyengine_does_not_place_are_told_once_why(
    kube: Program, program: str, pod: Pod, message: str
) -> None:
    chosen = (
        kube
        if program == "kube"
        else with_kube('policy "p" {\n  match pod.labels["app"] == "gpu"\n}\n')
    )
    snap = cluster(running("n1", "a", "4", 1), nodes=2)
    decision = schedule(chosen, pod, snap, random.Random(0))
    assert (decision.node, decision.message) == (None, message)
    outcome = preempt(chosen, pod, snap, decision)
    assert (outcome.node, outcome.victims) == (None, ())
    assert failed_scheduling_message(decision, outcome) == message


def test_a_pod_that_fits_needs_no_preemption(kube: Program) -> None:
    decision = preempt(kube, pending("1"), cluster(running("n1", "a", "1", 1), nodes=1))
    assert decision.node is None and decision.victims == ()


# --- PodDisruptionBudgets ------------------------------------------------------------------


def pdb(name: str, app: str, allowed: int | None = None, **spec: Any) -> PodDisruptionBudget:
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
    }
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return parse_pdb(obj)


def test_a_node_whose_victims_keep_their_budget_is_preferred(kube: Program) -> None:
    pods = [
        running("n1", "db-0", "4", 1, labels={"app": "db"}),
        running("n2", "web-0", "4", 50, labels={"app": "web"}),
    ]
    snap = cluster(*pods, pdbs=(pdb("db", "db", allowed=0),))
    decision = preempt(kube, pending(), snap)
    assert (decision.node, victims(decision), decision.pdb_violations) == ("n2", ["web-0"], 0)


def test_a_budget_is_broken_when_nothing_else_helps(kube: Program) -> None:
    snap = cluster(
        running("n1", "db-0", "4", 1, labels={"app": "db"}),
        nodes=1,
        pdbs=(pdb("db", "db", allowed=0),),
    )
    decision = preempt(kube, pending(), snap)
    assert (decision.node, victims(decision), decision.pdb_violations) == ("n1", ["db-0"], 1)


def test_budget_violating_pods_are_reprieved_first(kube: Program) -> None:
    # Either pod frees enough; the one protected by its budget is given back first.
    pods = [
        running("n1", "db-0", "2", 1, labels={"app": "db"}),
        running("n1", "batch", "2", 1, labels={"app": "batch"}),
    ]
    snap = cluster(*pods, nodes=1, cpu="4", pdbs=(pdb("db", "db", allowed=0),))
    decision = preempt(kube, pending("2"), snap)
    assert (victims(decision), decision.pdb_violations) == (["batch"], 0)


def test_min_available_without_status_is_computed_from_the_pods(kube: Program) -> None:
    pods = [
        running("n1", "db-0", "4", 1, labels={"app": "db"}),
        running("n2", "db-1", "4", 1, labels={"app": "db"}),
        running("n3", "web-0", "4", 1, labels={"app": "web"}),
    ]
    budget = pdb("db", "db", minAvailable=2)
    assert budget.allowed(pods) == 0
    decision = preempt(kube, pending(), cluster(*pods, nodes=3, pdbs=(budget,)))
    assert (decision.node, victims(decision)) == ("n3", ["web-0"])


@pytest.mark.parametrize(
    "spec,healthy,allowed",
    [
        ({"minAvailable": 1}, 3, 2),
        ({"minAvailable": "50%"}, 3, 1),
        ({"maxUnavailable": 1}, 3, 1),
        ({"maxUnavailable": "50%"}, 3, 2),
        ({}, 3, 0),
    ],
    ids=["minAvailable=1", "minAvailable=50%", "maxUnavailable=1", "maxUnavailable=50%", "empty"],
)
def test_allowed_disruptions_without_status(spec: dict, healthy: int, allowed: int) -> None:
    pods = [running("n1", f"db-{i}", "1", 1, labels={"app": "db"}) for i in range(healthy)]
    assert pdb("db", "db", **spec).allowed(pods) == allowed


def test_empty_selector_protects_nothing() -> None:
    budget = parse_pdb(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "all"},
            "spec": {"selector": {}, "maxUnavailable": 0},
        }
    )
    assert not budget.selects(running("n1", "a", "1", 1, labels={"app": "x"}))


# --- the policy's preempt rules -------------------------------------------------------------

RULED = """
import "kube-default.sched"
policy "p" {
  use kube
  preempt when pod.priority >= 1000 {
    victim.labels["preemptible"] ?? "" == "true"
  }
}
"""


def test_only_pods_the_rule_allows_are_victims() -> None:
    program = with_kube(RULED)
    pods = [
        running("n1", "precious", "4", 1),
        running("n2", "spot", "4", 10, labels={"preemptible": "true"}),
    ]
    decision = preempt(program, pending(priority=2000), cluster(*pods))
    assert (decision.node, victims(decision)) == ("n2", ["spot"])


def test_a_rule_never_allows_higher_priority_victims() -> None:
    program = with_kube(RULED)
    pods = [running("n1", "spot", "4", 5000, labels={"preemptible": "true"})]
    decision = preempt(program, pending(priority=2000), cluster(*pods, nodes=1))
    assert decision.node is None


def test_a_pod_no_rule_applies_to_preempts_nothing() -> None:
    program = with_kube(RULED)
    pods = [running("n1", "spot", "4", 1, labels={"preemptible": "true"})]
    decision = preempt(program, pending(priority=500), cluster(*pods, nodes=1))
    assert decision.node is None
    assert (
        decision.message
        == "0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_the_rule_sees_the_victims_node() -> None:
    program = with_kube(
        'import "kube-default.sched"\n'
        'policy "p" {\n  use kube\n  preempt { node.name != "n1" }\n}\n'
    )
    pods = [running("n1", "a", "4", 1), running("n2", "b", "4", 50)]
    decision = preempt(program, pending(), cluster(*pods))
    assert (decision.node, victims(decision)) == ("n2", ["b"])


# --- gangs -----------------------------------------------------------------------------------

GANG = {"scheduling.x-k8s.io/pod-group": "train"}


def test_a_gang_member_brings_its_whole_gang(kube: Program) -> None:
    pods = [
        running("n1", "w0", "4", 1, labels=GANG),
        running("n2", "w1", "4", 1, labels=GANG),
        running("n3", "solo", "4", 5),
    ]
    snap = cluster(*pods, nodes=3)
    decision = preempt(kube, pending(), snap)
    # One solo pod of priority 5 loses to a gang of two at priority 1: the gang's two
    # evictions have the lower top priority.
    assert (decision.node, victims(decision)) == ("n1", ["w0", "w1"])


def test_a_gang_counts_every_member_as_a_victim(kube: Program) -> None:
    pods = [
        running("n1", "w0", "4", 1, labels=GANG),
        running("n2", "w1", "4", 1, labels=GANG),
        running("n3", "solo", "4", 1),
    ]
    decision = preempt(kube, pending(), cluster(*pods, nodes=3))
    assert (decision.node, victims(decision)) == ("n3", ["solo"])


def test_a_gang_with_a_member_that_may_not_go_stays_whole() -> None:
    program = with_kube(
        'import "kube-default.sched"\n'
        'policy "p" {\n  use kube\n  preempt { victim.name != "w1" }\n}\n'
    )
    pods = [running("n1", "w0", "4", 1, labels=GANG), running("n2", "w1", "4", 1, labels=GANG)]
    decision = preempt(program, pending(), cluster(*pods))
    assert decision.node is None


# --- another scheduler's victims, reviewed (the extender's preempt verb) ---------------------

REVIEWED = """
import "kube-default.sched"
policy "p" {
  use kube
  filter not_n3 { node.name != "n3" } reason "n3 is kept for batch"
  preempt { victim.labels["protected"] ?? "" != "true" }
}
"""
REVIEW_PODS = (
    running("n1", "a", "2", 1),
    running("n1", "b", "2", 1),
    running("n2", "guarded", "4", 1, labels={"protected": "true"}),
    running("n3", "c", "4", 1),
    running("n4", "w0", "4", 1, labels=GANG),
    running("n5", "w1", "4", 1, labels=GANG),
)


@pytest.mark.parametrize(
    ("node", "proposed", "verdict"),
    [
        ("n1", ["a", "b"], None),  # both must go for 3 CPUs: agreed
        ("n1", ["a"], "Insufficient cpu"),  # one is not enough: the pod still does not fit
        ("n1", ["c"], "default/c is not on node n1"),
        ("n2", ["guarded"], "the policy does not let default/preemptor evict default/guarded"),
        ("n3", ["c"], "n3 is kept for batch"),  # the policy refuses the node whatever goes
        (
            "n4",
            ["w0"],
            "default/w0 is in gang default/train, which goes whole or not at all: "
            "default/w1 would stay",
        ),
        ("n9", ["a"], "node n9 is not in the scheduler's cache"),
    ],
    ids=[
        "agreed",
        "not-enough",
        "victim-elsewhere",
        "guarded-by-policy",
        "node-refused",
        "half-a-gang",
        "unknown-node",
    ],
)
def test_another_schedulers_victims_are_reviewed_by_the_policy(
    node: str, proposed: list[str], verdict: str | None
) -> None:
    snap = cluster(*REVIEW_PODS, nodes=5)
    by_name = {p.name: p for p in REVIEW_PODS}
    reviewed = review_victims(
        with_kube(REVIEWED), pending(), snap, {node: [by_name[n] for n in proposed]}
    )
    assert reviewed == {node: verdict}


def test_a_pod_no_policy_governs_gets_no_opinion() -> None:
    program = with_kube('policy "p" {\n  match pod.labels["app"] == "gpu"\n}\n')
    snap = cluster(*REVIEW_PODS, nodes=5)
    assert review_victims(program, pending(), snap, {"n3": [REVIEW_PODS[3]]}) is None


# --- nominated pods --------------------------------------------------------------------------


def test_a_higher_priority_nominated_pod_holds_its_place(kube: Program) -> None:
    snap = cluster(nodes=1)
    other = replace(
        make_pod("other", requests={"cpu": "3"}, priority=500), nominated_node_name="n1"
    )
    held = with_nominated(snap, pending(), [other])
    decision = schedule(kube, pending(), held, random.Random(0))
    assert decision.node is None
    lower = replace(other, priority=1)
    assert with_nominated(snap, pending(), [lower]) is snap


# --- the bounded candidate search --------------------------------------------------------------

CAP_2 = DEFAULT_CONFIG.with_(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=2)


@pytest.mark.parametrize(
    "potential,percentage,absolute,expected",
    [
        (1000, 10, 100, 100),  # kube's defaults: at least 100
        (5000, 10, 100, 500),  # 10% once that is more
        (50, 10, 100, 50),  # never more than there are nodes
        (0, 10, 100, 0),
        (30, 50, 2, 15),
    ],
)
def test_num_candidates(potential: int, percentage: int, absolute: int, expected: int) -> None:
    config = DEFAULT_CONFIG.with_(
        min_candidate_nodes_percentage=percentage, min_candidate_nodes_absolute=absolute
    )
    assert num_candidates(potential, config) == expected


def five_full_nodes(**budgets: Any) -> ClusterSnapshot:
    # Every node a candidate; n5's victim is the cheapest, so a whole search picks n5.
    pods = [running(f"n{i}", f"v{i}", "4", 10 - i) for i in range(1, 6)]
    return cluster(*pods, nodes=5, **budgets)


def test_the_search_stops_at_the_cap(kube: Program) -> None:
    snap = five_full_nodes()
    whole = preempt(kube, pending(), snap)
    assert (whole.node, len(whole.candidates)) == ("n5", 5)
    capped = preempt(kube, pending(), snap, config=CAP_2)
    assert [c.node for c in capped.candidates] == ["n2", "n1"]
    assert (capped.node, victims(capped)) == ("n2", ["v2"])


def test_the_search_starts_at_an_offset_from_the_cycles_rng(kube: Program) -> None:
    snap = five_full_nodes()
    start = random.Random(7).randrange(5)
    tried = sorted(f"n{(start + i) % 5 + 1}" for i in range(2))
    capped = preempt(kube, pending(), snap, config=CAP_2, rng=random.Random(7))
    assert sorted(c.node for c in capped.candidates) == tried
    again = preempt(kube, pending(), snap, config=CAP_2, rng=random.Random(7))
    assert again == capped


def test_the_search_goes_on_until_a_candidate_keeps_every_budget(kube: Program) -> None:
    pods = [
        running("n1", "db-0", "4", 1, labels={"app": "db"}),
        running("n2", "db-1", "4", 1, labels={"app": "db"}),
        running("n3", "web-0", "4", 5, labels={"app": "web"}),
        running("n4", "web-1", "4", 4, labels={"app": "web"}),
    ]
    snap = cluster(*pods, nodes=4, pdbs=(pdb("db", "db", allowed=0),))
    capped = preempt(kube, pending(), snap, config=CAP_2)
    assert [c.node for c in capped.candidates] == ["n3", "n1", "n2"]
    assert (capped.node, victims(capped), capped.pdb_violations) == ("n3", ["web-0"], 0)


def test_a_candidate_needing_no_victims_ends_the_search(kube: Program) -> None:
    # The cycle saw n3 full; by now a pod there is gone and the preemptor fits beside v3.
    before = cluster(
        running("n1", "v1", "4", 1),
        running("n2", "v2", "4", 1),
        running("n3", "v3", "1", 1),
        running("n3", "gone", "3", 1),
        running("n4", "v4", "4", 1),
        nodes=4,
    )
    decision = schedule(kube, pending(), before, random.Random(0))
    assert decision.node is None
    now = before.without_pod("default/gone")
    outcome = preempt(kube, pending(), now, decision)
    assert (outcome.node, outcome.victims) == ("n3", ())
    assert [c.node for c in outcome.candidates] == ["n3"]
    assert "n4" not in outcome.statuses


# --- kube-scheduler's own messages ------------------------------------------------------------


def _unschedulable_cases() -> list[Path]:
    return [
        p for p in CASES if yaml.safe_load(p.read_text())["result"]["outcome"] == "unschedulable"
    ]


@pytest.mark.parametrize("path", _unschedulable_cases(), ids=lambda p: p.stem)
def test_failed_scheduling_message_matches_kube_scheduler(path: Path, kube: Program) -> None:
    case = yaml.safe_load(path.read_text())
    loaded = parse_objects([case["cluster"]], source=path.name)
    snap, _, _ = snapshot_from_objects(loaded.nodes, loaded.pods, loaded.namespaces)
    pod = parse_pod(case["pod"], source=path.name)
    decision = schedule(kube, pod, snap, random.Random(0), config=KUBE_1_28)
    preemption = preempt(kube, pod, snap, decision, config=KUBE_1_28)
    expected = " ".join(case["result"]["failed_scheduling"].split())
    assert failed_scheduling_message(decision, preemption) == expected


# --- properties ------------------------------------------------------------------------------

running_pods = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from(["500m", "1", "2"]), st.integers(0, 150)),
    max_size=10,
)


@settings(max_examples=40, deadline=None)
@given(pods=running_pods, cpu=st.sampled_from(["1", "2", "3"]), priority=st.integers(1, 200))
def test_victims_free_enough_and_none_is_spared_needlessly(
    pods: list[tuple[int, str, int]], cpu: str, priority: int
) -> None:
    program = kube_program()
    placed = [
        running(f"n{node + 1}", f"r{i}", size, prio) for i, (node, size, prio) in enumerate(pods)
    ]
    snap = cluster(*placed, nodes=3)
    pod = pending(cpu, priority)
    decision = schedule(program, pod, snap, random.Random(0))
    outcome = preempt(program, pod, snap, decision)
    if decision.node is not None or outcome.node is None:
        return
    assert all(v.priority < priority for v in outcome.victims)
    freed = snap
    for victim in outcome.victims:
        freed = freed.without_pod(victim.key)
    assert outcome.node in schedule(program, pod, freed, random.Random(0)).feasible
    for victim in outcome.victims:
        back = freed.with_pod(victim, outcome.node)
        assert outcome.node not in schedule(program, pod, back, random.Random(0)).feasible


@settings(max_examples=30, deadline=None)
@given(
    pods=running_pods,
    cpu=st.sampled_from(["1", "2", "3"]),
    priority=st.integers(1, 200),
    seed=st.integers(0, 2**16),
)
def test_a_search_covering_every_node_does_not_depend_on_its_offset(
    pods: list[tuple[int, str, int]], cpu: str, priority: int, seed: int
) -> None:
    program = kube_program()
    placed = [
        running(f"n{node + 1}", f"r{i}", size, prio) for i, (node, size, prio) in enumerate(pods)
    ]
    snap = cluster(*placed, nodes=3)
    pod = pending(cpu, priority)
    decision = schedule(program, pod, snap, random.Random(0))
    if decision.node is not None:
        return
    first = preempt(program, pod, snap, decision)
    offset = preempt(program, pod, snap, decision, rng=random.Random(seed))
    assert (offset.node, offset.victims) == (first.node, first.victims)
    # A cap of one (no budgets here): the first candidate found is the choice.
    one = DEFAULT_CONFIG.with_(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=1)
    capped = preempt(program, pod, snap, decision, config=one, rng=random.Random(seed))
    assert (capped.node is None) == (first.node is None)
    assert len(capped.candidates) == (0 if first.node is None else 1)


@settings(max_examples=60, deadline=None)
@given(
    pods=running_pods,
    cpu=st.sampled_from(["1", "3", "5"]),
    priority=st.integers(0, 150),
    tainted=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_no_victims_told_from_counts_is_what_the_search_tells(
    pods: list[tuple[int, str, int]], cpu: str, priority: int, tainted: list[bool]
) -> None:
    # A preemptor no pod ranks below fails from the node counts alone (``_no_victims``): the
    # message, every node's status and the rng after it are the search's, node by node.
    kube = kube_program()
    nodes = [
        make_node(f"n{i}", cpu="4", taints=[("gpu", "x", "NoSchedule")] if bad else [])
        for i, bad in enumerate(tainted)
    ]
    placed = [running(f"n{n}", f"r{i}", c, p) for i, (n, c, p) in enumerate(pods)]
    snap = ClusterSnapshot.build(nodes, placed)
    pod = pending(cpu, priority)
    decision = schedule(kube, pod, snap, random.Random(0))
    quick_rng, search_rng = random.Random(5), random.Random(5)
    quick = preempt(kube, pod, snap, decision, rng=quick_rng)
    with mock.patch.object(preemption, "_no_victims", return_value=None):
        search = preempt(kube, pod, snap, decision, rng=search_rng)
    assert (quick.node, quick.message) == (search.node, search.message)
    assert dict(quick.statuses) == dict(search.statuses)
    assert list(quick.statuses) == list(search.statuses)
    assert quick_rng.getstate() == search_rng.getstate()


@pytest.mark.parametrize(("device", "expected"), [("best_fit", "g-gpu0"), ("spread", "g-gpu1")])
def test_a_pod_placed_by_preemption_gets_its_policys_device(device: str, expected: str) -> None:
    from policyengine.engine.preemption import preempt_in_simulation
    from policyengine.model.hami import ALLOCATED
    from tests.model.gpu_builders import gpu_node, gpu_pod

    # g: gpu0 holds a 30% share (kept: it outranks the preemptor), gpu1 is free; a low-priority
    # pod holds all of the CPU. The preemptor, a 50% share, fits once that pod is gone: on gpu0
    # by best fit (20% left), on gpu1 spread (50% left), as its policy says.
    kept = replace(
        gpu_pod(
            "kept",
            share="cores=30",
            node="g",
            annotations={ALLOCATED: "g-gpu0,NVIDIA,0,30:;"},
        ),
        priority=1000,
    )
    victim = replace(gpu_pod("victim", resources={"cpu": "64"}, node="g"), priority=0)
    snap = ClusterSnapshot.build([gpu_node("g", count=2)], [kept, victim])
    preemptor = replace(gpu_pod("new", share="cores=50", resources={"cpu": "1"}), priority=100)
    program = with_kube(
        f'policy "p" {{\n  use kube\n  device {device}\n'
        '  filter fits { gpu_fits(pod, node) } reason "no device"\n}\n'
    )
    decision = schedule(program, preemptor, snap, random.Random(0))
    assert decision.node is None
    placed, _, outcome = preempt_in_simulation(program, preemptor, snap, decision)
    assert outcome is not None and [v.key for v in outcome.victims] == ["default/victim"]
    assert [g.uuid for g in placed.gpu_devices] == [expected]
