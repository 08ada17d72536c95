"""Gang preemption: the domain with the cheapest victims, gangs among the victims evicted whole
or not at all, budgets, reprieve, and ``simulate`` reporting it beside pod preemptions."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policyengine.engine.gang_preemption import preempt_gang
from policyengine.engine.gangs import Gang, schedule_gang
from policyengine.engine.simulate import simulate
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.objects import Node, Pod
from policyengine.model.pdb import parse_pdb
from policyengine.model.podgroup import POD_GROUP_LABEL, PodGroup
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod

CLIQUE = "nvidia.com/gpu.clique"
GPU = "nvidia.com/gpu"
FITS = """
  filter fits {
    node.free["nvidia.com/gpu"] >= pod.requests["nvidia.com/gpu"]
  } reason "Insufficient nvidia.com/gpu"
"""


def program(preempt: str = "", gang: str = "gang { within nvlink_domain required }") -> Program:
    text = f'policy "t" {{\n{FITS}\n  {gang}\n  {preempt}\n}}\n'
    result = compile_texts({"t.sched": text}, default_schema())
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program


def gpu_node(name: str, clique: str) -> Node:
    return make_node(name, labels={CLIQUE: clique}, cpu="64", memory="512Gi", extra={GPU: "8"})


def running(node: str, name: str, priority: int, gpus: int = 8, **kw: Any) -> Pod:
    return make_pod(name, node_name=node, requests={GPU: str(gpus)}, priority=priority, **kw)


def job(size: int = 2, priority: int = 100, group: str = "job") -> Gang:
    pods = tuple(
        make_pod(
            f"{group}-{i}",
            labels={POD_GROUP_LABEL: group},
            requests={GPU: "8"},
            priority=priority,
        )
        for i in range(size)
    )
    return Gang(f"default/{group}", size, None, pods)


def cluster(*pods: Pod, cliques: int = 2, per: int = 2, pdbs: tuple = ()) -> ClusterSnapshot:
    nodes = [gpu_node(f"c{c}-{i}", f"c{c}") for c in range(1, cliques + 1) for i in range(per)]
    return ClusterSnapshot.build(nodes, pods, pdbs=pdbs)


def names(pods: tuple[Pod, ...]) -> list[str]:
    return [p.name for p in pods]


def full(priorities: dict[str, int], **kw: Any) -> list[Pod]:
    """One 8-GPU pod on each node of each clique, at the clique's priority."""
    return [
        running(f"{clique}-{i}", f"{clique}-p{i}", priority, **kw)
        for clique, priority in priorities.items()
        for i in range(2)
    ]


def budget(app: str, allowed: int) -> Any:
    return parse_pdb(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed},
        }
    )


def test_the_gang_does_not_fit_before_preemption() -> None:
    snap = cluster(*full({"c1": 10, "c2": 5}))
    assert not schedule_gang(program(), job(), snap, random.Random(0)).scheduled


@pytest.mark.parametrize(
    "priorities,domain,victims",
    [
        ({"c1": 10, "c2": 5}, "c2", ["c2-p0", "c2-p1"]),
        ({"c1": 5, "c2": 10}, "c1", ["c1-p0", "c1-p1"]),
        ({"c1": 7, "c2": 7}, "c1", ["c1-p0", "c1-p1"]),  # a tie goes to the first by name
    ],
    ids=["c1=10 c2=5", "c1=5 c2=10", "c1=7 c2=7"],
)
def test_the_domain_with_the_cheapest_victims_is_chosen(
    priorities: dict[str, int], domain: str, victims: list[str]
) -> None:
    snap = cluster(*full(priorities))
    outcome = preempt_gang(program(), job(), snap)
    assert outcome.preempts
    assert (outcome.domain, names(outcome.victims)) == (("nvlink_domain", domain), victims)
    assert outcome.placement is not None and outcome.placement.scheduled
    nodes = {d.node for d in outcome.placement.placements}
    assert nodes == {f"{domain}-0", f"{domain}-1"}


def test_only_the_victims_needed_are_evicted_the_most_important_reprieved() -> None:
    pods = [running(f"c1-{i}", f"p{i}", prio) for i, prio in enumerate((30, 10, 20))]
    snap = cluster(*pods, cliques=1, per=3)
    outcome = preempt_gang(program(), job(), snap)
    assert names(outcome.victims) == ["p2", "p1"]


def test_a_domain_whose_victims_include_a_non_evictable_gang_member_is_not_chosen() -> None:
    # c2 is cheaper, but its pods belong to a gang with a member the rule keeps (in clique
    # c3): the gang goes whole or not at all, so nothing in c2 may be evicted.
    old = {POD_GROUP_LABEL: "old"}
    pods = [
        running("c1-0", "a0", 10),
        running("c1-1", "a1", 10),
        running("c2-0", "old-0", 5, labels=old),
        running("c2-1", "old-1", 5, labels=old),
        running("c3-0", "old-2", 5, labels={**old, "keep": "true"}),
    ]
    rule = 'preempt { victim.labels["keep"] ?? "" != "true" }'
    snap = cluster(*pods, cliques=3)
    outcome = preempt_gang(program(rule), job(), snap)
    assert (outcome.domain, names(outcome.victims)) == (("nvlink_domain", "c1"), ["a0", "a1"])
    assert ("nvlink_domain/c2", "no preemption victims") in outcome.tried


