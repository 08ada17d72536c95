"""Reading cluster snapshots exactly as ``kubectl get nodes,pods -A -o yaml`` writes them.

Accepted: a ``kind: List`` (or ``NodeList``/``PodList``), multi-document YAML, JSON (one object,
a list, or a List), and a directory of such files (``.yaml``, ``.yml``, ``.json``, read in name
order). Pods with ``spec.nodeName`` are running, the others pending. Namespaces are kept for
namespace selectors; the storage kinds (PersistentVolumes, claims, StorageClasses, CSINodes,
CSIDrivers, CSIStorageCapacities: ``model.storage``) for the storage plugins; ``metrics.k8s.io`` NodeMetrics (``kubectl get --raw
/apis/metrics.k8s.io/v1beta1/nodes``) give measured load (``model.load``); kinds the engine does
not use are skipped with a warning. Warnings are
returned as values, never printed: the caller decides where they go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from policyengine.model import decode
from policyengine.model.errors import ModelError, object_ref
from policyengine.model.load import NodeMetrics, is_node_metrics_object, parse_node_metrics
from policyengine.model.objects import Namespace, Node, Pod
from policyengine.model.parse import parse_namespace, parse_node, parse_pod, type_name
from policyengine.model.pdb import PodDisruptionBudget, is_pdb_object, parse_pdb
from policyengine.model.podgroup import PodGroup, is_pod_group_object, parse_pod_group
from policyengine.model.storage import (
    NO_STORAGE,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageObjects,
)
from policyengine.model.storage_parse import STORAGE_KINDS, parse_storage_object
from policyengine.model.workloads import Workload, is_workload_object, parse_workload

SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")
_LIST_KINDS = {
    "List",
    "NodeList",
    "PodList",
    "NamespaceList",
    "PodGroupList",
    "NodeMetricsList",
    "PodDisruptionBudgetList",
    *(f"{kind}List" for kind in STORAGE_KINDS),
    "ServiceList",
    "ReplicaSetList",
    "StatefulSetList",
    "ReplicationControllerList",
}
_ITEM_KIND = {
    "NodeList": "Node",
    "PodList": "Pod",
    "NamespaceList": "Namespace",
    "PodGroupList": "PodGroup",
    "NodeMetricsList": "NodeMetrics",
    "PodDisruptionBudgetList": "PodDisruptionBudget",
    **{f"{kind}List": kind for kind in STORAGE_KINDS},
    "ServiceList": "Service",
    "ReplicaSetList": "ReplicaSet",
    "StatefulSetList": "StatefulSet",
    "ReplicationControllerList": "ReplicationController",
}
_LIST_KIND_SET = frozenset(_LIST_KINDS)
_TERMINAL_PHASES = {"Succeeded", "Failed"}


@dataclass(frozen=True, slots=True)
class LoadedObjects:
    """What a snapshot file or directory held."""

    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]  # running and pending, in file order; terminal pods dropped
    namespaces: tuple[Namespace, ...] = ()
    warnings: tuple[str, ...] = ()
    pod_groups: tuple[PodGroup, ...] = ()  # scheduling.x-k8s.io PodGroups (gangs)
    node_metrics: tuple[NodeMetrics, ...] = ()  # metrics.k8s.io NodeMetrics (measured load)
    pdbs: tuple[PodDisruptionBudget, ...] = ()  # policy/v1 PodDisruptionBudgets (preemption)
    # The pods left out because they have finished (one warning counts them): "ns/name (phase)".
    finished: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # the kind of every object read ("" for none), used or not
    # PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities.
    storage_objects: tuple[Any, ...] = ()
    # Services and controllers (default topology spreading derives selectors from them).
    workloads: tuple[Workload, ...] = ()

    @property
    def storage(self) -> StorageObjects:
        """The storage objects indexed for the snapshot (``model.storage``)."""
        objs = self.storage_objects
        if not objs:
            return NO_STORAGE
        return StorageObjects.build(
            (o for o in objs if isinstance(o, PersistentVolume)),
            (o for o in objs if isinstance(o, PersistentVolumeClaim)),
            (o for o in objs if isinstance(o, StorageClass)),
            (o for o in objs if isinstance(o, CSINode)),
            (o for o in objs if isinstance(o, CSIDriver)),
            (o for o in objs if isinstance(o, CSIStorageCapacity)),
        )

    @property
    def running_pods(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.node_name)

    @property
    def pending_pods(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if not p.node_name)


def _documents(text: str, source: str) -> list[Any]:
    """Every document of ``text``, decoded whole (for callers that look before parsing)."""
    return _whole(decode.documents(text, source, list_kinds=_LIST_KIND_SET))


def _whole(stream: Iterable[Any]) -> list[Any]:
    """A decoded stream put back into plain documents (a List whole again)."""
    out: list[Any] = []
    head: dict[str, Any] | None = None
    for doc in stream:
        if doc is decode.RESTART:
            out, head = [], None
        elif isinstance(doc, decode.ListHead):
            head = {**doc.value, "items": []}
            out.append(head)
        elif isinstance(doc, decode.ListItem):
            assert head is not None
            head["items"].append(doc.value)
        else:
            out.append(doc)
    return out


def _flatten(
    doc: Any, source: str, inherited_kind: str | None = None
) -> Iterator[Mapping[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _flatten(item, source, inherited_kind)
        return
    if not isinstance(doc, Mapping):
        raise ModelError(
            f"{source}: expected Kubernetes objects (mappings with a kind), got {type(doc).__name__}",
            source=source,
        )
    kind = doc.get("kind") or inherited_kind
    if not isinstance(kind, str | None):
        raise ModelError(
            f"{source}: {_ref({**doc, 'kind': None})}: kind: expected a string, got "
            f"{type_name(kind)}",
            source=source,
            field="kind",
        )
    if kind in _LIST_KINDS:
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise ModelError(f"{source}: {kind}.items: expected a list", source=source)
        for item in items:
            yield from _flatten(item, source, _ITEM_KIND.get(kind))
        return
    if kind is not None and doc.get("kind") is None:
        doc = {**doc, "kind": kind}
    yield doc


def _ref(obj: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` of an object the engine does not parse, read leniently."""
    raw_meta = obj.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    namespace, name = meta.get("namespace"), meta.get("name")
    return object_ref(
        str(obj.get("kind") or "object"),
        namespace if isinstance(namespace, str) else None,
        name if isinstance(name, str) else None,
    )


