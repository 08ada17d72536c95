"""The objects that select pods — Services, ReplicaSets, StatefulSets, ReplicationControllers —
as kube-scheduler's default topology spreading reads them.

A pod that declares no ``topologySpreadConstraints`` is still spread by kube-scheduler's
default profile: PodTopologySpread applies its *system default* constraints (by hostname and
by zone, ``ScheduleAnyway``), counting the pods that match a selector derived from what
selects the pod (``DefaultSelector`` in kube-scheduler's plugin helpers):

* the ``spec.selector`` of every Service of the pod's namespace whose selector matches the
  pod's labels (a Service without a selector matches nothing), merged into one label set;
* then the pod's controller (the owner reference with ``controller: true``): a
  ``v1`` ReplicationController's map selector is merged into the set; an ``apps/v1``
  ReplicaSet's or StatefulSet's label selector adds its requirements. The controller is
  looked up by name in the pod's namespace; one that is missing or of another kind adds
  nothing.

When nothing selects the pod the selector is empty and no default constraint applies. Only
what the derivation reads is kept of each object (kind, namespace, name, selector), so a
ReplicaSet's status updates — one per replica it creates — change nothing here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import (
    LabelSelector,
    Requirement,
    Selector,
    SelectorError,
    label_set_requirements,
)
from policyengine.model.objects import Pod
from policyengine.model.parse import _map, _metadata, _string_map, parse_label_selector

SERVICE = "Service"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
REPLICATION_CONTROLLER = "ReplicationController"

# kind -> the API group its objects carry ("" for the core group).
KINDS: Mapping[str, str] = {
    SERVICE: "",
    REPLICATION_CONTROLLER: "",
    REPLICA_SET: "apps",
    STATEFUL_SET: "apps",
}
# The owner references DefaultSelector follows: (apiVersion, kind) exactly.
_CONTROLLERS = {
    ("v1", REPLICATION_CONTROLLER),
    ("apps/v1", REPLICA_SET),
    ("apps/v1", STATEFUL_SET),
}


@dataclass(frozen=True, slots=True)
class Workload:
    """What default spreading reads of a Service or controller."""

    kind: str
    namespace: str
    name: str
    # Service and ReplicationController: a map selector (None: nil, which matches nothing).
    match_labels: FrozenDict[str, str] | None = None
    # ReplicaSet and StatefulSet: a label selector (None: nil).
    selector: LabelSelector | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name


def is_workload_object(obj: Mapping[str, Any]) -> bool:
    """A Service, ReplicaSet, StatefulSet or ReplicationController of its usual API group;
    items of a typed List carry no apiVersion of their own."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return False
    api = obj.get("apiVersion")
    if api is None:
        return True
    if not isinstance(api, str):
        return False
    group = api.split("/", 1)[0] if "/" in api else ""
    return group == KINDS[kind]


def parse_workload(
    obj: Mapping[str, Any], source: str | None = None, kind: str | None = None
) -> Workload:
    """A ``Workload`` from its API dict (of ``kind``, for a list's items that carry none);
    raises ``ModelError`` naming the object and field."""
    kind = kind or str(obj.get("kind"))
    ctx, _ = _metadata(obj, kind, source)
    spec = _map(ctx, obj.get("spec"), "spec")
    namespace = ctx.namespace or "default"
    name = ctx.name or ""
    raw = spec.get("selector")
    if kind in (SERVICE, REPLICATION_CONTROLLER):
        labels = None if raw is None else _string_map(ctx, raw, "spec.selector")
        return Workload(kind, namespace, name, match_labels=labels)
    selector = parse_label_selector(ctx, raw, "spec.selector")
    if selector is not None:
        try:
            selector.compile()
        except SelectorError as exc:
            # The API server refuses such an object; silently spreading by nothing would hide it.
            raise ctx.fail("spec.selector", str(exc)) from None
    return Workload(kind, namespace, name, selector=selector)


