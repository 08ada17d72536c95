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


def _row_key(snap: ClusterSnapshot, namespace: str = "default") -> RowKeyed:
    key = domain_pod_count_key(CycleContext(snap, PodView(make_pod("p", namespace=namespace))))
    assert isinstance(key, RowKeyed)
    return key


def test_row_keys_move_only_where_a_domain_s_counts_may_have() -> None:
    domain_counts.clear()
    snap = cluster()
    assert _row_key(snap).rows.shape == (5, 0)  # no call made an index yet
    ctx = CycleContext(snap, PodView(make_pod("p")))
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", {"app": "x"})
    before = _row_key(snap)
    assert before.rows.shape == (5, 1)
    assert before.rows[4, 0] == -1  # n4 lacks the label
    cases = [
        # (pod placed, its node, rows whose key must move)
        (make_pod("web-a", labels={"app": "web"}), "n1", {0, 1}),
        (make_pod("db-b", labels={"app": "db"}), "n3", {2, 3}),  # same label names: same index
        (make_pod("plain", labels={"tier": "y"}), "n2", set()),  # lacks the selector's label
        (make_pod("elsewhere", namespace="other", labels={"app": "web"}), "n0", set()),
        (make_pod("nozone", labels={"app": "web"}), "n4", set()),
    ]
    for pod, node, moved in cases:
        snap = snap.with_pod(pod, node)
        after = _row_key(snap)
        assert after.whole == before.whole
        changed = set(np.flatnonzero((after.rows != before.rows).any(axis=1)).tolist())
        assert changed == moved, pod.name
        before = after
    # Another namespace's pods have indexes of their own.
    assert _row_key(snap, "other").rows.shape == (5, 0)


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
    )
)
def test_row_stamps_kept_between_snapshots_equal_stamps_laid_out_afresh(
    steps: list[tuple[str, int, bool]],
) -> None:
    # Each row's stamp is its domain's in the index (the index's base for a domain it never
    # stamped, -1 without the label), however the table was corrected on the way; a step
    # from an unrelated snapshot (another lineage) is one the index rebuilds on.
    domain_counts.clear()
    snap = cluster()
    ctx = CycleContext(snap, PodView(make_pod("p")))
    domain_pod_count_batch(ctx, ctx.pod, [NodeView(i) for i in snap.nodes], "zone", {"app": "x"})
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
        rows = _row_key(snap).rows[:, 0]
        (index_,) = [i for k, i in domain_counts._indexes.items() if k[0] == "zone"]
        expected = [
            -1 if zone is None else index_.stamps.get(zone, index_.base)
            for zone in (info.node.labels.get("zone") for info in snap.nodes)
        ]
        assert rows.tolist() == expected
