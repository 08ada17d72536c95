"""``echo.reparsed`` answers ``parse_pod(new)`` or nothing.

Generated pods are changed as a binding changes them (resourceVersion, managedFields,
nodeName, the PodScheduled condition, in values of any JSON type) and, in some examples, in
one more place; wherever ``reparsed`` answers, it must equal ``parse_pod`` on the new object,
and it must answer nothing where ``parse_pod`` refuses the new object. The pure echoes, and
the loopback API server's real binding echo, must be answered (not parsed again).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopback import LoopbackAPIServer
from policyengine.controller.binder import binding_body
from policyengine.controller.echo import reparsed
from policyengine.controller.rawapi import RawAPI
from policyengine.model.errors import ModelError
from policyengine.model.parse import parse_pod
from tests.controller.builders import pod_obj


def _pod(**extra: Any) -> dict[str, Any]:
    obj = pod_obj("p", uid="u-1", created="2026-12-03T09:00:00Z", labels={"app": "a"})
    obj["metadata"]["resourceVersion"] = "10"
    obj["spec"]["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    obj["spec"]["priority"] = 5
    obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    obj.update(extra)
    return obj


def _bound(obj: dict[str, Any], node: str = "n1", rv: str = "11") -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = rv
    new["metadata"]["managedFields"] = [{"manager": "kube-scheduler", "operation": "Update"}]
    new["spec"]["nodeName"] = node
    new["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    return new


# What a scheduler writes on a preemption victim: the one condition parse_pod reads.
_PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def _parse(obj: dict[str, Any]) -> Any:
    try:
        return parse_pod(obj)
    except ModelError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize(
    "new",
    [
        _bound(_pod()),
        _bound(_pod(), node="n2", rv="99"),
        {**_bound(_pod()), "metadata": {**_bound(_pod())["metadata"], "resourceVersion": None}},
    ],
    ids=["bound", "other-node-and-version", "no-resource-version"],
)
def test_a_binding_echo_is_answered_without_parsing(new: dict[str, Any]) -> None:
    old = _pod()
    got = reparsed(old, parse_pod(old), new)
    assert got is not None
    assert got == parse_pod(new)


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("metadata", "labels"), {"app": "b"}),
        (("metadata", "annotations"), {"gpu": 0}),  # not a string: parse_pod says "0"
        (("metadata", "annotations"), {"gpu": True}),  # parse_pod refuses a boolean
        (("metadata", "annotations"), ["gpu"]),
        (("metadata", "deletionTimestamp"), "2026-12-03T09:01:00Z"),
        (("spec", "priority"), True),  # == 1 would say equal; parse_pod refuses a boolean
        (("spec", "priority"), 5.0),
        (("spec", "schedulerName"), "other"),
        (("status", "phase"), "Running"),
        (("status", "nominatedNodeName"), "n3"),
        (("spec", "nodeName"), 7),
        (("metadata", "resourceVersion"), 11),
        (("status", "conditions"), [{"type": "PodScheduled", "status": "True"}, _PREEMPTED]),
        (("status", "conditions"), [{"type": "PodResizePending", "reason": "Infeasible"}]),
    ],
    ids=[
        "metadata,labels-app=b",
        "metadata,annotations-gpu=0",
        "metadata,annotations-gpu=True",
        "metadata,annotations-gpu",
        "metadata,deletionTimestamp-2026-12-03T09:01:00Z",
        "spec,priority-True",
        "spec,priority-5.0",
        "spec,schedulerName-other",
        "status,phase-Running",
        "status,nominatedNodeName-n3",
        "spec,nodeName-7",
        "metadata,resourceVersion-11",
        "status,conditions-type=PodScheduled status=True,_PREEMPTED",
        "status,conditions-type=PodResizePending reason=Infeasible",
    ],
)
def test_anything_else_changed_is_parsed(where: tuple[str, str], value: Any) -> None:
    old = _pod()
    new = _bound(old)
    new[where[0]][where[1]] = value
    assert reparsed(old, parse_pod(old), new) is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, {"hami.io/vgpu-node": "n1", "hami.io/bind-phase": "allocating"}),
        ({"a": "1"}, {"a": "1", "hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,8000,100:;"}),
        ({"a": "1"}, {"a": "2"}),
        ({"a": "1"}, {}),
        ({"a": "1"}, None),
        ({"a": "1"}, {"a": "1"}),
    ],
    ids=[
        "none-before",
        "allocated-added",
        "value-changed",
        "removed",
        "no-annotations-after",
        "unchanged",
    ],
)
def test_a_binding_that_writes_annotations_is_answered(before: Any, after: Any) -> None:
    """A Binding carrying GPU assignments adds annotations in the same update."""
    old = _pod()
    if before is not None:
        old["metadata"]["annotations"] = before
    new = _bound(old)
    if after is None:
        new["metadata"].pop("annotations", None)
    else:
        new["metadata"]["annotations"] = copy.deepcopy(after)
    got = reparsed(old, parse_pod(old), new)
    assert got is not None
    assert got == parse_pod(new)
    assert got.annotations == parse_pod(new).annotations


def test_the_loopback_servers_gpu_binding_echo_is_answered() -> None:
    """The Binding's annotations land on the pod with its node (binder): still an echo."""
    devices = {"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,1:;"}
    with LoopbackAPIServer() as server:
        server.create(pod_obj("p", labels={"app": "a"}))
        raw = RawAPI(server.api_client())
        old = json.loads(raw.list_pod_for_all_namespaces(_preload_content=False).data)["items"][0]
        pod = parse_pod(old)
        raw.create_namespaced_pod_binding(
            "p", "default", binding_body(pod, "n1", devices), _preload_content=False
        )
        new = server.get("pods", "default", "p")
    assert new["metadata"]["annotations"] == devices
    got = reparsed(old, pod, new)
    assert got is not None and got == parse_pod(new) and got.node_name == "n1"
    assert dict(got.annotations) == devices


