"""Alibaba's openb trace format (``cluster-trace-gpu-v2023``) as Kubernetes objects.

The trace is two CSV files: a node list (``sn, cpu_milli, memory_mib, gpu, model``) and a pod
list (``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, …``). Replaying it needs
them as the nodes and pods the rest of the engine reads, converted the way the model reads GPU
demand (``model.gpu_share``):

* a node gets its CPU and memory as allocatable, ``nvidia.com/gpu: <gpu>``, and GPU feature
  discovery labels: ``nvidia.com/gpu.product`` (the model column), ``nvidia.com/gpu.count``,
  and ``nvidia.com/gpu.replicas: 100`` so a device is shared by as many pods as its compute
  allows (the trace sets no sharer limit; a share is at least 1% of a device). GPU memory is
  not in the trace: devices have none, and shares are limited by compute alone. Pods per node
  are not limited by the trace either (``pods: 1000``).
* a pod asking ``num_gpu`` whole GPUs (``gpu_milli`` 1000) requests ``nvidia.com/gpu``; a pod
  asking a share of one GPU carries the ``policyengine.io/gpu-share`` annotation
  ``cores=<percent>`` (``gpu_milli`` / 10, rounded up: the model counts compute in percent);
  ``gpu_spec`` (allowed models joined by ``|``) becomes required node affinity on
  ``nvidia.com/gpu.product``. Times and phases are not used: a replay decides the order.

Every malformed row is a ``ModelError`` naming the file, the row and the column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyengine.model.errors import ModelError
from policyengine.model.gpu_share import SHARE_ANNOTATION
from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node, parse_pod

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
PRODUCT_LABEL = "nvidia.com/gpu.product"
NAMESPACE = "openb"
MILLI = 1000


@dataclass(frozen=True)
class TracePod:
    """One row of the pod list, as the replay counts it: the pod and its GPU demand in
    milli-GPUs (``num_gpu`` × ``gpu_milli``, what the paper's metric adds up)."""

    pod: Pod
    gpu_milli: int


@dataclass(frozen=True)
class Trace:
    nodes: tuple[Node, ...]
    pods: tuple[TracePod, ...]
    warnings: tuple[str, ...] = ()

    @property
    def total_gpus(self) -> int:
        return sum(int(n.labels.get("nvidia.com/gpu.count", "0")) for n in self.nodes)


def _rows(text: str, source: str, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns if c not in (reader.fieldnames or ())]
    if missing:
        raise ModelError(f"{source}: missing column(s) {', '.join(missing)}", source=source)
    return [(index + 2, row) for index, row in enumerate(reader)]  # line 1 is the header


def _int(row: Mapping[str, str | None], column: str, where: str, low: int = 0) -> int:
    raw = (row.get(column) or "").strip()
    try:
        value = int(raw)
    except ValueError:
        raise ModelError(f"{where}: {column} {raw!r}: expected a whole number") from None
    if value < low:
        raise ModelError(f"{where}: {column} {value}: must be at least {low}")
    return value


def node_object(
    name: str, cpu_milli: int, memory_mib: int, gpus: int, model: str
) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if gpus:
        labels |= {
            PRODUCT_LABEL: model,
            "nvidia.com/gpu.count": str(gpus),
            "nvidia.com/gpu.replicas": "100",
        }
    allocatable = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi", "pods": "1000"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_object(
    name: str, cpu_milli: int, memory_mib: int, num_gpu: int, gpu_milli: int, models: Sequence[str]
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi"}
    annotations: dict[str, str] = {}
    limits: dict[str, str] = {}
    if num_gpu and gpu_milli >= MILLI:
        limits["nvidia.com/gpu"] = requests["nvidia.com/gpu"] = str(num_gpu)
    elif num_gpu and gpu_milli:
        annotations[SHARE_ANNOTATION] = f"cores={-(-gpu_milli // 10)}"
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "job", "resources": resources}]
    }
    if models:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": PRODUCT_LABEL, "operator": "In", "values": list(models)}
                            ]
                        }
                    ]
                }
            }
        }
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": spec,
    }


