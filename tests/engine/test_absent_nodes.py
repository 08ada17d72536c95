"""``engine.absent_nodes``: the FailedScheduling line counts the nodes a PreFilter left out as
kube-scheduler does — left out under v1.28, ``didn't satisfy plugin(s) [...]`` since v1.31 —
while ``filter`` and ``explain`` still show each node's own reasons; on both evaluation paths."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from policyengine.engine.absent_nodes import unsatisfied
from policyengine.engine.cycle import CycleOptions
from policyengine.lang.compiler import Program
from policyengine.model.plugins import DEFAULT_CONFIG, KUBE_1_28
from tests.engine.agreement import decide_beside_the_reference
from tests.model.storage_builders import claims, cluster, node, pod, pv, pvc

ROOT = Path(__file__).resolve().parents[2]
HOSTNAME = "kubernetes.io/hostname"


def _names(*names: str) -> dict[str, Any]:
    """Required node affinity picking nodes by name, as a DaemonSet's pods carry it."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _local(name: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [name]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


NODES = [node("n1", cpu="1"), node("n2"), node("n3")]
BOUND = [pv("local-2", node_affinity=_local("n2")), pvc("data", volume="local-2", bound=True)]


@pytest.mark.parametrize(
    ("affinity", "volumes", "storage", "v128", "current"),
    [
        pytest.param(
            _names("n1"),
            [],
            [],
            "0/3 nodes are available: 1 Insufficient cpu.",
            f"0/3 nodes are available: 1 Insufficient cpu, 2 {unsatisfied(['NodeAffinity'])}.",
            id="a daemon pod's node, full",
        ),
        pytest.param(
            _names("n2"),
            claims("data"),
            BOUND,
            "0/3 nodes are available: 1 Insufficient cpu.",
            "0/3 nodes are available: 1 Insufficient cpu, "
            f"2 {unsatisfied(['VolumeBinding', 'NodeAffinity'])}.",
            id="a named node and a bound local volume: the node both name",
        ),
        pytest.param(
            _names("n1"),
            claims("data"),
            BOUND,
            "0/3 nodes are available: "
            "node(s) didn't satisfy plugin(s) [NodeAffinity VolumeBinding] simultaneously.",
            "0/3 nodes are available: "
            "node(s) didn't satisfy plugin(s) [NodeAffinity VolumeBinding] simultaneously.",
            id="no node both name: the pod rejected whole",
        ),
        pytest.param(
            _names("n1", "n2"),
            [],
            [],
            "0/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
            f"0/3 nodes are available: 1 {unsatisfied(['NodeAffinity'])}, "
            "2 node(s) didn't match Pod's node affinity/selector.",
            id="two names in one requirement: named, and matched by none (a field selector takes one)",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                                ]
                            },
                            {
                                "matchExpressions": [
                                    {"key": HOSTNAME, "operator": "In", "values": ["n9"]}
                                ]
                            },
                        ]
                    }
                }
            },
            [],
            [],
            "0/3 nodes are available: 1 Insufficient cpu, "
            "2 node(s) didn't match Pod's node affinity/selector.",
            "0/3 nodes are available: 1 Insufficient cpu, "
            "2 node(s) didn't match Pod's node affinity/selector.",
            id="a term without matchFields: every node filtered",
        ),
    ],
)
def test_the_line_counts_the_nodes_a_prefilter_left_out_as_kube_scheduler(
    kube_default: Program,
    affinity: dict[str, Any],
    volumes: list[dict[str, Any]],
    storage: list[dict[str, Any]],
    v128: str,
    current: str,
) -> None:
    incoming = pod("p", volumes, affinity=affinity, requests={"cpu": "64"})
    snap = cluster(NODES, [], storage)
    for config, want in ((KUBE_1_28, v128), (DEFAULT_CONFIG, current)):
        options = CycleOptions(all_filters=False)
        rng = random.Random(0)
        decision, _ = decide_beside_the_reference(
            kube_default, incoming, snap, rng, options, config
        )
        assert decision.message == want
        # Each node's own reasons stay (what ``filter`` and ``explain`` show).
        assert set(decision.infeasible) == {"n1", "n2", "n3"}
