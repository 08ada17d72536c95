"""NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit."""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.plugins import (
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from policyengine.model.plugins.base import (
    UNSCHEDULABLE,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    PreFilterResult,
)
from policyengine.model.plugins.config import DEFAULT_CONFIG
from tests.model.builders import (
    container,
    make_node,
    make_pod,
    node_with_labels,
    node_with_taints,
    pod_with_requests,
    snapshot,
)


def run_filter(module: Any, pod: Any, node: Any, pods: tuple[Any, ...] = ()) -> list[str]:
    snap = snapshot([node], pods)
    state = module.prepare_filter(pod, snap, DEFAULT_CONFIG)
    return module.filter(state, snap.node(node.name))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ((), ["node(s) were unschedulable"]),
        (
            (
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                },
            ),
            [],
        ),
        (({"operator": "Exists"},), []),
    ],
    ids=["no-tolerations", "tolerates-unschedulable", "tolerates-everything"],
)
def test_node_unschedulable(tolerations: tuple[dict[str, str], ...], expected: list[str]) -> None:
    node = make_node("n", unschedulable=True)
    assert run_filter(node_unschedulable, make_pod(tolerations=tolerations), node) == expected
    assert run_filter(node_unschedulable, make_pod(), make_node("n")) == []


def test_node_name() -> None:
    assert run_filter(node_name, make_pod(node_name="other"), make_node("n")) == [
        "node(s) didn't match the requested node name"
    ]
    assert run_filter(node_name, make_pod(node_name="n"), make_node("n")) == []
    assert run_filter(node_name, make_pod(), make_node("n")) == []


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ((), (), []),
        (
            (("gpu", "maintenance", "NoSchedule"),),
            (),
            ["node(s) had untolerated taint {gpu: maintenance}"],
        ),
        ((("spot", "", "NoExecute"),), (), ["node(s) had untolerated taint {spot: }"]),
        ((("soft", "x", "PreferNoSchedule"),), (), []),
        ((("gpu", "m", "NoSchedule"),), ({"key": "gpu", "operator": "Exists"},), []),
        ((("gpu", "m", "NoSchedule"),), ({"operator": "Exists"},), []),
        (
            (("gpu", "m", "NoSchedule"),),
            ({"key": "gpu", "value": "x"},),
            ["node(s) had untolerated taint {gpu: m}"],
        ),
        (
            (("a", "1", "NoSchedule"), ("b", "2", "NoExecute")),
            ({"key": "a", "operator": "Exists"},),
            ["node(s) had untolerated taint {b: 2}"],
        ),
    ],
    ids=[
        "empty-empty",
        "gpu,maintenance,NoSchedule-empty",
        "spot,'',NoExecute-empty",
        "soft,x,PreferNoSchedule-empty",
        "gpu,m,NoSchedule-key=gpu operator=Exists",
        "gpu,m,NoSchedule-operator=Exists",
        "gpu,m,NoSchedule-key=gpu value=x",
        "a,1,NoSchedule,b,2,NoExecute-key=a operator=Exists",
    ],
)
def test_taint_toleration_filter(
    taints: tuple[tuple[str, str, str], ...],
    tolerations: tuple[dict[str, str], ...],
    expected: list[str],
) -> None:
    assert (
        run_filter(
            taint_toleration, make_pod(tolerations=tolerations), node_with_taints("n", *taints)
        )
        == expected
    )
    assert taint_toleration.PLUGIN.code(expected or ["x"]) == UNSCHEDULABLE_AND_UNRESOLVABLE


def test_taint_toleration_score_counts_prefer_no_schedule() -> None:
    nodes = [
        node_with_taints("a"),
        node_with_taints("b", ("x", "", "PreferNoSchedule")),
        node_with_taints("c", ("x", "", "PreferNoSchedule"), ("y", "", "PreferNoSchedule")),
    ]
    snap = snapshot(nodes)
    pod = make_pod(tolerations=[{"key": "y", "operator": "Exists", "effect": "NoSchedule"}])
    state = taint_toleration.prepare_score(pod, snap, snap.nodes)
    raw = [taint_toleration.score(state, n) for n in snap.nodes]
    assert raw == [0, 1, 2]  # the NoSchedule toleration does not help against PreferNoSchedule
    assert taint_toleration.normalize(state, ["a", "b", "c"], raw) == [100, 50, 0]


NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]},
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
            },
            {
                "weight": 30,
                "preference": {
                    "matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["5"]}]
                },
            },
        ],
    }
}


@pytest.mark.parametrize(
    ("labels", "selector", "passes"),
    [
        ({"gen": "4"}, None, True),
        ({"gen": "3"}, None, False),
        ({"gen": "3", "disk": "ssd"}, None, True),
        ({"gen": "x", "disk": "hdd"}, None, False),
        ({"gen": "4"}, {"zone": "a"}, False),  # nodeSelector is ANDed
        ({"gen": "4", "zone": "a"}, {"zone": "a"}, True),
    ],
    ids=[
        "gen=4-None",
        "gen=3-None",
        "gen=3 disk=ssd-None",
        "gen=x disk=hdd-None",
        "gen=4-zone=a",
        "gen=4 zone=a-zone=a",
    ],
)
def test_node_affinity_filter(
    labels: dict[str, str], selector: dict[str, str] | None, passes: bool
) -> None:
    pod = make_pod(affinity=NODE_AFFINITY, node_selector=selector)
    expected = [] if passes else ["node(s) didn't match Pod's node affinity/selector"]
    assert run_filter(node_affinity, pod, node_with_labels("n", labels)) == expected


