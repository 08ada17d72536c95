"""``schedlib.steplog``: the rows replaced since a snapshot, by derivation steps or by
comparing rows (the marked steps are followed along assume/forget sequences in
``test_domains``)."""

from __future__ import annotations

from policyengine.schedlib import domains
from policyengine.schedlib.steplog import changed_rows
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
