"""``engine.nodeviews``: frames keep each row's identities and log which rows each frame
changed, so a cache that saw an earlier frame learns what to look at again."""

from __future__ import annotations

import dataclasses

from policyengine.engine.fastpath.nodeviews import NodeViews
from policyengine.model.frozen import FrozenDict
from policyengine.model.topology import DEFAULT_TOPOLOGY
from tests.model.builders import make_node, make_pod, snapshot


def test_frames_log_the_rows_each_change_replaced() -> None:
    views = NodeViews(DEFAULT_TOPOLOGY)
    first = snapshot([make_node(f"n{i}") for i in range(5)])
    start = views.frame(first)
    assumed = first.with_pod(make_pod("a", requests={"cpu": "1"}), "n3")
    second = views.frame(assumed)
    node = assumed.node("n1").node
    relabelled = assumed.with_node(dataclasses.replace(node, labels=FrozenDict({"x": "y"})))
    third = views.frame(relabelled)
    assert views.frame(relabelled) is third  # the same snapshot, the same frame
    assert views.changed_since(start, start) == set()
    assert views.changed_since(start, second) == {3}
    assert views.changed_since(start, third) == {1, 3}
    assert views.changed_since(second, third) == {1}
    assert views.changed_since(third, start) is None  # not a later frame
    # The assume step keeps the Node object (rules reading only it stay valid); a new Node
    # object changes both identities.
    assert second.oids[3] == start.oids[3] and second.ids[3] != start.ids[3]
    assert third.oids[1] != second.oids[1] and third.ids[1] != second.ids[1]


def test_a_frame_of_other_nodes_starts_the_log_over() -> None:
    views = NodeViews(DEFAULT_TOPOLOGY)
    start = views.frame(snapshot([make_node("a"), make_node("b")]))
    other = views.frame(snapshot([make_node("a"), make_node("b"), make_node("c")]))
    assert views.changed_since(start, other) is None
    assert views.changed_since(other, other) == set()


def test_a_frame_of_an_assumed_snapshot_leaves_its_node_tuple_unbuilt() -> None:
    # Building the tuple copies every row's reference: a steady cycle reads a few rows.
    views = NodeViews(DEFAULT_TOPOLOGY)
    first = snapshot([make_node(f"n{i}") for i in range(4)])
    views.frame(first)
    assumed = first.with_pod(make_pod("a", requests={"cpu": "1"}), "n2")
    again = assumed.with_pod(make_pod("b", requests={"cpu": "1"}), "n0")
    frames = [views.frame(assumed), views.frame(again)]
    assert "nodes" not in assumed.__dict__ and "nodes" not in again.__dict__
    for frame, snap in zip(frames, (assumed, again), strict=True):
        assert [view.info for view in frame.views] == list(snap.nodes)
        assert frame.ids.tolist() == [id(info) for info in snap.nodes]
    assert views.changed_since(frames[0], frames[1]) == {0}
