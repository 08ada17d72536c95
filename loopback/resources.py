"""The table of API resources the loopback server serves, and how their URLs are parsed.

A scheduler talks to a handful of resources with slightly different storage rules (which ones
have a status subresource, which refuse unconditional updates, which may be created by PUT,
which carry ``metadata.generation``).  Keeping those rules as data in one table means every
verb handler is generic and adding a resource is one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    storage: str = ""
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    unconditional_update: bool = True
    create_on_update: bool = False
    generation: bool = False
    custom: bool = False
    return_deleted_object: bool = False
    extra_fields: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The storage this resource lives in (events of both groups share one)."""
        return self.storage or (f"{self.plural}.{self.group}" if self.group else self.plural)

    @property
    def ident(self) -> str:
        """``plural`` or ``plural.group``: how RBAC and error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def etcd_key(self, namespace: str, name: str) -> str:
        base = (
            f"/registry/{self.group}/{self.plural}" if self.custom else f"/registry/{self.plural}"
        )
        return f"{base}/{namespace}/{name}" if namespace else f"{base}/{name}"


def _r(
    group: str, version: str, plural: str, kind: str, namespaced: bool, **kw: object
) -> Resource:
    singular = kind.lower()
    return Resource(group, version, plural, kind, namespaced, singular=singular, **kw)  # type: ignore[arg-type]


STATUS = frozenset({"status"})

RESOURCES: tuple[Resource, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, short_names=("ns",), subresources=STATUS),
    _r("", "v1", "nodes", "Node", False, short_names=("no",), subresources=STATUS),
    _r(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        short_names=("po",),
        subresources=frozenset({"status", "binding"}),
        return_deleted_object=True,
    ),
    _r("", "v1", "bindings", "Binding", True),
    _r("", "v1", "events", "Event", True, short_names=("ev",), create_on_update=True),
    _r("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    _r("", "v1", "services", "Service", True, short_names=("svc",), subresources=STATUS),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, subresources=STATUS),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False, subresources=STATUS),
    _r(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        subresources=STATUS,
        generation=True,
    ),
    _r("events.k8s.io", "v1", "events", "Event", True, storage="events", create_on_update=True),
    _r(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        True,
        unconditional_update=False,
        create_on_update=True,
    ),
    _r(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        short_names=("pdb",),
        subresources=STATUS,
        generation=True,
    ),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    # metrics-server's aggregated API (read-only there; tests seed it with create/update).
    _r("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, subresources=STATUS, generation=True),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, subresources=STATUS, generation=True),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _r(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        "PodGroup",
        True,
        short_names=("pg", "pgs"),
        subresources=STATUS,
        unconditional_update=False,
        generation=True,
        custom=True,
        return_deleted_object=True,
    ),
)


def by_path(group: str, version: str) -> dict[str, Resource]:
    return {r.plural: r for r in RESOURCES if r.group == group and r.version == version}


GROUP_VERSIONS: dict[tuple[str, str], dict[str, Resource]] = {}
for _res in RESOURCES:
    GROUP_VERSIONS.setdefault((_res.group, _res.version), {})[_res.plural] = _res


def lookup(name: str) -> Resource:
    """Resolve what a test calls a resource: kind, plural, singular, short name or
    ``plural.group`` (``"Pod"``, ``"pods"``, ``"pdb"``, ``"events.events.k8s.io"``).
    Core wins on ambiguity (``"Event"`` is the core/v1 view)."""
    wanted = name.strip()
    low = wanted.lower()
    for res in RESOURCES:
        qualified = f"{res.plural}.{res.group}" if res.group else res.plural
        if low == qualified or (res.group and low == f"{res.kind.lower()}.{res.group}"):
            return res
    for res in RESOURCES:
        if low in (res.plural, res.singular, res.kind.lower(), *res.short_names):
            return res
    raise KeyError(f"unknown resource {name!r}")


@dataclass
class Route:
    """What a URL names: discovery, or a resource collection/item/subresource."""

    resource: Resource | None = None
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    watch_path: bool = False
    discovery: str = ""
    group: str = ""
    version: str = ""


def parse_path(path: str) -> Route | None:
    """Map a request path to a :class:`Route`, or ``None`` when nothing lives there."""
    parts = [unquote(p) for p in path.split("/") if p]
    if not parts:
        return Route(discovery="root")
    if parts[0] in ("healthz", "livez", "readyz", "version") and len(parts) == 1:
        return Route(discovery=parts[0])
    if parts[0] == "api":
        if len(parts) == 1:
            return Route(discovery="api")
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) == 1:
            return Route(discovery="apis")
        if len(parts) == 2:
            return Route(discovery="group", group=parts[1])
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    table = GROUP_VERSIONS.get((group, version))
    if table is None:
        return None
    if not rest:
        return Route(discovery="resources", group=group, version=version)
    watch_path = False
    if rest[0] == "watch":
        watch_path = True
        rest = rest[1:]
        if not rest:
            return None
    namespace = ""
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and rest[2] in table
        and table[rest[2]].namespaced
    ):
        namespace = rest[1]
        rest = rest[2:]
    res = table.get(rest[0])
    if res is None:
        return None
    if res.namespaced and not namespace and len(rest) > 1:
        return None
    if not res.namespaced and namespace:
        return None
    route = Route(
        resource=res, namespace=namespace, watch_path=watch_path, group=group, version=version
    )
    if len(rest) >= 2:
        route.name = rest[1]
    if len(rest) >= 3:
        route.subresource = rest[2]
        if route.subresource not in res.subresources:
            return None
    if len(rest) > 3:
        return None
    return route