def test_a_running_gang_is_evicted_whole_wherever_its_members_run() -> None:
    old = {POD_GROUP_LABEL: "old"}
    pods = [
        running("c1-0", "a0", 10),
        running("c1-1", "a1", 10),
        running("c2-0", "old-0", 5, labels=old),
        running("c2-1", "old-1", 5, labels=old),
        running("c3-0", "old-2", 5, labels=old),
    ]
    outcome = preempt_gang(program(), job(), cluster(*pods, cliques=3))
    # Three victims at priority 5 beat two at priority 10: the lower top priority wins.
    assert outcome.domain == ("nvlink_domain", "c2")
    assert names(outcome.victims) == ["old-0", "old-1", "old-2"]


def test_a_budget_is_respected_when_another_domain_helps() -> None:
    pods = [
        *full({"c1": 5}, labels={"app": "db"}),
        *full({"c2": 10}, labels={"app": "web"}),
    ]
    snap = cluster(*pods, pdbs=(budget("db", 0),))
    outcome = preempt_gang(program(), job(), snap)
    assert (outcome.domain, outcome.pdb_violations) == (("nvlink_domain", "c2"), 0)
    assert names(outcome.victims) == ["c2-p0", "c2-p1"]


def test_a_budget_is_broken_only_when_nothing_else_helps() -> None:
    snap = cluster(*full({"c1": 5}, labels={"app": "db"}), cliques=1, pdbs=(budget("db", 0),))
    outcome = preempt_gang(program(), job(), snap)
    assert (outcome.domain, outcome.pdb_violations) == (("nvlink_domain", "c1"), 2)


def test_no_domain_helps_when_victims_are_not_of_lower_priority() -> None:
    snap = cluster(*full({"c1": 100, "c2": 200}))
    outcome = preempt_gang(program(), job(), snap)
    assert not outcome.preempts
    assert outcome.message == (
        "preemption cannot place gang default/job: nvlink_domain/c1: no preemption victims; "
        "nvlink_domain/c2: no preemption victims"
    )


def test_a_domain_too_small_even_when_emptied_is_no_candidate() -> None:
    snap = cluster(*full({"c1": 1, "c2": 1}))
    outcome = preempt_gang(program(), job(size=3), snap)
    assert not outcome.preempts
    assert {label for label, _ in outcome.tried} == {"nvlink_domain/c1", "nvlink_domain/c2"}


def test_without_levels_the_whole_cluster_is_the_domain() -> None:
    pods = [running("c1-0", "x", 1), running("c2-0", "y", 50), running("c2-1", "z", 2)]
    snap = cluster(*pods)
    outcome = preempt_gang(program(gang="gang {}"), job(size=4), snap)
    assert (outcome.domain, outcome.label) == (None, "the whole cluster")
    assert names(outcome.victims) == ["y", "z", "x"]


def test_simulate_reports_a_gang_preemption_beside_pod_preemptions() -> None:
    gang = job()
    snap = ClusterSnapshot.build(
        [gpu_node(f"c{c}-{i}", f"c{c}") for c in (1, 2) for i in range(2)],
        full({"c1": 10, "c2": 5}),
        pod_groups=[PodGroup("default", "job", 2, None)],
    )
    result = simulate(program(), snap, list(gang.pending), seed=3)
    (decision,) = result.gangs
    assert decision.scheduled and decision.domain == ("nvlink_domain", "c2")
    (preemption,) = result.preemptions
    assert (preemption.pod, preemption.node, preemption.gang) == (
        "default/job",
        "nvlink_domain/c2",
        True,
    )
    assert names(preemption.victims) == ["c2-p0", "c2-p1"]
    assert "default/c2-p0" not in result.snapshot.pod_nodes
    assert {result.snapshot.pod_nodes[p.key] for p in gang.pending} == {"c2-0", "c2-1"}


def test_when_no_level_is_required_the_whole_cluster_is_the_last_resort() -> None:
    pods = [running("c1-0", "x", 1), running("c2-0", "y", 2)]
    snap = cluster(*pods, per=1)
    outcome = preempt_gang(program(gang="gang { within nvlink_domain }"), job(), snap)
    assert (outcome.label, names(outcome.victims)) == ("the whole cluster", ["y", "x"])
    assert [label for label, _ in outcome.tried] == ["nvlink_domain/c1", "nvlink_domain/c2"]
    required = preempt_gang(program(), job(), snap)
    assert not required.preempts
