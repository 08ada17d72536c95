"""The binder writes the chosen GPU devices (HAMi's assignment annotations) with the Binding."""

from __future__ import annotations

from collections import Counter
from typing import Any

from loopback import LoopbackAPIServer
from policyengine.controller.binder import Binder, BindOutcome
from policyengine.engine.gpu_placement import gpu_annotations
from policyengine.model.gpu_devices import Grant
from policyengine.model.hami import ALLOCATED, BIND_PHASE, TO_ALLOCATE, VGPU_NODE, pod_grants
from policyengine.model.parse import parse_pod
from tests.controller.builders import Results, RunningScheduler, node_obj, pod_obj, program_from

GRANTS = (Grant("GPU-aaa", 25, 10240),)


def test_the_binding_carries_the_device_annotations_onto_the_pod(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    apiserver.create(node_obj("n1"))
    pod = parse_pod(apiserver.create(pod_obj("p")))
    binder = Binder(kube_api_client)
    results = Results()
    wanted = gpu_annotations(GRANTS, "n1", 1700000000)
    assert binder.bind(pod, "n1", results, wanted)
    (result,) = results.wait(1)
    binder.shutdown()
    assert result.outcome is BindOutcome.BOUND
    stored = apiserver.get("Pod", "default", "p")
    annotations = stored["metadata"]["annotations"]
    assert annotations[TO_ALLOCATE] == annotations[ALLOCATED] == "GPU-aaa,NVIDIA,10240,25:;"
    assert annotations[VGPU_NODE] == "n1"
    assert annotations[BIND_PHASE] == "allocating"
    assert pod_grants(annotations) == GRANTS
    assert apiserver.bound_nodes() == {"default/p": "n1"}
    # One request: the Binding, whose metadata holds the annotations; no PATCH of the pod.
    (binding,) = apiserver.requests(resource="pods", name="p", subresource="binding")
    assert binding.body["metadata"]["annotations"] == wanted
    assert apiserver.count(verb="patch") == 0


def test_a_failed_binding_leaves_no_device_annotations(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    apiserver.create(node_obj("n1"))
    pod = parse_pod(apiserver.create(pod_obj("p")))
    apiserver.fail_next(1, code=500, subresource="binding")
    binder = Binder(kube_api_client)
    results = Results()
    assert binder.bind(pod, "n1", results, gpu_annotations(GRANTS, "n1", 1))
    (result,) = results.wait(1)
    binder.shutdown()
    assert result.outcome is BindOutcome.FAILED
    assert apiserver.bound_nodes() == {}
    assert TO_ALLOCATE not in (
        apiserver.get("Pod", "default", "p")["metadata"].get("annotations") or {}
    )


def test_no_devices_no_patch(apiserver: LoopbackAPIServer, kube_api_client: Any) -> None:
    apiserver.create(node_obj("n1"))
    pod = parse_pod(apiserver.create(pod_obj("p")))
    binder = Binder(kube_api_client)
    results = Results()
    assert binder.bind(pod, "n1", results, gpu_annotations((), "n1", 1))
    results.wait(1)
    binder.shutdown()
    assert apiserver.count(verb="patch") == 0
    assert apiserver.bound_nodes() == {"default/p": "n1"}


SHARE_POLICY = """
policy "share" {
  filter gpu_devices { gpu_fits(pod, node) } reason "no GPU device has room"
}
"""


def test_the_loop_places_shares_device_by_device_and_annotates_them(
    apiserver: LoopbackAPIServer,
) -> None:
    # Two 40% shares fit on each of the node's two devices; the fifth fits nowhere. Without the
    # assumed pods' devices in the cache, shares would pile up on one device.
    node = node_obj("g1")
    node["metadata"]["labels"].update(
        {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "40960"}
    )
    apiserver.create(node)
    for i in range(5):
        obj = pod_obj(f"s{i}")
        obj["metadata"]["annotations"] = {"policyengine.io/gpu-share": "cores=40"}
        apiserver.create(obj)
    with RunningScheduler(apiserver, program_from(SHARE_POLICY)):
        apiserver.wait_for(lambda: len(apiserver.bindings()) >= 4, timeout=20)
        apiserver.wait_for(lambda: apiserver.events(reason="FailedScheduling"), timeout=20)
    bound = apiserver.bound_nodes()
    assert len(bound) == 4
    devices: Counter[str] = Counter()
    for key in bound:
        name = key.split("/")[1]
        grants = pod_grants(apiserver.get("Pod", "default", name)["metadata"]["annotations"])
        assert grants is not None and len(grants) == 1
        devices[grants[0].uuid] += 1
    assert devices == {"g1-gpu0": 2, "g1-gpu1": 2}
