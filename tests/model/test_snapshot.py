from __future__ import annotations

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.snapshot import snapshot_from_objects
from tests.model.builders import container, make_node, make_pod, pod_on, pod_with_requests, snapshot

Mi = 1024**2


def test_node_sums_exact_units_and_non_zero() -> None:
    snap = snapshot(
        [make_node("a")],
        [pod_with_requests("p1", "a", cpu="250m", memory="1Gi"), pod_on("a", "p2")],
    )
    info = snap.node("a")
    assert info.requested_units == {"cpu": 250, "memory": 1024 * Mi}
    assert info.non_zero_cpu == 350
    assert info.non_zero_memory == 1024 * Mi + 200 * Mi
    assert info.free["cpu"] == 4 - 0.25


def test_with_pod_is_structural_and_immutable() -> None:
    base = snapshot([make_node("a"), make_node("b")], [pod_with_requests("p1", "a", cpu="1")])
    pod = pod_with_requests("new", cpu="1", memory="1Gi")
    assumed = base.with_pod(pod, "b")
    # the old snapshot is untouched
    assert base.node("b").pods == ()
    assert [p.key for p in assumed.node("b").pods] == ["default/new"]
    assert assumed.node("b").requested_units == {"cpu": 1000, "memory": 1024 * Mi}
    # untouched nodes are shared, not rebuilt
    assert assumed.node("a") is base.node("a")
    assert assumed.node("b").generation != base.node("b").generation
    assert assumed.pod("default/new").node_name == "b"
    with pytest.raises(ValueError, match="already on node"):
        assumed.with_pod(pod, "a")
    back = assumed.without_pod("default/new")
    assert back.node("b").requested_units == {}
    assert back.node("a") is base.node("a")


def test_update_pod_and_nodes() -> None:
    base = snapshot(
        [make_node("a", images=[(["img:v1"], 500 * Mi)])], [pod_with_requests("p", "a", cpu="1")]
    )
    moved = base.with_node(make_node("b", images=[(["img:v1"], 500 * Mi)])).with_updated_pod(
        pod_with_requests("p", "b", cpu="2")
    )
    assert moved.node("a").requested_units == {}
    assert moved.node("b").requested_units == {"cpu": 2000}
    assert moved.image_num_nodes("img:v1") == 2
    relabelled = moved.with_node(make_node("b", labels={"x": "y"}))
    assert relabelled.node("b").pods == moved.node("b").pods
    assert relabelled.image_num_nodes("img:v1") == 1
    gone = relabelled.without_node("b")
    assert "b" not in gone and gone.pod("default/p") is None


def test_host_ports_and_affinity_indexes() -> None:
    web = make_pod(
        "web",
        node_name="a",
        containers=[container("c", ports=[{"containerPort": 80, "hostPort": 8080}])],
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    snap = snapshot([make_node("a"), make_node("b")], [web])
    assert dict(snap.node("a").used_ports) == {("0.0.0.0", "TCP", 8080): 1}
    assert [n.name for n in snap.nodes_with_required_anti_affinity_pods] == ["a"]
    assert [n.name for n in snap.nodes_with_affinity_pods] == ["a"]
    assert snap.without_pod("default/web").node("a").used_ports == {}


def test_snapshot_from_objects_splits_and_warns() -> None:
    snap, pending, warnings = snapshot_from_objects(
        [make_node("a")], [pod_on("a", "run"), make_pod("wait"), pod_on("zz", "stray")]
    )
    assert [p.key for p in pending] == ["default/wait"]
    assert warnings == (
        "Pod default/stray: spec.nodeName 'zz' is not a node in the snapshot; the pod is ignored",
    )
    assert [p.key for p in snap.pods()] == ["default/run"]
    with pytest.raises(ModelError, match="defined twice"):
        snapshot_from_objects([make_node("a")], [pod_on("a", "x"), pod_on("a", "x")])


def test_namespace_labels_default() -> None:
    snap = snapshot([make_node("a")])
    assert snap.namespace_labels("team-a") == {"kubernetes.io/metadata.name": "team-a"}


@pytest.mark.parametrize(
    ("priorities", "added", "lowest"),
    [
        ((), None, None),
        ((), 5, 5),
        ((3, 7), None, 3),
        ((3, 7), 1, 1),
        ((3, 7), 9, 3),
        ((-2,), 0, -2),
    ],
    ids=["empty-None", "empty-5", "3,7-None", "3,7-1", "3,7-9", "-2-0"],
)
def test_lowest_priority_known_and_carried_by_with_pod(
    priorities: tuple[int, ...], added: int | None, lowest: int | None
) -> None:
    pods = [pod_on("a", f"p{i}", priority=p) for i, p in enumerate(priorities)]
    base = snapshot([make_node("a")], pods)
    before = base.node("a").lowest_priority  # computed first: with_pod carries it on
    assert base.lowest_priority == before
    assert before == min(priorities, default=None)
    if added is not None:
        base = base.with_pod(make_pod("new", priority=added), "a")
    assert base.node("a").lowest_priority == lowest
    assert base.lowest_priority == lowest  # the snapshot's, carried by with_pod too
    fresh = snapshot(
        [make_node("a")],
        [*pods, *([pod_on("a", "new", priority=added)] if added is not None else [])],
    )
    assert fresh.node("a").lowest_priority == lowest


def test_a_snapshots_lowest_priority_is_recomputed_once_a_pod_leaves() -> None:
    pods = [pod_on("a", "low", priority=1), pod_on("b", "high", priority=9)]
    base = snapshot([make_node("a"), make_node("b")], pods)
    assert base.lowest_priority == 1
    assert base.without_pod("default/low").lowest_priority == 9
    assert base.without_pod("default/low").without_pod("default/high").lowest_priority is None
