"""``policies/kube-default.sched`` decides the storage reference cases as kube-scheduler did.

Through the policy language and the engine (the fast path) and through the reference
evaluator, every case of ``tests/data/kube-scheduler-volume-cases`` gives kube-scheduler's
feasible nodes; a pod it could not place gets the same FailedScheduling message (up to its
preemption part), and a scheduled pod's chosen node is among kube-scheduler's best.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from policyengine.engine.cycle import CycleOptions
from policyengine.lang.compiler import Program
from policyengine.model.parse import parse_pod
from policyengine.model.plugins import KUBE_1_28
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from tests.engine.agreement import decide_beside_the_reference

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "tests" / "data" / "kube-scheduler-volume-cases").glob("c*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_volume_case(path: Path, kube_default: Program) -> None:
    case = yaml.safe_load(path.read_text())
    result = case["result"]
    loaded = parse_objects([case["cluster"]], source=path.name)
    snapshot, _, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, storage=loaded.storage
    )
    pod = parse_pod(case["pod"], source=path.name)

    options = CycleOptions(all_filters=False)
    rng = random.Random(0)
    decision, _ = decide_beside_the_reference(kube_default, pod, snapshot, rng, options, KUBE_1_28)
    assert sorted(decision.feasible) == sorted(result["feasible"])
    if result["outcome"] == "scheduled":
        assert decision.node in result.get("top_nodes", result["feasible"])
        return
    assert decision.node is None
    expected = " ".join(result["failed_scheduling"].split())
    if result["outcome"] == "error":
        assert decision.message == f"0/{len(snapshot)} nodes are available: {expected}."
        return
    # kube-scheduler's message, up to its preemption part (the engine's line has none). When
    # bound local volumes restrict the nodes (VolumeBinding's PreFilter), v1.28 counts only
    # those it filtered; so does the engine's line (``engine.absent_nodes.reported``).
    message = decision.message
    assert message.endswith("."), message
    assert expected == message or expected.startswith(message + " preemption: "), (
        message,
        expected,
    )