def parse_objects(documents: Iterable[Any], source: str = "<input>") -> LoadedObjects:
    """Turn decoded documents (or ``decode.documents``' stream) into model objects, each
    object as it comes, so a List's items need not all be held as dicts at once."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    namespaces: list[Namespace] = []
    warnings: list[str] = []
    pod_groups: list[PodGroup] = []
    node_metrics: list[NodeMetrics] = []
    pdbs: list[PodDisruptionBudget] = []
    storage: list[Any] = []
    workloads: list[Workload] = []
    finished: list[str] = []
    kinds: list[str] = []
    list_kind: str | None = None
    for doc in documents:
        if doc is decode.RESTART:
            for kept in (
                nodes,
                pods,
                namespaces,
                warnings,
                pod_groups,
                node_metrics,
                pdbs,
                storage,
                workloads,
            ):
                kept.clear()
            finished.clear()
            kinds.clear()
            continue
        if isinstance(doc, decode.ListHead):
            list_kind = _ITEM_KIND.get(str(doc.value.get("kind")))
            continue
        objects = (
            _flatten(doc.value, source, list_kind)
            if isinstance(doc, decode.ListItem)
            else _flatten(doc, source)
        )
        for obj in objects:
            kind = obj.get("kind")
            kinds.append(kind or "")
            if kind == "Node":
                nodes.append(parse_node(obj, source))
            elif kind == "Pod":
                pod = parse_pod(obj, source)
                if pod.phase in _TERMINAL_PHASES:
                    finished.append(f"{pod.namespace}/{pod.name} ({pod.phase})")
                    continue
                pods.append(pod)
            elif kind == "Namespace":
                namespaces.append(parse_namespace(obj, source))
            elif is_pod_group_object(obj):
                pod_groups.append(parse_pod_group(obj, source))
            elif is_node_metrics_object(obj):
                node_metrics.append(parse_node_metrics(obj, source))
            elif is_pdb_object(obj):
                pdbs.append(parse_pdb(obj, source))
            elif kind in STORAGE_KINDS:
                storage.append(parse_storage_object(obj, source))
            elif is_workload_object(obj):
                workloads.append(parse_workload(obj, source))
            elif not kind:
                warnings.append(f"{source}: an object without a kind was ignored")
            else:
                warnings.append(
                    f"{source}: {_ref(obj)}: kind {kind} is not used by the engine; ignored"
                )
    if finished:
        # A Job leaves its pods behind: a real cluster's dump holds hundreds. One line says so.
        many = len(finished) != 1
        warnings.append(
            f"{source}: {len(finished)} finished pod{'s' if many else ''} (phase Succeeded or "
            f"Failed) ignored: {'they hold' if many else 'it holds'} no resources"
        )
    return LoadedObjects(
        tuple(nodes),
        tuple(pods),
        tuple(namespaces),
        tuple(warnings),
        tuple(pod_groups),
        tuple(node_metrics),
        tuple(pdbs),
        tuple(finished),
        tuple(kinds),
        tuple(storage),
        workloads=tuple(workloads),
    )


def parse_snapshot_text(
    text: str, source: str = "<input>", progress: decode.Progress | None = None
) -> LoadedObjects:
    """Parse one snapshot document stream (YAML or JSON); ``progress`` as ``decode``'s."""
    return parse_objects(decode.documents(text, source, progress, _LIST_KIND_SET), source)


