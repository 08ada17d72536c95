"""A pod's effective resource requests, exactly as kube-scheduler computes them.

``pod_requests``: the sum over app containers; each init container raises the result to at
least its own request (plus the sidecars started before it); sidecars (init containers with
``restartPolicy: Always``) run for the pod's lifetime and add to the sum; pod-level
``spec.resources.requests`` (PodLevelResources, beta since 1.34) replace the aggregate for cpu,
memory and hugepages; ``spec.overhead`` is added last.

A running pod being resized in place (InPlacePodVerticalScaling, on by default since 1.33)
counts, per container whose status reports resources, the larger of its spec and what the
kubelet reports it holds (``status.containerStatuses[].resources.requests`` and
``allocatedResources``), or only what it holds when the resize is infeasible (condition
``PodResizePending``, reason ``Infeasible``): kube-scheduler's accounting of the pods on a node
(``UseStatusResources``). Sidecars count their status too; other init containers do not. A
pending pod has no such status, so its own requests are its spec's.

The *non-zero* variant replaces a missing (not a zero) cpu or memory request of each container
with 100m / 200Mi; kube-scheduler uses it for LeastAllocated scoring so that request-less pods
still count.

Values are exact ``Fraction`` in base units. kube-scheduler works in int64 milli-CPU and
bytes/devices, rounding each pod's total up; ``to_units`` does that conversion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from policyengine.model.frozen import FrozenDict
from policyengine.model.labels import is_qualified_name
from policyengine.model.objects import Container, Pod, ResourceList

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
NVIDIA_GPU = "nvidia.com/gpu"
HUGEPAGES_PREFIX = "hugepages-"
MIG_PREFIX = "nvidia.com/mig-"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_ZERO_DEFAULTS: FrozenDict[str, Fraction] = FrozenDict(
    {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}
)

_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe")


def to_units(name: str, value: Fraction | int) -> int:
    """kube-scheduler's integer view: milli-CPU for cpu, else whole units, rounded up."""
    if name == CPU:
        return math.ceil(Fraction(value) * 1000)
    return math.ceil(value)


def from_units(name: str, units: int) -> Fraction:
    return Fraction(units, 1000) if name == CPU else Fraction(units)


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_extended_resource(name: str) -> bool:
    """``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``, ``example.com/foo``: vendor resources."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_scalar_resource(name: str) -> bool:
    """Resources kube keeps in ``ScalarResources``: extended, hugepages, prefixed native."""
    return (
        is_extended_resource(name)
        or is_hugepages(name)
        or name.startswith("kubernetes.io/")
        or name.startswith("attachable-volumes-")
    )


def is_compressible(name: str) -> bool:
    """Only CPU can be throttled; memory, storage, hugepages and devices cannot be taken back."""
    return name == CPU


def is_gpu_resource(name: str) -> bool:
    return name in _GPU_RESOURCES or name.startswith(MIG_PREFIX)


def is_mig_resource(name: str) -> bool:
    return name.startswith(MIG_PREFIX)


def _add(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _held(c: Container, infeasible: bool, use_status: bool) -> Mapping[str, Fraction]:
    """kube's ``determineContainerReqs``: a container whose status reports resources counts
    the larger of its spec and what it holds, or only what it holds when its pod's resize is
    infeasible (the spec will not be reached)."""
    if c.status_requests is None or not use_status:
        return c.requests
    if infeasible:
        return c.status_requests
    larger = dict(c.requests)
    _max(larger, c.status_requests)
    return larger


def _container_requests(
    c: Container,
    non_missing: Mapping[str, Fraction] | None,
    infeasible: bool = False,
    use_status: bool = True,
) -> Mapping[str, Fraction]:
    requests = _held(c, infeasible, use_status)
    if not non_missing:
        return requests
    missing = {k: v for k, v in non_missing.items() if k not in requests}
    return {**requests, **missing} if missing else requests


def aggregate_container_requests(
    containers: Iterable[Container],
    init_containers: Iterable[Container],
    non_missing: Mapping[str, Fraction] | None = None,
    resize_infeasible: bool = False,
) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for c in containers:
        _add(total, _container_requests(c, non_missing, resize_infeasible))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for c in init_containers:
        # Only a sidecar's status counts: a finished init container holds nothing.
        reqs = _container_requests(c, non_missing, resize_infeasible, c.is_sidecar)
        if c.is_sidecar:
            _add(total, reqs)
            _add(sidecars, reqs)
            use: Mapping[str, Fraction] = dict(sidecars)
        else:
            tmp = dict(reqs)
            _add(tmp, sidecars)
            use = tmp
        _max(init_peak, use)
    _max(total, init_peak)
    return total


def _supports_pod_level(name: str) -> bool:
    return name in (CPU, MEMORY) or is_hugepages(name)


def pod_requests(
    pod: Pod,
    non_missing: Mapping[str, Fraction] | None = None,
    *,
    include_overhead: bool = True,
    pod_level: bool = True,
) -> ResourceList:
    """``resourcehelper.PodRequests``: the pod's effective requests (exact)."""
    # Kept on the pod itself (as ``functools.cached_property`` keeps values) for the usual
    # variants: a cycle asks about one pod many times (its view, each PreFilter and PreScore,
    # the assume step), and the lookup by value below hashes and compares its containers'
    # Fractions each time. ``Pod.with_node_name`` copies it with the rest of the pod's dict;
    # every other derivation of a pod builds a new one.
    memo: dict[Any, ResourceList] | None = None
    slot: Any = None
    if non_missing is None or non_missing is NON_ZERO_DEFAULTS:
        held = getattr(pod, "__dict__", None)
        if held is not None:
            memo = held.get(_MEMO)
            if memo is None:
                memo = held[_MEMO] = {}
            slot = (non_missing is None, include_overhead, pod_level)
            found = memo.get(slot)
            if found is not None:
                return found
    key: Any = (
        pod.containers,
        pod.init_containers,
        pod.pod_requests,
        pod.overhead,
        pod.resize_infeasible,
        non_missing,
        include_overhead,
        pod_level,
    )
    try:
        found = _REQUESTS.get(key)
    except TypeError:  # a part without value equality: sum afresh
        key, found = None, None
    if found is not None:
        if memo is not None:
            memo[slot] = found
        return found
    total = aggregate_container_requests(
        pod.containers, pod.init_containers, non_missing, pod.resize_infeasible
    )
    if pod_level and pod.pod_requests:
        for name, q in pod.pod_requests.items():
            if _supports_pod_level(name):
                total[name] = q
    if include_overhead and pod.overhead:
        _add(total, pod.overhead)
    result: ResourceList = FrozenDict(total)
    if key is not None:
        if len(_REQUESTS) >= _REQUESTS_KEPT:
            _REQUESTS.clear()
        _REQUESTS[key] = result
    if memo is not None:
        memo[slot] = result
    return result


