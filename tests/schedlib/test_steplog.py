"""``schedlib.steplog``: the rows replaced since a snapshot, by derivation steps or by
comparing rows (the marked steps are followed along assume/forget sequences in
``test_domains``)."""

from __future__ import annotations

import pytest

from policyengine.schedlib import domains
from policyengine.schedlib.steplog import changed_rows, moved_pods, signed_moved_pods
from tests.model.builders import make_node, make_pod, snapshot


def test_changed_rows_follow_derivation_steps_and_fall_back_to_comparing() -> None:
    domains.clear()
    cluster = snapshot([make_node(f"n{i}", labels={"zone": "a"}) for i in range(4)])
    first = cluster
    changed_rows(first, first.generation, first.nodes)  # seen
    second = first.with_pod(make_pod("p1"), "n2")
    changed_rows(second, first.generation, first.nodes)
    third = second.with_pod(make_pod("p2"), "n0")
    assert sorted(changed_rows(third, first.generation, first.nodes) or []) == [0, 2]
    # A snapshot derived by ``replace`` has no step: rows are compared one by one.
    loaded = third.with_loads({})
    assert loaded.derivation is None or loaded is third
    assert sorted(changed_rows(third, first.generation, first.nodes) or []) == [0, 2]
    # Other rows (a node added) are not the same rows.
    grown = third.with_node(make_node("n9"))
    assert changed_rows(grown, first.generation, first.nodes) is None


def _moves() -> dict[str, tuple[object, object]]:
    base = snapshot(
        [make_node("n0")], [make_pod("a", node_name="n0"), make_pod("b", node_name="n0")]
    )
    node = base.node("n0")
    gained = base.with_pod(make_pod("c"), "n0").node("n0")
    lost = base.without_pod("default/a").node("n0")
    relabelled = base.with_node(make_node("n0", labels={"zone": "z"})).node("n0")
    return {
        "a pod came": (node, gained),
        "a pod went": (node, lost),
        "nothing moved": (node, node),
        "the node object changed": (node, relabelled),
    }


@pytest.mark.parametrize(
    ("case", "names", "sign"),
    [
        ("a pod came", ["c"], 1),
        ("a pod went", ["a"], -1),
        ("nothing moved", [], 1),
        ("the node object changed", None, None),
    ],
    ids=lambda value: str(value),
)
def test_signed_moved_pods_says_which_pods_moved_and_which_way(
    case: str, names: list[str] | None, sign: int | None
) -> None:
    old, new = _moves()[case]
    found = signed_moved_pods(old, new)  # type: ignore[arg-type]
    if names is None:
        assert found is None and moved_pods(old, new) is None  # type: ignore[arg-type]
        return
    assert found is not None
    assert ([info.pod.name for info in found[0]], found[1]) == (names, sign)
    assert moved_pods(old, new) == found[0]  # type: ignore[arg-type]
