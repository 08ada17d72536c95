"""``schedlib.spread_score`` gives exactly the plugin's PreScore state and raw scores.

Hypothesis draws clusters (zones, racks, nodes missing labels), a pending pod with soft
constraints of its own on any key or none (so the system defaults apply, over a selector a
Service derives), and steps the scheduler makes (pods assumed and forgotten); after each,
the kept columns' state and scores equal the plugin's walk over every node, and over a
random subset of the nodes as a feasible set.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.schedlib import score_keys, spread_score
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.topology_filters import PREPARE_SCORES
from policyengine.schedlib.views import PodView
from tests.model.builders import make_pod, snapshot, zoned_node
from tests.schedlib.batch_strategies import (
    SELECTORS,
    SERVICES,
    assume_and_forget,
    clusters,
    placement,
    soft_constraints,
)

PLUGIN = PLUGINS_BY_NAME["PodTopologySpread"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_kept_columns_score_as_the_plugin(cluster: Any, data: st.DataObject) -> None:
    assert PLUGIN.prepare_score is not None
    pod = make_pod(
        "p", labels=data.draw(st.sampled_from(SELECTORS)), spread=data.draw(soft_constraints())
    )

    def new_pod(name: str) -> Any:
        return make_pod(name, **data.draw(placement()))

    for service in SERVICES.objects.values():
        cluster = cluster.with_workload(service)
    few = spread_score._FEW
    spread_score._FEW = 0  # the clusters are small: score them through the columns
    try:
        for now in assume_and_forget(data, cluster, new_pod, steps=6, forget_odds=2):
            for feasible in (now.nodes, [i for i in now.nodes if data.draw(st.booleans())]):
                expected = PLUGIN.prepare_score(pod, now, feasible, DEFAULT_CONFIG)
                got = PREPARE_SCORES["PodTopologySpread"](pod, now, feasible, DEFAULT_CONFIG)
                assert got == expected
                if expected is None:
                    continue
                ctx = CycleContext(now, None)
                plugin_scores = spread.score_rows(expected, feasible)
                assert list(spread_score.scores(expected, feasible, ctx)) == plugin_scores
                # The row keys are the scores themselves (``Function.row_values``).
                keys = score_keys.spread_rows(expected, CycleContext(now, PodView(pod))).rows
                row_of = {id(info): row for row, info in enumerate(now.nodes)}
                at = [row_of[id(info)] for info in feasible]
                values, scored = score_keys.spread_values(ctx, keys[at])
                read = [
                    v if s else None for v, s in zip(values.tolist(), scored.tolist(), strict=True)
                ]
                assert read == [None if x is None else float(x) for x in plugin_scores]
    finally:
        spread_score._FEW = few


def _soft(key: str) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }


# Feasible sets met one after another by one pod's cycles (the state keeps the last set's
# domains): the same set again, another set of the same size, a set reaching one zone fewer.
_ZONES = ["a", "a", "b", "b", "c", None]
_FEASIBLE_SEQUENCES = {
    "the same rows again": [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]],
    "as many rows, other zones": [[0, 1], [2, 3], [0, 1], [4, 5]],
    "a zone fewer, then back": [[0, 1, 2, 3, 4], [0, 1, 2, 3], [0, 1, 2, 3, 4]],
    "a node lacking the key comes and goes": [[0, 5], [0, 1], [0, 5]],
}


@pytest.mark.parametrize("keys", [("zone",), ("zone", spread.HOSTNAME)], ids=["zone", "zone+host"])
@pytest.mark.parametrize("rows", _FEASIBLE_SEQUENCES.values(), ids=_FEASIBLE_SEQUENCES)
def test_score_state_follows_the_feasible_rows_cycle_after_cycle(
    rows: list[list[int]], keys: tuple[str, ...]
) -> None:
    assert PLUGIN.prepare_score is not None
    nodes = [zoned_node(i, zone) for i, zone in enumerate(_ZONES)]
    now = snapshot(nodes, [make_pod("w0", labels={"app": "web"}, node_name="n2")])
    pod = make_pod("p", labels={"app": "web"}, spread=[_soft(key) for key in keys])
    for picked in rows:
        feasible = [now.nodes[i] for i in picked]
        expected = PLUGIN.prepare_score(pod, now, feasible, DEFAULT_CONFIG)
        assert PREPARE_SCORES["PodTopologySpread"](pod, now, feasible, DEFAULT_CONFIG) == expected


@pytest.mark.parametrize("order", [(False, True), (True, False)], ids=["lax first", "strict first"])
def test_score_state_keeps_apart_the_domains_read_with_and_without_every_key(
    order: tuple[bool, bool],
) -> None:
    now = snapshot([zoned_node(i, zone) for i, zone in enumerate(_ZONES)])  # n5 lacks a zone
    pod = make_pod("p", labels={"app": "web"}, spread=[_soft("zone")])
    constraints = spread.pod_constraints(
        pod, "ScheduleAnyway", DEFAULT_CONFIG, now.workloads
    )  # one object, asked both ways
    for require_all in order:
        got = spread_score.score_state(
            pod, now, constraints, now.nodes, require_all, lambda pairs: dict.fromkeys(pairs, 0)
        )
        expected = spread.score_state(
            pod, constraints, now.nodes, require_all, lambda pairs: dict.fromkeys(pairs, 0)
        )
        assert got == expected
