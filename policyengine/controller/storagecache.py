"""The storage objects the watches report, plus the volume decisions assumed for pods in flight.

VolumeBinding decides, for a pod's chosen node, which available PersistentVolume each waiting
claim gets and which claims are provisioned there. Between that decision and the PV controller
finishing the binding, the next cycles must already see those volumes taken, or two pods would
be given one volume: kube-scheduler's PV and PVC assume caches. ``StorageCache`` is that
link: the informers of the six storage kinds keep the API's truth (``truth()``), ``assume``
lays a pod's decisions over it, ``forget`` lifts them (the binding finished, or failed), and
``objects()`` is the view the scheduling cycles read. Thread-safe; ``on_change(view,
from_api)`` is called (outside the lock) whenever the view changes, ``from_api`` true when the
truth did (a watch event), false for an assumption laid or lifted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON
from policyengine.model.errors import ModelError
from policyengine.model.storage import (
    EMPTY_STORAGE,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageObjects,
)
from policyengine.model.storage_parse import parse_storage_object
from policyengine.model.volume_binder import PodVolumes, assume

log = get_logger(__name__)

# The informers' resources and the kind each lists.
KINDS = {
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
}


def _with(storage: StorageObjects, obj: Any) -> StorageObjects:
    if isinstance(obj, PersistentVolume):
        return storage.with_pv(obj)
    if isinstance(obj, PersistentVolumeClaim):
        return storage.with_pvc(obj)
    if isinstance(obj, StorageClass):
        return storage.with_class(obj)
    if isinstance(obj, CSINode):
        return storage.with_csi_node(obj)
    if isinstance(obj, CSIDriver):
        return storage.with_csi_driver(obj)
    assert isinstance(obj, CSIStorageCapacity)
    return storage.with_capacity(obj)


def _without(storage: StorageObjects, kind: str, obj: JSON) -> StorageObjects:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    if kind == "PersistentVolume":
        return storage.without_pv(name)
    if kind == "PersistentVolumeClaim":
        return storage.without_pvc(f"{namespace}/{name}")
    if kind == "StorageClass":
        return storage.without_class(name)
    if kind == "CSINode":
        return storage.without_csi_node(name)
    if kind == "CSIDriver":
        return storage.without_csi_driver(name)
    return storage.without_capacity(namespace, name)


class _KindHandler:
    """An informer's handler for one kind."""

    def __init__(self, cache: StorageCache, kind: str) -> None:
        self._cache = cache
        self._kind = kind

    def on_add(self, obj: JSON) -> None:
        self._cache.set(self._kind, obj)

    def on_update(self, old: JSON, new: JSON) -> None:
        self._cache.set(self._kind, new)

    def on_delete(self, obj: JSON) -> None:
        self._cache.delete(self._kind, obj)


class StorageCache:
    """The API's storage objects and the assumed volume decisions (module docstring)."""

    def __init__(self, on_change: Callable[[StorageObjects, bool], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._truth = EMPTY_STORAGE  # the informers list everything there is
        self._assumed: dict[str, tuple[str, PodVolumes]] = {}
        self._view: StorageObjects | None = EMPTY_STORAGE
        self._on_change = on_change

    def handler(self, resource: str) -> _KindHandler:
        return _KindHandler(self, KINDS[resource])

    def truth(self) -> StorageObjects:
        """What the API server last said, without assumptions."""
        with self._lock:
            return self._truth

    def objects(self) -> StorageObjects:
        """The view the cycles read: the truth with every assumption laid over it."""
        with self._lock:
            return self._view_locked()

    def _view_locked(self) -> StorageObjects:
        if self._view is None:
            view = self._truth
            for node, volumes in self._assumed.values():
                view = assume(view, node, volumes)
            self._view = view
        return self._view

    def set(self, kind: str, obj: JSON) -> None:
        try:
            parsed = parse_storage_object({**obj, "kind": kind})
        except ModelError as exc:
            log.warning("ignoring unreadable storage object", kind=kind, error=str(exc))
            return
        self._change(lambda truth: _with(truth, parsed))

    def delete(self, kind: str, obj: JSON) -> None:
        self._change(lambda truth: _without(truth, kind, obj))

    def assume(self, key: str, node: str, volumes: PodVolumes) -> None:
        """Lay the pod's decisions over the truth until ``forget``."""
        with self._lock:
            self._assumed[key] = (node, volumes)
            self._view = None
            view = self._view_locked()
        self._notify(view, False)

    def forget(self, key: str) -> bool:
        with self._lock:
            if self._assumed.pop(key, None) is None:
                return False
            self._view = None
            view = self._view_locked()
        self._notify(view, False)
        return True

    def _change(self, edit: Callable[[StorageObjects], StorageObjects]) -> None:
        with self._lock:
            changed = edit(self._truth)
            if changed is self._truth:
                return
            self._truth = changed
            self._view = None
            view = self._view_locked()
        self._notify(view, True)

    def _notify(self, view: StorageObjects, from_api: bool) -> None:
        if self._on_change is not None:
            try:
                self._on_change(view, from_api)
            except Exception:
                log.exception("storage change handler failed")
