"""What the language sees of GPU sharing: ``node.gpus`` (one record per device) and
``pod.gpu_request`` (the pod's GPU demand), declared here and built from ``model.gpu_devices``.

Rules can then reason per device: ``any(d.free_memory >= 10Gi for d in node.gpus)``, the sum of
the free slivers ``sum(d.free_cores for d in node.gpus)``, or how many devices are entirely free.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from operator import attrgetter

from policyengine.lang.types import BOOL, INT, QUANTITY, STRING, Field, RecordType, Type
from policyengine.model.gpu_devices import GpuDemand, NodeGpus

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class GpuDeviceRecord:
    index: int
    id: str
    model: str
    memory: Fraction
    free_memory: Fraction
    cores: int
    free_cores: int
    used_by: int
    whole_free: bool


@dataclass(frozen=True, slots=True)
class GpuRequestRecord:
    devices: int
    whole: bool
    cores: int
    memory: Fraction
    memory_percent: int


def device_records(state: NodeGpus) -> list[GpuDeviceRecord]:
    return [
        GpuDeviceRecord(
            index=u.device.index,
            id=u.device.uuid,
            model=u.device.model,
            memory=Fraction(u.device.memory_mib * MIB),
            free_memory=Fraction(u.free_memory_mib * MIB),
            cores=u.device.cores,
            free_cores=u.free_cores,
            used_by=u.pods,
            whole_free=u.whole_free,
        )
        for u in state.uses
    ]


def request_record(demand: GpuDemand) -> GpuRequestRecord:
    return GpuRequestRecord(
        devices=max(demand.devices, 0),
        whole=demand.whole,
        cores=100 if demand.whole else demand.cores,
        memory=Fraction(demand.memory_mib * MIB),
        memory_percent=100 if demand.whole else demand.memory_percent,
    )


def _field(name: str, type_: Type, doc: str) -> Field:
    return Field(name, type_, attrgetter(name), doc)


GPU_DEVICE = RecordType(
    "GpuDevice",
    {
        f.name: f
        for f in (
            _field("index", INT, "The device's index on the node."),
            _field("id", STRING, "Its UUID (HAMi registration), or <node>-gpu<index>."),
            _field("model", STRING, "Its model (HAMi type, or nvidia.com/gpu.product)."),
            _field("memory", QUANTITY, "Its memory in bytes."),
            _field("free_memory", QUANTITY, "Memory not allocated to pods, in bytes."),
            _field("cores", INT, "Its compute in percent: 100."),
            _field("free_cores", INT, "Compute not allocated to pods, in percent."),
            _field("used_by", INT, "Pods holding a share (or all) of it."),
            _field("whole_free", BOOL, "No pod holds any of it (a whole-GPU pod may take it)."),
        )
    },
    "One GPU of the node and what is allocated on it (see GPU sharing).",
)

GPU_REQUEST = RecordType(
    "GpuRequest",
    {
        f.name: f
        for f in (
            _field("devices", INT, "Devices asked for (0: the pod uses no GPU)."),
            _field("whole", BOOL, "Whole, entirely free devices are asked for."),
            _field("cores", INT, "Compute per device in percent (100 for whole devices)."),
            _field(
                "memory",
                QUANTITY,
                "Memory per device in bytes (0 when asked as a percentage, or whole).",
            ),
            _field(
                "memory_percent",
                INT,
                "Memory per device as a percentage of the device (100 for whole devices).",
            ),
        )
    },
    "The pod's GPU demand: HAMi resources, the policyengine.io/gpu-share annotation, or "
    "nvidia.com/gpu whole devices.",
)

GPU_RECORDS = (GPU_DEVICE, GPU_REQUEST)
