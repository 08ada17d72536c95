"""HAMi's wire conventions for shared GPUs: pod resources, node registration, pod assignment.

HAMi (Project-HAMi/HAMi) shares NVIDIA GPUs between pods. Its device plugin registers each
node's devices in a node annotation, pods ask for vGPUs with extended resources, and the
scheduler writes the devices it chose into pod annotations that the device plugin reads when
the pod starts. Speaking the same conventions lets policyengine schedule for a HAMi node side:

* pod resources: ``nvidia.com/gpu`` (vGPUs, each on a distinct device),
  ``nvidia.com/gpumem`` (MiB per vGPU), ``nvidia.com/gpumem-percentage`` (percent of the device's
  memory per vGPU), ``nvidia.com/gpucores`` (percent of the device's compute per vGPU);
* node annotation ``hami.io/node-nvidia-register``: the devices, either as JSON (current
  HAMi: a list of ``{"id", "count", "devmem", "devcore", "type", "numa", "health", "index",
  "mode"}``) or in the older text form ``id,count,devmem,devcore,type,numa,health[,index,mode]``
  with devices joined by ``:``;
* pod annotations ``hami.io/vgpu-devices-to-allocate`` and ``hami.io/vgpu-devices-allocated``:
  per container ``uuid,type,usedmem,usedcores`` joined by ``:``, containers joined by ``;``;
  with ``hami.io/vgpu-node``, ``hami.io/vgpu-time``, ``hami.io/bind-time`` and
  ``hami.io/bind-phase`` (``allocating`` until the device plugin has handed the devices out).

Decoders return a value or an error string naming what is wrong; nothing here raises on bad
input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction

from policyengine.model.gpu_devices import (
    DEFAULT_SLOTS,
    FULL_CORES,
    NO_DEMAND,
    GpuDemand,
    GpuDevice,
    Grant,
    share,
    whole,
)

GPU = "nvidia.com/gpu"
GPU_MEMORY = "nvidia.com/gpumem"
GPU_MEMORY_PERCENT = "nvidia.com/gpumem-percentage"
GPU_CORES = "nvidia.com/gpucores"

NODE_REGISTER = "hami.io/node-nvidia-register"
TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
ALLOCATED = "hami.io/vgpu-devices-allocated"
VGPU_NODE = "hami.io/vgpu-node"
VGPU_TIME = "hami.io/vgpu-time"
BIND_TIME = "hami.io/bind-time"
BIND_PHASE = "hami.io/bind-phase"
# A pod's choice of device inside its node: "binpack" (the default here) or "spread".
GPU_POLICY = "hami.io/gpu-scheduler-policy"
PHASE_ALLOCATING = "allocating"

DEVICE_TYPE = "NVIDIA"  # the device type HAMi writes in an NVIDIA pod's assignment
_DEVICE_SEP = ":"
_CONTAINER_SEP = ";"


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


# -- node registration --------------------------------------------------------------------


def encode_node_devices(devices: Sequence[GpuDevice]) -> str:
    """The registration annotation in HAMi's current (JSON) form."""
    return json.dumps(
        [
            {
                "id": d.uuid,
                "count": d.slots,
                "devmem": d.memory_mib,
                "devcore": d.cores,
                "type": d.model,
                "numa": 0,
                "health": d.healthy,
                "index": d.index,
                "mode": "hami-core",
            }
            for d in devices
        ],
        separators=(",", ":"),
    )


def encode_node_devices_legacy(devices: Sequence[GpuDevice]) -> str:
    """The registration annotation in HAMi's older text form."""
    return "".join(
        f"{d.uuid},{d.slots},{d.memory_mib},{d.cores},{d.model},0,{str(d.healthy).lower()},"
        f"{d.index},hami-core{_DEVICE_SEP}"
        for d in devices
    )


def _device_from_json(item: object, position: int) -> GpuDevice | str:
    if not isinstance(item, dict):
        return f"device {position}: not an object"
    uuid = item.get("id")
    if not isinstance(uuid, str) or not uuid:
        return f"device {position}: no id"
    numbers = {}
    for key, default in (("count", DEFAULT_SLOTS), ("devmem", 0), ("devcore", FULL_CORES)):
        value = item.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"device {position}: {key} must be a non-negative integer"
        numbers[key] = value
    index = item.get("index", position)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return f"device {position}: index must be a non-negative integer"
    health = item.get("health", True)
    return GpuDevice(
        index=index,
        uuid=uuid,
        model=str(item.get("type", "")),
        memory_mib=numbers["devmem"],
        cores=numbers["devcore"] or FULL_CORES,
        slots=numbers["count"] or DEFAULT_SLOTS,
        healthy=health is True,
    )


def _device_from_text(text: str, position: int) -> GpuDevice | str:
    items = text.split(",")
    if len(items) not in (7, 9):
        return f"device {position}: expected 7 or 9 comma-separated fields, found {len(items)}"
    count, memory, cores = _int(items[1]), _int(items[2]), _int(items[3])
    if count is None or memory is None or cores is None or min(count, memory, cores) < 0:
        return f"device {position}: count, memory and cores must be non-negative integers"
    if items[6].lower() not in ("true", "false"):
        return f"device {position}: health must be true or false"
    index = position
    if len(items) == 9:
        parsed = _int(items[7])
        if parsed is None or parsed < 0:
            return f"device {position}: index must be a non-negative integer"
        index = parsed
    return GpuDevice(
        index=index,
        uuid=items[0],
        model=items[4],
        memory_mib=memory,
        cores=cores or FULL_CORES,
        slots=count or DEFAULT_SLOTS,
        healthy=items[6].lower() == "true",
    )


