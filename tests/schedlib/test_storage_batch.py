"""The storage filters' columnar forms (``schedlib.storage_batch``) give each node exactly what
the plugin's own ``filter`` gives it.

Hypothesis draws the storage strategies' clusters (claims missing, bound, waiting, selected or
being deleted; volumes local, zonal or unpinned, some naming a claim; CSINode attach limits),
running pods with volumes, and volumes whose node affinity pins a host and asks for more (a
zone, a label to exist) or pins a host through a term that never matches, so that nodes
alike in some labels and apart in others meet every grouping; then every form is compared
with the plugin node for node, before and after the pod's volume decisions on one node are
assumed.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.volumes import assume_volumes
from policyengine.model.plugins import PLUGINS_BY_NAME, volume_binding
from policyengine.model.snapshot_io import parse_objects
from policyengine.model.storage import ClaimRef, StorageObjects
from policyengine.model.volume_binder import find_pod_volumes
from policyengine.schedlib import storage_batch
from policyengine.schedlib.storage_batch import FORMS
from tests.engine.storage_strategies import mixed_volumes, storage, term, volumes
from tests.engine.strategies import nodes, volume_cluster
from tests.model.builders import make_pod, snapshot


def _forms_equal_the_plugins(pod: Any, snap: Any) -> None:
    _forms_equal(pod, snap)
    # The columnar keys (label columns) that many nodes take, on these few.
    with mock.patch.object(storage_batch, "_FEW", 0):
        _forms_equal(pod, snap)


def _forms_equal(pod: Any, snap: Any) -> None:
    infos = list(snap.nodes)
    for name, form in FORMS.items():
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_filter is not None and plugin.filter is not None
        state = plugin.prepare_filter(pod, snap)
        expected = [plugin.filter(state, info) for info in infos]
        assert form(state, infos, snap) == expected, name
        # Any subset of the nodes, in any order (the incremental pass asks about a few).
        few = infos[::-1][: max(1, len(infos) // 2)]
        assert form(state, few, snap) == [plugin.filter(state, info) for info in few], name


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_storage_forms_equal_the_plugins(data: st.DataObject) -> None:
    cluster_nodes, running = data.draw(volume_cluster(6, 8))
    names = [n.name for n in cluster_nodes]
    objects: StorageObjects = data.draw(storage(names))
    for pv in data.draw(mixed_volumes(names)):
        objects = objects.with_pv(pv)
    snap = snapshot(cluster_nodes, running).with_storage(objects)
    pod = make_pod("pending", volumes=data.draw(volumes(always=True)))
    _forms_equal_the_plugins(pod, snap)
    # The decisions on one node assumed: a volume taken, a claim given its node.
    node = data.draw(st.sampled_from(names))
    state = volume_binding.prepare_filter(pod, snap)
    if not state.skip and state.prefilter is None and state.storage is not None:
        found = find_pod_volumes(
            state.claims,
            state.storage,
            node,
            snap.get(node).node.labels,  # type: ignore[union-attr], state.matchers
        )
        if found.error is None and not found.reasons and found.volumes:
            snap = assume_volumes(snap.with_pod(pod, node), node, found.volumes)
            _forms_equal_the_plugins(pod, snap)


@st.composite
def waiting_claims(draw: st.DrawFn, node_names: list[str]) -> StorageObjects:
    """Claims waiting for their first consumer, of a local class or a provisioned one (in
    one zone), and local volumes of both classes pinned to hosts (some asking for more, some
    naming a claim, some taken)."""
    items: list[dict[str, Any]] = [
        {
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "kind": "StorageClass",
            "metadata": {"name": "wffc"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
        },
    ]
    for name in ("c0", "c1"):
        items.append(
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": draw(st.sampled_from(["1Gi", "8Gi"]))}},
                    "storageClassName": draw(st.sampled_from(["local", "wffc"])),
                },
                "status": {"phase": "Pending"},
            }
        )
    for index in range(draw(st.integers(0, 6))):
        terms = [
            term(draw, draw(st.sampled_from(node_names))) for _ in range(draw(st.integers(1, 2)))
        ]
        spec: dict[str, Any] = {
            "capacity": {"storage": draw(st.sampled_from(["4Gi", "10Gi"]))},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": draw(st.sampled_from(["local", "wffc"])),
            "local": {"path": "/mnt"},
        }
        if draw(st.integers(0, 3)) != 0:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
        ref = draw(st.sampled_from([None, None, None, "c0", "other"]))
        if ref is not None:
            spec["claimRef"] = {"namespace": "default", "name": ref}
        items.append(
            {
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv{index}"},
                "spec": spec,
                "status": {"phase": "Available"},
            }
        )
    return parse_objects([{"kind": "List", "items": items}], "storage").storage


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_waiting_claims_group_as_the_plugin_decides(data: st.DataObject) -> None:
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 6))))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, []).with_storage(data.draw(waiting_claims(names)))
    claims = data.draw(st.sampled_from([["c0"], ["c0"], ["c1"], ["c0", "c1"]]))
    pod = make_pod(
        "pending",
        volumes=[
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ],
    )
    _forms_equal_the_plugins(pod, snap)


# Rows of codes (one column per thing read) and whether ``_folded`` folds them into one int64
# each: rows equal exactly where their folds are.
FOLDS = {
    "one column": ([[3, -1, 3, 7, -1]], True),
    "two columns": ([[0, 0, 1, 0, 1, 1], [5, 6, 5, 5, 5, 6]], True),
    "spans multiplying past int64": ([[0, 1 << 40, 0], [0, 1 << 40, 1]], False),
    "no rows": ([[], []], True),
}


@pytest.mark.parametrize(("columns", "folds"), FOLDS.values(), ids=FOLDS)
def test_rows_of_codes_fold_to_one_number_equal_where_the_rows_are(
    columns: list[list[int]], folds: bool
) -> None:
    codes = [np.array(column, np.int64) for column in columns]
    key = storage_batch._folded(codes)
    assert (key is not None) == folds
    if key is None:
        return
    rows = list(zip(*columns, strict=True))
    for i, j in itertools.product(range(len(rows)), repeat=2):
        assert (rows[i] == rows[j]) == (key[i] == key[j])


# Keys (one int64 per row, non-negative) and whether their values span few enough to be
# tallied in a table rather than sorted.
KEYS = {
    "a few values": ([3, 0, 3, 7, 0, 0], True),
    "one value": ([5, 5, 5], True),
    "no rows": ([], True),
    "a wide range": ([0, 1 << 40, 7, 1 << 40], False),
}


@pytest.mark.parametrize(("values", "tallied"), KEYS.values(), ids=KEYS)
def test_each_row_finds_its_distinct_key(values: list[int], tallied: bool) -> None:
    key = np.array(values, np.int64)
    first, inverse = storage_batch._distinct_keys(key)
    distinct = sorted(set(values))
    assert key[first].tolist() == distinct  # one row of each value, in increasing order
    assert [distinct[i] for i in inverse.tolist()] == values
    assert (max(values, default=-1) + 1 <= 4 * len(values) + 4096) == tallied


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_candidates_taken_by_other_claims_group_as_the_plugin_decides(data: st.DataObject) -> None:
    """A claim shape's candidates carried from one storage to the next (``shared_matcher``)
    while other claims take volumes one by one: the hosts whose candidates went are told
    apart from those the carried part was first built with."""
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 6))))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, []).with_storage(data.draw(waiting_claims(names)))
    pod = make_pod(
        "pending", volumes=[{"name": "v0", "persistentVolumeClaim": {"claimName": "c0"}}]
    )
    _forms_equal_the_plugins(pod, snap)
    for step in range(data.draw(st.integers(1, 4))):
        free = sorted(
            (pv for pv in snap.storage.pvs.values() if pv.claim_ref is None), key=lambda v: v.name
        )
        if not free:
            break
        pv = data.draw(st.sampled_from(free))
        taken = replace(pv, claim_ref=ClaimRef("default", f"other{step}", f"u-other{step}"))
        snap = snap.with_storage(snap.storage.with_pv(taken))
        _forms_equal_the_plugins(pod, snap)
