"""Where a node's devices and a pod's GPU demand come from, for real clusters and snapshots.

Nodes: HAMi's registration annotation when present (``model.hami``); otherwise the devices are
derived from GPU feature discovery labels and allocatable (``model.gpu``): ``count`` devices of
``nvidia.com/gpu.memory`` MiB each, model ``nvidia.com/gpu.product``, identified as
``<node>-gpu<index>``, each shareable by ``nvidia.com/gpu.replicas`` pods when that label is
above 1, else by HAMi's default of 10.

Pods: HAMi's resources (``nvidia.com/gpucores``, ``nvidia.com/gpumem``,
``nvidia.com/gpumem-percentage``) make a share; the simpler convention for simulations is the
annotation ``policyengine.io/gpu-share`` with ``cores=<percent>`` and/or ``memory=<quantity or
percent>`` (``cores=25,memory=10Gi``; ``memory=50%``; ``cores=30`` alone also takes 30% of the
memory). Otherwise ``nvidia.com/gpu: N`` asks for N whole devices. The devices a running pod
holds come from its HAMi assignment annotation; a running pod without one is placed first-fit
by device index when the snapshot is built, so the totals are right.
"""

from __future__ import annotations

from collections.abc import Iterable

from policyengine.model.gpu import gpu_info
from policyengine.model.gpu_devices import (
    DEFAULT_SLOTS,
    FULL_CORES,
    GpuDemand,
    GpuDevice,
    Grant,
    share,
)
from policyengine.model.hami import (
    NODE_REGISTER,
    assignment,
    decode_node_devices,
    decode_pod_devices,
    demand_of,
    pod_grants,
)
from policyengine.model.objects import Node, Pod, ResourceList
from policyengine.model.resources import pod_requests
from policyengine.quantity import QuantityError, parse_quantity

SHARE_ANNOTATION = "policyengine.io/gpu-share"
MIB = 1024 * 1024


def node_devices(node: Node) -> tuple[GpuDevice, ...]:
    registered = node.annotations.get(NODE_REGISTER)
    if registered:
        decoded = decode_node_devices(registered)
        if not isinstance(decoded, str):
            return decoded
    info = gpu_info(node)
    slots = info.replicas if info.replicas > 1 else DEFAULT_SLOTS
    return tuple(
        GpuDevice(
            index=i,
            uuid=f"{node.name}-gpu{i}",
            model=info.product,
            memory_mib=info.memory_mib,
            slots=slots,
        )
        for i in range(info.count)
    )


def parse_share(value: str) -> GpuDemand | str:
    """The ``policyengine.io/gpu-share`` annotation, or what is wrong with it."""
    cores: int | None = None
    memory_mib = 0
    percent = 0
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        key, sep, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep:
            return f"{part!r}: expected key=value"
        if key == "cores":
            if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) <= FULL_CORES:
                return f"cores {raw!r}: expected a percentage from 1 to 100"
            cores = int(raw)
        elif key == "memory":
            if raw.endswith("%"):
                digits = raw[:-1]
                if not (digits.isascii() and digits.isdigit()) or not 0 < int(digits) <= 100:
                    return f"memory {raw!r}: expected a percentage from 1 to 100"
                percent = int(digits)
            else:
                try:
                    amount = parse_quantity(raw)
                except QuantityError:
                    return f"memory {raw!r}: not a quantity"
                if amount <= 0:
                    return f"memory {raw!r}: must be positive"
                memory_mib = -(-int(amount) // MIB)
        else:
            return f"unknown key {key!r} (expected cores or memory)"
    if cores is None and not memory_mib and not percent:
        return "expected cores=<percent> and/or memory=<quantity or percent>"
    if cores is not None and not memory_mib and not percent:
        percent = cores
    return share(cores=cores or 0, memory_mib=memory_mib, memory_percent=percent)


def pod_demand(pod: Pod, requests: ResourceList | None = None) -> GpuDemand:
    """``requests``: ``pod_requests(pod)`` when the caller has it already."""
    annotated = pod.annotations.get(SHARE_ANNOTATION)
    if annotated:
        parsed = parse_share(annotated)
        if not isinstance(parsed, str):
            return parsed
    return demand_of(pod_requests(pod) if requests is None else requests)


def pod_gpu_grants(pod: Pod) -> tuple[Grant, ...] | None:
    return pod_grants(pod.annotations)


def share_error(pod: Pod) -> str | None:
    """Why a pod's ``policyengine.io/gpu-share`` annotation is unreadable (None: it is fine or
    absent), naming the object and field."""
    value = pod.annotations.get(SHARE_ANNOTATION)
    if not value:
        return None
    parsed = parse_share(value)
    if not isinstance(parsed, str):
        return None
    return (
        f"Pod {pod.key}: metadata.annotations[{SHARE_ANNOTATION}]: {parsed}; "
        "the annotation is ignored"
    )


def registration_error(node: Node) -> str | None:
    """Why a node's HAMi registration annotation is unreadable (None: fine or absent); the
    node's devices then come from its labels."""
    value = node.annotations.get(NODE_REGISTER)
    if not value:
        return None
    decoded = decode_node_devices(value)
    if not isinstance(decoded, str):
        return None
    return (
        f"Node {node.name}: metadata.annotations[{NODE_REGISTER}]: {decoded}; "
        "devices are taken from the node's labels"
    )


def assignment_error(pod: Pod) -> str | None:
    """Why a pod's HAMi assignment annotation is unreadable (None: fine or absent); a running
    pod's devices are then chosen first-fit, as for a pod with no assignment."""
    found = assignment(pod.annotations)
    if found is None:
        return None
    key, value = found
    decoded = decode_pod_devices(value)
    if not isinstance(decoded, str):
        return None
    return f"Pod {pod.key}: metadata.annotations[{key}]: {decoded}; the annotation is ignored"


def gpu_warnings(nodes: Iterable[Node], pods: Iterable[Pod]) -> list[str]:
    """Every unreadable GPU annotation among ``nodes`` and ``pods``, for a warning each."""
    found = [e for n in nodes if (e := registration_error(n)) is not None]
    for pod in pods:
        found.extend(e for e in (share_error(pod), assignment_error(pod)) if e is not None)
    return found