def decode_node_devices(value: str) -> tuple[GpuDevice, ...] | str:
    """Devices from a registration annotation (either form), or what is wrong with it."""
    text = value.strip()
    devices: list[GpuDevice] = []
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            return f"not valid JSON: {exc}"
        for position, item in enumerate(items):
            device = _device_from_json(item, position)
            if isinstance(device, str):
                return device
            devices.append(device)
    else:
        if _DEVICE_SEP not in text:
            return "expected devices separated by ':' or a JSON list"
        for position, part in enumerate(p for p in text.split(_DEVICE_SEP) if p):
            device = _device_from_text(part, position)
            if isinstance(device, str):
                return device
            devices.append(device)
    return tuple(devices)


# -- pod assignment -----------------------------------------------------------------------


def encode_pod_devices(containers: Sequence[Sequence[Grant]]) -> str:
    """One assignment annotation value: each container's grants (HAMi's text form)."""
    return "".join(
        "".join(f"{g.uuid},{DEVICE_TYPE},{g.memory_mib},{g.cores}{_DEVICE_SEP}" for g in grants)
        + _CONTAINER_SEP
        for grants in containers
    )


def decode_pod_devices(value: str) -> tuple[tuple[Grant, ...], ...] | str:
    """Each container's grants from an assignment annotation, or what is wrong with it."""
    containers: list[tuple[Grant, ...]] = []
    parts = value.split(_CONTAINER_SEP)
    if parts and parts[-1] == "":
        parts = parts[:-1]
    for c, part in enumerate(parts):
        grants = []
        for d, item in enumerate(p for p in part.split(_DEVICE_SEP) if p):
            fields = item.split(",")
            if len(fields) != 4:
                return f"container {c}, device {d}: expected uuid,type,memory,cores"
            memory, cores = _int(fields[2]), _int(fields[3])
            if memory is None or cores is None or memory < 0 or cores < 0:
                return f"container {c}, device {d}: memory and cores must be non-negative integers"
            grants.append(Grant(fields[0], cores, memory))
        containers.append(tuple(grants))
    return tuple(containers)


def assignment(annotations: Mapping[str, str]) -> tuple[str, str] | None:
    """The assignment annotation a pod's devices are read from, as ``(key, value)``: the
    device plugin's ``allocated`` once written, else the scheduler's ``to-allocate``."""
    for key in (ALLOCATED, TO_ALLOCATE):
        value = annotations.get(key)
        if value:
            return key, value
    return None


def pod_grants(annotations: Mapping[str, str]) -> tuple[Grant, ...] | None:
    """The devices a pod holds, from its assignment annotation; None when it has none (or an
    unreadable one: the snapshot then places it first-fit)."""
    found = assignment(annotations)
    if found is None:
        return None
    decoded = decode_pod_devices(found[1])
    if isinstance(decoded, str):
        return None
    grants = tuple(g for container in decoded for g in container)
    return grants or None


def assignment_annotations(grants: Sequence[Grant], node: str, now: int) -> dict[str, str]:
    """What HAMi's scheduler writes on a pod it placed (``now``: Unix seconds)."""
    value = encode_pod_devices([grants])
    return {
        TO_ALLOCATE: value,
        ALLOCATED: value,
        VGPU_NODE: node,
        VGPU_TIME: str(now),
        BIND_TIME: str(now),
        BIND_PHASE: PHASE_ALLOCATING,
    }


# -- pod demand -----------------------------------------------------------------------------


def _whole_number(value: Fraction | int | None) -> int:
    if value is None or value <= 0:
        return 0
    return int(value)


def demand_from_resources(requests: Mapping[str, Fraction]) -> GpuDemand | None:
    """A pod's demand from HAMi resources; None when it names no HAMi share resource (then a
    bare ``nvidia.com/gpu`` means whole devices, decided by the caller)."""
    cores = _whole_number(requests.get(GPU_CORES))
    memory = _whole_number(requests.get(GPU_MEMORY))
    percent = _whole_number(requests.get(GPU_MEMORY_PERCENT))
    if not (cores or memory or percent):
        return None
    devices = _whole_number(requests.get(GPU)) or 1
    if cores >= FULL_CORES and not memory and not percent:
        return whole(devices)
    if not memory and not percent:
        percent = 100  # HAMi's default: a vGPU without a memory request gets all of it
    return share(
        cores=min(cores, FULL_CORES), memory_mib=memory, memory_percent=percent, devices=devices
    )


def demand_of(requests: Mapping[str, Fraction]) -> GpuDemand:
    """HAMi share resources when present, else ``nvidia.com/gpu`` as whole devices."""
    hami = demand_from_resources(requests)
    if hami is not None:
        return hami
    return whole(_whole_number(requests.get(GPU))) if requests.get(GPU) else NO_DEMAND
