from __future__ import annotations

from fractions import Fraction

import pytest

from policyengine.model.gpu_devices import GpuDevice, Grant, share, whole
from policyengine.model.hami import (
    ALLOCATED,
    BIND_PHASE,
    TO_ALLOCATE,
    VGPU_NODE,
    assignment_annotations,
    decode_node_devices,
    decode_pod_devices,
    demand_of,
    encode_node_devices,
    encode_node_devices_legacy,
    encode_pod_devices,
    pod_grants,
)

DEVICES = (
    GpuDevice(0, "GPU-aaa", "NVIDIA-A100-SXM4-40GB", 40960, 100, 10, True),
    GpuDevice(1, "GPU-bbb", "NVIDIA-A100-SXM4-40GB", 40960, 100, 4, False),
)


@pytest.mark.parametrize(
    "encode",
    [encode_node_devices, encode_node_devices_legacy],
    ids=["encode_node_devices", "encode_node_devices_legacy"],
)
def test_node_registration_round_trip(encode) -> None:  # type: ignore[no-untyped-def]
    assert decode_node_devices(encode(DEVICES)) == DEVICES


def test_node_registration_reads_hami_text_without_index() -> None:
    value = "GPU-aaa,10,32768,100,NVIDIA-Tesla V100,0,true:GPU-bbb,10,32768,100,NVIDIA-Tesla V100,0,true:"
    decoded = decode_node_devices(value)
    assert not isinstance(decoded, str)
    assert [(d.index, d.uuid, d.memory_mib) for d in decoded] == [
        (0, "GPU-aaa", 32768),
        (1, "GPU-bbb", 32768),
    ]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("garbage", "expected devices separated by ':' or a JSON list"),
        ("a,b,c:", "device 0: expected 7 or 9 comma-separated fields, found 3"),
        ("a,x,1,100,T,0,true:", "device 0: count, memory and cores must be non-negative integers"),
        ("a,10,1,100,T,0,maybe:", "device 0: health must be true or false"),
        ('[{"count": 10}]', "device 0: no id"),
        ('[{"id": "a", "devmem": -1}]', "device 0: devmem must be a non-negative integer"),
        ("[1]", "device 0: not an object"),
    ],
    ids=[
        "not-devices",
        "too-few-fields",
        "count-not-a-number",
        "health-not-a-bool",
        "json-without-id",
        "json-negative-devmem",
        "json-not-an-object",
    ],
)
def test_node_registration_errors(value: str, error: str) -> None:
    assert decode_node_devices(value) == error


def test_pod_devices_round_trip() -> None:
    containers = (
        (Grant("GPU-aaa", 25, 10240),),
        (),
        (Grant("GPU-a", 100, 1), Grant("GPU-b", 100, 2)),
    )
    value = encode_pod_devices(containers)
    assert value == "GPU-aaa,NVIDIA,10240,25:;;GPU-a,NVIDIA,1,100:GPU-b,NVIDIA,2,100:;"
    assert decode_pod_devices(value) == containers


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("GPU-a,NVIDIA,10:;", "container 0, device 0: expected uuid,type,memory,cores"),
        (
            "GPU-a,NVIDIA,x,10:;",
            "container 0, device 0: memory and cores must be non-negative integers",
        ),
    ],
    ids=["too-few-fields", "memory-not-a-number"],
)
def test_pod_devices_errors(value: str, error: str) -> None:
    assert decode_pod_devices(value) == error


def test_assignment_annotations_and_reading_them_back() -> None:
    grants = (Grant("GPU-aaa", 25, 10240),)
    annotations = assignment_annotations(grants, "node-1", 1700000000)
    assert annotations[TO_ALLOCATE] == annotations[ALLOCATED] == "GPU-aaa,NVIDIA,10240,25:;"
    assert annotations[VGPU_NODE] == "node-1"
    assert annotations[BIND_PHASE] == "allocating"
    assert pod_grants(annotations) == grants
    assert pod_grants({ALLOCATED: "broken"}) is None
    assert pod_grants({}) is None


@pytest.mark.parametrize(
    ("requests", "demand"),
    [
        ({}, whole(0)),
        ({"nvidia.com/gpu": 2}, whole(2)),
        (
            {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 30, "nvidia.com/gpumem": 4000},
            share(30, 4000),
        ),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50}, share(0, 0, 50)),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 30}, share(30, 0, 100)),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 100}, whole(1)),
        ({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 1000}, share(0, 1000, devices=2)),
    ],
    ids=[
        "whole(0)",
        "whole(2)",
        "share(30,4000)",
        "share(0,0,50)",
        "share(30,0,100)",
        "whole(1)",
        "share(0,1000,devices=2)",
    ],
)
def test_demand_from_hami_resources(requests: dict[str, int], demand: object) -> None:
    assert demand_of({k: Fraction(v) for k, v in requests.items()}) == demand
