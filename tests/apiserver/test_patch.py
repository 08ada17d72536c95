"""The PATCH flavours: what they produce, and that they leave their target alone and share
nothing with it (the strategic merge copies once and merges into its copy in place)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback.patch import json_patch, merge_patch, strategic_merge_patch

JSON = dict[str, Any]

POD = {
    "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]},
    "status": {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False"}],
    },
}


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        (  # conditions merge by type: the new one first, the old one kept
            {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}},
            {
                **POD,
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False"},
                        {"type": "Ready", "status": "False"},
                    ],
                },
            },
        ),
        (  # an element with the same key is merged into
            {"spec": {"containers": [{"name": "d", "image": "k"}]}},
            {
                **POD,
                "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "k"}]},
            },
        ),
        (  # null deletes, nested maps merge
            {"metadata": {"labels": {"a": None, "b": "2"}}, "status": {"phase": None}},
            {
                **POD,
                "metadata": {"name": "p", "labels": {"b": "2"}, "finalizers": ["x"]},
                "status": {"conditions": POD["status"]["conditions"]},
            },
        ),
        (  # directives
            {
                "spec": {"containers": [{"name": "c", "$patch": "delete"}]},
                "status": {"$patch": "replace", "phase": "Running"},
                "metadata": {"finalizers": ["y"]},
            },
            {
                "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x", "y"]},
                "spec": {"containers": [{"name": "d", "image": "j"}]},
                "status": {"phase": "Running"},
            },
        ),
    ],
    ids=["conditions-merge-by-type", "same-key-merged", "null-deletes", "directives"],
)
def test_strategic_merge(patch: JSON, want: JSON) -> None:
    target = copy.deepcopy(POD)
    got = strategic_merge_patch(target, patch)
    assert got == want
    assert target == POD
    _assert_disjoint(got, target)


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


def _assert_disjoint(result: Any, target: Any) -> None:
    ours = {id(c) for c in _containers(target)}
    assert not [c for c in _containers(result) if id(c) in ours]


KEYS = st.sampled_from(["a", "b", "conditions", "containers", "finalizers", "name", "type"])
LEAVES = st.none() | st.integers(0, 3) | st.sampled_from(["x", "y"])
DOCS = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(KEYS, DOCS, max_size=4), st.dictionaries(KEYS, DOCS, max_size=4))
def test_patches_leave_their_target_alone(target: JSON, patch: JSON) -> None:
    before = copy.deepcopy(target)
    for apply in (strategic_merge_patch, merge_patch):
        try:
            result = apply(target, patch)
        except Exception:  # an unmergeable patch is an answer too; the target must survive
            result = None
        assert target == before
        _assert_disjoint(result, target)


@pytest.mark.parametrize(
    ("ops", "want"),
    [
        ([{"op": "add", "path": "/status/phase", "value": "Running"}], "Running"),
        ([{"op": "remove", "path": "/status/phase"}], None),
    ],
    ids=["op=add path=/status/phase value=Running", "op=remove path=/status/phase"],
)
def test_json_patch_leaves_its_target_alone(ops: list[JSON], want: str | None) -> None:
    target = copy.deepcopy(POD)
    got = json_patch(target, ops)
    assert got["status"].get("phase") == want
    assert target == POD
    _assert_disjoint(got, target)