def test_node_affinity_score_and_skip() -> None:
    nodes = [
        node_with_labels("a", {"zone": "a", "gen": "4"}),
        node_with_labels("b", {"gen": "4"}),
        node_with_labels("c", {}),
    ]
    snap = snapshot(nodes)
    state = node_affinity.prepare_score(make_pod(affinity=NODE_AFFINITY), snap, snap.nodes)
    raw = [node_affinity.score(state, n) for n in snap.nodes]
    assert raw == [40, 30, 0]
    assert node_affinity.normalize(state, ["a", "b", "c"], raw) == [100, 75, 0]
    assert node_affinity.prepare_score(make_pod(), snap, snap.nodes) is None


def test_node_affinity_prefilter_pins_names() -> None:
    pod = make_pod(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["b"]}
                            ]
                        }
                    ]
                }
            }
        }
    )
    snap = snapshot([make_node("a"), make_node("b")])
    state = node_affinity.prepare_filter(pod, snap)
    assert node_affinity.prefilter_result(state) == PreFilterResult(node_names=frozenset({"b"}))


PORT = {"containerPort": 80, "hostPort": 8080}


@pytest.mark.parametrize(
    ("existing", "wanted", "conflict"),
    [
        ({**PORT}, {**PORT}, True),
        ({**PORT}, {**PORT, "protocol": "UDP"}, False),
        ({**PORT}, {**PORT, "hostPort": 8081}, False),
        ({**PORT, "hostIP": "10.0.0.1"}, {**PORT, "hostIP": "10.0.0.2"}, False),
        ({**PORT, "hostIP": "10.0.0.1"}, {**PORT}, True),  # wanting 0.0.0.0 clashes with any IP
        ({**PORT}, {**PORT, "hostIP": "10.0.0.2"}, True),  # and the other way round
        ({"containerPort": 80}, {"containerPort": 80}, False),  # no host port, no conflict
    ],
    ids=[
        "same-port",
        "other-protocol",
        "other-port",
        "other-ips",
        "any-ip-wanted",
        "any-ip-held",
        "no-host-port",
    ],
)
def test_node_ports(existing: dict[str, Any], wanted: dict[str, Any], conflict: bool) -> None:
    running = make_pod("old", node_name="n", containers=[container("c", ports=[existing])])
    pod = make_pod("new", containers=[container("c", ports=[wanted])])
    expected = ["node(s) didn't have free ports for the requested pod ports"] if conflict else []
    assert run_filter(node_ports, pod, make_node("n"), (running,)) == expected
    assert (
        node_ports.PLUGIN.code(["node(s) didn't have free ports for the requested pod ports"])
        == UNSCHEDULABLE
    )


@pytest.mark.parametrize(
    ("node_kwargs", "pod", "expected"),
    [
        ({}, pod_with_requests(cpu="3", memory="15Gi"), []),
        ({}, pod_with_requests(cpu="3001m"), ["Insufficient cpu"]),
        (
            {},
            pod_with_requests(cpu="5", memory="17Gi"),
            ["Insufficient cpu", "Insufficient memory"],
        ),
        ({}, make_pod(requests={"nvidia.com/gpu": "1"}), ["Insufficient nvidia.com/gpu"]),
        ({"extra": {"nvidia.com/gpu": "8"}}, make_pod(requests={"nvidia.com/gpu": "8"}), []),
        ({"pods": 1}, pod_with_requests(cpu="4"), ["Too many pods", "Insufficient cpu"]),
        ({"pods": 1}, make_pod(), ["Too many pods"]),
        ({}, pod_with_requests(ephemeral_storage="1Ti"), ["Insufficient ephemeral-storage"]),
    ],
    ids=[
        "empty-pod_with_requests(cpu=3,memory=15Gi)",
        "empty-pod_with_requests(cpu=3001m)",
        "empty-pod_with_requests(cpu=5,memory=17Gi)",
        "empty-make_pod(requests=nvidia.com/gpu=1)",
        "extra=nvidia.com/gpu=8-make_pod(requests=nvidia.com/gpu=8)",
        "pods=1-pod_with_requests(cpu=4)",
        "pods=1-make_pod()",
        "empty-pod_with_requests(ephemeral_storage=1Ti)",
    ],
)
def test_node_resources_fit_filter(
    node_kwargs: dict[str, Any], pod: Any, expected: list[str]
) -> None:
    node = make_node("n", **node_kwargs)
    running = pod_with_requests("old", "n", cpu="1", memory="1Gi")
    assert run_filter(node_resources_fit, pod, node, (running,)) == expected


def test_mig_resource_names_are_kept() -> None:
    pod = make_pod(requests={"nvidia.com/mig-1g.10gb": "2"})
    node = make_node("n", extra={"nvidia.com/mig-1g.10gb": "1"})
    assert run_filter(node_resources_fit, pod, node) == ["Insufficient nvidia.com/mig-1g.10gb"]


def test_ignored_extended_resources() -> None:
    pod = make_pod(requests={"example.com/foo": "1"})
    snap = snapshot([make_node("n")])
    config = DEFAULT_CONFIG.with_(ignored_resource_groups=frozenset({"example.com"}))
    state = node_resources_fit.prepare_filter(pod, snap, config)
    assert node_resources_fit.filter(state, snap.node("n")) == []


def test_least_allocated_uses_non_zero_requests() -> None:
    node = make_node("n", cpu="2", memory="4Gi")
    snap = snapshot([node], [make_pod("empty", node_name="n")])  # counts as 100m / 200Mi
    state = node_resources_fit.prepare_score(
        pod_with_requests(cpu="900m", memory="1Gi"), snap, snap.nodes
    )
    # cpu: (2000 - 1000) * 100 / 2000 = 50; memory: (4096 - 1224) * 100 / 4096 = 70
    assert node_resources_fit.score(state, snap.node("n")) == (50 + 70) // 2
