"""The watches on Services, ReplicaSets, StatefulSets and ReplicationControllers.

kube-scheduler's default topology spreading derives a pod's selector from the objects that
select it (``model.workloads``), so, as kube-scheduler does, the loop lists and watches them
and waits for their first lists before its first cycle. Each event becomes a ``Workload`` in
the cluster cache's snapshot; an object that cannot be read is logged and left out (the pods
it selects are then spread as if it did not exist), never a reason to stop. Status updates —
a ReplicaSet's on every replica it creates — leave the snapshot as it is: only selectors are
kept (the informers store objects trimmed to it: ``trimmed``), and an unchanged one changes
nothing. No event moves pods between queues: default spreading only scores, so it never made
a pod unschedulable.
"""

from __future__ import annotations

import random

from kubernetes import client as k8s

from policyengine.controller.cache import ClusterCache
from policyengine.controller.informer import Informer, InformerOptions
from policyengine.controller.logs import get_logger
from policyengine.controller.rawapi import RawAPI
from policyengine.controller.wirejson import JSON
from policyengine.model.errors import ModelError
from policyengine.model.workloads import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
    parse_workload,
)

log = get_logger(__name__)


def trimmed(obj: JSON) -> JSON:
    """What ``parse_workload`` reads of an object (and what the informer keys it by): a
    ReplicaSet's pod template, a Service's ports and every status are left behind."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in _KEPT_METADATA if k in meta},
        "spec": {"selector": spec.get("selector")} if isinstance(spec, dict) else spec,
    }


_KEPT_METADATA = ("name", "namespace", "resourceVersion", "uid")


class _Handler:
    """One kind's events into the cache."""

    def __init__(self, kind: str, cache: ClusterCache) -> None:
        self._kind = kind
        self._cache = cache

    def on_add(self, obj: JSON) -> None:
        self.on_update(None, obj)

    def on_update(self, _old: JSON | None, obj: JSON) -> None:
        try:
            workload = parse_workload(obj, kind=self._kind)
        except ModelError as exc:
            log.warning(f"ignoring unreadable {self._kind}", error=str(exc))
            return
        self._cache.set_workload(workload)

    def on_delete(self, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        self._cache.remove_workload(self._kind, str(namespace), str(meta.get("name") or ""))


class WorkloadWatch:
    """The four informers (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        cache: ClusterCache,
        *,
        options: InformerOptions | None = None,
        rng: random.Random | None = None,
    ) -> None:
        core = RawAPI(api_client)
        lists = (
            ("services", core.list_service_for_all_namespaces, SERVICE),
            ("replicasets", core.list_replica_set_for_all_namespaces, REPLICA_SET),
            ("statefulsets", core.list_stateful_set_for_all_namespaces, STATEFUL_SET),
            (
                "replicationcontrollers",
                core.list_replication_controller_for_all_namespaces,
                REPLICATION_CONTROLLER,
            ),
        )
        self.informers = [
            Informer(
                resource,
                list_func,
                _Handler(kind, cache),
                options=options,
                rng=rng,
                transform=trimmed,
            )
            for resource, list_func, kind in lists
        ]

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)
