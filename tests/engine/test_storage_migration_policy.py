"""``kube-default.sched`` over in-tree volumes and over nodes bound local volumes exclude.

The fast path and the reference evaluator agree on clusters whose in-tree volumes count and
reach as their CSI drivers (``model.storage_migration``), and the FailedScheduling line leaves
out, or in later releases counts apart, the nodes VolumeBinding's PreFilter excludes.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.engine.absent_nodes import unsatisfied
from policyengine.engine.cycle import CycleOptions
from policyengine.lang.compiler import Program
from policyengine.model.parse import parse_pod
from policyengine.model.plugins import DEFAULT_CONFIG, KUBE_1_28
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from tests.engine.agreement import decide_beside_the_reference
from tests.model.storage_builders import claims, cluster, node, pod, pv, pvc

ROOT = Path(__file__).resolve().parents[2]
UNSATISFIED = unsatisfied(["VolumeBinding"])
CASES = ROOT / "tests" / "data" / "kube-scheduler-volume-cases"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
EBS = "ebs.csi.aws.com"
EBS_KEY = "topology.ebs.csi.aws.com/zone"
ZONE = "topology.kubernetes.io/zone"


def _csi_node(name: str, migrated: str | None, count: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if migrated:
        meta["annotations"] = {MIGRATED: migrated}
    drivers = [{"name": EBS, "nodeID": name, "allocatable": {"count": count}}]
    return {"kind": "CSINode", "metadata": meta, "spec": {"drivers": drivers}}


def _ebs(name: str, volume_id: str, zone: str) -> dict[str, Any]:
    return pv(name, awsElasticBlockStore={"volumeID": volume_id}, labels={ZONE: zone})


def _both(kube_default: Program, incoming: Any, snap: Any, config: Any = DEFAULT_CONFIG) -> Any:
    options = CycleOptions(all_filters=False)
    rng = random.Random(0)
    return decide_beside_the_reference(kube_default, incoming, snap, rng, options, config)[0]


def test_in_tree_volumes_decide_alike_on_both_paths(kube_default: Program) -> None:
    nodes = [
        node("a1", {ZONE: "us-east-1a", EBS_KEY: "us-east-1a"}),  # migrated, full
        node("a2", {ZONE: "us-east-1a", EBS_KEY: "us-east-1a"}),  # migrated, room
        node("a3", {ZONE: "us-east-1a"}),  # migrated, no driver topology label
        node("a4", {ZONE: "us-east-1a"}),  # not migrated: read as written
        node("b1", {ZONE: "us-east-1b", EBS_KEY: "us-east-1b"}),  # another zone
        node("b2", {ZONE: "us-east-1b"}),  # another zone, not migrated: VolumeZone's
    ]
    running = [pod("r", claims("c-old"), node_name="a1")]
    objects = [
        _ebs("old", "vol-old", "us-east-1a"),
        pvc("c-old", volume="old", bound=True),
        _ebs("mine", "aws://us-east-1a/vol-mine", "us-east-1a"),
        pvc("c", volume="mine", bound=True),
        _csi_node("a1", "kubernetes.io/aws-ebs", 1),
        _csi_node("a2", "kubernetes.io/aws-ebs", 2),
        _csi_node("a3", "kubernetes.io/aws-ebs", 2),
        _csi_node("b1", "kubernetes.io/aws-ebs", 2),
    ]
    snap = cluster(nodes, running, objects)
    decision = _both(kube_default, pod("p", claims("c")), snap)
    assert sorted(decision.feasible) == ["a2", "a4"]
    assert decision.infeasible["b2"][0].reasons == ("node(s) had no available volume zone",)
    assert decision.infeasible["a1"][0].reasons == ("node(s) exceed max volume count",)
    assert decision.infeasible["a3"][0].reasons == ("node(s) had volume node affinity conflict",)
    # b1 migrated the plugin: the zone label, translated, is the driver's topology there.
    assert decision.infeasible["b1"][0].reasons == ("node(s) had volume node affinity conflict",)


def _case(name: str) -> tuple[Any, Any]:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    loaded = parse_objects([case["cluster"]], source=name)
    snap, _, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, storage=loaded.storage
    )
    return parse_pod(case["pod"], source=name), snap


@pytest.mark.parametrize(
    ("name", "v128", "current"),
    [
        pytest.param(
            "c0141",
            "0/10 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}.",
            "0/10 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, "
            f"9 {UNSATISFIED}.",
            id="c0141",
        ),
        pytest.param(
            "c0233",
            "0/8 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
            "0/8 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            f"7 {UNSATISFIED}.",
            id="c0233",
        ),
    ],
)
def test_nodes_bound_local_volumes_exclude(
    kube_default: Program, name: str, v128: str, current: str
) -> None:
    incoming, snap = _case(name)
    assert _both(kube_default, incoming, snap, KUBE_1_28).message == v128
    assert _both(kube_default, incoming, snap).message == current


def test_storage_filters_step_aside_for_nodes_bound_local_volumes_exclude(
    kube_default: Program,
) -> None:
    local = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                    ]
                }
            ]
        }
    }
    objects = [
        pv("local-1", node_affinity=local),
        pvc("data", volume="local-1", bound=True),
        _csi_node("n1", None, 0),
        _csi_node("n2", None, 0),
    ]
    snap = cluster([node("n1"), node("n2")], [], objects)
    incoming = pod(
        "p", [*claims("data"), {"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}]
    )
    decision = _both(kube_default, incoming, snap)
    # Only n1 is filtered: the EBS limit rejects it; n2 is VolumeBinding's alone.
    assert decision.infeasible["n1"][0].reasons == ("node(s) exceed max volume count",)
    assert decision.infeasible["n2"][0].reasons == ("node(s) had volume node affinity conflict",)
    assert decision.message == (
        f"0/2 nodes are available: 1 {UNSATISFIED}, 1 node(s) exceed max volume count."
    )
