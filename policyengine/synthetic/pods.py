"""The pods of a synthetic cluster: a template's shape turned into a Pod object in the API's
wire shape, with its owner, tolerations, affinity and containers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyengine.model.gpu_share import SHARE_ANNOTATION
from policyengine.model.taints import NO_EXECUTE
from policyengine.synthetic.nodes import NodeState, image_entry, resource_units
from policyengine.synthetic.randomness import Clock, Rand, apportion
from policyengine.synthetic.spec import (
    BATCH,
    GPU_MODEL_ANNOTATION,
    HOSTNAME,
    INFERENCE,
    NVIDIA_GPU,
    POD_GROUP_LABEL,
    PROXY_IMAGE,
    SERVICE,
    TRAINING,
    TRAINING_JOB,
    UNREACHABLE_TAINT,
    WORKLOAD_KIND,
    ZONE,
    ClusterSpec,
    PodTemplate,
)

# ------------------------------------------------------------------------------- pods


@dataclass(slots=True)
class Shape:
    """What a template turns into, computed once per template."""

    template: PodTemplate
    containers: list[tuple[str, dict[str, str], dict[str, str]]]  # name, requests, limits
    need: list[int]  # ledger units, pods = 1
    qos: str
    image: str
    tolerations: tuple[tuple[tuple[str, Any], ...], ...]


def pod_shape(t: PodTemplate, spec: ClusterSpec) -> Shape:
    requests: dict[str, str] = {}
    if t.cpu is not None:
        requests["cpu"] = t.cpu
    if t.memory is not None:
        requests["memory"] = t.memory
    if t.ephemeral_storage is not None:
        requests["ephemeral-storage"] = t.ephemeral_storage
    limits: dict[str, str] = {}
    if t.guaranteed:
        limits = {k: v for k, v in requests.items() if k in ("cpu", "memory")}
    elif t.memory is not None:
        limits["memory"] = t.memory  # the common "limit memory, not cpu" pattern
    if t.gpus:
        # Extended resources must be given as limits; requests must then equal them.
        requests[NVIDIA_GPU] = limits[NVIDIA_GPU] = str(t.gpus)
    containers = [("main", requests, limits)]
    if t.sidecar and requests:
        side = {"cpu": "100m", "memory": "128Mi"}
        containers.append(("proxy", side, dict(side) if t.guaranteed else {"memory": "128Mi"}))
    total = [0, 0, 0, 0, 1]
    for _, req, _lim in containers:
        for k, v in enumerate(resource_units(req, round_up=True)[:4]):
            total[k] += v
    return Shape(
        t, containers, total, _qos(containers), t.image or _default_image(t), _tolerations(t, spec)
    )


def _qos(containers: Sequence[tuple[str, Mapping[str, str], Mapping[str, str]]]) -> str:
    """The status.qosClass the API server would record; only cpu and memory count."""
    keys = ("cpu", "memory")
    if not any(k in r for _, req, lim in containers for r in (req, lim) for k in keys):
        return "BestEffort"
    if all(k in lim and req.get(k, lim[k]) == lim[k] for _, req, lim in containers for k in keys):
        return "Guaranteed"
    return "Burstable"


def _default_image(t: PodTemplate) -> str:
    return {
        SERVICE: f"registry.example.com/web/{t.name}:1.4.2",
        INFERENCE: f"nvcr.io/nvidia/tritonserver:24.01-py3-{t.name}",
        TRAINING: f"nvcr.io/nvidia/pytorch:24.01-py3-{t.name}",
        BATCH: f"registry.example.com/batch/{t.name}:2.0.1",
    }[t.kind]


@dataclass(slots=True)
class Unit:
    """Pods created together: one pod, or the workers of a job or gang."""

    template: PodTemplate
    size: int
    app: str
    group: str  # job / gang name, "" for single pods


class Names:
    """Per-template app, ReplicaSet and job names, shared by the running and pending pods."""

    def __init__(self, rand: Rand) -> None:
        self.rand = rand
        self.app_counter: dict[str, int] = {}
        self.job_counter: dict[str, int] = {}
        self.replica_sets: dict[str, tuple[str, str]] = {}  # app -> (hash, uid)
        self.jobs: dict[str, str] = {}  # job -> uid
        self.used: set[tuple[str, str]] = set()

    def app(self, t: PodTemplate) -> str:
        if t.apps == 1:
            return t.name
        k = self.app_counter.get(t.name, 0)
        self.app_counter[t.name] = k + 1
        return f"{t.name}-{k % t.apps}"

    def job(self, t: PodTemplate) -> str:
        k = self.job_counter.get(t.name, 0) + 1
        self.job_counter[t.name] = k
        return f"{t.name}-{k:04d}"

    def replica_set(self, app: str) -> tuple[str, str]:
        if app not in self.replica_sets:
            self.replica_sets[app] = (self.rand.suffix(10), self.rand.uuid())
        return self.replica_sets[app]

    def owner_uid(self, job: str) -> str:
        if job not in self.jobs:
            self.jobs[job] = self.rand.uuid()
        return self.jobs[job]

    def unique(self, namespace: str, make: Callable[[], str]) -> str:
        name = make()
        for _ in range(3):  # random suffixes collide now and then; redraw
            if (namespace, name) not in self.used:
                break
            name = make()
        while (namespace, name) in self.used:  # a fixed name taken (templates named alike)
            name = f"{name}-{self.rand.suffix()}"
        self.used.add((namespace, name))
        return name


def _group_size(sizes: tuple[int, ...], left: int, rand: Rand) -> int:
    """A drawn group size, bent so that the template's last group is not left undersized."""
    lo, hi = min(sizes), max(sizes)
    if left <= hi:
        return left  # the last group; smaller than ``lo`` only if the quota itself is
    size = rand.choice(sizes)
    return size if left - size >= lo else left - lo


