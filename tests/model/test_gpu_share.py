from __future__ import annotations

import pytest

from policyengine.model.gpu_devices import Grant, share, whole
from policyengine.model.gpu_share import (
    gpu_warnings,
    node_devices,
    parse_share,
    pod_demand,
    share_error,
)
from policyengine.model.hami import ALLOCATED, NODE_REGISTER, TO_ALLOCATE, encode_node_devices
from policyengine.model.snapshot import ClusterSnapshot
from tests.model.gpu_builders import gpu_node, gpu_pod


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cores=25,memory=10Gi", share(25, 10240)),
        ("memory=50%", share(0, 0, 50)),
        ("cores=30", share(30, 0, 30)),
        (" cores = 40 , memory = 1500Mi ", share(40, 1500)),
        ("cores=0", "cores '0': expected a percentage from 1 to 100"),
        ("memory=abc", "memory 'abc': not a quantity"),
        ("memory=120%", "memory '120%': expected a percentage from 1 to 100"),
        ("gpus=2", "unknown key 'gpus' (expected cores or memory)"),
        ("cores", "'cores': expected key=value"),
        ("", "expected cores=<percent> and/or memory=<quantity or percent>"),
    ],
    ids=[
        "cores=25,memory=10Gi",
        "memory=50%",
        "cores=30",
        " cores = 40 , memory = 1500Mi ",
        "cores=0",
        "memory=abc",
        "memory=120%",
        "gpus=2",
        "cores",
        "''",
    ],
)
def test_parse_share(value: str, expected: object) -> None:
    assert parse_share(value) == expected


def test_pod_demand_conventions() -> None:
    assert pod_demand(gpu_pod("a", gpus=2)) == whole(2)
    assert pod_demand(gpu_pod("b", share="cores=25,memory=10Gi")) == share(25, 10240)
    assert pod_demand(
        gpu_pod("c", resources={"nvidia.com/gpu": "1", "nvidia.com/gpucores": "20"})
    ) == share(20, 0, 100)
    assert pod_demand(gpu_pod("d")) == whole(0)
    assert share_error(gpu_pod("e", share="cores=500")) == (
        "Pod default/e: metadata.annotations[policyengine.io/gpu-share]: "
        "cores '500': expected a percentage from 1 to 100; the annotation is ignored"
    )
    assert share_error(gpu_pod("f", share="cores=5")) is None


def test_devices_from_gfd_labels_and_from_hami_registration() -> None:
    derived = node_devices(gpu_node("n1", count=2, memory_mib=24576, product="L4"))
    assert [(d.index, d.uuid, d.model, d.memory_mib) for d in derived] == [
        (0, "n1-gpu0", "L4", 24576),
        (1, "n1-gpu1", "L4", 24576),
    ]
    registered = gpu_node("n2", annotations={NODE_REGISTER: encode_node_devices(derived)})
    assert node_devices(registered) == derived
    broken = gpu_node("n3", count=1, annotations={NODE_REGISTER: "nonsense"})
    assert [d.uuid for d in node_devices(broken)] == ["n3-gpu0"]


def test_snapshot_tracks_devices_through_with_pod_and_without_pod() -> None:
    running = [
        gpu_pod("whole", gpus=1, node="n1"),
        gpu_pod(
            "pinned",
            share="cores=50,memory=8Gi",
            node="n1",
            annotations={ALLOCATED: "n1-gpu2,NVIDIA,8192,50:;"},
        ),
    ]
    snap = ClusterSnapshot.build([gpu_node("n1", count=3, memory_mib=16384)], running)
    info = snap.node("n1")
    assert [(u.used_cores, u.used_memory_mib) for u in info.gpus.uses] == [
        (100, 16384),
        (0, 0),
        (50, 8192),
    ]
    after = snap.with_pod(gpu_pod("new", share="cores=25,memory=4Gi"), "n1")
    # best-effort first fit for a pod without an annotation; incremental equals a rebuild
    assert [(u.used_cores, u.used_memory_mib) for u in after.node("n1").gpus.uses] == [
        (100, 16384),
        (25, 4096),
        (50, 8192),
    ]
    rebuilt = ClusterSnapshot.build([gpu_node("n1", count=3, memory_mib=16384)], list(after.pods()))
    assert rebuilt.node("n1").gpus.uses == after.node("n1").gpus.uses
    released = after.without_pod("default/pinned")
    assert [(u.used_cores, u.used_memory_mib) for u in released.node("n1").gpus.uses] == [
        (100, 16384),
        (25, 4096),
        (0, 0),
    ]
    assert released.node("n1").gpus.grants["default/new"] == (
        Grant("n1-gpu1", 25, 4096, "NVIDIA-A100-SXM4-40GB"),
    )
    # the original snapshot is untouched
    assert [(u.used_cores) for u in snap.node("n1").gpus.uses] == [100, 0, 50]


def test_gpu_warnings_name_the_object_and_field() -> None:
    nodes = [gpu_node("ok"), gpu_node("bad", annotations={NODE_REGISTER: "a,b:"})]
    pods = [
        gpu_pod("fine", share="cores=5"),
        gpu_pod("broken", share="memory=0"),
        gpu_pod("held", node="ok", annotations={TO_ALLOCATE: "GPU-1,NVIDIA,1024,x:;"}),
    ]
    assert gpu_warnings(nodes, pods) == [
        "Node bad: metadata.annotations[hami.io/node-nvidia-register]: device 0: expected 7 or 9 "
        "comma-separated fields, found 2; devices are taken from the node's labels",
        "Pod default/broken: metadata.annotations[policyengine.io/gpu-share]: memory '0': must be "
        "positive; the annotation is ignored",
        "Pod default/held: metadata.annotations[hami.io/vgpu-devices-to-allocate]: container 0, "
        "device 0: memory and cores must be non-negative integers; the annotation is ignored",
    ]