def test_the_loopback_servers_binding_echo_is_answered() -> None:
    with LoopbackAPIServer() as server:
        server.create(pod_obj("p", labels={"app": "a"}))
        listed = RawAPI(server.api_client()).list_pod_for_all_namespaces(_preload_content=False)
        old = json.loads(listed.data)["items"][0]  # a list's item: no kind, no apiVersion
        server.bind("default", "p", "n1")
        new = server.get("pods", "default", "p")
    assert "kind" not in old and new["kind"] == "Pod"
    got = reparsed(old, parse_pod(old), new)
    assert got is not None and got == parse_pod(new) and got.node_name == "n1"


_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(-2, 2),
        st.sampled_from(["", "x", "1"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=4,
)
_places = st.sampled_from(
    [
        ("metadata", "resourceVersion"),
        ("metadata", "managedFields"),
        ("spec", "nodeName"),
        ("status", "conditions"),
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("metadata", "name"),
        ("spec", "priority"),
        ("spec", "tolerations"),
        ("spec", "containers"),
        ("status", "phase"),
        ("status", "nominatedNodeName"),
        ("spec", "extra"),
        ("kind", None),
        ("extra", None),
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    changes=st.lists(
        st.tuples(_places, st.one_of(_json, st.just("__delete__"), st.just([_PREEMPTED]))),
        max_size=3,
    ),
    node=st.one_of(st.none(), st.sampled_from(["n1", ""]), st.integers()),
    rv=st.one_of(st.none(), st.sampled_from(["11", ""]), st.integers()),
)
def test_any_answer_is_what_parse_pod_says(
    changes: list[tuple[tuple[str, str | None], Any]], node: Any, rv: Any
) -> None:
    old = _pod()
    new = _bound(old)
    new["spec"]["nodeName"] = node
    new["metadata"]["resourceVersion"] = rv
    for (top, key), value in changes:
        if key is None:
            if value == "__delete__":
                new.pop(top, None)
            else:
                new[top] = value
        elif isinstance(new.get(top), dict):
            if value == "__delete__":
                new[top].pop(key, None)
            else:
                new[top][key] = value
    got = reparsed(old, parse_pod(old), new)
    if got is not None:
        assert got == _parse(new)
