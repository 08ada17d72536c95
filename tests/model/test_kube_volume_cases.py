"""The storage reference clusters: the model's plugins decide what kube-scheduler v1.28.7 did.

Each case of ``tests/data/kube-scheduler-volume-cases`` was run through a real kube-scheduler
with the real PV controller. The default filters, storage plugins included, must give the same
feasible nodes, the same FailedScheduling message (or error) when nothing fits, and on
kube-scheduler's chosen node the same volume for each claim bound there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.model.kube_profile import run_cycle
from policyengine.model.parse import parse_pod
from policyengine.model.plugins import KUBE_1_28, volume_binding
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "kube-scheduler-volume-cases"
CASES = sorted(CASES_DIR.glob("c*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_volume_case(path: Path) -> None:
    case = _load(path)
    result = case["result"]
    loaded = parse_objects([case["cluster"]], source=path.name)
    assert not loaded.warnings
    snapshot, pending, warnings = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, storage=loaded.storage
    )
    assert not pending and not warnings
    pod = parse_pod(case["pod"], source=path.name)

    cycle = run_cycle(pod, snapshot, KUBE_1_28)

    assert sorted(cycle.feasible) == sorted(result["feasible"])
    if result["outcome"] == "unschedulable":
        assert cycle.message == " ".join(result["failed_scheduling"].split())
        return
    if result["outcome"] == "error":
        assert cycle.prefilter_message == result["failed_scheduling"]
        return
    chosen = result["chosen"]
    assert chosen in cycle.feasible
    state = volume_binding.prepare_filter(pod, snapshot, KUBE_1_28)
    found = volume_binding.node_volumes(state, snapshot.node(chosen))
    assert not found.reasons
    static = {b.claim.name: b.pv.name for b in found.volumes.static}
    provisioned = {c.name for c in found.volumes.provision}
    for claim, binding in result["pvc_bindings"].items():
        if claim in static:
            assert binding["volumeName"] == static[claim], claim
        elif claim in provisioned:
            assert binding["selectedNode"] == chosen, claim
        else:  # bound before the pod came
            pvc = snapshot.storage.claim(pod.namespace, claim)
            assert pvc is not None and pvc.fully_bound
            assert binding["volumeName"] == pvc.volume_name