@dataclass(frozen=True, eq=False)
class WorkloadIndex:
    """Every Workload of a cluster by (kind, namespace, name), immutable. Compared and hashed by
    identity: a changed index is a new object, so derived selectors can be kept per index."""

    objects: FrozenDict[tuple[str, str, str], Workload] = field(default=EMPTY)

    @staticmethod
    def build(workloads: Iterable[Workload]) -> WorkloadIndex:
        return WorkloadIndex(FrozenDict({w.key: w for w in workloads}))

    def __post_init__(self) -> None:
        # The derived selectors, kept with the index they were derived from (so never stale).
        object.__setattr__(self, "_selectors", {})

    def __len__(self) -> int:
        return len(self.objects)

    def get(self, kind: str, namespace: str, name: str) -> Workload | None:
        return self.objects.get((kind, namespace, name))

    def with_workload(self, workload: Workload) -> WorkloadIndex:
        """The index with ``workload`` added or replaced; ``self`` when it is unchanged."""
        if self.objects.get(workload.key) == workload:
            return self
        return WorkloadIndex(FrozenDict({**self.objects, workload.key: workload}))

    def without(self, kind: str, namespace: str, name: str) -> WorkloadIndex:
        if (kind, namespace, name) not in self.objects:
            return self
        kept = {k: w for k, w in self.objects.items() if k != (kind, namespace, name)}
        return WorkloadIndex(FrozenDict(kept))

    @property
    def services(self) -> Mapping[str, tuple[Workload, ...]]:
        """Services by namespace, in name order."""
        found = self.__dict__.get("_services")
        if found is None:
            by_ns: dict[str, list[Workload]] = {}
            for (kind, namespace, _), w in sorted(self.objects.items()):
                if kind == SERVICE:
                    by_ns.setdefault(namespace, []).append(w)
            found = {ns: tuple(ws) for ns, ws in by_ns.items()}
            object.__setattr__(self, "_services", found)
        return found

    def services_by_pair(self, namespace: str) -> Mapping[tuple[str, str], tuple[Workload, ...]]:
        """The namespace's Services with a non-empty selector by one (key, value) pair of it
        (the least in sorted order), in name order: a pod's candidate Services are those
        under one of its own label pairs, not every Service of its namespace. Services with
        an empty selector add no label, and those with none match no pod: neither is here."""
        kept: dict[str, Mapping[tuple[str, str], tuple[Workload, ...]]]
        kept = self.__dict__.setdefault("_service_pairs", {})
        found = kept.get(namespace)
        if found is None:
            by_pair: dict[tuple[str, str], list[Workload]] = {}
            for service in self.services.get(namespace, ()):
                if service.match_labels:
                    by_pair.setdefault(min(service.match_labels.items()), []).append(service)
            found = kept[namespace] = {pair: tuple(ws) for pair, ws in by_pair.items()}
        return found

    def default_selector(self, pod: Pod) -> Selector | None:
        """``derive_default_selector(pod, self)``, kept per what it reads of the pod: pods of
        one template ask once per index instead of walking their namespace's Services every
        cycle."""
        if not self.objects:
            return None
        kept: dict[Hashable, Selector | None] = self.__dict__["_selectors"]
        key = (pod.namespace, pod.labels, controller_of(pod))
        try:
            return kept[key]
        except KeyError:
            pass
        except TypeError:  # labels that do not hash
            return derive_default_selector(pod, self)
        if len(kept) >= _SELECTORS_KEPT:
            kept.clear()  # a bound, not an LRU: the pods alike of a queue come together
        found = kept[key] = derive_default_selector(pod, self)
        return found


_SELECTORS_KEPT = 8192
NO_WORKLOADS = WorkloadIndex()


def controller_of(pod: Pod) -> tuple[str, str, str] | None:
    """The pod's controller reference as (apiVersion, kind, name); None without one."""
    for ref in pod.owner_references:
        if ref.get("controller") is True:
            api, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
            if isinstance(api, str) and isinstance(kind, str) and isinstance(name, str):
                return api, kind, name
            return None
    return None


def _canonical(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    # Sorted (as apimachinery sorts a selector's requirements) so that equal selectors derived
    # in another order compare and hash equal: they key the spreading sums.
    return tuple(sorted(requirements, key=lambda r: (r.key, r.operator, sorted(r.values))))


def derive_default_selector(pod: Pod, index: WorkloadIndex) -> Selector | None:
    """kube-scheduler's ``DefaultSelector`` for ``pod`` (module docstring); None when it is
    empty, so no default constraint applies."""
    namespace = pod.namespace
    pod_labels = pod.labels
    merged: dict[str, str] = {}
    # A nil selector matches nothing, an empty one adds nothing: the Services that can add
    # labels are those whose least pair the pod carries (``services_by_pair``).
    by_pair = index.services_by_pair(namespace)
    if by_pair:
        for pair in pod_labels.items():
            for service in by_pair.get(pair, ()):
                wanted = service.match_labels
                assert wanted is not None
                if all(pod_labels.get(k) == v for k, v in wanted.items()):
                    merged.update(wanted)
    extra: tuple[Requirement, ...] = ()
    owner = controller_of(pod)
    if owner is not None and (owner[0], owner[1]) in _CONTROLLERS:
        controller = index.get(owner[1], namespace, owner[2])
        if controller is not None:
            if controller.kind == REPLICATION_CONTROLLER:
                merged.update(controller.match_labels or {})
            elif controller.selector is not None:
                try:
                    compiled = controller.selector.compile()
                except SelectorError:
                    compiled = None
                if compiled is not None and not compiled.nothing:
                    extra = compiled.requirements
    requirements = _canonical((*label_set_requirements(merged), *extra))
    if not requirements:
        return None
    return Selector(requirements)
