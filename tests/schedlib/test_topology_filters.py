"""Spread's and inter-pod affinity's filters run once per distinct row key give the plugins'
verdicts, for few rows (grouped in a dict) and for many (grouped by ``np.unique``).

``test_batch_forms`` draws small clusters; here a zoned cluster of 40 nodes, some without a
zone, holds pods of one app spread unevenly, so both groupings of ``by_pattern`` meet rows of
every key (missing label, over the skew or not, held or not).
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.schedlib import topology_filters
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView
from tests.model.builders import make_node, make_pod, snapshot

SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def _anti(key: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
            ]
        }
    }


def _cluster() -> Any:
    nodes = []
    for index in range(40):
        labels = {"kubernetes.io/hostname": f"n{index}"}
        if index % 7:
            labels["zone"] = "abc"[index % 3]
        nodes.append(make_node(f"n{index}", labels=labels, pods=8))
    # Zone a holds three web pods, zone b one, zone c none; some carry anti-affinity.
    running = [
        make_pod(f"r{i}", node_name=node, labels={"app": "web"}, **extra)
        for i, (node, extra) in enumerate(
            [
                ("n3", {}),
                ("n6", {"affinity": _anti("kubernetes.io/hostname")}),
                ("n9", {}),
                ("n1", {"affinity": _anti("zone")}),
            ]
        )
    ]
    return snapshot(nodes, running)


PODS = [
    ("PodTopologySpread", {"spread": SPREAD}),
    ("InterPodAffinity", {"affinity": _anti("kubernetes.io/hostname")}),
    ("InterPodAffinity", {"affinity": _anti("zone")}),
    ("InterPodAffinity", {}),  # only the existing pods' anti-affinity rejects it
]


@pytest.mark.parametrize(
    ("name", "extra"),
    PODS,
    ids=[
        "PodTopologySpread-spread=SPREAD",
        "InterPodAffinity-affinity=_anti(kubernetes.io/hostname)",
        "InterPodAffinity-affinity=_anti(zone)",
        "InterPodAffinity-empty",
    ],
)
@pytest.mark.parametrize(
    "rows",
    [slice(None), slice(0, None, 2), slice(3, 12), slice(1, 38)],
    ids=["slice(None)", "slice(0,None,2)", "slice(3,12)", "slice(1,38)"],
)
def test_filters_by_row_key_equal_the_plugins(
    name: str, extra: dict[str, Any], rows: slice
) -> None:
    cluster = _cluster()
    pod = make_pod("p", labels={"app": "web"}, **extra)
    plugin = PLUGINS_BY_NAME[name]
    assert plugin.prepare_filter is not None and plugin.filter is not None
    state = plugin.prepare_filter(pod, cluster, SchedulerConfig())
    infos = list(cluster.nodes)[rows]
    expected = [plugin.filter(state, info) for info in infos]
    assert len({tuple(e) for e in expected}) > 1  # the case tells nodes apart
    context = CycleContext(cluster, PodView(pod), SchedulerConfig())
    assert topology_filters.by_pattern(context, name, state, infos, plugin.filter) == expected
