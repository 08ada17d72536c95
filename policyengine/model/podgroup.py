"""Gang membership as the scheduler-plugins coscheduling plugin defines it.

A gang is a ``scheduling.x-k8s.io/v1alpha1`` PodGroup object (``spec.minMember``,
``spec.scheduleTimeoutSeconds``, ``spec.minResources``) plus the pods labelled
``scheduling.x-k8s.io/pod-group: <PodGroup name>`` in the same namespace. Kubeflow's training
operator, Volcano-less MPIJob setups, JobSet and LeaderWorkerSet all reach the scheduler through
this convention, so it is the one the engine reads; the model only parses it and names a pod's
group, the engine decides what a gang means for placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyengine.model.frozen import EMPTY
from policyengine.model.objects import Pod, ResourceList
from policyengine.model.parse import _int, _map, _metadata, _resources, _timestamp

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_GROUP_API_GROUP = "scheduling.x-k8s.io"
POD_GROUP_KIND = "PodGroup"


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A coscheduling PodGroup: at least ``min_member`` of its pods run together or none do."""

    namespace: str
    name: str
    min_member: int
    schedule_timeout_seconds: int | None
    min_resources: ResourceList = EMPTY  # spec.minResources (may be empty)
    creation_timestamp: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_pod_group(obj: Mapping[str, Any], source: str | None = None) -> PodGroup:
    """A ``PodGroup`` from its API dict; raises ``ModelError`` naming the object and field."""
    ctx, meta = _metadata(obj, POD_GROUP_KIND, source)
    spec = _map(ctx, obj.get("spec"), "spec")
    min_member = _int(ctx, spec.get("minMember"), "spec.minMember", 1)
    assert min_member is not None
    if min_member < 1:
        raise ctx.fail("spec.minMember", f"must be at least 1, got {min_member}")
    timeout = _int(ctx, spec.get("scheduleTimeoutSeconds"), "spec.scheduleTimeoutSeconds")
    if timeout is not None and timeout < 0:
        raise ctx.fail("spec.scheduleTimeoutSeconds", f"must not be negative, got {timeout}")
    return PodGroup(
        namespace=ctx.namespace or "default",
        name=ctx.name or "",
        min_member=min_member,
        schedule_timeout_seconds=timeout,
        min_resources=_resources(ctx, spec.get("minResources"), "spec.minResources"),
        creation_timestamp=_timestamp(
            ctx, meta.get("creationTimestamp"), "metadata.creationTimestamp"
        ),
    )


def is_pod_group_object(obj: Mapping[str, Any]) -> bool:
    """A PodGroup of the coscheduling API group (any version of ``scheduling.x-k8s.io``), or
    one without ``apiVersion`` (the items of a ``PodGroupList`` as the API returns them)."""
    if obj.get("kind") != POD_GROUP_KIND:
        return False
    api = obj.get("apiVersion")
    return api is None or (isinstance(api, str) and api.split("/", 1)[0] == POD_GROUP_API_GROUP)


def pod_group_key(pod: Pod) -> str | None:
    """``namespace/<PodGroup name>`` for a pod labelled into a gang, else None."""
    name = pod.labels.get(POD_GROUP_LABEL)
    if not name:
        return None
    return f"{pod.namespace}/{name}"
