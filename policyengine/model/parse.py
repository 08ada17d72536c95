"""Building model objects from Kubernetes YAML/JSON dicts, with errors that name the field.

Every failure raises ``ModelError`` whose message reads
``Pod default/web-1: spec.containers[0].resources.requests.cpu: quantity 'abc' is not valid ...``.
The few API-server defaults that change scheduling are applied here, because pending pods in a
snapshot may be written by hand rather than read back from a server:

* a container resource with a limit but no request gets request = limit;
* with ``hostNetwork: true`` every container port gets ``hostPort = containerPort``;
* a port's protocol defaults to TCP; a node without ``status.allocatable`` uses its capacity.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from policyengine.model.errors import ModelError, object_ref
from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import LabelSelector, LabelSelectorRequirement
from policyengine.model.node_selectors import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from policyengine.model.objects import (
    DEFAULT_NAMESPACE,
    DEFAULT_SCHEDULER_NAME,
    Affinity,
    Container,
    ContainerImage,
    ContainerPort,
    Namespace,
    Node,
    NodeAffinity,
    NodeCondition,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    ResourceList,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from policyengine.model.taints import EFFECTS, Taint, Toleration
from policyengine.model.volumes import KNOWN_SOURCES, RBD, Volume
from policyengine.quantity import QuantityError, parse_quantity


class _Ctx:
    """Where we are: the object being read and the field path inside it."""

    __slots__ = ("kind", "name", "namespace", "source")

    def __init__(self, kind: str, namespace: str | None, name: str | None, source: str | None):
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.source = source

    def fail(self, path: str, message: str) -> ModelError:
        prefix = f"{self.source}: " if self.source else ""
        where = f"{path}: " if path else ""
        return ModelError(
            f"{prefix}{object_ref(self.kind, self.namespace, self.name)}: {where}{message}",
            kind=self.kind,
            namespace=self.namespace,
            name=self.name,
            field=path or None,
            source=self.source,
        )


def type_name(value: Any) -> str:
    """How a message names the JSON type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _map(ctx: _Ctx, value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ctx.fail(path, f"expected a mapping, got {type_name(value)}")
    return value


def _list(ctx: _Ctx, value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.fail(path, f"expected a list, got {type_name(value)}")
    return value


def _str(ctx: _Ctx, value: Any, path: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ctx.fail(path, f"expected a string, got {type_name(value)} {value!r}")
    return value


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _int(ctx: _Ctx, value: Any, path: str, default: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
        raise ctx.fail(path, f"expected an integer, got {type_name(value)} {value!r}")
    return value


def _bool(ctx: _Ctx, value: Any, path: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ctx.fail(path, f"expected true or false, got {type_name(value)} {value!r}")
    return value


def _string_map(ctx: _Ctx, value: Any, path: str) -> FrozenDict[str, str]:
    raw = _map(ctx, value, path)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if v is None:
            v = ""
        if isinstance(v, bool | int | float):
            # YAML reads `version: 1.10` as the number 1.1: taken as text it would silently be
            # "1.1". The API server holds strings only; a hand-written snapshot must quote.
            raise ctx.fail(f"{path}.{k}", f"expected a string, got {type_name(v)} {v!r} (quote it)")
        if not isinstance(v, str):
            raise ctx.fail(f"{path}.{k}", f"expected a string, got {type_name(v)}")
        out[str(k)] = v
    return FrozenDict(out) if out else EMPTY


def _strings(ctx: _Ctx, value: Any, path: str) -> tuple[str, ...]:
    items = _list(ctx, value, path)
    out = []
    for i, v in enumerate(items):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        out.append(_str(ctx, v, f"{path}[{i}]"))
    return tuple(out)


def _resources(ctx: _Ctx, value: Any, path: str) -> ResourceList:
    raw = _map(ctx, value, path)
    out: dict[str, Fraction] = {}
    for name, quantity in raw.items():
        try:
            amount = parse_quantity(quantity)
        except QuantityError as exc:
            raise ctx.fail(f"{path}.{name}", str(exc)) from None
        if amount < 0:
            raise ctx.fail(f"{path}.{name}", f"quantity {quantity!r} must not be negative")
        out[str(name)] = amount
    return FrozenDict(out) if out else EMPTY


# ---------------------------------------------------------------- selectors and affinity


def parse_label_selector(ctx: _Ctx, value: Any, path: str) -> LabelSelector | None:
    if value is None:
        return None
    raw = _map(ctx, value, path)
    exprs = []
    for i, e in enumerate(_list(ctx, raw.get("matchExpressions"), f"{path}.matchExpressions")):
        p = f"{path}.matchExpressions[{i}]"
        e = _map(ctx, e, p)
        exprs.append(
            LabelSelectorRequirement(
                key=_str(ctx, e.get("key"), f"{p}.key"),
                operator=_str(ctx, e.get("operator"), f"{p}.operator"),
                values=_strings(ctx, e.get("values"), f"{p}.values"),
            )
        )
    return LabelSelector(
        match_labels=_string_map(ctx, raw.get("matchLabels"), f"{path}.matchLabels"),
        match_expressions=tuple(exprs),
    )


def _node_selector_requirements(
    ctx: _Ctx, value: Any, path: str
) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for i, e in enumerate(_list(ctx, value, path)):
        p = f"{path}[{i}]"
        e = _map(ctx, e, p)
        out.append(
            NodeSelectorRequirement(
                key=_str(ctx, e.get("key"), f"{p}.key"),
                operator=_str(ctx, e.get("operator"), f"{p}.operator"),
                values=_strings(ctx, e.get("values"), f"{p}.values"),
            )
        )
    return tuple(out)


def _node_selector_term(ctx: _Ctx, value: Any, path: str) -> NodeSelectorTerm:
    raw = _map(ctx, value, path)
    return NodeSelectorTerm(
        match_expressions=_node_selector_requirements(
            ctx, raw.get("matchExpressions"), f"{path}.matchExpressions"
        ),
        match_fields=_node_selector_requirements(
            ctx, raw.get("matchFields"), f"{path}.matchFields"
        ),
    )


def _node_affinity(ctx: _Ctx, value: Any, path: str) -> NodeAffinity:
    raw = _map(ctx, value, path)
    required = None
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    if raw.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        req = _map(ctx, raw["requiredDuringSchedulingIgnoredDuringExecution"], req_path)
        terms = _list(ctx, req.get("nodeSelectorTerms"), f"{req_path}.nodeSelectorTerms")
        required = NodeSelector(
            tuple(
                _node_selector_term(ctx, t, f"{req_path}.nodeSelectorTerms[{i}]")
                for i, t in enumerate(terms)
            )
        )
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    raw_pref = raw.get("preferredDuringSchedulingIgnoredDuringExecution")
    for i, t in enumerate(_list(ctx, raw_pref, pref_path)):
        p = f"{pref_path}[{i}]"
        t = _map(ctx, t, p)
        weight = _int(ctx, t.get("weight"), f"{p}.weight", 0) or 0
        if not 0 <= weight <= 100:
            raise ctx.fail(f"{p}.weight", f"weight {weight} must be in the range 0-100")
        preferred.append(
            PreferredSchedulingTerm(
                weight, _node_selector_term(ctx, t.get("preference"), f"{p}.preference")
            )
        )
    return NodeAffinity(
        required=required, preferred=tuple(preferred), has_preferred=raw_pref is not None
    )


def _pod_affinity_term(ctx: _Ctx, value: Any, path: str) -> PodAffinityTerm:
    raw = _map(ctx, value, path)
    topology_key = _str(ctx, raw.get("topologyKey"), f"{path}.topologyKey")
    if not topology_key:
        raise ctx.fail(f"{path}.topologyKey", "must not be empty")
    return PodAffinityTerm(
        label_selector=parse_label_selector(ctx, raw.get("labelSelector"), f"{path}.labelSelector"),
        topology_key=topology_key,
        namespaces=_strings(ctx, raw.get("namespaces"), f"{path}.namespaces"),
        namespace_selector=parse_label_selector(
            ctx, raw.get("namespaceSelector"), f"{path}.namespaceSelector"
        ),
        match_label_keys=_strings(ctx, raw.get("matchLabelKeys"), f"{path}.matchLabelKeys"),
        mismatch_label_keys=_strings(
            ctx, raw.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys"
        ),
    )


def _pod_affinity(ctx: _Ctx, value: Any, path: str) -> PodAffinity:
    raw = _map(ctx, value, path)
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(ctx, t, f"{req_path}[{i}]")
        for i, t in enumerate(
            _list(ctx, raw.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)
        )
    )
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, t in enumerate(
        _list(ctx, raw.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)
    ):
        p = f"{pref_path}[{i}]"
        t = _map(ctx, t, p)
        weight = _int(ctx, t.get("weight"), f"{p}.weight", 0) or 0
        if not 1 <= weight <= 100:
            raise ctx.fail(f"{p}.weight", f"weight {weight} must be in the range 1-100")
        preferred.append(
            WeightedPodAffinityTerm(
                weight, _pod_affinity_term(ctx, t.get("podAffinityTerm"), f"{p}.podAffinityTerm")
            )
        )
    return PodAffinity(required=required, preferred=tuple(preferred))


def _affinity(ctx: _Ctx, value: Any, path: str) -> Affinity | None:
    if value is None:
        return None
    raw = _map(ctx, value, path)
    na = raw.get("nodeAffinity")
    pa = raw.get("podAffinity")
    paa = raw.get("podAntiAffinity")
    return Affinity(
        node_affinity=None if na is None else _node_affinity(ctx, na, f"{path}.nodeAffinity"),
        pod_affinity=None if pa is None else _pod_affinity(ctx, pa, f"{path}.podAffinity"),
        pod_anti_affinity=None
        if paa is None
        else _pod_affinity(ctx, paa, f"{path}.podAntiAffinity"),
    )


def _toleration(ctx: _Ctx, value: Any, path: str) -> Toleration:
    raw = _map(ctx, value, path)
    operator = _str(ctx, raw.get("operator"), f"{path}.operator")
    if operator not in ("", "Equal", "Exists"):
        raise ctx.fail(
            f"{path}.operator", f"unsupported toleration operator {operator!r} (Equal or Exists)"
        )
    effect = _str(ctx, raw.get("effect"), f"{path}.effect")
    if effect and effect not in EFFECTS:
        raise ctx.fail(
            f"{path}.effect",
            f"unsupported taint effect {effect!r} (NoSchedule, PreferNoSchedule or NoExecute)",
        )
    value_ = raw.get("value")
    if isinstance(value_, (int, float)) and not isinstance(value_, bool):
        value_ = str(value_)
    return Toleration(
        key=_str(ctx, raw.get("key"), f"{path}.key"),
        operator=operator,
        value=_str(ctx, value_, f"{path}.value"),
        effect=effect,
        toleration_seconds=_int(ctx, raw.get("tolerationSeconds"), f"{path}.tolerationSeconds"),
    )


def _taint(ctx: _Ctx, value: Any, path: str) -> Taint:
    raw = _map(ctx, value, path)
    key = _str(ctx, raw.get("key"), f"{path}.key")
    if not key:
        raise ctx.fail(f"{path}.key", "a taint needs a key")
    effect = _str(ctx, raw.get("effect"), f"{path}.effect")
    if effect not in EFFECTS:
        raise ctx.fail(
            f"{path}.effect",
            f"unsupported taint effect {effect!r} (NoSchedule, PreferNoSchedule or NoExecute)",
        )
    value_ = raw.get("value")
    if isinstance(value_, (int, float)) and not isinstance(value_, bool):
        value_ = str(value_)
    return Taint(key=key, value=_str(ctx, value_, f"{path}.value"), effect=effect)


def _spread_constraint(ctx: _Ctx, value: Any, path: str) -> TopologySpreadConstraint:
    raw = _map(ctx, value, path)
    max_skew = _int(ctx, raw.get("maxSkew"), f"{path}.maxSkew")
    if max_skew is None or max_skew < 1:
        raise ctx.fail(
            f"{path}.maxSkew", f"must be an integer greater than zero, got {raw.get('maxSkew')!r}"
        )
    key = _str(ctx, raw.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise ctx.fail(f"{path}.topologyKey", "must not be empty")
    when = _str(ctx, raw.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise ctx.fail(
            f"{path}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {when!r}"
        )
    min_domains = _int(ctx, raw.get("minDomains"), f"{path}.minDomains")
    if min_domains is not None and min_domains < 1:
        raise ctx.fail(f"{path}.minDomains", f"must be greater than zero, got {min_domains}")
    policies = {}
    for field_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        policy = raw.get(field_name)
        if policy is not None:
            policy = _str(ctx, policy, f"{path}.{field_name}")
            if policy not in ("Honor", "Ignore"):
                raise ctx.fail(f"{path}.{field_name}", f"must be Honor or Ignore, got {policy!r}")
        policies[field_name] = policy
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=parse_label_selector(ctx, raw.get("labelSelector"), f"{path}.labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=policies["nodeAffinityPolicy"],
        node_taints_policy=policies["nodeTaintsPolicy"],
        match_label_keys=_strings(ctx, raw.get("matchLabelKeys"), f"{path}.matchLabelKeys"),
    )


# ---------------------------------------------------------------- containers


def _container(ctx: _Ctx, value: Any, path: str, host_network: bool) -> Container:
    raw = _map(ctx, value, path)
    res = _map(ctx, raw.get("resources"), f"{path}.resources")
    requests = _resources(ctx, res.get("requests"), f"{path}.resources.requests")
    limits = _resources(ctx, res.get("limits"), f"{path}.resources.limits")
    # API-server defaulting: a limit without a request sets the request.
    missing = {k: v for k, v in limits.items() if k not in requests}
    if missing:
        requests = FrozenDict({**requests, **missing})
    ports = []
    for i, p in enumerate(_list(ctx, raw.get("ports"), f"{path}.ports")):
        pp = f"{path}.ports[{i}]"
        p = _map(ctx, p, pp)
        container_port = _int(ctx, p.get("containerPort"), f"{pp}.containerPort", 0) or 0
        host_port = _int(ctx, p.get("hostPort"), f"{pp}.hostPort", 0) or 0
        if host_network and host_port == 0:
            host_port = container_port
        protocol = _str(ctx, p.get("protocol"), f"{pp}.protocol") or "TCP"
        ports.append(
            ContainerPort(
                container_port=container_port,
                host_port=host_port,
                protocol=protocol,
                host_ip=_str(ctx, p.get("hostIP"), f"{pp}.hostIP"),
                name=_str(ctx, p.get("name"), f"{pp}.name"),
            )
        )
    restart = raw.get("restartPolicy")
    return Container(
        name=_str(ctx, raw.get("name"), f"{path}.name"),
        image=_str(ctx, raw.get("image"), f"{path}.image"),
        requests=requests,
        limits=limits,
        ports=tuple(ports),
        restart_policy=None if restart is None else _str(ctx, restart, f"{path}.restartPolicy"),
    )


# ---------------------------------------------------------------- objects


def _metadata(
    obj: Mapping[str, Any], kind: str, source: str | None
) -> tuple[_Ctx, Mapping[str, Any]]:
    meta = obj.get("metadata")
    name = namespace = None
    if isinstance(meta, Mapping):
        name = meta.get("name") if isinstance(meta.get("name"), str) else None
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    ctx = _Ctx(kind, namespace, name, source)
    meta = _map(ctx, meta, "metadata")
    if not name:
        raise ctx.fail("metadata.name", "is required")
    return ctx, meta


def parse_node(obj: Mapping[str, Any], source: str | None = None) -> Node:
    """A ``Node`` from its API dict; raises ``ModelError``."""
    ctx, meta = _metadata(obj, "Node", source)
    spec = _map(ctx, obj.get("spec"), "spec")
    status = _map(ctx, obj.get("status"), "status")
    capacity = _resources(ctx, status.get("capacity"), "status.capacity")
    if status.get("allocatable") is None:
        allocatable = capacity  # API-server defaulting
    else:
        allocatable = _resources(ctx, status.get("allocatable"), "status.allocatable")
    images = []
    for i, img in enumerate(_list(ctx, status.get("images"), "status.images")):
        p = f"status.images[{i}]"
        img = _map(ctx, img, p)
        images.append(
            ContainerImage(
                names=_strings(ctx, img.get("names"), f"{p}.names"),
                size_bytes=_int(ctx, img.get("sizeBytes"), f"{p}.sizeBytes", 0) or 0,
            )
        )
    conditions = []
    for i, c in enumerate(_list(ctx, status.get("conditions"), "status.conditions")):
        p = f"status.conditions[{i}]"
        c = _map(ctx, c, p)
        conditions.append(
            NodeCondition(
                type=_str(ctx, c.get("type"), f"{p}.type"),
                status=_str(ctx, c.get("status"), f"{p}.status"),
                reason=_str(ctx, c.get("reason"), f"{p}.reason"),
                message=_str(ctx, c.get("message"), f"{p}.message"),
            )
        )
    return Node(
        name=ctx.name or "",
        labels=_string_map(ctx, meta.get("labels"), "metadata.labels"),
        annotations=_string_map(ctx, meta.get("annotations"), "metadata.annotations"),
        uid=_str(ctx, meta.get("uid"), "metadata.uid"),
        unschedulable=_bool(ctx, spec.get("unschedulable"), "spec.unschedulable"),
        taints=tuple(
            _taint(ctx, t, f"spec.taints[{i}]")
            for i, t in enumerate(_list(ctx, spec.get("taints"), "spec.taints"))
        ),
        allocatable=allocatable,
        capacity=capacity,
        images=tuple(images),
        conditions=tuple(conditions),
        resource_version=_str(ctx, meta.get("resourceVersion"), "metadata.resourceVersion"),
    )


def parse_pod(obj: Mapping[str, Any], source: str | None = None) -> Pod:
    """A ``Pod`` from its API dict; raises ``ModelError``."""
    ctx, meta = _metadata(obj, "Pod", source)
    if ctx.namespace is None:
        ctx.namespace = DEFAULT_NAMESPACE
    if obj.get("spec") is None:
        # Read as empty, it would be a pod with no requests, no selectors and no tolerations,
        # placed anywhere; the API server never returns a pod without one.
        raise ctx.fail("spec", "is required (a Pod's spec holds its containers)")
    spec = _map(ctx, obj.get("spec"), "spec")
    status = _map(ctx, obj.get("status"), "status")
    host_network = _bool(ctx, spec.get("hostNetwork"), "spec.hostNetwork")
    containers = _containers(ctx, spec, status, "containers", host_network)
    if not containers:
        raise ctx.fail("spec.containers", "a Pod needs at least one container")
    init_containers = _containers(ctx, spec, status, "initContainers", host_network)
    overhead = None
    if spec.get("overhead") is not None:
        overhead = _resources(ctx, spec.get("overhead"), "spec.overhead")
    pod_requests = pod_limits = None
    if spec.get("resources") is not None:
        res = _map(ctx, spec.get("resources"), "spec.resources")
        pod_limits = _resources(ctx, res.get("limits"), "spec.resources.limits") or None
        pod_requests = _resources(ctx, res.get("requests"), "spec.resources.requests") or None
        if pod_limits:
            # API-server defaulting of pod-level resources mirrors the container rule.
            pod_requests = FrozenDict({**pod_limits, **(pod_requests or {})})
    node_selector = None
    if spec.get("nodeSelector") is not None:
        node_selector = _string_map(ctx, spec.get("nodeSelector"), "spec.nodeSelector")
    owners = tuple(
        FrozenDict(_map(ctx, o, f"metadata.ownerReferences[{i}]"))
        for i, o in enumerate(_list(ctx, meta.get("ownerReferences"), "metadata.ownerReferences"))
    )
    return Pod(
        name=ctx.name or "",
        namespace=ctx.namespace,
        uid=_str(ctx, meta.get("uid"), "metadata.uid"),
        labels=_string_map(ctx, meta.get("labels"), "metadata.labels"),
        annotations=_string_map(ctx, meta.get("annotations"), "metadata.annotations"),
        node_name=_str(ctx, spec.get("nodeName"), "spec.nodeName"),
        scheduler_name=_str(ctx, spec.get("schedulerName"), "spec.schedulerName")
        or DEFAULT_SCHEDULER_NAME,
        priority=_int(ctx, spec.get("priority"), "spec.priority", 0) or 0,
        priority_class_name=_str(ctx, spec.get("priorityClassName"), "spec.priorityClassName"),
        preemption_policy=_str(ctx, spec.get("preemptionPolicy"), "spec.preemptionPolicy")
        or "PreemptLowerPriority",
        containers=containers,
        init_containers=init_containers,
        overhead=overhead,
        pod_requests=pod_requests,
        pod_limits=pod_limits,
        node_selector=node_selector,
        affinity=_affinity(ctx, spec.get("affinity"), "spec.affinity"),
        tolerations=tuple(
            _toleration(ctx, t, f"spec.tolerations[{i}]")
            for i, t in enumerate(_list(ctx, spec.get("tolerations"), "spec.tolerations"))
        ),
        topology_spread_constraints=tuple(
            _spread_constraint(ctx, c, f"spec.topologySpreadConstraints[{i}]")
            for i, c in enumerate(
                _list(ctx, spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")
            )
        ),
        host_network=host_network,
        deletion_timestamp=None
        if meta.get("deletionTimestamp") is None
        else str(meta.get("deletionTimestamp")),
        scheduling_gates=_entry_names(ctx, spec, "schedulingGates"),
        resource_claims=_entry_names(ctx, spec, "resourceClaims"),
        preempted_by_scheduler=preempted_by_scheduler(status.get("conditions")),
        resize_infeasible=resize_infeasible(status.get("conditions")),
        owner_references=owners,
        phase=_str(ctx, status.get("phase"), "status.phase"),
        status_qos_class=_str(ctx, status.get("qosClass"), "status.qosClass"),
        nominated_node_name=_str(ctx, status.get("nominatedNodeName"), "status.nominatedNodeName"),
        resource_version=_str(ctx, meta.get("resourceVersion"), "metadata.resourceVersion"),
        creation_timestamp=_timestamp(
            ctx, meta.get("creationTimestamp"), "metadata.creationTimestamp"
        ),
        volumes=tuple(
            _volume(ctx, v, f"spec.volumes[{i}]")
            for i, v in enumerate(_list(ctx, spec.get("volumes"), "spec.volumes"))
        ),
    )


# The field naming the disk of each volume source the storage plugins read.
_VOLUME_HANDLES = {
    "persistentVolumeClaim": "claimName",
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "iscsi": "iqn",
    "rbd": "image",
    "azureDisk": "diskURI",
    "cinder": "volumeID",
    "portworxVolume": "volumeID",
    "csi": "driver",
}


def _volume(ctx: _Ctx, value: Any, path: str) -> Volume:
    """One ``spec.volumes`` entry: its source's kind and what names its disk."""
    raw = _map(ctx, value, path)
    name = _str(ctx, raw.get("name"), f"{path}.name")
    kind = next((k for k in KNOWN_SOURCES if raw.get(k) is not None), "")
    if not kind:
        kind = next((k for k in raw if k != "name" and raw.get(k) is not None), "")
        return Volume(name, str(kind))
    src_path = f"{path}.{kind}"
    source = _map(ctx, raw.get(kind), src_path)
    handle_field = _VOLUME_HANDLES.get(kind)
    handle = ""
    if handle_field is not None:
        handle = _str(ctx, source.get(handle_field), f"{src_path}.{handle_field}")
        if not handle and kind == "persistentVolumeClaim":
            raise ctx.fail(f"{src_path}.claimName", "is required")
    pool = monitors = None
    if kind == RBD:
        pool = _str(ctx, source.get("pool"), f"{src_path}.pool") or "rbd"
        monitors = _strings(ctx, source.get("monitors"), f"{src_path}.monitors")
    return Volume(
        name,
        kind,
        handle,
        _bool(ctx, source.get("readOnly"), f"{src_path}.readOnly"),
        pool or "",
        monitors or (),
    )


# The condition a scheduler sets on a preemption victim before deleting it (kube's
# DisruptionTarget, reason PreemptionByScheduler).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def resize_infeasible(conditions: Any) -> bool:
    """kube's ``IsPodResizeInfeasible``: the first ``PodResizePending`` condition says
    ``Infeasible``."""
    if not isinstance(conditions, list):
        return False
    for c in conditions:
        if isinstance(c, Mapping) and c.get("type") == "PodResizePending":
            return c.get("reason") == "Infeasible"
    return False


def _entry_names(ctx: _Ctx, spec: Mapping[str, Any], field: str) -> tuple[str, ...]:
    """The ``name`` of each entry of the list ``spec.<field>`` (scheduling gates, resource
    claims: lists of objects whose other keys the scheduler does not read)."""
    return tuple(
        _str(ctx, _map(ctx, entry, f"spec.{field}[{i}]").get("name"), f"spec.{field}[{i}].name")
        for i, entry in enumerate(_list(ctx, spec.get(field), f"spec.{field}"))
    )


def _containers(
    ctx: _Ctx, spec: Mapping[str, Any], status: Mapping[str, Any], field: str, host_network: bool
) -> tuple[Container, ...]:
    """``spec.<field>`` (containers or initContainers), each with what its status in
    ``status.<field minus s>Statuses`` reports it holds."""
    parsed = tuple(
        _container(ctx, c, f"spec.{field}[{i}]", host_network)
        for i, c in enumerate(_list(ctx, spec.get(field), f"spec.{field}"))
    )
    statuses = f"{field[:-1]}Statuses"
    return _with_status(ctx, parsed, status.get(statuses), f"status.{statuses}")


def _with_status(
    ctx: _Ctx, containers: tuple[Container, ...], statuses: Any, path: str
) -> tuple[Container, ...]:
    """``containers`` with what their statuses report they hold (``Container.status_requests``):
    for a status with ``resources``, the larger of its ``resources.requests`` and
    ``allocatedResources``, per resource. Statuses are matched by name; one without
    ``resources`` (the kubelet did not report them), or reporting exactly the spec, leaves its
    container as it is."""
    if statuses is None or not containers:
        return containers
    held: dict[str, ResourceList] = {}
    for i, raw in enumerate(_list(ctx, statuses, path)):
        cs = _map(ctx, raw, f"{path}[{i}]")
        if cs.get("resources") is None:
            continue
        res = _map(ctx, cs.get("resources"), f"{path}[{i}].resources")
        actual = dict(_resources(ctx, res.get("requests"), f"{path}[{i}].resources.requests"))
        allocated = _resources(ctx, cs.get("allocatedResources"), f"{path}[{i}].allocatedResources")
        for name, quantity in allocated.items():
            if name not in actual or quantity > actual[name]:
                actual[name] = quantity
        held[_str(ctx, cs.get("name"), f"{path}[{i}].name")] = FrozenDict(actual)
    if not held:
        return containers
    # A container holding exactly its spec (every running pod not being resized) counts its
    # spec either way: it stays as it is, equal to the spec-only container.
    return tuple(
        replace(c, status_requests=held[c.name])
        if c.name in held and held[c.name] != c.requests
        else c
        for c in containers
    )


def preempted_by_scheduler(conditions: Any) -> bool:
    """Whether a pod's ``status.conditions`` say a scheduler preempted it. Other conditions
    are the kubelet's and are not read: an entry that is not a map is passed over."""
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, Mapping)
        and c.get("type") == DISRUPTION_TARGET
        and c.get("status") == "True"
        and c.get("reason") == PREEMPTION_BY_SCHEDULER
        for c in conditions
    )


def _timestamp(ctx: _Ctx, value: Any, path: str) -> str:
    """RFC 3339 in UTC as the API server writes it; YAML may already have made it a datetime."""
    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _str(ctx, value, path)


def parse_namespace(obj: Mapping[str, Any], source: str | None = None) -> Namespace:
    ctx, meta = _metadata(obj, "Namespace", source)
    return Namespace(
        name=ctx.name or "", labels=_string_map(ctx, meta.get("labels"), "metadata.labels")
    )
