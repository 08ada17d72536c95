"""Pods pinned to nodes by name decide as the reference evaluator.

A DaemonSet's pods name one node each (``matchFields`` on ``metadata.name``): the filters look
at the named nodes alone (``functions._filter_batch``, ``node_rows.named_positions``),
NodeAffinity rejects the rest without testing its terms per node, and spreading whose
constraints honour the node affinity sums the named nodes alone (``domains.NamedPart``). A
queue of such pods, interleaved with pods of the same app that are not pinned and placed one
after another, holds every decision equal to the reference's.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.engine.agreement import decide_as_the_reference, incremental
from tests.engine.strategies import compiled
from tests.model.builders import make_node, make_pod, snapshot

ZONE = "topology.kubernetes.io/zone"
POLICY = 'import "kube-default.sched"\npolicy "p" {\n  use kube\n}\n'


def _pinned(name: str, nodes: list[str], **extra: Any) -> Any:
    terms = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        for node in nodes
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    extra.setdefault("requests", {"cpu": "100m"})
    return make_pod(
        name,
        labels={"app": "agent"},
        affinity=affinity,
        tolerations=[{"operator": "Exists"}],
        **extra,
    )


def _spread(policy: str, when: str = "ScheduleAnyway") -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "agent"}},
            "nodeAffinityPolicy": policy,
        }
    ]


@pytest.mark.parametrize(
    "spread",
    [
        pytest.param([], id="no spread"),
        pytest.param(_spread("Honor"), id="spread honouring the node affinity"),
        pytest.param(_spread("Ignore"), id="spread ignoring it"),
        pytest.param(_spread("Honor", "DoNotSchedule"), id="hard spread honouring it"),
    ],
)
def test_pods_pinned_by_name_decide_as_the_reference(spread: list[dict[str, Any]]) -> None:
    program = compiled(POLICY)
    nodes = [
        make_node(
            f"n{i}",
            labels={ZONE: f"z{i % 3}"},
            cpu="1" if i == 4 else "4",
            taints=[("dedicated", "gpu", "NoSchedule")] if i == 5 else (),
        )
        for i in range(8)
    ]
    running = [
        make_pod(f"r{i}", labels={"app": "agent"}, requests={"cpu": "100m"}, node_name=node)
        for i, node in enumerate(["n3", "n3", "n6"])
    ]
    snap = snapshot(nodes, running)
    options = incremental()
    rng = random.Random(0)
    queue = [
        _pinned("a0", ["n2"], spread=spread),
        make_pod("free0", labels={"app": "agent"}, requests={"cpu": "1"}, spread=spread),
        _pinned("a1", ["n4"], spread=spread),
        _pinned("a2", ["n5"], spread=spread),  # tainted, tolerated
        _pinned("a3", ["n1", "n7"], spread=spread),  # two terms, two names
        _pinned("a4", ["gone"], spread=spread),  # a node the cluster lacks: fits nowhere
        make_pod("free1", labels={"app": "agent"}, requests={"cpu": "1"}, spread=spread),
        _pinned("a5", ["n4"], requests={"cpu": "3"}, spread=spread),  # n4 is too small now
        _pinned("a6", ["n2"], spread=spread),
        _pinned("a7", ["n3"], spread=spread),  # a node holding pods of the app already
        _pinned("a8", ["n6", "n0"], spread=spread),
        _pinned("a9", ["n3", "n4"], spread=spread),  # two zones, one holding the app's pods
    ]
    placed = []
    for pod in queue:
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        placed.append(decision.node)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
    assert placed[0] == "n2" and placed[2] == "n4" and placed[3] == "n5"
    assert placed[5] is None and placed[8] == "n2"
    if spread and spread[0]["whenUnsatisfiable"] == "DoNotSchedule":
        # Counted on the named nodes alone: zone z0 (n3) holds 3 of the app's pods, z1 (n4) 1.
        assert placed[9:] == ["n3", "n0", "n4"]
