"""``policies/kube-default.sched`` decides as kube-scheduler's default profile does.

The 50 reference clusters in ``tests/data/kube-scheduler-cases`` were run through a real
kube-scheduler v1.28.7. Through the policy language and the engine, every case must give the
same feasible nodes, the same per-rule weighted scores per node, the same best nodes, and for an
unschedulable pod the same histogram line (kube-scheduler's message up to its preemption part,
which belongs to the preemption issue).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.engine.cycle import schedule
from policyengine.lang.compiler import Program
from policyengine.model.parse import parse_pod
from policyengine.model.plugins import KUBE_1_28
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "tests" / "data" / "kube-scheduler-cases").glob("c*.yaml"))

# kube-scheduler's plugin names → the rule names of kube-default.sched (library ``kube``).
RULES = {
    "TaintToleration": "kube.taint_toleration",
    "NodeAffinity": "kube.node_affinity",
    "PodTopologySpread": "kube.pod_topology_spread",
    "InterPodAffinity": "kube.inter_pod_affinity",
    "NodeResourcesFit": "kube.node_resources_fit",
    "NodeResourcesBalancedAllocation": "kube.balanced_allocation",
    "ImageLocality": "kube.image_locality",
}
WEIGHTS = {
    "kube.taint_toleration": 3,
    "kube.node_affinity": 2,
    "kube.pod_topology_spread": 2,
    "kube.inter_pod_affinity": 2,
}


def _case(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_reference_case(path: Path, kube_default: Program) -> None:
    case = _case(path)
    result = case["result"]
    if result["outcome"] == "preset_nodeName":
        pytest.skip("the pod named its node; kube-scheduler never ran")
    loaded = parse_objects([case["cluster"]], source=path.name)
    snapshot, _, _ = snapshot_from_objects(loaded.nodes, loaded.pods, loaded.namespaces)
    pod = parse_pod(case["pod"], source=path.name)

    decision = schedule(kube_default, pod, snapshot, random.Random(0), config=KUBE_1_28)

    assert sorted(decision.feasible) == sorted(result["feasible"])
    if result["outcome"] == "unschedulable":
        expected = " ".join(result["failed_scheduling"].split())
        assert expected.startswith(decision.message[:-1]), (decision.message, expected)
        assert decision.node is None
        return
    assert decision.node in result.get("top_nodes", result["feasible"])
    expected_scores = result.get("scores")
    if not expected_scores:
        return
    for node, plugins in expected_scores.items():
        for plugin, value in plugins.items():
            if plugin not in RULES:
                continue
            rule = RULES[plugin]
            got = decision.scores[node].rules[rule] * WEIGHTS.get(rule, 1)
            assert got == value, f"{rule} on {node}"
    totals = {node: decision.scores[node].total for node in decision.feasible}
    assert totals == {k: float(v) for k, v in result["total_scores"].items()}
