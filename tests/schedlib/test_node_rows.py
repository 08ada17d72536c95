"""``schedlib.node_rows``: rows told by the engine's views, and the rows holding pods with a
label pair (the latter also followed along assume/forget sequences in ``test_domains``)."""

from __future__ import annotations

from types import SimpleNamespace

from policyengine.model.shared_list import SharedList
from policyengine.schedlib import node_rows
from policyengine.schedlib.steplog import ANTI_AFFINITY
from tests.model.builders import make_node, make_pod, snapshot


def test_views_of_the_cycle_tell_their_rows_and_others_do_not() -> None:
    snap = snapshot([make_node(f"n{i}") for i in range(6)])
    views = SharedList(SimpleNamespace(info=info) for info in snap.nodes)
    ctx = SimpleNamespace(views=views, snapshot=snap)
    cases = [
        (views, list(range(6))),  # the cycle's views, whole
        (views.pick([5, 0, 2]), [5, 0, 2]),  # some of them, by row
        (SharedList(views).pick([1]), None),  # another list's: looked up instead
        (list(views), None),
    ]
    for asked, rows in cases:
        found = node_rows.view_rows(ctx, asked)
        assert (None if found is None else found.tolist()) == rows
        infos = node_rows.node_infos(ctx, asked)
        assert infos == [view.info for view in asked]
        told = node_rows.rows_at(snap, infos)
        assert told is not None and told.tolist() == [snap.nodes.index(i) for i in infos]
    assert node_rows.view_rows(SimpleNamespace(views=None), views) is None
    other = snapshot([make_node(f"n{i}") for i in range(6)])
    assert node_rows.node_infos(ctx, views).rows_in(other) is None  # type: ignore[attr-defined]


def test_rows_by_label_pair_need_label_pairs() -> None:
    cluster = snapshot([make_node("n0")]).with_pod(make_pod("p", labels={"app": "web"}), "n0")
    assert node_rows.pair_rows(cluster, None) is None
    assert node_rows.pair_rows(cluster, [ANTI_AFFINITY]) is None  # not a label pair: no index
    assert node_rows.pair_rows(cluster, [("app", "web")]) == [0]
    assert node_rows.pair_rows(cluster, []) == []
