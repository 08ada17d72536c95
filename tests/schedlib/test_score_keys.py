"""``schedlib.score_keys``: a node's spread or affinity score is decided by its row key.

Hypothesis draws clusters, a pending pod (soft spread constraints of its own or the system
defaults over a Service's selector; preferred affinity terms) and the scheduler's steps
(pods assumed and forgotten). After each step, under one pod key: nodes with equal row keys
get equal scores from the plugin itself, and a node whose row key did not move since an
earlier step keeps its earlier score. That is what lets a cache keep a score while its row
key stands and compute one row per distinct key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.frozen import FrozenDict
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import score_keys
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView
from tests.model.builders import make_node, make_pod, snapshot
from tests.schedlib.batch_strategies import (
    SERVICES,
    assume_and_forget,
    clusters,
    placement,
    scoring_placement,
    soft_constraints,
)

SPREAD = PLUGINS_BY_NAME["PodTopologySpread"]
AFFINITY = PLUGINS_BY_NAME["InterPodAffinity"]


def _context(pod: Any, now: ClusterSnapshot) -> CycleContext:
    return CycleContext(now, PodView(pod), DEFAULT_CONFIG)


def _spread_scores(pod: Any, now: ClusterSnapshot) -> tuple[Any, Any, list[Any]] | None:
    assert SPREAD.prepare_score is not None and SPREAD.score is not None
    state = SPREAD.prepare_score(pod, now, now.nodes, DEFAULT_CONFIG)
    if state is None:
        return None
    require_all = spread.requires_all_keys(pod, DEFAULT_CONFIG)
    scores = [
        None if info.name in state.ignored else SPREAD.score(state, info) for info in now.nodes
    ]
    pod_key = score_keys.spread_pod_key(state, require_all)
    rows = score_keys.spread_rows(state, _context(pod, now)).rows
    # The row key is the raw score itself (-1 where the node is left unscored), however
    # many rows it kept from the last rows made for these constraints.
    assert rows[:, 0].tolist() == [-1 if score is None else score for score in scores]
    return pod_key, rows, scores


def _affinity_scores(pod: Any, now: ClusterSnapshot) -> tuple[Any, Any, list[Any]] | None:
    assert AFFINITY.prepare_score is not None and AFFINITY.score is not None
    state = AFFINITY.prepare_score(pod, now, now.nodes, DEFAULT_CONFIG)
    if state is None:
        return None
    scores = [AFFINITY.score(state, info) for info in now.nodes]
    return (
        score_keys.affinity_pod_key(state),
        score_keys.affinity_rows(state, _context(pod, now)).rows,
        scores,
    )


def _decided_by_row_keys(
    data: st.DataObject,
    cluster: ClusterSnapshot,
    placements: st.SearchStrategy[dict[str, object]],
    scores_of: Callable[[ClusterSnapshot], tuple[Any, Any, list[Any]] | None],
) -> None:
    """Along the scheduler's steps, under one pod key, equal row keys hold equal scores."""

    def new_pod(name: str) -> Any:
        return make_pod(name, **data.draw(placements))

    seen: dict[tuple[Any, tuple[int, ...]], Any] = {}
    for now in assume_and_forget(data, cluster, new_pod, steps=6, forget_odds=3):
        found = scores_of(now)
        if found is None:
            continue
        pod_key, rows, scores = found
        assert len(rows) == len(scores)
        for row, score in zip(rows.tolist(), scores, strict=True):
            assert seen.setdefault((pod_key, tuple(row)), score) == score, (pod_key, row)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_a_spread_score_is_decided_by_its_row_key(cluster: Any, data: st.DataObject) -> None:
    own = data.draw(st.booleans())
    pod = make_pod(
        "p",
        labels=data.draw(st.sampled_from([{"app": "web"}, {"app": "db"}])),
        spread=data.draw(soft_constraints()) if own else [],
    )
    for service in SERVICES.objects.values():
        cluster = cluster.with_workload(service)
    _decided_by_row_keys(data, cluster, placement(), lambda now: _spread_scores(pod, now))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_an_affinity_score_is_decided_by_its_row_key(cluster: Any, data: st.DataObject) -> None:
    pod = make_pod("p", **data.draw(scoring_placement()))
    _decided_by_row_keys(data, cluster, scoring_placement(), lambda now: _affinity_scores(pod, now))


def test_the_spread_pod_key_leaves_the_counts_and_weights_to_the_rows() -> None:
    a = spread.ScoreState((), "ns", frozenset(), FrozenDict({("zone", "a"): 1}), (1.0,))
    b = spread.ScoreState((), "ns", frozenset(), FrozenDict({("zone", "a"): 9}), (1.0,))
    c = spread.ScoreState((), "ns", frozenset(), FrozenDict({("zone", "a"): 1}), (2.5,))
    assert score_keys.spread_pod_key(a, True) == score_keys.spread_pod_key(b, True)
    assert score_keys.spread_pod_key(a, True) == score_keys.spread_pod_key(c, True)
    assert score_keys.spread_pod_key(a, True) != score_keys.spread_pod_key(a, False)


def _hostname_pod() -> Any:
    return make_pod(
        "p",
        labels={"app": "web"},
        spread=[
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    )


@pytest.mark.parametrize(
    ("feasible", "moved"),
    [
        pytest.param(4, set(), id="same feasible count: no row moves"),
        # round(3 * log(6)) == round(3 * log(5)) == 5: the weight moved, no score did
        pytest.param(3, set(), id="one node fewer: no score moves"),
        # round(3 * log(4)) == 4: only the node holding matching pods scores differently
        pytest.param(2, {0}, id="two nodes fewer: only the node holding matching pods moves"),
    ],
)
def test_a_hostname_weight_moves_only_the_rows_it_scores_differently(
    feasible: int, moved: set[int]
) -> None:
    # The weight is log(feasible nodes + 2): a pod's own placements under hostname
    # anti-affinity change it every cycle. A node without matching pods scores maxSkew - 1
    # whatever the weight; the node holding 3 of them scores round(3 * weight).
    nodes = [make_node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in range(4)]
    running = [make_pod(f"w{i}", labels={"app": "web"}, node_name="n0") for i in range(3)]
    now = snapshot(nodes, running)
    pod = _hostname_pod()
    assert SPREAD.prepare_score is not None
    rows = []
    for count in (4, feasible):
        state = SPREAD.prepare_score(pod, now, now.nodes[:count], DEFAULT_CONFIG)
        rows.append(score_keys.spread_rows(state, _context(pod, now)).rows)
        assert SPREAD.score is not None
        scores = [SPREAD.score(state, info) for info in now.nodes]
        assert rows[-1][:, 0].tolist() == scores  # the row key is the raw score itself
    assert set(np.flatnonzero((rows[0] != rows[1]).any(axis=1)).tolist()) == moved
