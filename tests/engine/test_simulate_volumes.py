"""``simulate`` assumes each placed pod's volume decisions: a volume chosen for one pod's claim
is taken for later pods, and a claim provisioned on a node keeps later pods sharing it there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policyengine.cli.render import simulation_document
from policyengine.engine.simulate import simulate
from policyengine.lang.compiler import Program
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from tests.model.builders import make_node, make_pod

ROOT = Path(__file__).resolve().parents[2]


def _local_pv(name: str, node: str, size: str = "10Gi") -> dict[str, Any]:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    }


def _claim(name: str, cls: str = "local") -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": cls,
        },
        "status": {"phase": "Pending"},
    }


def _class(name: str, provisioner: str) -> dict[str, Any]:
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _cluster(*items: dict[str, Any]) -> Any:
    # n1 is far larger: resource scores send both members there, but only one volume is.
    nodes = [
        make_node("n1", labels={"kubernetes.io/hostname": "n1"}, cpu="64", memory="256Gi"),
        make_node("n2", labels={"kubernetes.io/hostname": "n2"}),
    ]
    loaded = parse_objects([{"kind": "List", "items": list(items)}], "storage")
    snapshot, _, _ = snapshot_from_objects(nodes, (), storage=loaded.storage)
    return snapshot


def _pod(name: str, claim: str) -> Any:
    return make_pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])


def test_a_volume_taken_by_one_pod_is_not_offered_to_the_next(kube_default: Program) -> None:
    snapshot = _cluster(
        _class("local", "kubernetes.io/no-provisioner"),
        _local_pv("pv-1", "n1"),
        _local_pv("pv-2", "n2"),
        _claim("a"),
        _claim("b"),
        _claim("c"),
    )
    run = simulate(kube_default, snapshot, [_pod("p1", "a"), _pod("p2", "b"), _pod("p3", "c")])
    first, second, third = run.decisions
    assert {first.node, second.node} == {"n1", "n2"}
    assert first.volumes.static[0].pv.name != second.volumes.static[0].pv.name
    # Both volumes are taken: the third claim finds none.
    assert third.node is None
    assert third.message == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )
    taken = {pv.name: pv.claim_ref.name for pv in run.snapshot.storage.pvs.values() if pv.claim_ref}
    assert taken == {
        first.volumes.static[0].pv.name: "a",
        second.volumes.static[0].pv.name: "b",
    }
    placements = simulation_document(run)["placements"]
    assert placements[0]["volumes"] == [{"claim": "a", "volume": first.volumes.static[0].pv.name}]


def test_pods_sharing_a_claim_follow_its_volume(kube_default: Program) -> None:
    snapshot = _cluster(
        _class("local", "kubernetes.io/no-provisioner"),
        _local_pv("pv-1", "n1"),
        _local_pv("pv-2", "n2"),
        _claim("a"),
    )
    run = simulate(kube_default, snapshot, [_pod("p1", "a"), _pod("p2", "a"), _pod("p3", "a")])
    nodes = {d.node for d in run.decisions}
    assert len(nodes) == 1 and None not in nodes


def test_a_provisioned_claim_keeps_its_pods_on_the_selected_node(kube_default: Program) -> None:
    snapshot = _cluster(_class("fast", "csi.example.com"), _claim("a", "fast"))
    run = simulate(kube_default, snapshot, [_pod("p1", "a"), _pod("p2", "a")])
    first, second = run.decisions
    assert first.node is not None and second.node == first.node
    claim = run.snapshot.storage.claim("default", "a")
    assert claim is not None and claim.selected_node == first.node
    placements = simulation_document(run)["placements"]
    assert placements[0]["volumes"] == [{"claim": "a", "provision_on": first.node}]


def test_gang_members_do_not_share_a_volume(kube_default: Program) -> None:
    # n1 is far larger: resource scores send both members there, but only one volume is.
    nodes = [
        make_node("n1", labels={"kubernetes.io/hostname": "n1"}, cpu="64", memory="256Gi"),
        make_node("n2", labels={"kubernetes.io/hostname": "n2"}),
    ]
    loaded = parse_objects(
        [
            {
                "kind": "List",
                "items": [
                    _class("local", "kubernetes.io/no-provisioner"),
                    _local_pv("pv-1", "n1"),
                    _local_pv("pv-2", "n2"),
                    _claim("a"),
                    _claim("b"),
                    {
                        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                        "kind": "PodGroup",
                        "metadata": {"name": "g", "namespace": "default"},
                        "spec": {"minMember": 2},
                    },
                ],
            }
        ],
        "storage",
    )
    snapshot, _, _ = snapshot_from_objects(
        nodes, (), pod_groups=loaded.pod_groups, storage=loaded.storage
    )
    members = [
        make_pod(
            name,
            labels={"scheduling.x-k8s.io/pod-group": "g"},
            requests={"cpu": "1", "memory": "1Gi"},
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        )
        for name, claim in (("m0", "a"), ("m1", "b"))
    ]
    run = simulate(kube_default, snapshot, members)
    assert run.gangs and run.gangs[0].scheduled
    volumes = [d.volumes.static[0].pv.name for d in run.decisions]
    assert sorted(volumes) == ["pv-1", "pv-2"]
    assert {d.node for d in run.decisions} == {"n1", "n2"}
