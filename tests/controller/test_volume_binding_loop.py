"""The loop binds a pod's waiting claims before the pod, against the loopback API server.

A PV controller stand-in (a thread, as the real one would act on what it watches) completes
what the scheduler asks: a volume whose claimRef names a claim gets that claim bound to it;
a claim annotated with a selected node gets a volume provisioned there. The scheduler binds
the pod only once its claims are bound; when the binding fails it forgets its assumptions,
reports it, and tries the pod again after its backoff.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from loopback import LoopbackAPIServer
from policyengine.model.podgroup import POD_GROUP_LABEL
from tests.controller.builders import (
    FAST,
    RunningScheduler,
    node_obj,
    pod_obj,
    podgroup,
    wait_until,
)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _class(name: str, provisioner: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _pv(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
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


def _claim(name: str, cls: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": cls,
        },
        "status": {"phase": "Pending"},
    }


def _pod(name: str, claim: str) -> dict[str, Any]:
    obj = pod_obj(name)
    obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return obj


class PVController:
    """The PV controller and a provisioner, in small: binds claims the scheduler chose
    volumes for, provisions claims it selected a node for (``provision`` False: the
    provisioner gives up, removing the annotation)."""

    def __init__(
        self,
        server: LoopbackAPIServer,
        *,
        provision: bool = True,
        unbind_after: float = -1,
        driver: str | None = None,
    ) -> None:
        self.server = server
        self.provision = provision
        # The CSI driver of the volumes it provisions (None: local volumes).
        self.driver = driver
        # >= 0: instead of binding a claim, drop its volume's claimRef this long after
        # seeing it (as the PV controller does with a volume it cannot bind).
        self.unbind_after = unbind_after
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PVController:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            self._step()

    def _bind(self, claim: dict[str, Any], pv_name: str) -> None:
        claim["spec"]["volumeName"] = pv_name
        claim["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
        claim["status"] = {"phase": "Bound"}
        self.server.update(claim)

    def _step(self) -> None:
        for pv in self.server.list("PersistentVolume"):
            ref = pv["spec"].get("claimRef")
            if not ref:
                continue
            claim = self.server.get("PersistentVolumeClaim", ref["namespace"], ref["name"])
            if claim is None or claim["spec"].get("volumeName"):
                continue
            if self.unbind_after < 0:
                self._bind(claim, pv["metadata"]["name"])
                continue
            first = self.seen.setdefault(pv["metadata"]["name"], time.monotonic())
            if time.monotonic() - first >= self.unbind_after:
                del pv["spec"]["claimRef"]
                self.server.update(pv)
        for claim in self.server.list("PersistentVolumeClaim"):
            annotations = claim["metadata"].get("annotations") or {}
            node = annotations.get(SELECTED_NODE)
            if node is None or claim["spec"].get("volumeName"):
                continue
            if not self.provision:
                del annotations[SELECTED_NODE]
                self.server.update(claim)
                continue
            name = f"{claim['metadata']['name']}-prov"
            pv = _pv(name, node)
            pv["spec"]["storageClassName"] = claim["spec"]["storageClassName"]
            if self.driver is not None:
                del pv["spec"]["local"]
                pv["spec"]["csi"] = {"driver": self.driver, "volumeHandle": name}
            pv["spec"]["claimRef"] = {
                "namespace": "default",
                "name": claim["metadata"]["name"],
                "uid": claim["metadata"]["uid"],
            }
            self.server.create(pv)
            self._bind(claim, name)


def test_a_waiting_claim_is_bound_to_the_chosen_volume_before_the_pod(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(node_obj("n2"))
    apiserver.create(_class("local", "kubernetes.io/no-provisioner"))
    apiserver.create(_pv("pv-1", "n2"))
    apiserver.create(_claim("data", "local"))
    apiserver.create(_pod("p", "data"))
    with PVController(apiserver), RunningScheduler(apiserver):
        wait_until("the pod bound", lambda: apiserver.bound_nodes(), apiserver.bound_nodes)
    assert apiserver.bound_nodes() == {"default/p": "n2"}
    pv = apiserver.get("PersistentVolume", None, "pv-1")
    assert pv is not None and pv["spec"]["claimRef"]["name"] == "data"
    claim = apiserver.get("PersistentVolumeClaim", "default", "data")
    assert claim is not None and claim["spec"]["volumeName"] == "pv-1"
    # The volume was bound to its claim before the pod to its node.
    (patch,) = apiserver.requests(resource="persistentvolumes", verb="patch")
    (binding,) = apiserver.requests(resource="pods", subresource="binding")
    assert apiserver.requests().index(patch) < apiserver.requests().index(binding)


def test_a_claim_to_provision_names_the_chosen_node(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(_class("fast", "csi.example.com"))
    apiserver.create(_claim("data", "fast"))
    apiserver.create(_pod("p", "data"))
    with PVController(apiserver), RunningScheduler(apiserver):
        wait_until("the pod bound", lambda: apiserver.bound_nodes(), apiserver.bound_nodes)
    claim = apiserver.get("PersistentVolumeClaim", "default", "data")
    assert claim is not None
    assert claim["metadata"]["annotations"][SELECTED_NODE] == "n1"
    assert claim["spec"]["volumeName"] == "data-prov"
    assert apiserver.bound_nodes() == {"default/p": "n1"}


def test_a_failed_provisioning_leaves_the_pod_unbound_and_it_is_tried_again(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(_class("fast", "csi.example.com"))
    apiserver.create(_claim("data", "fast"))
    apiserver.create(_pod("p", "data"))
    options = dataclasses.replace(FAST, volume_bind_timeout=5.0)
    with RunningScheduler(apiserver, options=options):
        with PVController(apiserver, provision=False):
            wait_until(
                "the binding reported failed",
                lambda: apiserver.events(reason="FailedScheduling"),
                apiserver.bound_nodes,
            )
        assert apiserver.bound_nodes() == {}
        (event,) = apiserver.events(reason="FailedScheduling")[:1]
        assert 'running PreBind plugin "VolumeBinding"' in str(event)
        # Retried after the backoff, with the provisioner working again.
        with PVController(apiserver):
            wait_until("the pod bound", lambda: apiserver.bound_nodes(), apiserver.bound_nodes)
    assert apiserver.bound_nodes() == {"default/p": "n1"}


def test_a_timed_out_binding_forgets_the_volume_chosen(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(_class("local", "kubernetes.io/no-provisioner"))
    apiserver.create(_pv("pv-1", "n1"))
    apiserver.create(_claim("data", "local"))
    apiserver.create(_pod("p", "data"))
    options = dataclasses.replace(FAST, volume_bind_timeout=0.5)
    with RunningScheduler(apiserver, options=options) as running:
        # No PV controller: the claim is never bound, the binding times out.
        wait_until(
            "the binding reported failed",
            lambda: apiserver.events(reason="FailedScheduling"),
            apiserver.bound_nodes,
        )
        assert apiserver.bound_nodes() == {}
        wait_until(
            "the assumption forgotten",
            lambda: not running.scheduler.cache.is_assumed("default/p"),
        )


def test_a_missing_claim_is_reported_even_when_the_cluster_has_no_storage(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(_pod("p", "nope"))
    with RunningScheduler(apiserver):
        wait_until(
            "the pod reported unschedulable",
            lambda: apiserver.events(reason="FailedScheduling"),
            apiserver.bound_nodes,
        )
    (event, *_) = apiserver.events(reason="FailedScheduling")
    assert event["note"].startswith(
        '0/1 nodes are available: persistentvolumeclaim "nope" not found.'
    ), event["note"]
    assert apiserver.bound_nodes() == {}


def test_gang_members_get_their_claims_bound_before_them(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(node_obj("n1", cpu="64", memory="256Gi"))
    apiserver.create(node_obj("n2"))
    apiserver.create(_class("local", "kubernetes.io/no-provisioner"))
    apiserver.create(_pv("pv-1", "n1"))
    apiserver.create(_pv("pv-2", "n2"))
    apiserver.create(podgroup("g", 2))
    for name, claim in (("m0", "a"), ("m1", "b")):
        apiserver.create(_claim(claim, "local"))
        obj = _pod(name, claim)
        obj["metadata"]["labels"][POD_GROUP_LABEL] = "g"
        apiserver.create(obj)
    with PVController(apiserver), RunningScheduler(apiserver):
        wait_until(
            "both members bound", lambda: len(apiserver.bound_nodes()) == 2, apiserver.bound_nodes
        )
    # Both volumes taken, one per member: the members did not share one.
    assert apiserver.bound_nodes() == {"default/m0": "n1", "default/m1": "n2"} or (
        apiserver.bound_nodes() == {"default/m0": "n2", "default/m1": "n1"}
    )
    refs = {
        pv["metadata"]["name"]: pv["spec"]["claimRef"]["name"]
        for pv in apiserver.list("PersistentVolume")
    }
    assert sorted(refs.values()) == ["a", "b"]


def test_a_volume_unbound_by_the_pv_controller_fails_the_binding(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(_class("local", "kubernetes.io/no-provisioner"))
    apiserver.create(_pv("pv-1", "n1"))
    apiserver.create(_claim("data", "local"))
    apiserver.create(_pod("p", "data"))
    with PVController(apiserver, unbind_after=0.5), RunningScheduler(apiserver):
        wait_until(
            "the binding reported failed",
            lambda: apiserver.events(reason="FailedScheduling"),
            apiserver.bound_nodes,
        )
        (event, *_) = apiserver.events(reason="FailedScheduling")
        assert "ClaimRef got reset for pv 'pv-1'" in event["note"], event["note"]
        assert apiserver.bound_nodes() == {}


def _csi_node(name: str, driver: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": driver, "nodeID": name, "allocatable": {"count": count}}]},
    }


def test_replicas_with_claims_alike_fill_each_node_up_to_its_attach_limit(
    apiserver: LoopbackAPIServer,
) -> None:
    """A StatefulSet's replicas, each with a claim of one shape to provision, share the storage
    filters' results from cycle to cycle; each assumed claim still counts on its node, so no
    node takes more than its CSINode allows, and the replicas beyond the cluster's limits
    wait."""
    for name in ("n1", "n2", "n3"):
        apiserver.create(node_obj(name))
        apiserver.create(_csi_node(name, "csi.example.com", 2))
    apiserver.create(_class("fast", "csi.example.com"))
    for index in range(7):
        apiserver.create(_claim(f"data-{index}", "fast"))
        apiserver.create(_pod(f"db-{index}", f"data-{index}"))
    # Provisioned volumes of the same driver: a claim bound meanwhile still counts there.
    with PVController(apiserver, driver="csi.example.com"), RunningScheduler(apiserver):
        wait_until(
            "six replicas bound and the seventh told why not",
            lambda: (
                len(apiserver.bound_nodes()) == 6 and apiserver.events(reason="FailedScheduling")
            ),
            apiserver.bound_nodes,
        )
    per_node: dict[str, int] = {}
    for node in apiserver.bound_nodes().values():
        per_node[node] = per_node.get(node, 0) + 1
    assert per_node == {"n1": 2, "n2": 2, "n3": 2}
    notes = [str(e["note"]) for e in apiserver.events(reason="FailedScheduling")]
    assert any("3 node(s) exceed max volume count" in note for note in notes), notes
