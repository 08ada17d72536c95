"""The domains a pod's spread counts a node without its pods in, worked out once per node kind.

``topology_filters`` starts a new count key's sums from each node's *presence*: the domains
the node counts for were it to hold no matching pod, which depends on whether each constraint
includes the node (the pod's required node affinity under ``nodeAffinityPolicy: Honor``, the
node's taints under ``nodeTaintsPolicy: Honor``). That is worked out once per distinct values
of the labels the affinity reads (and taints, when honoured) and shared by nodes alike. Here
nodes alike in some of those but not all sit after one another, none holding a matching pod:
a presence shared too widely gives a later node the earlier one's inclusion, and the kept
PreFilter and PreScore states differ from the plugin's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.schedlib import kept, topology_filters
from tests.model.builders import make_node, make_pod, snapshot
from tests.model.builders import spread as constraint

GPU = ("dedicated", "gpu", "NoSchedule")
# name, zone, pool, tainted; the web pods run on n0 and n3 alone.
NODES = [
    ("n0", "a", "x", False),
    ("n1", "a", "y", False),
    ("n2", "b", "x", True),
    ("n3", "b", "x", False),
    ("n4", "c", "y", True),
    ("n5", "c", "x", False),
    ("n6", "d", "y", False),
    ("n7", "d", "x", True),
]
WEB = {"app": "web"}


def _cluster() -> Any:
    nodes = [
        make_node(name, labels={"zone": zone, "pool": pool}, taints=[GPU] if tainted else [])
        for name, zone, pool, tainted in NODES
    ]
    running = [make_pod(f"w{n}", node_name=n, labels=WEB) for n in ("n0", "n3")]
    return snapshot(nodes, running)


def _pod(when: str, pool: bool, **policies: str) -> Any:
    placement: dict[str, Any] = {"spread": [constraint(1, "zone", when, WEB, **policies)]}
    if pool:
        term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}
        required = {"nodeSelectorTerms": [term]}
        placement["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return make_pod("p", labels=WEB, **placement)


CASES = [
    pytest.param(True, {}, id="affinity-honoured"),
    pytest.param(False, {"nodeTaintsPolicy": "Honor"}, id="taints-honoured"),
    pytest.param(True, {"nodeTaintsPolicy": "Honor"}, id="both-honoured"),
    pytest.param(True, {"nodeAffinityPolicy": "Ignore"}, id="affinity-ignored"),
]


@pytest.mark.parametrize("when", ["DoNotSchedule", "ScheduleAnyway"])
@pytest.mark.parametrize(("pool", "policies"), CASES)
def test_the_kept_states_count_the_domains_the_plugin_counts(
    when: str, pool: bool, policies: dict[str, str]
) -> None:
    kept.forget()
    cluster = _cluster()
    pod = _pod(when, pool, **policies)
    config = SchedulerConfig()
    if when == "ScheduleAnyway":  # PreScore
        feasible = list(cluster.nodes)
        expected_score = spread.prepare_score(pod, cluster, feasible, config)
        assert topology_filters.prepare_spread_score(pod, cluster, feasible, config) == (
            expected_score
        )
        return
    plugin = PLUGINS_BY_NAME["PodTopologySpread"]
    assert plugin.prepare_filter is not None
    expected = plugin.prepare_filter(pod, cluster, config)
    got = topology_filters.prepare_spread_filter(pod, cluster, config)
    assert (got.pair_counts, got.domains, got.minimum) == (
        expected.pair_counts,
        expected.domains,
        expected.minimum,
    )
