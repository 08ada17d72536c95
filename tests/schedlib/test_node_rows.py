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


def _named_cases() -> list[tuple[str, list[int] | None, set[str], list[int]]]:
    many = {f"n{i}" for i in range(0, 12)}
    return [
        ("every row in order, one name", None, {"n4"}, [4]),
        ("every row in order, names out of order", None, {"n9", "n1"}, [1, 9]),
        ("a name no node has", None, {"gone", "n3"}, [3]),
        ("some rows: searched", [7, 2, 9], {"n9", "n7"}, [0, 2]),
        ("every row in another order: searched", list(range(11, -1, -1)), {"n0"}, [11]),
        ("more than a few names: each row tested", None, many, list(range(12))),
        ("no name", None, set(), []),
    ]


def test_named_positions_find_the_named_nodes_wherever_the_items_put_them() -> None:
    snap = snapshot([make_node(f"n{i:d}") for i in range(12)] + [make_node("n12")])
    rows = list(snap.nodes)
    for label, picked, names, want in _named_cases():
        items = rows if picked is None else [rows[i] for i in picked]
        assert node_rows.named_positions(items, names, snap) == want, label
        views = [SimpleNamespace(info=info, node=info.node) for info in items]
        assert node_rows.named_positions(views, names, snap) == want, label