def read_nodes(text: str, source: str = "<nodes>") -> tuple[Node, ...]:
    nodes = []
    seen: set[str] = set()
    for line, row in _rows(text, source, NODE_COLUMNS):
        where = f"{source}:{line}"
        name = (row.get("sn") or "").strip()
        if not name:
            raise ModelError(f"{where}: sn: a node needs a name")
        if name in seen:
            raise ModelError(f"{where}: sn {name!r}: defined twice")
        seen.add(name)
        obj = node_object(
            name,
            _int(row, "cpu_milli", where),
            _int(row, "memory_mib", where),
            _int(row, "gpu", where),
            (row.get("model") or "").strip(),
        )
        nodes.append(parse_node(obj, where))
    return tuple(nodes)


def read_pods(text: str, source: str = "<pods>") -> tuple[TracePod, ...]:
    pods = []
    seen: set[str] = set()
    for line, row in _rows(text, source, POD_COLUMNS):
        where = f"{source}:{line}"
        name = (row.get("name") or "").strip()
        if not name:
            raise ModelError(f"{where}: name: a pod needs a name")
        if name in seen:
            raise ModelError(f"{where}: name {name!r}: defined twice")
        seen.add(name)
        num_gpu = _int(row, "num_gpu", where)
        gpu_milli = _int(row, "gpu_milli", where)
        if gpu_milli > MILLI:
            raise ModelError(f"{where}: gpu_milli {gpu_milli}: at most {MILLI} (one GPU)")
        if num_gpu > 1 and 0 < gpu_milli < MILLI:
            raise ModelError(
                f"{where}: gpu_milli {gpu_milli}: a share of a GPU is for one-GPU pods "
                f"(num_gpu {num_gpu})"
            )
        if num_gpu == 0:
            gpu_milli = 0
        models = [m.strip() for m in (row.get("gpu_spec") or "").split("|") if m.strip()]
        obj = pod_object(
            name,
            _int(row, "cpu_milli", where),
            _int(row, "memory_mib", where),
            num_gpu if gpu_milli else 0,
            gpu_milli,
            models,
        )
        pods.append(TracePod(parse_pod(obj, where), num_gpu * gpu_milli))
    return tuple(pods)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}", source=str(path)) from None


def _kind(path: Path) -> str | None:
    """``nodes`` or ``pods`` by the file's header (the columns each list has)."""
    with path.open(encoding="utf-8", errors="replace") as f:
        header = f.readline()
    columns = {c.strip() for c in header.split(",")}
    if "sn" in columns:
        return "nodes"
    if "num_gpu" in columns:
        return "pods"
    return None


def find_files(paths: Sequence[str | Path]) -> tuple[Path, Path]:
    """The node list and the pod list among ``paths`` (files, or directories holding
    ``*.csv``), told apart by their headers; raises ``ModelError`` unless there is exactly
    one of each."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(path.glob("*.csv")))
        elif path.exists():
            files.append(path)
        else:
            raise ModelError(f"{path}: no such file or directory", source=str(path))
    found: dict[str, list[Path]] = {"nodes": [], "pods": []}
    for file in files:
        kind = _kind(file)
        if kind is not None:
            found[kind].append(file)
    for kind, header in (("nodes", "sn,cpu_milli,…"), ("pods", "name,…,num_gpu,gpu_milli")):
        if len(found[kind]) != 1:
            names = ", ".join(str(f) for f in found[kind]) or "none"
            raise ModelError(
                f"expected one {kind[:-1]} list (a CSV with header {header}), found {names}"
            )
    return found["nodes"][0], found["pods"][0]


def load_trace(paths: Sequence[str | Path]) -> Trace:
    nodes_file, pods_file = find_files(paths)
    nodes = read_nodes(_read(nodes_file), str(nodes_file))
    pods = read_pods(_read(pods_file), str(pods_file))
    warnings = []
    rounded = sum(1 for p in pods if p.gpu_milli % 10 and p.gpu_milli < MILLI)
    if rounded:
        warnings.append(
            f"{pods_file}: {rounded} pod(s) ask a share that is not a whole percent of a GPU; "
            "it is rounded up to the next percent"
        )
    return Trace(nodes, pods, tuple(warnings))
