"""The 50 reference clusters: our plugins must decide exactly what kube-scheduler v1.28.7 did.

For every case (except ``preset_nodeName``, where no scheduler ran) the filters run over all
nodes, the raw scores go through our normalisation and the default weights, and we compare the
feasible set, every plugin's weighted score per node, and the FailedScheduling message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.model.kube_profile import run_cycle
from policyengine.model.parse import parse_pod
from policyengine.model.plugins import KUBE_1_28
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "kube-scheduler-cases"
CASES = sorted(CASES_DIR.glob("c*.yaml")) if CASES_DIR.is_dir() else []

# kube-scheduler logs VolumeBinding too; it has nothing to do without volumes.
IGNORED_PLUGINS = {"VolumeBinding"}


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@pytest.mark.skipif(not CASES, reason="reference cases not available")
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_kube_case(path: Path) -> None:
    case = _load(path)
    result = case["result"]
    if result["outcome"] == "preset_nodeName":
        pytest.skip("the pod named its node; kube-scheduler never ran")
    loaded = parse_objects([case["cluster"]], source=path.name)
    snapshot, pending, warnings = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces
    )
    assert not pending and not warnings and not loaded.warnings
    pod = parse_pod(case["pod"], source=path.name)

    cycle = run_cycle(pod, snapshot, KUBE_1_28)

    assert sorted(cycle.feasible) == sorted(result["feasible"])
    if result["outcome"] == "unschedulable":
        assert cycle.message == " ".join(result["failed_scheduling"].split())
        return
    assert result["outcome"] == "scheduled"
    expected_scores = result.get("scores")
    if not expected_scores:
        assert len(cycle.feasible) == 1
        return
    for node, plugins in expected_scores.items():
        for plugin, value in plugins.items():
            if plugin in IGNORED_PLUGINS:
                assert value == 0
                continue
            assert cycle.scores[plugin][node] == value, f"{plugin} on {node}"
    assert dict(cycle.totals) == result["total_scores"]
    assert set(cycle.top_nodes) == set(result["top_nodes"])