def units_for(mix: Sequence[PodTemplate], total: int, rand: Rand, names: Names) -> list[Unit]:
    counts = apportion([t.weight for t in mix], total)
    units: list[Unit] = []
    for t, count in zip(mix, counts, strict=True):
        while count > 0:
            size = _group_size(t.group_sizes, count, rand) if t.group_sizes else 1
            group = names.job(t) if t.group_sizes or t.kind in (TRAINING, BATCH) else ""
            units.append(Unit(t, size, names.app(t), group))
            count -= size
    return units


def _tolerations(t: PodTemplate, spec: ClusterSpec) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """The pod's tolerations as item tuples; each pod gets its own dicts built from them."""
    out: list[dict[str, Any]] = []
    if t.tolerates_gpu_taint and spec.gpu_taint is not None:
        g = spec.gpu_taint
        out.append({"effect": g.effect, "key": g.key, "operator": "Equal", "value": g.value})
    # What the DefaultTolerationSeconds admission plugin adds to every pod.
    for key in ("node.kubernetes.io/not-ready", UNREACHABLE_TAINT):
        out.append(
            {"effect": NO_EXECUTE, "key": key, "operator": "Exists", "tolerationSeconds": 300}
        )
    return tuple(tuple(d.items()) for d in out)


def make_pod(
    shape: Shape,
    unit: Unit,
    index: int,
    spec: ClusterSpec,
    rand: Rand,
    names: Names,
    clock: Clock,
    node: NodeState | None,
) -> dict[str, Any]:
    t = shape.template
    stamp, version = clock.tick(rand.between(1, 20) if index == 0 else 1)
    labels = {"app": unit.app, WORKLOAD_KIND: t.kind}
    annotations: dict[str, str] = {}
    owner: dict[str, Any]
    if unit.group:
        labels[TRAINING_JOB if t.kind == TRAINING else "batch.kubernetes.io/job-name"] = unit.group
        if t.gang:
            labels[POD_GROUP_LABEL] = unit.group
        if t.group_sizes:
            name = names.unique(t.namespace, lambda: f"{unit.group}-worker-{index}")
        else:
            name = names.unique(t.namespace, lambda: f"{unit.group}-{rand.suffix()}")
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": unit.group}
    else:
        rs_hash, rs_uid = names.replica_set(unit.app)
        labels["pod-template-hash"] = rs_hash
        rs = f"{unit.app}-{rs_hash}"
        name = names.unique(t.namespace, lambda: f"{rs}-{rand.suffix()}")
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid}
    if "uid" not in owner:
        owner["uid"] = names.owner_uid(unit.group)
    owner["blockOwnerDeletion"] = True
    owner["controller"] = True
    if t.gpu_model:
        annotations[GPU_MODEL_ANNOTATION] = t.gpu_model
    if t.gpu_share:
        annotations[SHARE_ANNOTATION] = t.gpu_share
    containers = []
    for cname, requests, limits in shape.containers:
        resources: dict[str, Any] = {}
        if limits:
            resources["limits"] = dict(limits)
        if requests:
            resources["requests"] = dict(requests)
        c: dict[str, Any] = {
            "image": shape.image if cname == "main" else PROXY_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "name": cname,
            "resources": resources,
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        if cname == "main" and t.kind in (SERVICE, INFERENCE):
            c["ports"] = [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
        containers.append(c)
    pod_spec: dict[str, Any] = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": t.priority,
        "restartPolicy": "Always" if t.kind in (SERVICE, INFERENCE) else "OnFailure",
        "schedulerName": spec.scheduler_name,
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [dict(items) for items in shape.tolerations],
    }
    if t.priority_class:
        pod_spec["priorityClassName"] = t.priority_class
    if t.node_selector:
        pod_spec["nodeSelector"] = dict(t.node_selector)
    if t.hostname_anti_affinity:
        pod_spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": unit.app}}, "topologyKey": HOSTNAME}
                ]
            }
        }
    if t.near_app:
        pod_spec.setdefault("affinity", {})["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": t.near_app}},
                        "topologyKey": ZONE,
                    },
                }
            ]
        }
    spreads = [(ZONE, 1, "DoNotSchedule")] if t.zone_spread else []
    spreads += t.spread
    if spreads:
        pod_spec["topologySpreadConstraints"] = [
            {
                "labelSelector": {"matchLabels": {"app": unit.app}},
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
            }
            for key, skew, when in spreads
        ]
    status: dict[str, Any] = {"phase": "Pending", "qosClass": shape.qos}
    if node is not None:
        pod_spec["nodeName"] = node.name
        ip = f"{node.pod_prefix}.{node.next_ip % 254 + 1}"
        node.next_ip += 1
        status = {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": stamp, "status": "True", "type": c}
                for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "containerID": f"containerd://{hashlib.sha256((name + c['name']).encode()).hexdigest()}",
                    "image": c["image"],
                    "imageID": image_entry(c["image"], 0)["names"][0],
                    "lastState": {},
                    "name": c["name"],
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": stamp}},
                }
                for c in containers
            ],
            "hostIP": node.ip,
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": shape.qos,
            "startTime": stamp,
        }
    metadata: dict[str, Any] = {
        "creationTimestamp": stamp,
        "labels": labels,
        "name": name,
        "namespace": t.namespace,
        "ownerReferences": [owner],
        "resourceVersion": version,
        "uid": rand.uuid(),
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec,
        "status": status,
    }
