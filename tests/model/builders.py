"""Small builders for model tests, in the spirit of kube-scheduler's ``st.MakePod()``.

They write the Kubernetes dict and parse it, so tests read like the YAML a user would write
and exercise the parser on the way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node_dict(
    name: str = "n1",
    *,
    labels: Mapping[str, str] | None = None,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int = 110,
    extra: Mapping[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[list[str], int]] = (),
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": alloc, "capacity": alloc}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def make_node(name: str = "n1", **kwargs: Any) -> Node:
    return parse_node(node_dict(name, **kwargs))


def zoned_node(index: int, zone: str | None, **kwargs: Any) -> Node:
    """Node ``n<index>`` with its hostname label and, unless None, a ``zone`` label."""
    labels = {HOSTNAME: f"n{index}"}
    if zone is not None:
        labels["zone"] = zone
    return make_node(f"n{index}", labels=labels, **kwargs)


def node_with_taints(name: str, *taints: tuple[str, str, str], **kwargs: Any) -> Node:
    return make_node(name, taints=taints, **kwargs)


def node_with_labels(name: str, labels: Mapping[str, str], **kwargs: Any) -> Node:
    return make_node(name, labels=labels, **kwargs)


def container(
    name: str = "c",
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    *,
    image: str = "app:v1",
    ports: Iterable[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        c["resources"] = resources
    if ports:
        c["ports"] = [dict(p) for p in ports]
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def pod_dict(
    name: str = "p",
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    node_name: str = "",
    tolerations: Iterable[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    spread: Iterable[Mapping[str, Any]] = (),
    overhead: Mapping[str, str] | None = None,
    priority: int | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers or [container("c", requests)]}
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = [dict(s) for s in spread]
    if overhead:
        spec["overhead"] = dict(overhead)
    if priority is not None:
        spec["priority"] = priority
    spec.update(spec_extra)
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
    }


def make_pod(name: str = "p", **kwargs: Any) -> Pod:
    return parse_pod(pod_dict(name, **kwargs))


def pod_with_requests(name: str = "p", node_name: str = "", **requests: str) -> Pod:
    return make_pod(
        name, requests={k.replace("_", "-"): v for k, v in requests.items()}, node_name=node_name
    )


def pod_on(node: str, name: str, **kwargs: Any) -> Pod:
    return make_pod(name, node_name=node, **kwargs)


def snapshot(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> ClusterSnapshot:
    return ClusterSnapshot.build(nodes, pods)


def term(labels: Mapping[str, str], topology_key: str, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": topology_key, **extra}


def pod_affinity(
    required: Iterable[dict[str, Any]] = (), preferred: Iterable[tuple[int, dict[str, Any]]] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
    if preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred
        ]
    return out


def spread(
    max_skew: int,
    key: str,
    when: str = "DoNotSchedule",
    labels: Mapping[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        **extra,
    }
    if labels is not None:
        c["labelSelector"] = {"matchLabels": dict(labels)}
    return c
