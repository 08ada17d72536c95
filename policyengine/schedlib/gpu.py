"""Builtins for GPU sharing: device-level fit, the device a pod would get, fragmentation.

``resources_fit_reasons`` keeps Kubernetes' semantics for ``nvidia.com/gpu`` (an extended
resource counted per node); whether a share finds room on *one* device is this module's
``gpu_fits``, a check a policy adds. Fragmentation is measured against a distribution of pod
shapes the policy declares as a list of map literals, each with optional keys ``gpus`` (whole
devices), ``cores`` (percent of one device), ``memory`` (bytes), ``memory_percent`` and
``weight`` (how common the shape is, default 1)::

    let shapes = [{"cores": 25, "memory": 10Gi, "weight": 3}, {"gpus": 1}]

The device chosen inside a node is the best fit (``model.gpu_devices.BEST_FIT``): the engine
places the pod on exactly the device ``best_fit_device`` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from policyengine.lang.schema import Function, Param
from policyengine.lang.types import BOOL, FLOAT, INT, QUANTITY, STRING, ListType, MapType, Nullable
from policyengine.model.gpu_devices import BEST_FIT, FULL_CORES, GpuDemand, share, whole
from policyengine.schedlib.records import NODE, POD

if TYPE_CHECKING:
    from policyengine.schedlib.views import NodeView, PodView

MIB = 1024 * 1024
SHAPE_KEYS = ("gpus", "cores", "memory", "memory_percent", "weight")
SHAPES = ListType(MapType(STRING, QUANTITY, bound=len(SHAPE_KEYS)), bound=16)

Shapes = tuple[tuple[GpuDemand, float], ...]
_PARSED: dict[int, tuple[object, Shapes]] = {}


def _number(shape: Mapping[str, Any], key: str) -> Fraction:
    value = shape.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | Fraction | float):
        raise ValueError(f"shape key {key!r} must be a number")
    if value < 0:
        raise ValueError(f"shape key {key!r} must not be negative")
    return Fraction(value)


def shape_demand(shape: Mapping[str, Any]) -> tuple[GpuDemand, float]:
    """One declared shape as a demand and its weight; raises ValueError naming a bad key."""
    for key in shape:
        if key not in SHAPE_KEYS:
            raise ValueError(f"unknown shape key {key!r} (expected one of {', '.join(SHAPE_KEYS)})")
    weight = float(_number(shape, "weight")) if "weight" in shape else 1.0
    gpus = int(_number(shape, "gpus"))
    cores = int(_number(shape, "cores"))
    memory = int(_number(shape, "memory"))
    percent = int(_number(shape, "memory_percent"))
    if percent > 100:
        raise ValueError("shape key 'memory_percent' must be at most 100 (a share of one device)")
    if gpus and not (cores or memory or percent):
        return whole(gpus), weight
    if not (cores or memory or percent):
        raise ValueError("a shape needs gpus, cores, memory or memory_percent")
    if cores >= FULL_CORES and not (memory or percent):
        return whole(max(gpus, 1)), weight
    if not memory and not percent:
        percent = cores
    return share(
        cores=cores,
        memory_mib=-(-memory // MIB),
        memory_percent=percent,
        devices=max(gpus, 1),
    ), weight


def parse_shapes(shapes: Sequence[Mapping[str, Any]]) -> Shapes:
    # The same list object comes back for every node of a cycle: parse it once.
    cached = _PARSED.get(id(shapes))
    if cached is not None and cached[0] is shapes:
        return cached[1]
    parsed = tuple(shape_demand(s) for s in shapes)
    if len(_PARSED) > 64:
        _PARSED.clear()
    _PARSED[id(shapes)] = (shapes, parsed)
    return parsed


def gpu_fits(pod: PodView, node: NodeView) -> bool:
    return node.info.gpus.fits(pod.gpu_demand)


def best_fit_device(pod: PodView, node: NodeView) -> int | None:
    demand = pod.gpu_demand
    if demand.empty:
        return None
    grants = node.info.gpus.choose(demand, BEST_FIT)
    if not grants:
        return None
    for u in node.info.gpus.uses:
        if u.device.uuid == grants[0].uuid:
            return u.device.index
    return None  # pragma: no cover - a grant always names one of the node's devices


def gpu_fragmentation(node: NodeView, shapes: Sequence[Mapping[str, Any]]) -> float:
    return node.info.gpus.fragmentation(parse_shapes(shapes))


def gpu_fragmentation_delta(
    pod: PodView, node: NodeView, shapes: Sequence[Mapping[str, Any]]
) -> float | None:
    state = node.info.gpus
    demand = pod.gpu_demand
    grants = state.choose(demand, BEST_FIT)
    if grants is None:
        return None
    parsed = parse_shapes(shapes)
    after = state.with_grants(pod.pod.key, grants) if grants else state
    return after.fragmentation(parsed) - state.fragmentation(parsed)


def gpu_allocated_after(pod: PodView, node: NodeView) -> float | None:
    state = node.info.gpus
    if state.total_gpus == 0:
        return None
    return (state.allocated_gpus + pod.gpu_demand.gpus) / state.total_gpus


_POD_NODE = (Param("pod", POD), Param("node", NODE))


def _demand_key(ctx: Any) -> GpuDemand:
    """What these builtins read of the pod: its GPU demand alone (``Function.pod_key``)."""
    demand: GpuDemand = ctx.pod.gpu_demand
    return demand


GPU_FUNCTIONS: tuple[Function, ...] = (
    Function(
        "gpu_fits",
        _POD_NODE,
        BOOL,
        gpu_fits,
        "Whether the pod's GPU demand fits the node device by device: a share on one device "
        "(compute, memory and sharer count), whole GPUs on entirely free devices. True for a pod "
        "that asks no GPU.",
        cost=20,
        pod_key=_demand_key,
    ),
    Function(
        "best_fit_device",
        _POD_NODE,
        Nullable(INT),
        best_fit_device,
        "Index of the device the pod would get (the fitting device left with the least free "
        "capacity; the first of several); null when it does not fit or asks no GPU.",
        cost=20,
        pod_key=_demand_key,
    ),
    Function(
        "gpu_fragmentation",
        (Param("node", NODE), Param("shapes", SHAPES)),
        FLOAT,
        gpu_fragmentation,
        "Free GPU compute on the node, in GPUs, that no pod of the declared shapes could use "
        "(averaged over the shapes by weight).",
        cost=40,
    ),
    Function(
        "gpu_fragmentation_delta",
        (*_POD_NODE, Param("shapes", SHAPES)),
        Nullable(FLOAT),
        gpu_fragmentation_delta,
        "How gpu_fragmentation(node, shapes) changes when the pod is placed on its best-fit "
        "device(s); null when it does not fit. Lower is better.",
        cost=80,
        pod_key=_demand_key,
    ),
    Function(
        "gpu_allocated_after",
        _POD_NODE,
        Nullable(FLOAT),
        gpu_allocated_after,
        "The node's allocated GPU compute after placing the pod, as a fraction of its GPUs "
        "(0–1); null on a node without GPUs.",
        cost=20,
        pod_key=_demand_key,
    ),
)
