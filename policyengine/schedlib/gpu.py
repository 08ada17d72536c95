"""Builtins for GPU sharing: device-level fit, the device a pod would get, fragmentation.

``resources_fit_reasons`` keeps Kubernetes' semantics for ``nvidia.com/gpu`` (an extended
resource counted per node); whether a share finds room on *one* device is this module's
``gpu_fits``, a check a policy adds. Fragmentation is measured against a distribution of pod
shapes the policy declares as a list of map literals, each with optional keys ``gpus`` (whole
devices), ``cores`` (percent of one device), ``memory`` (bytes), ``memory_percent`` and
``weight`` (how common the shape is, default 1)::

    let shapes = [{"cores": 25, "memory": 10Gi, "weight": 3}, {"gpus": 1}]

Shapes may also say what a typical pod asks of the host: ``cpu`` (cores) and ``host_memory``
(bytes). ``gpu_fragmentation_fgd`` then counts a node's free GPUs as lost to a shape whose CPU
or memory no longer fits (FGD's definition, ``model.fragmentation``), and
``learned_gpu_shapes(coverage)`` gives the shapes of the cluster's own workload.

The device chosen inside a node is the policy's ``device`` choice (best fit by default:
``model.gpu_devices.BEST_FIT``); the engine places the pod on exactly the device
``gpu_device`` names, and ``gpu_fragmentation_growth`` measures that placement.
``best_fit_device`` and ``gpu_fragmentation_delta`` measure the best-fit device whatever the
policy chooses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from policyengine.lang.schema import Function, Param
from policyengine.lang.types import BOOL, FLOAT, INT, QUANTITY, STRING, ListType, MapType, Nullable
from policyengine.model import fragmentation as fgd
from policyengine.model.cached import kept_on
from policyengine.model.gpu_devices import BEST_FIT, FULL_CORES, GpuDemand, share, whole
from policyengine.schedlib.domains import NodeSums
from policyengine.schedlib.records import NODE, POD

if TYPE_CHECKING:
    from policyengine.schedlib.views import NodeView, PodView

MIB = 1024 * 1024
# At most this many learned shapes (and declared ones, for the cost bound).
LEARNED_LIMIT = 64
SHAPE_KEYS = ("gpus", "cores", "memory", "memory_percent", "cpu", "host_memory", "weight")
SHAPES = ListType(MapType(STRING, QUANTITY, bound=len(SHAPE_KEYS)), bound=LEARNED_LIMIT)

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


_GPU_KEYS = ("gpus", "cores", "memory", "memory_percent")


def host_shape(shape: Mapping[str, Any]) -> fgd.Shape:
    """One declared shape with its host part: ``cpu`` in cores (``500m``, ``4``) and
    ``host_memory`` in bytes (``16Gi``); raises ValueError naming a bad key. A shape with a
    host part and no GPU part is a pod asking no GPU (fragmentation skips it; the CPU and
    memory per GPU of stranding count it)."""
    if not any(_number(shape, key) for key in _GPU_KEYS if key in shape) and (
        _number(shape, "cpu") or _number(shape, "host_memory")
    ):
        for key in shape:
            if key not in SHAPE_KEYS:
                raise ValueError(
                    f"unknown shape key {key!r} (expected one of {', '.join(SHAPE_KEYS)})"
                )
        demand = whole(0)
        weight = float(_number(shape, "weight")) if "weight" in shape else 1.0
    else:
        demand, weight = shape_demand(shape)
    cpu = _number(shape, "cpu")
    memory = _number(shape, "host_memory")
    return fgd.Shape(
        demand, weight, -(-cpu.numerator * 1000 // cpu.denominator), -(-int(memory) // MIB)
    )


_HOST_PARSED: dict[int, tuple[object, fgd.Shapes]] = {}


def _parsed_once(
    cache: dict[int, tuple[object, Any]],
    shapes: Sequence[Mapping[str, Any]],
    parse: Callable[[Mapping[str, Any]], Any],
) -> Any:
    """``shapes`` parsed item by item, once per list object: the same list comes back for
    every node of a cycle. Keyed by identity, and the list kept so its id is not reused."""
    cached = cache.get(id(shapes))
    if cached is not None and cached[0] is shapes:
        return cached[1]
    parsed = tuple(parse(s) for s in shapes)
    if len(cache) > 64:
        cache.clear()
    cache[id(shapes)] = (shapes, parsed)
    return parsed


def parse_host_shapes(shapes: Sequence[Mapping[str, Any]]) -> fgd.Shapes:
    result: fgd.Shapes = _parsed_once(_HOST_PARSED, shapes, host_shape)
    return result


def parse_shapes(shapes: Sequence[Mapping[str, Any]]) -> Shapes:
    result: Shapes = _parsed_once(_PARSED, shapes, shape_demand)
    return result


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


def gpu_fragmentation_fgd(node: NodeView, shapes: Sequence[Mapping[str, Any]]) -> float:
    info = node.info
    cpu, memory = fgd.host_free(info)
    return fgd.fragmentation(info.gpus, cpu, memory, parse_host_shapes(shapes))


# How a cycle's pod gets its devices inside a node (``CycleContext.device_choice``): the rule
# and the shapes it weighs. The engine sets it from the governing policy's ``device``
# statement; without one (or outside a cycle) it is best fit.
DEFAULT_CHOICE: tuple[str, fgd.Shapes] = (BEST_FIT, ())


def device_choice(ctx: Any) -> tuple[str, fgd.Shapes]:
    choice: tuple[str, fgd.Shapes] | None = getattr(ctx, "device_choice", None)
    return DEFAULT_CHOICE if choice is None else choice


def _pod_host(ctx: Any, pod: PodView) -> tuple[int, int]:
    if ctx is not None and getattr(ctx, "pod", None) is pod:
        found: tuple[int, int] = ctx.prepared(("pod_host",), lambda: fgd.pod_host(pod.pod), True)
        return found
    return fgd.pod_host(pod.pod)


def _grants(ctx: Any, pod: PodView, node: NodeView) -> tuple[Any, ...] | None:
    """The devices the pod would really get on the node (the cycle's device choice)."""
    rule, shapes = device_choice(ctx)
    cpu, memory = fgd.host_free(node.info)
    pod_cpu, pod_memory = _pod_host(ctx, pod)
    return fgd.choose_device(
        node.info.gpus, pod.gpu_demand, rule, shapes, cpu - pod_cpu, memory - pod_memory
    )


def gpu_fragmentation_growth(
    ctx: Any, pod: PodView, node: NodeView, shapes: Sequence[Mapping[str, Any]]
) -> float | None:
    rule, choice_shapes = device_choice(ctx)
    info = node.info
    cpu, memory = fgd.host_free(info)
    pod_cpu, pod_memory = _pod_host(ctx, pod)
    return fgd.placement_growth(
        info.gpus,
        cpu,
        memory,
        pod.gpu_demand,
        pod_cpu,
        pod_memory,
        rule,
        choice_shapes,
        parse_host_shapes(shapes),
    )


def _one_for_every_node(pod: Any, shapes: Any) -> None:
    """Raises unless the batch forms' pod and shapes are one value for every node (the
    engine then calls the builtin node by node)."""
    if not isinstance(shapes, list) or (shapes and not isinstance(shapes[0], Mapping)):
        raise TypeError("shapes vary per node")
    if isinstance(pod, Sequence):
        raise TypeError("the pod varies per node")


def gpu_fragmentation_growth_batch(
    ctx: Any, pod: Any, nodes: Any, shapes: Any
) -> list[float | None]:
    """``gpu_fragmentation_growth`` over many nodes; the pod and the shapes must be the same
    for all of them (anything else raises: the engine then calls it node by node)."""
    _one_for_every_node(pod, shapes)
    rule, choice_shapes = device_choice(ctx)
    pod_cpu, pod_memory = _pod_host(ctx, pod)
    return fgd.placement_growths(
        [view.info for view in nodes],
        pod.gpu_demand,
        pod_cpu,
        pod_memory,
        rule,
        choice_shapes,
        parse_host_shapes(shapes),
    )


def gpu_stranded(node: NodeView, shapes: Sequence[Mapping[str, Any]]) -> float:
    info = node.info
    cpu, memory = fgd.host_free(info)
    return fgd.stranded(info.gpus, cpu, memory, parse_host_shapes(shapes))


def gpu_stranding_growth(
    ctx: Any, pod: PodView, node: NodeView, shapes: Sequence[Mapping[str, Any]]
) -> float:
    info = node.info
    cpu, memory = fgd.host_free(info)
    pod_cpu, pod_memory = _pod_host(ctx, pod)
    return fgd.stranding_growth(
        info.gpus, cpu, memory, pod.gpu_demand, pod_cpu, pod_memory, parse_host_shapes(shapes)
    )


def gpu_stranding_growth_batch(ctx: Any, pod: Any, nodes: Any, shapes: Any) -> list[float]:
    """``gpu_stranding_growth`` over many nodes; the pod and the shapes must be the same for
    all of them (anything else raises: the engine then calls it node by node)."""
    _one_for_every_node(pod, shapes)
    pod_cpu, pod_memory = _pod_host(ctx, pod)
    return fgd.stranding_growths(
        [view.info for view in nodes],
        pod.gpu_demand,
        pod_cpu,
        pod_memory,
        parse_host_shapes(shapes),
    )


def loss_score(loss: float | None) -> int | None:
    """FGD's score of a placement losing ``loss`` GPUs: 100 · sigmoid(−loss), truncated to a
    whole number (50 for no loss; losses within a few hundredths of a GPU tie)."""
    if loss is None:
        return None
    if loss > 700:  # math.exp would overflow; the score is 0 long before
        return 0
    return int(100.0 / (1.0 + math.exp(loss)))


def gpu_placement_score(
    ctx: Any,
    pod: PodView,
    node: NodeView,
    shapes: Sequence[Mapping[str, Any]],
    host_shapes: Sequence[Mapping[str, Any]],
) -> int | None:
    growth = gpu_fragmentation_growth(ctx, pod, node, shapes)
    if growth is None:
        return None
    return loss_score(growth + gpu_stranding_growth(ctx, pod, node, host_shapes))


def gpu_placement_score_batch(
    ctx: Any, pod: Any, nodes: Any, shapes: Any, host_shapes: Any
) -> list[int | None]:
    """``gpu_placement_score`` over many nodes; the pod and both shape lists must be the same
    for all of them (anything else raises: the engine then calls it node by node)."""
    growths = gpu_fragmentation_growth_batch(ctx, pod, nodes, shapes)
    strandings = gpu_stranding_growth_batch(ctx, pod, nodes, host_shapes)
    return [
        None if g is None else loss_score(g + s) for g, s in zip(growths, strandings, strict=True)
    ]


def gpu_device(ctx: Any, pod: PodView, node: NodeView) -> int | None:
    if pod.gpu_demand.empty:
        return None
    grants = _grants(ctx, pod, node)
    if not grants:
        return None
    for u in node.info.gpus.uses:
        if u.device.uuid == grants[0].uuid:
            return u.device.index
    return None  # pragma: no cover - a grant always names one of the node's devices


# --- learned shapes -----------------------------------------------------------------------

# The running GPU pods' shapes, summed over the nodes and kept from one snapshot to the next
# derived from it: an assumed pod changes the counts of one node, not a recount of every pod.
_WORKLOAD_SUMS = NodeSums(2)
_WORKLOAD_KEY = ("gpu-shapes",)


def _no_shapes(node: Any) -> dict[Any, int]:  # a node holding no GPU pod
    return {}


_NO_SHAPES: tuple[Any, Any] = (("gpu-shapes", "none"), _no_shapes)
# The last sums seen and the workload made of them (the same while the sums are).
_WORKLOADS: list[tuple[object, fgd.Workload]] = []


def clear() -> None:
    """Forget the workload counted and the coverages asked of it (tests)."""
    _WORKLOADS.clear()
    _WORKLOAD_SUMS.clear()


# The pods asking no GPU are counted under these two keys: their CPU and their number.
_HOST_ONLY_CPU = ("host-only", "cpu")
_HOST_ONLY_PODS = ("host-only", "pods")


def _shapes_on(node: Any) -> dict[Any, int]:
    """The node's GPU pods by shape and its pods asking no GPU (their CPU and number), kept on
    the ``NodeInfo`` (immutable): a correction of the sums takes out the part of the node it
    replaced, computed when that node was added."""
    return kept_on(node, "_gpu_shapes_on", _count_shapes)


def _count_shapes(node: Any) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for info in node.pods:
        key = fgd.shape_key(info.pod)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
            continue
        cpu, _ = fgd.pod_host(info.pod)
        if cpu > 0:
            counts[_HOST_ONLY_CPU] = counts.get(_HOST_ONLY_CPU, 0) + cpu
            counts[_HOST_ONLY_PODS] = counts.get(_HOST_ONLY_PODS, 0) + 1
    return counts


def _is_counted_pod(info: Any) -> bool:  # a PodInfo: what moving it may change
    return fgd.shape_key(info.pod) is not None or fgd.pod_host(info.pod)[0] > 0


def workload(ctx: Any) -> fgd.Workload:
    """The pods learned shapes are drawn from: the engine's (a replay's arrivals so far), else
    the GPU pods running in the cycle's snapshot (their counts kept per node and corrected for
    the pods placed since, never recounted whole)."""
    found: fgd.Workload | None = getattr(ctx, "workload", None)
    if found is not None:
        return found
    sums = _WORKLOAD_SUMS.sums(
        _WORKLOAD_KEY, ctx.snapshot, _shapes_on, _is_counted_pod, copy=False, base=_NO_SHAPES
    )
    previous: fgd.Workload | None = None
    for kept, counted in _WORKLOADS:
        if kept is sums:
            return counted
        previous = counted
    counted = fgd.Workload()  # learned anew once the GPU pods have grown by 5%
    for key, count in sums.items():
        if key == _HOST_ONLY_CPU:
            counted.host_only_cpu += count
        elif key == _HOST_ONLY_PODS:
            counted.host_only_pods += count
        else:
            counted.counts[key] += count
            counted.total += count
    # The coverages asked of the workloads before, learned now: the cluster keys
    # (``_workload_key``) hold their shapes, so a result read under a key was computed from
    # the shapes it names (a coverage asked for the first time moves every later key).
    if previous is not None:
        counted.learn_as(previous)
    _WORKLOADS[:] = [(sums, counted)]
    return counted


_MAPS: dict[fgd.Shapes, list[dict[str, Any]]] = {}


def shape_maps(shapes: fgd.Shapes) -> list[dict[str, Any]]:
    """Shapes as the language's shape maps; the same list for the same shapes (so what is
    parsed from it is parsed once)."""
    found = _MAPS.get(shapes)
    if found is not None:
        return found
    out: list[dict[str, Any]] = []
    for shape in shapes:
        d = shape.demand
        item: dict[str, Any]
        if d.empty:  # a pod asking no GPU: its host part alone
            item = {}
        elif d.whole:
            item = {"gpus": Fraction(d.devices)}
        else:
            item = {"cores": Fraction(d.cores)}
        if not d.whole and not d.empty:
            if d.memory_mib:
                item["memory"] = Fraction(d.memory_mib * MIB)
            else:
                item["memory_percent"] = Fraction(d.memory_percent)
            if d.devices > 1:
                item["gpus"] = Fraction(d.devices)
        item["cpu"] = Fraction(shape.cpu_milli, 1000)
        item["host_memory"] = Fraction(shape.memory_mib * MIB)
        item["weight"] = Fraction(shape.weight)
        out.append(item)
    if len(_MAPS) > 64:
        _MAPS.clear()
    _MAPS[shapes] = out
    parse_host_shapes(out)  # and parsed back to exactly ``shapes``
    _HOST_PARSED[id(out)] = (out, shapes)
    return out


def learned_gpu_shapes(ctx: Any, coverage: Any) -> list[dict[str, Any]]:
    share = float(coverage)
    if not 0 < share <= 1:
        raise ValueError(f"coverage {share:g} is not a share of the pods (above 0, at most 1)")
    return shape_maps(workload(ctx).shapes(share, LEARNED_LIMIT))


# The cluster's CPU (millicores) and GPUs, summed over its nodes and kept from one snapshot to
# the next derived from it (placing a pod changes neither).
_CAPACITY_SUMS = NodeSums(1)
_CAPACITY_KEY = ("gpu-capacity",)


def _capacity_of(node: Any) -> dict[Any, int]:
    return {"cpu": node.allocatable_units.get("cpu", 0), "gpus": node.gpus.total_gpus}


def _never(info: Any) -> bool:  # no pod moved changes a node's allocatable CPU or GPUs
    return False


def cluster_capacity(ctx: Any) -> tuple[int, int]:
    """The cluster's allocatable CPU (millicores) and GPUs."""
    sums = _CAPACITY_SUMS.sums(_CAPACITY_KEY, ctx.snapshot, _capacity_of, _never, copy=False)
    return sums.get("cpu", 0), sums.get("gpus", 0)


def learned_host_shapes(ctx: Any, coverage: Any) -> list[dict[str, Any]]:
    share = float(coverage)
    if not 0 < share <= 1:
        raise ValueError(f"coverage {share:g} is not a share of the pods (above 0, at most 1)")
    counted = workload(ctx)
    cpu, gpus = cluster_capacity(ctx)
    return shape_maps(
        fgd.with_host_only(
            counted.shapes(share, LEARNED_LIMIT),
            counted.host_only_per_gpu(share, LEARNED_LIMIT),
            cpu,
            gpus,
            LEARNED_LIMIT,
        )
    )


def _host_workload_key(ctx: Any) -> Any:
    """What learned host shapes read of the cluster: the learned shapes and the CPU the pods
    asking no GPU ask per GPU, for each coverage asked so far, and the cluster's capacity."""
    if _nothing_learned(ctx):
        return (), cluster_capacity(ctx)
    return workload(ctx).host_state_key(LEARNED_LIMIT), cluster_capacity(ctx)


def _workload_key(ctx: Any) -> Any:
    """What learned shapes read of the cluster: the shapes learned for each coverage asked so
    far (computed now, so the cycle's calls see exactly these)."""
    if _nothing_learned(ctx):
        return ()
    return workload(ctx).state_key(LEARNED_LIMIT)


def _nothing_learned(ctx: Any) -> bool:
    """Whether no coverage was ever asked of the snapshots' workloads: a new workload learns
    the coverages of the last one (``Workload.learn_as``), so its keys are empty too, and the
    workload is not counted (each placement moves its sums: a pod asking no GPU moves the
    CPU beside the GPU pods) until a builtin asks for shapes."""
    return getattr(ctx, "workload", None) is None and not any(
        counted.learned_coverages() for _, counted in _WORKLOADS
    )


def _choice_key(ctx: Any) -> Any:
    return device_choice(ctx)


def _host_demand_key(ctx: Any) -> Any:
    """What the host-aware builtins read of the pod: its GPU demand and host requests."""
    return ctx.pod.gpu_demand, _pod_host(ctx, ctx.pod)


def gpu_allocated_after(pod: PodView, node: NodeView) -> float | None:
    state = node.info.gpus
    if state.total_gpus == 0:
        return None
    return (state.allocated_gpus + pod.gpu_demand.gpus) / state.total_gpus


_POD_NODE = (Param("pod", POD), Param("node", NODE))


def _nothing_else(ctx: Any) -> None:
    """The cluster key of a builtin reading only its arguments (``Function.cluster_key``)."""
    return None


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
        batch=lambda pod, nodes: [gpu_fits(pod, node) for node in nodes],
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
        "gpu_fragmentation_fgd",
        (Param("node", NODE), Param("shapes", SHAPES)),
        FLOAT,
        gpu_fragmentation_fgd,
        "FGD's fragmentation: the node's free GPU compute, in GPUs, that the shapes could not "
        "use, averaged over the shapes by weight — all of it for a shape whose cpu or "
        "host_memory no longer fits the node's free CPU or memory or that fits no device, else "
        "what is on devices the shape cannot use.",
        cost=40,
    ),
    Function(
        "gpu_fragmentation_growth",
        (*_POD_NODE, Param("shapes", SHAPES)),
        Nullable(FLOAT),
        gpu_fragmentation_growth,
        "How gpu_fragmentation_fgd(node, shapes) changes when the pod is placed on the node: "
        "its CPU and memory taken, its GPU demand on the device(s) it would really get (the "
        "policy's device choice; best fit by default); null when no device has room. Lower is "
        "better.",
        cost=80,
        needs_context=True,
        batch=gpu_fragmentation_growth_batch,
        cluster_key=_choice_key,
        pod_key=_host_demand_key,
    ),
    Function(
        "gpu_stranded",
        (Param("node", NODE), Param("shapes", SHAPES)),
        FLOAT,
        gpu_stranded,
        "The node's free GPU compute, in GPUs, beyond what its free CPU and memory can "
        "accompany at the shapes' CPU and host memory per GPU (their weighted sums over the "
        "GPUs they ask): GPUs the pods that would use them could not bring their CPU to. 0 "
        "when the shapes give no cpu or host_memory.",
        cost=20,
    ),
    Function(
        "gpu_stranding_growth",
        (*_POD_NODE, Param("shapes", SHAPES)),
        FLOAT,
        gpu_stranding_growth,
        "How gpu_stranded(node, shapes) changes when the pod is placed on the node: its CPU, "
        "memory and GPU compute taken. Lower is better.",
        cost=30,
        needs_context=True,
        batch=gpu_stranding_growth_batch,
        # The context only keeps the pod's host requests: nothing of the cluster is read.
        cluster_key=_nothing_else,
        pod_key=_host_demand_key,
        pod_key_alike=True,
        keys_alike=True,
    ),
    Function(
        "gpu_placement_score",
        (*_POD_NODE, Param("shapes", SHAPES), Param("host_shapes", SHAPES)),
        Nullable(INT),
        gpu_placement_score,
        "FGD's score of placing the pod on the node, 0–100: 100 · sigmoid(−x), truncated to a "
        "whole number, where x is the GPUs the placement is expected to lose — "
        "gpu_fragmentation_growth(pod, node, shapes) + gpu_stranding_growth(pod, node, "
        "host_shapes) — so 50 for no loss, and losses within a few hundredths of a GPU tie; null "
        "when no device has room. host_shapes [] counts fragmentation alone.",
        cost=110,
        needs_context=True,
        batch=gpu_placement_score_batch,
        cluster_key=_choice_key,
        pod_key=_host_demand_key,
    ),
    Function(
        "gpu_device",
        _POD_NODE,
        Nullable(INT),
        gpu_device,
        "Index of the device the pod would really get on the node under the policy's device "
        "choice (best fit by default; the first of several); null when it does not fit or asks "
        "no GPU.",
        cost=40,
        needs_context=True,
        cluster_key=_choice_key,
        pod_key=_host_demand_key,
    ),
    Function(
        "learned_gpu_shapes",
        (Param("coverage", FLOAT),),
        SHAPES,
        learned_gpu_shapes,
        "The cluster's typical GPU pods, learned from its own workload (the GPU pods of a "
        "replay so far; in a simulation, the running and pending ones; else those running): "
        "the most common (GPU, cpu) request "
        "shapes that together cover this share of the pods (0–1), at most 64, each weighted by "
        "its count. Shape maps as gpu_fragmentation takes them.",
        cost=40,
        needs_context=True,
        cluster_key=_workload_key,
        pod_key=lambda ctx: None,
    ),
    Function(
        "learned_host_shapes",
        (Param("coverage", FLOAT),),
        SHAPES,
        learned_host_shapes,
        "learned_gpu_shapes(coverage) and, when the pods asking no GPU need more CPU than the "
        "cluster has beyond its GPUs' share (its CPU per GPU less the shapes' CPU per GPU), one "
        "shape asking no GPU (only cpu) carrying that excess per GPU, weighted by the GPUs the "
        "shapes ask: the CPU per GPU that gpu_stranded and gpu_stranding_growth read then counts "
        "the CPU those pods take from the GPU pods. Fragmentation skips a shape asking no GPU.",
        cost=40,
        needs_context=True,
        cluster_key=_host_workload_key,
        pod_key=lambda ctx: None,
    ),
    Function(
        "gpu_allocated_after",
        _POD_NODE,
        Nullable(FLOAT),
        gpu_allocated_after,
        "The node's allocated GPU compute after placing the pod, as a fraction of its GPUs "
        "(0–1); null on a node without GPUs.",
        cost=20,
        batch=lambda pod, nodes: [gpu_allocated_after(pod, node) for node in nodes],
        pod_key=_demand_key,
    ),
)
