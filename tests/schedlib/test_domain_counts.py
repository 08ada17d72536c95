"""``schedlib.domain_counts``: what ``domain_pod_count`` counts, and its row keys.

The counts per case are written out; the row keys must move for exactly the rows of a domain
whose counts may have changed, and a class's cached results must follow them: pods of one
template placed one after another decide as the reference evaluator while their cached
``domain_pod_count`` rows are kept for the nodes of the other zone only. The kept counts are
held equal to a count over every pod along assume/forget sequences in
``tests/schedlib/test_batch_forms.py``.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import domain_counts
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.domain_counts import (
    domain_pod_count,
    domain_pod_count_batch,
    domain_pod_count_key,
    domain_pod_count_key_by,
)
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.views import NodeView, PodView
from tests.engine.strategies import compiled
from tests.model.builders import make_node, make_pod, snapshot

ZONES = ["a", "a", "b", "b", None]  # n4 has no zone


def cluster() -> ClusterSnapshot:
    nodes = [
        make_node(f"n{i}", labels={} if zone is None else {"zone": zone})
        for i, zone in enumerate(ZONES)
    ]
    running = [
        make_pod("w0", labels={"app": "web", "tier": "x"}, node_name="n0"),
        make_pod("w1", labels={"app": "web"}, node_name="n1"),
        make_pod("w2", labels={"app": "web"}, node_name="n2"),
        make_pod("d0", labels={"app": "db"}, node_name="n3"),
        make_pod("o0", namespace="other", labels={"app": "web"}, node_name="n0"),
        make_pod("w4", labels={"app": "web"}, node_name="n4"),
    ]
    return snapshot(nodes, running)


@pytest.mark.parametrize(
    ("namespace", "key", "labels", "expected"),
    [
        ("default", "zone", {"app": "web"}, [2, 2, 1, 1, 0]),
        ("default", "zone", {"app": "web", "tier": "x"}, [1, 1, 0, 0, 0]),
        ("default", "zone", {}, [2, 2, 2, 2, 0]),  # every pod of the namespace
        ("default", "zone", {"app": "cache"}, [0, 0, 0, 0, 0]),
        ("other", "zone", {"app": "web"}, [1, 1, 0, 0, 0]),
        ("default", "kubernetes.io/hostname", {"app": "web"}, [1, 1, 1, 0, 1]),
        ("default", "rack", {}, [0, 0, 0, 0, 0]),  # no node has the label
    ],
    ids=[
        "default-zone-app=web",
        "default-zone-app=web tier=x",
        "default-zone-empty",
        "default-zone-app=cache",
        "other-zone-app=web",
        "default-kubernetes.io/hostname-app=web",
        "default-rack-empty",
    ],
)
def test_domain_pod_count_counts_the_pods_of_the_node_s_domain(
    namespace: str, key: str, labels: dict[str, str], expected: list[int]
) -> None:
    snap = cluster()
    pod = PodView(make_pod("p", namespace=namespace))
    ctx = CycleContext(snap, pod)
    views = [NodeView(info) for info in snap.nodes]
    assert [domain_pod_count(ctx, pod, view, key, labels) for view in views] == expected
    assert domain_pod_count_batch(ctx, pod, views, key, labels) == expected


def _context(snap: ClusterSnapshot, alike: dict[object, object] | None) -> CycleContext:
    ctx = CycleContext(snap, PodView(make_pod("p", labels={"app": "web"})))
    ctx.alike = alike  # the class memo the engine sets: pods of one class share it
    return ctx


def _row_key(snap: ClusterSnapshot, alike: dict[object, object] | None) -> RowKeyed:
    key = domain_pod_count_key(_context(snap, alike))
    assert isinstance(key, RowKeyed)
    return key


def test_row_keys_hold_the_counts_the_class_asked_and_move_only_with_them() -> None:
    domain_counts.clear()
    snap = cluster()
    alike: dict[object, object] = {}
    assert _row_key(snap, alike).rows.shape == (5, 0)  # the class asked nothing yet
    ctx = _context(snap, alike)
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", {"app": "web"})
    before = _row_key(snap, alike)
    assert before.rows[:, 0].tolist() == [2, 2, 1, 1, -1]  # the counts; n4 lacks the label
    cases = [
        # (pod placed, its node, rows whose key must move)
        (make_pod("web-a", labels={"app": "web"}), "n1", {0, 1}),
        (make_pod("db-b", labels={"app": "db"}), "n3", set()),  # another app's counts
        (make_pod("plain", labels={"tier": "y"}), "n2", set()),  # lacks the selector's label
        (make_pod("elsewhere", namespace="other", labels={"app": "web"}), "n0", set()),
        (make_pod("nozone", labels={"app": "web"}), "n4", set()),
        (make_pod("web-b", labels={"app": "web"}), "n3", {2, 3}),
    ]
    for pod, node, moved in cases:
        snap = snap.with_pod(pod, node)
        after = _row_key(snap, alike)
        assert after.whole == before.whole
        changed = set(np.flatnonzero((after.rows != before.rows).any(axis=1)).tolist())
        assert changed == moved, pod.name
        before = after
    # Another class asked nothing: its key holds no counts.
    assert _row_key(snap, {}).rows.shape == (5, 0)


@pytest.mark.parametrize(
    ("keys", "moved"),
    [
        pytest.param(None, {0, 1}, id="every label key: the zone's rows and the node's"),
        pytest.param(frozenset({"zone"}), {0, 1}, id="by zone: the zone's rows"),
        pytest.param(
            frozenset({"kubernetes.io/hostname"}), {1}, id="by hostname: the node's row alone"
        ),
        pytest.param(frozenset({"rack"}), set(), id="by a key the class never asked: nothing"),
    ],
)
def test_a_key_narrowed_to_label_keys_moves_with_their_counts_alone(
    keys: frozenset[str] | None, moved: set[int]
) -> None:
    domain_counts.clear()
    snap = cluster()
    nodes = [
        dataclasses.replace(
            info.node, labels={**info.node.labels, "kubernetes.io/hostname": info.name}
        )
        for info in snap.nodes
    ]
    snap = snapshot(nodes, [info.pod for node in snap.nodes for info in node.pods])
    alike: dict[object, object] = {}
    ctx = _context(snap, alike)
    views = [NodeView(i) for i in snap.nodes]
    for key in ("zone", "kubernetes.io/hostname"):
        domain_pod_count_batch(ctx, ctx.pod, views, key, {"app": "web"})

    def row_key(now: ClusterSnapshot) -> RowKeyed:
        context = _context(now, alike)
        found = (
            domain_pod_count_key(context)
            if keys is None
            else domain_pod_count_key_by(context, keys)
        )
        assert isinstance(found, RowKeyed)
        return found

    before = row_key(snap)
    after = row_key(snap.with_pod(make_pod("web-a", labels={"app": "web"}), "n1"))
    assert after.whole == before.whole
    assert set(np.flatnonzero((after.rows != before.rows).any(axis=1)).tolist()) == moved


def test_asking_new_counts_moves_every_class_s_whole_key() -> None:
    # A result computed from counts outside its key is never read again under that key.
    domain_counts.clear()
    snap = cluster()
    first: dict[object, object] = {}
    other: dict[object, object] = {}
    before = _row_key(snap, other).whole
    ctx = _context(snap, first)
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", {"app": "web"})
    assert _row_key(snap, other).whole != before
    # Asked again: nothing moves.
    again = _row_key(snap, other).whole
    ctx = _context(snap, first)
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", {"app": "web"})
    assert _row_key(snap, other).whole == again


def test_a_pod_without_a_class_is_keyed_apart_every_cycle() -> None:
    snap = cluster()
    assert _row_key(snap, None).whole != _row_key(snap, None).whole


def test_cached_counts_follow_pods_placed_on_other_nodes_of_the_domain() -> None:
    # Pods of one template pulled together by a peer score: each placement changes the count
    # of every node of its zone, whose NodeInfos did not change; the cached rows of the other
    # zone stay. Every decision must be the reference's.
    domain_counts.clear()
    program = compiled(
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
        '  score peers weight 5 { domain_pod_count(pod, node, "zone", {"app": "web"}) * 10 }\n'
        "}\n"
        'profile "policyengine" {\n  policies "p"\n}\n'
    )
    snap = snapshot(
        [make_node(f"n{i}", cpu="8", labels={"zone": zone}) for i, zone in enumerate("aaabbb")]
    )
    template = make_pod("t", labels={"app": "web"}, requests={"cpu": "1"})
    rng = random.Random(2)
    classes = ClassCache()  # one walk: each cycle starts from the last, whichever options
    zones = []
    for index, all_filters in enumerate([False, True, False, False, True, False]):
        pod = dataclasses.replace(template, name=f"pod-{index}")
        state = rng.getstate()
        options = CycleOptions(all_filters=all_filters, cache=classes)
        decision = schedule(program, pod, snap, rng, options)
        replay = random.Random()
        replay.setstate(state)
        assert differences(decision, reference_decision(program, pod, snap, replay)) == []
        assert decision.node is not None
        zones.append(snap.node(decision.node).labels["zone"])
        snap = snap.with_pod(pod, decision.node)
    assert len(set(zones)) == 1  # the peers score keeps the template in one zone


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "remove", "other"]), st.integers(0, 4), st.booleans()),
        max_size=12,
    ),
    asked=st.sampled_from(["web", "db"]),
)
def test_row_counts_kept_between_snapshots_equal_counts_made_afresh(
    steps: list[tuple[str, int, bool]], asked: str
) -> None:
    # Each row's key is its domain's count of the asked app (-1 without the label), however
    # the table was corrected on the way; a step from an unrelated snapshot (another
    # lineage) is one the index rebuilds on.
    domain_counts.clear()
    snap = cluster()
    alike: dict[object, object] = {}
    ctx = _context(snap, alike)
    labels = {"app": asked}
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", labels)
    placed: list[str] = []
    for index, (kind, row, web) in enumerate(steps):
        if kind == "remove" and placed:
            snap = snap.without_pod(placed.pop(row % len(placed)))
        elif kind == "other":
            snap = cluster()
            placed = []
        else:
            pod = make_pod(f"s{index}", labels={"app": "web" if web else "db"})
            snap = snap.with_pod(pod, f"n{row}")
            placed.append(pod.key)
        rows = _row_key(snap, alike).rows[:, 0]
        counts = domain_counts.fresh_counts(snap, "zone", "default", (("app", asked),))
        expected = [
            -1 if zone is None else counts.get(zone, 0)
            for zone in (info.node.labels.get("zone") for info in snap.nodes)
        ]
        assert rows.tolist() == expected
