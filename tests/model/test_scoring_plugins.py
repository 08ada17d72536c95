"""BalancedAllocation and ImageLocality."""

from __future__ import annotations

import pytest

from policyengine.model.plugins import balanced_allocation as ba
from policyengine.model.plugins import image_locality as il
from policyengine.model.plugins.config import DEFAULT_CONFIG, KUBE_1_28
from tests.model.builders import container, make_node, make_pod, pod_with_requests, snapshot

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        ([50, 50], [100, 100], 100),
        ([100, 0], [100, 100], 50),
        ([300, 50], [100, 100], 75),  # fractions are capped at 1
        ([10, 20, 30], [100, 100, 100], 91),
        ([10, 0], [100, 0], 100),  # resources without allocatable are left out
    ],
    ids=["50,50", "100,0", "300,50", "10,20,30", "10,0"],
)
def test_balanced_score(requested: list[int], allocatable: list[int], expected: int) -> None:
    assert ba.balanced_score(requested, allocatable) == expected


def test_balanced_allocation_uses_real_requests() -> None:
    snap = snapshot([make_node("n", cpu="4", memory="8Gi")], [make_pod("empty", node_name="n")])
    state = ba.prepare_score(pod_with_requests(cpu="2", memory="2Gi"), snap, snap.nodes)
    assert state is not None
    # cpu 2/4 = .5, memory 2/8 = .25 -> std .125 -> 87.5 -> 87 (the empty pod adds nothing)
    assert ba.score(state, snap.node("n")) == 87


def test_best_effort_pods_skip_balanced_allocation_since_1_33() -> None:
    snap = snapshot([make_node("n")])
    assert ba.prepare_score(make_pod(), snap, snap.nodes, DEFAULT_CONFIG) is None
    assert ba.prepare_score(make_pod(), snap, snap.nodes, KUBE_1_28) is not None


def test_image_locality() -> None:
    nodes = [
        make_node(
            "a",
            images=[(["registry/big:v1"], 500 * MB), (["registry/small:latest", "small"], 10 * MB)],
        ),
        make_node("b", images=[(["registry/big:v1"], 500 * MB)]),
        make_node("c"),
        make_node("d"),
    ]
    snap = snapshot(nodes)
    pod = make_pod(
        containers=[container("a", image="registry/big:v1"), container("b", image="registry/small")]
    )
    state = il.prepare_score(pod, snap, snap.nodes)
    scores = [il.score(state, n) for n in snap.nodes]
    # a: 500MB*2/4 + 10MB*1/4 = 252.5MB, b: 250MB; threshold 23MB .. 2000MB
    assert scores == [
        100 * (int(500 * MB * 0.5) + int(10 * MB * 0.25) - 23 * MB) // (2000 * MB - 23 * MB),
        100 * (int(500 * MB * 0.5) - 23 * MB) // (2000 * MB - 23 * MB),
        0,
        0,
    ]
    assert scores[0] == 11 and scores[1] == 11
