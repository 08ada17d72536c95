"""How well a run used the cluster's GPUs: allocation ratio and fragmentation, device by device.

``simulate`` reports, after placing its pods: the GPU compute allocated against the total (in
GPUs: a share of 25% counts 0.25), the free compute, and how much of the free compute is
*fragmented*: on devices where no pod of the declared distribution of shapes could go
(``model.gpu_devices.NodeGpus.fragmentation``). The shapes come from ``--gpu-shapes``, else from
the policy's own declaration (``let gpu_shapes = [...]`` or ``let shapes = [...]``, as the GPU
builtins take them), else from the GPU demands of the pods simulated (each distinct demand
weighted by how many pods ask it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policyengine.lang import nodes as n
from policyengine.lang.compiler import Program
from policyengine.lang.parser import parse
from policyengine.model.gpu_devices import GpuDemand
from policyengine.model.gpu_share import pod_demand
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.quantity import QuantityError, parse_quantity
from policyengine.schedlib.gpu import shape_demand

Shapes = tuple[tuple[GpuDemand, float], ...]


@dataclass(frozen=True)
class GpuReport:
    total_gpus: int
    allocated_gpus: float
    fragmented_gpus: float
    shapes: Shapes

    @property
    def free_gpus(self) -> float:
        return max(self.total_gpus - self.allocated_gpus, 0.0)

    @property
    def allocation_ratio(self) -> float:
        return self.allocated_gpus / self.total_gpus if self.total_gpus else 0.0

    @property
    def fragmentation_ratio(self) -> float:
        """Fragmented free compute over free compute (0 when nothing is free)."""
        free = self.free_gpus
        return self.fragmented_gpus / free if free > 1e-9 else 0.0


def gpu_report(snapshot: ClusterSnapshot, shapes: Shapes) -> GpuReport:
    total = 0
    allocated = 0.0
    fragmented = 0.0
    for info in snapshot.nodes:
        state = info.gpus
        if not state.uses:
            continue
        total += state.total_gpus
        allocated += state.allocated_gpus
        fragmented += state.fragmentation(shapes)
    return GpuReport(total, allocated, fragmented, shapes)


def shapes_of(pods: Iterable[Pod]) -> Shapes:
    """The distribution of the pods' GPU demands (pods asking no GPU left out)."""
    counts = Counter(d for d in (pod_demand(p) for p in pods) if not d.empty)
    return tuple((demand, float(n)) for demand, n in sorted(counts.items(), key=_order))


def _order(item: tuple[GpuDemand, int]) -> tuple[int, int, int, int, int]:
    d = item[0]
    return (int(d.whole), d.devices, d.cores, d.memory_mib, d.memory_percent)


def parse_shapes(text: str) -> Shapes | str:
    """``--gpu-shapes``: shapes separated by ``;``, each ``key=value`` pairs separated by
    ``,`` with the keys of the language's shape maps (``gpus``, ``cores``, ``memory``,
    ``memory_percent``, ``weight``): ``cores=25,memory=10Gi,weight=3;gpus=1``. Returns the
    shapes or what is wrong."""
    shapes = []
    for position, part in enumerate(p.strip() for p in text.split(";")):
        if not part:
            continue
        shape: dict[str, object] = {}
        for item in (i.strip() for i in part.split(",")):
            key, sep, raw = item.partition("=")
            if not sep:
                return f"shape {position + 1}: {item!r}: expected key=value"
            try:
                shape[key.strip()] = parse_quantity(raw.strip())
            except QuantityError:
                return f"shape {position + 1}: {key.strip()} {raw.strip()!r}: not a number"
        try:
            shapes.append(shape_demand(shape))
        except ValueError as exc:
            return f"shape {position + 1}: {exc}"
    if not shapes:
        return "no shapes given"
    return tuple(shapes)


def describe(shapes: Sequence[tuple[GpuDemand, float]]) -> list[dict[str, object]]:
    """The shapes as JSON-friendly maps (the summary's ``gpu.shapes``)."""
    out: list[dict[str, object]] = []
    for demand, weight in shapes:
        if demand.whole:
            out.append({"gpus": demand.devices, "weight": weight})
            continue
        shape: dict[str, object] = {"cores": demand.cores}
        if demand.memory_mib:
            shape["memory_mib"] = demand.memory_mib
        else:
            shape["memory_percent"] = demand.memory_percent
        if demand.devices > 1:
            shape["gpus"] = demand.devices
        shape["weight"] = weight
        out.append(shape)
    return out


SHAPES_LETS = ("gpu_shapes", "shapes")


def _literal_shape(expr: n.Expr) -> dict[str, object] | None:
    if not isinstance(expr, n.MapLit):
        return None
    shape: dict[str, object] = {}
    for key, value in expr.entries:
        if not (isinstance(key, n.Literal) and key.kind == "string"):
            return None
        if not (isinstance(value, n.Literal) and value.kind in ("int", "float", "quantity")):
            return None
        shape[str(key.value)] = value.value
    return shape


def declared_shapes(program: Program) -> Shapes | None:
    """The shapes a policy of ``program`` declares as ``let gpu_shapes`` (or ``let shapes``):
    a list literal of map literals of numbers; the first such declaration wins, None when no
    policy has one."""
    for path, source in program.sources.items():
        parsed = parse(source, path)
        if parsed.file is None:
            continue
        for policy in parsed.file.policies:
            for statement in policy.body:
                if not isinstance(statement, n.Let) or statement.name not in SHAPES_LETS:
                    continue
                if not isinstance(statement.expr, n.ListLit):
                    continue
                maps = [_literal_shape(item) for item in statement.expr.items]
                if not maps or any(m is None for m in maps):
                    continue
                try:
                    return tuple(shape_demand(m) for m in maps if m is not None)
                except ValueError:
                    continue
    return None
