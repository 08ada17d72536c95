"""``generate(spec, seed)``: a spec and a seed made into one list of API objects, always the
same ones.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from policyengine.quantity import format_quantity
from policyengine.synthetic.nodes import NodeState, image_entry, make_nodes
from policyengine.synthetic.placement import Placer
from policyengine.synthetic.pods import Names, Shape, Unit, make_pod, pod_shape, units_for
from policyengine.synthetic.randomness import Clock, Rand
from policyengine.synthetic.spec import (
    INFERENCE,
    NVIDIA_GPU,
    POD_GROUP_API,
    SERVICE,
    ClusterSpec,
    PodTemplate,
)

# ------------------------------------------------------------------------- generation


def generate(spec: ClusterSpec, seed: int = 0) -> list[dict[str, Any]]:
    """The cluster as API objects: nodes, then running pods, then pending pods, then PodGroups;
    with ``spec.workload_objects``, the PriorityClasses the pods name first and the
    Deployments' ReplicaSets and Services last.

    The same ``spec`` and ``seed`` always give the same objects, in any process. Raises
    ``ValueError`` when ``spec.running_pods`` cannot all be placed without over-committing.
    """
    rand = Rand(seed)
    clock = Clock(spec.start)
    nodes = make_nodes(spec, rand, clock)
    names = Names(rand)
    shapes: dict[PodTemplate, Shape] = {}

    def shape_of(t: PodTemplate) -> Shape:
        if t not in shapes:
            shapes[t] = pod_shape(t, spec)
        return shapes[t]

    clock.tick(3600)  # the workloads arrive after the nodes
    pod_groups: list[dict[str, Any]] = []

    # Running pods are placed biggest first (first-fit decreasing), so that whole-node
    # training workers are not crowded out by small pods placed before them; they are then
    # created in a shuffled order, as a cluster's history would have it.
    running_units = units_for(spec.running_mix, spec.running_pods, rand, names)

    def demand(u: int) -> tuple[int, int, int, int]:
        need = shape_of(running_units[u].template).need
        return (-need[3], -need[0], -need[1], u)

    placer = Placer(spec, nodes, rand)
    hosts: dict[int, list[NodeState]] = {}
    for u in sorted(range(len(running_units)), key=demand):
        unit = running_units[u]
        hosts[u] = []
        for _ in range(unit.size):
            node = placer.place(shape_of(unit.template), unit.app)
            if node is None:
                raise ValueError(
                    f"cannot place {spec.running_pods} running pods: no node has room for "
                    f"another {unit.template.name!r} pod; lower running_pods or add nodes"
                )
            hosts[u].append(node)
    creation_order = list(range(len(running_units)))
    rand.shuffle(creation_order)
    running: list[dict[str, Any]] = []
    for u in creation_order:
        unit = running_units[u]
        shape = shape_of(unit.template)
        if unit.template.gang:
            pod_groups.append(_pod_group(unit, shape, rand, clock, "Running"))
        for k, node in enumerate(hosts[u]):
            running.append(make_pod(shape, unit, k, spec, rand, names, clock, node))

    for n in nodes:  # kubelet lists the images it pulled, largest first
        n.obj["status"]["images"] = [
            image_entry(name, size)
            for name, size in sorted(n.images.items(), key=lambda kv: (-kv[1], kv[0]))
        ]

    clock.tick(600)
    pending_units = units_for(spec.pending_mix, spec.pending_pods, rand, names)
    rand.shuffle(pending_units)
    pending: list[dict[str, Any]] = []
    for unit in pending_units:
        shape = shape_of(unit.template)
        if unit.template.gang:
            pod_groups.append(_pod_group(unit, shape, rand, clock, "Pending"))
        for k in range(unit.size):
            pending.append(make_pod(shape, unit, k, spec, rand, names, clock, None))
    if not spec.workload_objects:
        return [*(n.obj for n in nodes), *running, *pending, *pod_groups]
    apps = _deployments(running_units, pending_units)
    workloads = [
        obj for app, t in apps.items() for obj in _deployment_objects(app, t, names, rand, clock)
    ]
    classes = _priority_classes((*spec.running_mix, *spec.pending_mix), rand, clock)
    return [*classes, *(n.obj for n in nodes), *running, *pending, *pod_groups, *workloads]


def _priority_classes(
    templates: tuple[PodTemplate, ...], rand: Rand, clock: Clock
) -> list[dict[str, Any]]:
    """The PriorityClasses the templates name (admission resolves a pod's priority from
    them), created before anything else."""
    named = {t.priority_class: t.priority for t in templates if t.priority_class}
    out = []
    for name, value in sorted(named.items()):
        stamp, version = clock.tick(0)
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {
                    "creationTimestamp": stamp,
                    "name": name,
                    "resourceVersion": version,
                    "uid": rand.uuid(),
                },
                "preemptionPolicy": "PreemptLowerPriority",
                "value": value,
            }
        )
    return out


def _deployments(*units: list[Unit]) -> dict[str, PodTemplate]:
    """The apps made by a Deployment (pods of no job), with their template, in name order."""
    found = {u.app: u.template for group in units for u in group if not u.group}
    return dict(sorted(found.items()))


def _deployment_objects(
    app: str, t: PodTemplate, names: Names, rand: Rand, clock: Clock
) -> list[dict[str, Any]]:
    """The ReplicaSet that owns an app's pods (selecting them by app and template hash, as a
    Deployment's does) and, for services and inference, the Service in front of them."""
    rs_hash, rs_uid = names.replica_set(app)
    stamp, version = clock.tick(1)
    selector = {"app": app, "pod-template-hash": rs_hash}
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "creationTimestamp": stamp,
                "labels": selector,
                "name": f"{app}-{rs_hash}",
                "namespace": t.namespace,
                "resourceVersion": version,
                "uid": rs_uid,
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": selector}, "spec": {"containers": []}},
            },
        }
    ]
    if t.kind in (SERVICE, INFERENCE):
        stamp, version = clock.tick(1)
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "creationTimestamp": stamp,
                    "name": app,
                    "namespace": t.namespace,
                    "resourceVersion": version,
                    "uid": rand.uuid(),
                },
                "spec": {
                    "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                    "selector": {"app": app},
                    "type": "ClusterIP",
                },
            }
        )
    return out


def _pod_group(unit: Unit, shape: Shape, rand: Rand, clock: Clock, phase: str) -> dict[str, Any]:
    """The coscheduling PodGroup of a gang, created just before its pods."""
    stamp, version = clock.tick(1)
    need = shape.need
    min_resources = {
        "cpu": format_quantity(Fraction(need[0] * unit.size, 1000)),
        "memory": format_quantity(need[1] * unit.size),
    }
    if need[3]:
        min_resources[NVIDIA_GPU] = str(need[3] * unit.size)
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "creationTimestamp": stamp,
            "generation": 1,
            "name": unit.group,
            "namespace": unit.template.namespace,
            "resourceVersion": version,
            "uid": rand.uuid(),
        },
        "spec": {
            "minMember": unit.size,
            "minResources": min_resources,
            "scheduleTimeoutSeconds": 600,
        },
        "status": {"phase": phase},
    }