def _snapshot_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SNAPSHOT_SUFFIXES
        )
        if not files:
            raise ModelError(
                f"{path}: the directory holds no .yaml, .yml or .json files", source=str(path)
            )
        return files
    if not path.exists():
        raise ModelError(f"{path}: no such snapshot file or directory", source=str(path))
    return [path]


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{file}: cannot read: {exc}", source=str(file)) from None


def _concat(parts: Iterable[LoadedObjects]) -> LoadedObjects:
    """The objects of several files, field by field, in file order."""
    parts = list(parts)
    return LoadedObjects(
        *(
            tuple(item for part in parts for item in getattr(part, f.name))
            for f in fields(LoadedObjects)
        )
    )


def load_snapshot(
    *paths: str | Path,
    progress: Callable[[str], decode.Progress | None] | None = None,
) -> LoadedObjects:
    """Read snapshot files and directories; raises ``ModelError`` for bad or empty input.
    ``progress(file name)`` may give a ``decode.Progress`` to tell how reading that file goes."""
    if not paths:
        raise ModelError("no snapshot given")
    loaded = _concat(
        parse_snapshot_text(_read(file), str(file), progress(file.name) if progress else None)
        for raw in paths
        for file in _snapshot_files(Path(raw))
    )
    if not loaded.nodes and not loaded.pods:
        shown = ", ".join(str(p) for p in paths)
        raise ModelError(f"{shown}: {_no_cluster(loaded)}")
    seen: set[str] = set()
    for node in loaded.nodes:
        if node.name in seen:
            raise ModelError(
                f"{object_ref('Node', None, node.name)}: defined twice in the snapshot"
            )
        seen.add(node.name)
    return loaded


_EXPECTED = "expected Nodes and Pods, as `kubectl get nodes,pods -A -o yaml` writes them"


def _no_cluster(loaded: LoadedObjects) -> str:
    """What a snapshot without Nodes or Pods held instead, and what it should hold."""
    if not loaded.kinds and not loaded.finished:
        return f"the snapshot holds no objects (an empty file or List); {_EXPECTED}"
    counts: dict[str, int] = {}
    for kind in loaded.kinds:
        counts[kind] = counts.get(kind, 0) + 1
    if loaded.finished:
        counts.pop("Pod", None)
    parts = [
        f"{n} {kind}" if kind else f"{n} object{'s' if n != 1 else ''} without a kind"
        for kind, n in counts.items()
    ]
    if loaded.finished:
        parts.append(
            f"{len(loaded.finished)} finished Pod{'s' if len(loaded.finished) != 1 else ''}"
        )
    return (
        f"the snapshot holds no Nodes and no Pods to schedule, only {', '.join(parts)}; {_EXPECTED}"
    )


def load_pods(path: str | Path) -> tuple[tuple[Pod, ...], tuple[str, ...]]:
    """An arrival list: the pods of a file or directory in file order, and the warnings.
    Raises ``ModelError`` naming the first object that is not a Pod (an arrival list places
    pods into a cluster given elsewhere, so anything else in it is a mistake)."""
    pods: list[Pod] = []
    warnings: list[str] = []
    for file in _snapshot_files(Path(path)):
        documents = _documents(_read(file), str(file))
        for doc in documents:
            for obj in _flatten(doc, str(file)):
                if obj.get("kind") != "Pod":
                    raise ModelError(
                        f"{file}: {_ref(obj)}: an arrival list holds only Pods", source=str(file)
                    )
        loaded = parse_objects(documents, str(file))
        pods.extend(loaded.pods)
        warnings.extend(loaded.warnings)
    if not pods:
        raise ModelError(f"{path}: no pods in the arrival list", source=str(path))
    return tuple(pods), tuple(warnings)
