"""Field selectors read only the fields they name, with the values ``extract_fields`` has."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback import selectors

RESOURCES = ["pods", "nodes", "namespaces", "events", "events.events.k8s.io", "configmaps"]
VALUES = st.none() | st.booleans() | st.integers(0, 2) | st.sampled_from(["", "a", "Running"])


def _nest(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nest(rest, value) if rest else value}


def _merge(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[selectors.FieldRequirement], dict[str, Any]]:
    resource = draw(st.sampled_from(RESOURCES))
    fields = sorted(selectors.supported_fields(resource, resource != "nodes"))
    # parents that are no map, but metadata (every stored object's is one)
    paths = [*fields, "source", "source.component", "spec", "status"]
    obj: dict[str, Any] = {}
    for path in draw(st.lists(st.sampled_from(paths), max_size=6)):
        _merge(obj, _nest(path, draw(VALUES)))
    reqs = [
        selectors.FieldRequirement(name, op, value)
        for name, op, value in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(fields),
                    st.sampled_from(["=", "!="]),
                    st.sampled_from(["", "a", "Running", "true", "1", "None"]),
                ),
                min_size=1,
                max_size=3,
            )
        )
    ]
    return resource, reqs, obj


@given(cases())
def test_object_fields_match_as_extracted_fields_do(
    case: tuple[str, list[selectors.FieldRequirement], dict[str, Any]],
) -> None:
    resource, reqs, obj = case
    want = selectors.fields_match(reqs, selectors.extract_fields(resource, obj))
    assert selectors.object_fields_match(reqs, resource, obj) == want
    for req in reqs:
        extracted = selectors.extract_fields(resource, obj).get(req.field, "")
        assert selectors.field_value(resource, obj, req.field) == extracted


@pytest.mark.parametrize(
    ("resource", "obj", "name", "want"),
    [
        ("pods", {"status": {"phase": "Running"}}, "status.phase", "Running"),
        ("pods", {"spec": {"hostNetwork": True}}, "spec.hostNetwork", "true"),
        ("pods", {"metadata": {"name": "p"}}, "metadata.namespace", ""),
        ("events", {"source": {"component": "sched"}}, "source", "sched"),
        ("nodes", {"spec": {"unschedulable": False}}, "spec.unschedulable", "false"),
        ("configmaps", {"data": {"x": "1"}}, "data.x", ""),  # not a field label of the kind
    ],
    ids=[
        "pods-status=phase=Running",
        "pods-spec=hostNetwork=True",
        "pods-metadata=name=p",
        "events-source=component=sched",
        "nodes-spec=unschedulable=False",
        "configmaps-data=x=1",
    ],
)
def test_field_value(resource: str, obj: dict[str, Any], name: str, want: str) -> None:
    assert selectors.field_value(resource, obj, name) == want
