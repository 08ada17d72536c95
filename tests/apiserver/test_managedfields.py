"""managedFields bookkeeping: the lean flattening equals the plain one, and ``record`` keeps
the rules the captures show."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopback import managedfields as mf

JSON = dict[str, Any]


def _reference_scoped(obj: JSON, subresource: str, has_status: bool) -> dict[mf.Path, Any]:
    """Flatten everything, then keep what is in scope (the definition ``_scoped`` speeds up)."""
    flat: dict[mf.Path, Any] = {}

    def marker(value: Any, field: str) -> Any:
        if isinstance(value, dict) and field not in mf.ATOMIC and value:
            return mf._Container()
        keyed = isinstance(value, list) and bool(value)
        if keyed and all(mf._elem_key(field, i) is not None for i in value):
            return mf._Container()
        return value

    def walk(value: Any, field: str, prefix: mf.Path) -> None:
        if isinstance(value, dict) and field not in mf.ATOMIC:
            for key, child in value.items():
                path = (*prefix, f"f:{key}")
                flat[path] = marker(child, key)
                walk(child, key, path)
        elif isinstance(value, list):
            keys = [mf._elem_key(field, item) for item in value]
            if value and all(k is not None for k in keys):
                for key, item in zip(keys, value, strict=True):
                    path = (*prefix, str(key))
                    if str(key).startswith("v:"):
                        flat[path] = item
                    else:
                        flat[path] = marker(item, field)
                        walk(item, field, path)

    walk(obj, "", ())
    out = {}
    for path, value in flat.items():
        top, child = path[0][2:], (path[1][2:] if len(path) > 1 else None)
        if mf._in_scope(top, child, subresource, has_status) and not (
            top == "metadata" and len(path) == 1
        ):
            out[path] = value
    return out


NAMES = st.sampled_from(
    [
        "metadata",
        "spec",
        "status",
        "kind",
        "apiVersion",
        "labels",
        "annotations",
        "ownerReferences",
        "uid",
        "finalizers",
        "conditions",
        "containers",
        "ports",
        "regarding",
        "related",
        "name",
        "type",
        "containerPort",
        "protocol",
        "x",
    ]
)
LEAVES = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "b", "TCP"])
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=400)
@given(
    st.dictionaries(NAMES, VALUES, max_size=6) | VALUES,
    st.sampled_from(["", "status"]),
    st.booleans(),
)
def test_scoped_equals_flattening_everything(obj: Any, subresource: str, has: bool) -> None:
    assert mf._scoped(obj, subresource, has) == _reference_scoped(obj, subresource, has)


PARTS = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', "v:1"])


@given(st.sets(st.lists(PARTS, max_size=3).map(tuple)))
def test_fields_v1_trees_are_built_once_and_handed_out_fresh(wanted: set[mf.Path]) -> None:
    first = mf.to_fields_v1(wanted)
    assert first == mf._build_fields_v1(wanted)
    first["changed"] = {}
    assert mf.to_fields_v1(set(wanted)) == mf._build_fields_v1(wanted)


POD = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "p", "labels": {"app": "a"}, "uid": "u"},
    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
}
STATUS_ENTRY = {
    "manager": "policyengine",
    "operation": "Update",
    "apiVersion": "v1",
    "time": "2024-01-01T00:00:00Z",
    "fieldsType": "FieldsV1",
    "fieldsV1": {
        "f:status": {
            "f:conditions": {
                ".": {},
                'k:{"type":"PodScheduled"}': {".": {}, "f:status": {}, "f:type": {}},
            }
        }
    },
    "subresource": "status",
}


@pytest.mark.parametrize(
    ("entries", "old", "new", "manager", "subresource", "want"),
    [
        (  # a create: every field of the new object but status (the pod has a status)
            None,
            mf.zero_object("Pod", "v1", False),
            POD,
            "kubectl",
            "",
            [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "NOW",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {
                                    ".": {},
                                    "f:name": {},
                                    "f:ports": {
                                        ".": {},
                                        'k:{"containerPort":80,"protocol":"TCP"}': {
                                            ".": {},
                                            "f:containerPort": {},
                                            "f:protocol": {},
                                        },
                                    },
                                }
                            }
                        },
                    },
                }
            ],
        ),
        (  # a status write by the same manager that changes nothing it owns keeps the time
            [STATUS_ENTRY],
            POD,
            {**POD, "status": {**POD["status"], "phase": "Running"}},
            "policyengine",
            "status",
            [
                {
                    **STATUS_ENTRY,
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": STATUS_ENTRY["fieldsV1"]["f:status"]["f:conditions"],
                            "f:phase": {},
                        }
                    },
                    "time": "NOW",
                }
            ],
        ),
    ],
    ids=["None", "STATUS_ENTRY"],
)
def test_record(
    entries: list[JSON] | None,
    old: JSON,
    new: JSON,
    manager: str,
    subresource: str,
    want: list[JSON],
) -> None:
    got = mf.record(
        entries,
        old=old,
        new=new,
        manager=manager,
        api_version="v1",
        subresource=subresource,
        has_status=True,
        now="NOW",
    )
    assert got == want
    if entries:
        assert entries == [STATUS_ENTRY]  # the caller's entries are left alone
