"""The selector default topology spreading derives from what selects a pod (kube-scheduler's
``DefaultSelector``), and reading Services and controllers from API objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.parse import parse_pod
from policyengine.model.workloads import (
    WorkloadIndex,
    derive_default_selector,
    is_workload_object,
    parse_workload,
)
from tests.model.builders import pod_dict


def service(name: str, selector: dict[str, str] | None, namespace: str = "default") -> Any:
    spec = {} if selector is None else {"selector": selector}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def controller(kind: str, name: str, selector: Any, namespace: str = "default") -> Any:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
    }


def owned(kind: str, name: str, api: str = "apps/v1", controller: bool = True) -> Any:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": "u", "controller": controller}


@dataclass(frozen=True)
class Case:
    id: str
    labels: dict[str, str]
    objects: list[Any]
    owners: list[Any] = field(default_factory=list)
    namespace: str = "default"
    # The label sets the derived selector must match and must not (None: no selector).
    matches: list[dict[str, str]] | None = None
    rejects: list[dict[str, str]] = field(default_factory=list)


FOO = {"foo": "bar"}
CASES = [
    Case("nothing selects the pod", FOO, []),
    Case(
        "a matching service",
        {**FOO, "x": "1"},
        [service("s", FOO)],
        matches=[FOO, {**FOO, "y": "2"}],
        rejects=[{"foo": "baz"}, {}],
    ),
    Case("a service that does not match", FOO, [service("s", {"foo": "other"})]),
    Case("a service without selector matches nothing", FOO, [service("s", None)]),
    Case("a service with an empty selector adds nothing", FOO, [service("s", {})]),
    Case(
        "services of several pairs, found by any of them",
        {"a": "1", "m": "5", "z": "9"},
        [
            service("s1", {"z": "9", "m": "5"}),
            service("s2", {"a": "1", "z": "9"}),
            service("s3", {"a": "1", "m": "6"}),
            service("s4", {"b": "2"}),
        ],
        matches=[{"a": "1", "m": "5", "z": "9"}],
        rejects=[{"m": "5", "z": "9"}, {"a": "1", "z": "9"}, {"a": "1", "m": "6", "z": "9"}],
    ),
    Case("a service of another namespace", FOO, [service("s", FOO, namespace="other")]),
    Case(
        "two matching services merge",
        {"a": "1", "b": "2"},
        [service("s1", {"a": "1"}), service("s2", {"b": "2"})],
        matches=[{"a": "1", "b": "2"}],
        rejects=[{"a": "1"}, {"b": "2"}],
    ),
    Case(
        "a ReplicaSet controller adds its requirements",
        {"app": "web", "hash": "h1"},
        [
            service("s", {"app": "web"}),
            controller(
                "ReplicaSet",
                "rs",
                {
                    "matchLabels": {"hash": "h1"},
                    "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}],
                },
            ),
        ],
        owners=[owned("ReplicaSet", "rs")],
        matches=[{"app": "web", "hash": "h1"}],
        rejects=[{"app": "web"}, {"hash": "h1"}, {"app": "web", "hash": "h1", "tier": "x"}],
    ),
    Case(
        "a StatefulSet controller, no service",
        {"app": "db"},
        [controller("StatefulSet", "db", {"matchLabels": {"app": "db"}})],
        owners=[owned("StatefulSet", "db")],
        matches=[{"app": "db"}],
        rejects=[{"app": "web"}],
    ),
    Case(
        "a ReplicationController's map selector merges",
        {"app": "old", "v": "1"},
        [controller("ReplicationController", "rc", {"v": "1"})],
        owners=[owned("ReplicationController", "rc", api="v1")],
        matches=[{"v": "1"}],
        rejects=[{"v": "2"}],
    ),
    Case(
        "an owner that is not the controller is not followed",
        {"app": "db"},
        [controller("StatefulSet", "db", {"matchLabels": {"app": "db"}})],
        owners=[owned("StatefulSet", "db", controller=False)],
    ),
    Case(
        "a controller of another API version is not followed",
        {"app": "db"},
        [controller("StatefulSet", "db", {"matchLabels": {"app": "db"}})],
        owners=[owned("StatefulSet", "db", api="apps/v1beta1")],
    ),
    Case(
        "a Job controller adds nothing",
        {"job": "j"},
        [],
        owners=[owned("Job", "j", api="batch/v1")],
    ),
    Case(
        "a controller missing from the cluster adds nothing",
        {"app": "web"},
        [service("s", {"app": "web"})],
        owners=[owned("ReplicaSet", "gone")],
        matches=[{"app": "web"}],
        rejects=[{}],
    ),
    Case(
        "a controller with an empty selector adds nothing",
        {"app": "web"},
        [controller("ReplicaSet", "rs", {})],
        owners=[owned("ReplicaSet", "rs")],
    ),
    Case(
        "a controller with a nil selector adds nothing",
        {"app": "web"},
        [controller("ReplicaSet", "rs", None)],
        owners=[owned("ReplicaSet", "rs")],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_default_selector(case: Case) -> None:
    raw = pod_dict("p", labels=case.labels, namespace=case.namespace)
    raw["metadata"]["ownerReferences"] = case.owners
    pod = parse_pod(raw)
    index = WorkloadIndex.build(parse_workload(o) for o in case.objects)
    selector = derive_default_selector(pod, index)
    assert index.default_selector(pod) == selector  # kept per index, the same answer
    if case.matches is None:
        assert selector is None
        return
    assert selector is not None
    for labels in case.matches:
        assert selector.matches(labels), labels
    for labels in case.rejects:
        assert not selector.matches(labels), labels


def test_equal_selectors_derived_in_another_order_are_equal() -> None:
    pod = parse_pod(pod_dict("p", labels={"a": "1", "b": "2"}))
    one = WorkloadIndex.build(
        [parse_workload(service("s1", {"a": "1"})), parse_workload(service("s2", {"b": "2"}))]
    )
    other = WorkloadIndex.build([parse_workload(service("s", {"b": "2", "a": "1"}))])
    assert derive_default_selector(pod, one) == derive_default_selector(pod, other)


def test_index_updates_are_new_objects_only_when_something_changed() -> None:
    svc = parse_workload(service("s", FOO))
    index = WorkloadIndex.build([svc])
    assert index.with_workload(parse_workload(service("s", FOO))) is index
    changed = index.with_workload(parse_workload(service("s", {"foo": "baz"})))
    assert changed is not index and changed.get("Service", "default", "s") is not None
    assert index.without("Service", "default", "missing") is index
    assert len(index.without("Service", "default", "s")) == 0


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"kind": "Service", "apiVersion": "v1"}, True),
        ({"kind": "Service"}, True),
        ({"kind": "ReplicaSet", "apiVersion": "apps/v1"}, True),
        ({"kind": "ReplicaSet", "apiVersion": "extensions/v1beta1"}, False),
        ({"kind": "StatefulSet", "apiVersion": "apps/v1"}, True),
        ({"kind": "ReplicationController", "apiVersion": "v1"}, True),
        ({"kind": "Deployment", "apiVersion": "apps/v1"}, False),
        ({"kind": "Service", "apiVersion": "serving.knative.dev/v1"}, False),
    ],
    ids=["svc", "svc-list-item", "rs", "rs-old-group", "sts", "rc", "deployment", "knative"],
)
def test_is_workload_object(obj: dict[str, Any], expected: bool) -> None:
    assert is_workload_object(obj) is expected


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            service("s", {"app": 1}),  # type: ignore[dict-item]
            "Service default/s: spec.selector.app: expected a string, got number 1 (quote it)",
        ),
        (
            controller("ReplicaSet", "rs", {"matchExpressions": [{"key": "a", "operator": "Is"}]}),
            "ReplicaSet default/rs: spec.selector: 'Is' is not a valid label selector operator",
        ),
        (
            controller("StatefulSet", "ss", ["app"]),
            "StatefulSet default/ss: spec.selector: expected a mapping, got list",
        ),
    ],
    ids=["service-value", "rs-operator", "sts-selector-type"],
)
def test_malformed_objects_name_the_field(obj: Any, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_workload(obj)
    assert str(caught.value) == message
