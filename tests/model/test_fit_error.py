"""The FailedScheduling message and the reference cycle around it."""

from __future__ import annotations

from policyengine.model.fit_error import NodeStatus, fit_error_message
from policyengine.model.kube_profile import run_cycle
from tests.model.builders import make_node, make_pod, node_with_taints, pod_with_requests, snapshot


def test_histogram_sorts_count_strings() -> None:
    statuses = {
        **{
            f"n{i}": NodeStatus(
                "NodeAffinity",
                "UnschedulableAndUnresolvable",
                ("node(s) didn't match Pod's node affinity/selector",),
            )
            for i in range(10)
        },
        "x": NodeStatus(
            "NodeResourcesFit", "Unschedulable", ("Insufficient cpu", "Insufficient memory")
        ),
        "y": NodeStatus("NodeResourcesFit", "Unschedulable", ("Insufficient cpu",)),
    }
    assert fit_error_message(12, statuses) == (
        "0/12 nodes are available: 1 Insufficient memory, 10 node(s) didn't match Pod's node "
        "affinity/selector, 2 Insufficient cpu."
    )


def test_unschedulable_cycle_message_with_preemption() -> None:
    snap = snapshot(
        [
            make_node("a", cpu="1"),
            node_with_taints("b", ("gpu", "maintenance", "NoSchedule")),
            make_node("c", cpu="1"),
        ],
    )
    result = run_cycle(pod_with_requests(cpu="2"), snap)
    assert result.feasible == ()
    assert result.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: maintenance}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.."
    )


def test_preemption_reruns_filters_without_lower_priority_pods() -> None:
    snap = snapshot(
        [make_node("a", cpu="1")],
        [make_pod("low", node_name="a", requests={"cpu": "1"}, priority=0)],
    )
    still_too_big = run_cycle(make_pod(requests={"cpu": "2"}, priority=10), snap)
    assert still_too_big.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.."
    )
    # when evicting would make room, preemption succeeds: no "preemption:" failure part
    fits_after = run_cycle(make_pod(requests={"cpu": "1"}, priority=10), snap)
    assert fits_after.message == "0/1 nodes are available: 1 Insufficient cpu."
    never = run_cycle(make_pod(requests={"cpu": "2"}, preemptionPolicy="Never"), snap)
    assert never.message is not None
    assert never.message.endswith("preemption: not eligible due to preemptionPolicy=Never..")


def test_prefilter_conflict_and_name_restriction() -> None:
    def pinned(*names_per_term: list[str]) -> dict[str, object]:
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [n]}
                                for n in names
                            ]
                        }
                        for names in names_per_term
                    ]
                }
            }
        }

    snap = snapshot([make_node("a"), make_node("b", cpu="1"), make_node("c")])
    conflict = run_cycle(make_pod(affinity=pinned(["a", "b"])), snap)
    assert conflict.message == (
        "0/3 nodes are available: pod affinity terms conflict. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
    )
    restricted = run_cycle(make_pod(requests={"cpu": "2"}, affinity=pinned(["b"])), snap)
    # only node b is looked at, so the histogram counts one node
    assert restricted.message == (
        "0/3 nodes are available: 1 Insufficient cpu. preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.."
    )


def test_scheduled_cycle_scores_and_top_nodes() -> None:
    snap = snapshot([make_node("a", cpu="4"), make_node("b", cpu="8")])
    result = run_cycle(pod_with_requests(cpu="1", memory="1Gi"), snap)
    assert result.feasible == ("a", "b")
    assert result.scores["TaintToleration"] == {"a": 300, "b": 300}
    assert result.scores["NodeResourcesFit"]["b"] > result.scores["NodeResourcesFit"]["a"]
    assert result.top_nodes == ("b",)
    single = run_cycle(pod_with_requests(cpu="6"), snap)
    assert single.feasible == ("b",) and single.scores == {}
