"""The views ``StorageCache`` gives the cycles tell what changed from one to the next.

The view is the API's truth with every assumed volume decision laid over it, laid anew
whenever a decision is added or lifted or the truth moves; the per-node state kept between
cycles (``schedlib.volume_rows``, ``volume_binder.shared_matcher``) follows it by the keys
each view says were replaced since the last (``StorageObjects.changes_since``). Each step
below moves the cache, and the view after it must say which objects differ from the view
before (a superset), never that it cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policyengine.controller.storagecache import StorageCache
from policyengine.model.storage import PersistentVolumeClaim, StorageObjects
from policyengine.model.volume_binder import PodVolumes


def _claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "zonal"},
        "status": {"phase": "Pending"},
    }


def _provision(name: str) -> PodVolumes:
    return PodVolumes(provision=(PersistentVolumeClaim(name, "default", uid=f"u-{name}"),))


Step = Callable[[StorageCache], object]

STEPS: dict[str, Step] = {
    "a pod's claim assumed": lambda c: c.assume("default/p0", "n1", _provision("c0")),
    "another pod's claim assumed": lambda c: c.assume("default/p1", "n2", _provision("c1")),
    "an assumption lifted": lambda c: c.forget("default/p0"),
    "a claim watched": lambda c: c.set("PersistentVolumeClaim", _claim("c2")),
    "a claim deleted": lambda c: c.delete("PersistentVolumeClaim", _claim("c1")),
}


def _differing(a: StorageObjects, b: StorageObjects) -> set[tuple[str, str]]:
    return {("pvc", key) for key in {*a.pvcs, *b.pvcs} if a.pvcs.get(key) is not b.pvcs.get(key)}


@pytest.mark.parametrize("step", STEPS.values(), ids=STEPS)
def test_each_view_tells_what_changed_since_the_last(step: Step) -> None:
    cache = StorageCache()
    for name in ("c0", "c1"):
        cache.set("PersistentVolumeClaim", _claim(name))
    cache.assume("default/p0", "n1", _provision("c0"))
    before = cache.objects()
    step(cache)
    after = cache.objects()
    told = after.changes_since(before)
    assert told is not None
    assert _differing(before, after) <= told
