"""Default topology spreading in the loop: Services and controllers watched through the real
client from the loopback server, their selectors spreading the pods they select."""

from __future__ import annotations

from typing import Any

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller.workloads import trimmed
from policyengine.model.workloads import parse_workload
from tests.controller.builders import RunningScheduler, node_obj, pod_obj, program_from

# Spreading alone decides; equal scores go to the first node by name.
SPREAD_ONLY = """
policy "spread-only" {
  score spread weight 2 normalize pod_topology_spread { topology_spread_score(pod, node) }
  select lowest { node.name }
}
"""
WEB = {"app": "web"}


def service(selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def replica_set() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-rs", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": WEB},
            "template": {"metadata": {"labels": WEB}, "spec": {"containers": []}},
        },
    }


def owned(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-rs",
            "uid": "rs-uid",
            "controller": True,
        }
    ]
    return obj


@pytest.mark.parametrize(
    ("objects", "owner", "expected"),
    [
        ([service(WEB)], False, "n2"),  # the Service selects the pod on n1: n2 spreads
        ([replica_set()], True, "n2"),  # so does the pod's ReplicaSet
        ([service(None)], False, "n1"),  # a Service without selector selects nothing
        ([replica_set()], False, "n1"),  # a ReplicaSet that is not the pod's controller
        ([], False, "n1"),  # nothing selects it: no default spreading
    ],
    ids=["service", "replicaset", "service-without-selector", "not-owned", "nothing"],
)
def test_default_spreading_reads_the_watched_objects(
    apiserver: LoopbackAPIServer, objects: list[dict[str, Any]], owner: bool, expected: str
) -> None:
    for name in ("n1", "n2"):
        apiserver.create(node_obj(name, labels={"topology.kubernetes.io/zone": "z"}))
    apiserver.create(pod_obj("running", node="n1", labels=WEB))
    for obj in objects:
        apiserver.create(obj)
    pending = pod_obj("pending", labels=WEB)
    apiserver.create(owned(pending) if owner else pending)
    with RunningScheduler(apiserver, program_from(SPREAD_ONLY)):
        apiserver.wait_for(lambda: "default/pending" in apiserver.bound_nodes(), timeout=20)
    assert apiserver.bound_nodes()["default/pending"] == expected


def test_a_service_created_later_spreads_the_next_pods(apiserver: LoopbackAPIServer) -> None:
    for name in ("n1", "n2"):
        apiserver.create(node_obj(name))
    apiserver.create(pod_obj("first", labels=WEB))
    with RunningScheduler(apiserver, program_from(SPREAD_ONLY)) as running:
        apiserver.wait_for(lambda: "default/first" in apiserver.bound_nodes(), timeout=20)
        apiserver.create(service(WEB))
        apiserver.wait_for(
            lambda: running.scheduler.cache.snapshot().workloads.get("Service", "default", "web"),
            timeout=20,
        )
        apiserver.create(pod_obj("second", labels=WEB))
        apiserver.wait_for(lambda: "default/second" in apiserver.bound_nodes(), timeout=20)
    assert apiserver.bound_nodes() == {"default/first": "n1", "default/second": "n2"}


@pytest.mark.parametrize(
    "obj",
    [service(WEB), service(None), replica_set()],
    ids=["service", "service-without-selector", "replicaset"],
)
def test_trimmed_objects_read_as_the_whole_ones(obj: dict[str, Any]) -> None:
    obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "7", "uid": "u"}}
    obj["status"] = {"replicas": 3}
    small = trimmed(obj)
    assert parse_workload(small) == parse_workload(obj)
    assert "status" not in small and "template" not in small.get("spec", {})
    assert small["metadata"]["resourceVersion"] == "7"