_MEMO = "_requests_memo"  # the pod's own ``pod_requests`` results, by variant


def share_requests(pod: Pod, memo: dict[Any, ResourceList]) -> None:
    """Let ``pod`` keep its ``pod_requests`` results in ``memo``, the memo of pods whose
    containers, init containers, pod-level requests and overhead all equal its own (one pod
    class): the first of them computes each variant, the others read it without hashing their
    containers for the lookup by value. A pod that already keeps results keeps its own."""
    held = getattr(pod, "__dict__", None)
    if held is not None and _MEMO not in held:
        held[_MEMO] = memo


# ``pod_requests`` by what it reads of the pod: pods of one template ask alike, and the exact
# Fraction sums were a good part of every cycle (the assume step, PreFilters, views).
_REQUESTS: dict[Any, ResourceList] = {}
_REQUESTS_KEPT = 4096


def pod_non_zero_requests(pod: Pod) -> ResourceList:
    """The scoring variant: missing cpu/memory requests count as 100m / 200Mi per container."""
    return pod_requests(pod, NON_ZERO_DEFAULTS)


def pod_request_units(pod: Pod) -> FrozenDict[str, int]:
    """``pod_requests`` in kube-scheduler's integer units, zero entries dropped."""
    return FrozenDict({k: u for k, v in pod_requests(pod).items() if (u := to_units(k, v)) != 0})


def is_best_effort_request(pod: Pod, resources: Iterable[str] = (CPU, MEMORY)) -> bool:
    reqs = pod_requests(pod)
    return all(to_units(r, reqs.get(r, 0)) == 0 for r in resources)


def add_resources(
    a: Mapping[str, Fraction], b: Mapping[str, Fraction], sign: int = 1
) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        # Fraction arithmetic costs microseconds per operation (the assume step adds a pod's
        # requests to its node's): a resource the node had none of takes the pod's value as it
        # is (``0 + v`` is ``v``, of the same type), and a whole sum stays whole.
        if old is None:
            nv = v if sign == 1 else sign * v
        elif (
            type(old) is Fraction and type(v) is Fraction and old.denominator == v.denominator == 1
        ):
            nv = Fraction(old.numerator + sign * v.numerator)
        else:
            nv = old + sign * v
        if nv:
            out[k] = nv
        else:
            out.pop(k, None)
    return FrozenDict(out)


def add_units(a: Mapping[str, int], b: Mapping[str, int], sign: int = 1) -> FrozenDict[str, int]:
    out = dict(a)
    for k, v in b.items():
        nv = out.get(k, 0) + sign * v
        if nv == 0:
            out.pop(k, None)
        else:
            out[k] = nv
    return FrozenDict(out)
