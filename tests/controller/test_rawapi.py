"""``RawAPI`` sends what the generated client sends, and fails the way it fails.

Each call goes once through the generated ``kubernetes`` client and once through ``RawAPI``,
against the loopback server, on twin objects (``g`` and ``r``); the server's records of the
two requests must agree in method, path, query parameters, headers and body. The named
differences are kube-scheduler's wire (``k8s-wire/06-kube-scheduler-client-requests.txt``):
``RawAPI`` sends ``Content-Type: application/json`` on POST where the generated client sends
none, and sends a body as given where the generated client first passes it through its model
(dropping ``creationTimestamp: null``, rewriting ``eventTime``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from loopback import LoopbackAPIServer
from policyengine.controller.http1 import Response
from policyengine.controller.keepalive import WireResponse
from policyengine.controller.rawapi import RawAPI, _segment, api_error, query_string
from tests.controller.builders import node_obj, pod_obj

EVENT_TIME = "2026-12-02T12:48:10.898647Z"


def _binding(server: LoopbackAPIServer, name: str) -> dict[str, Any]:
    uid = server.get("pods", "default", name)["metadata"]["uid"]
    return {
        "kind": "Binding",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "creationTimestamp": None},
        "target": {"kind": "Node", "name": "n1"},
    }


def _event(name: str) -> dict[str, Any]:
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": f"{name}.18ed70a773ff9bdd", "namespace": "default"},
        "eventTime": EVENT_TIME,
        "reportingController": "policyengine",
        "reportingInstance": "policyengine-host",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": name, "apiVersion": "v1"},
        "note": f"Successfully assigned default/{name} to n1",
        "type": "Normal",
    }


# name, the generated class, the call's arguments for pod NAME (positional, keyword)
Call = Callable[[LoopbackAPIServer, str], tuple[tuple[Any, ...], dict[str, Any]]]
CALLS: list[tuple[str, str, Call]] = [
    ("list_node", "CoreV1Api", lambda s, n: ((), {"limit": 500})),
    (
        "list_node",
        "CoreV1Api",
        lambda s, n: (
            (),
            {
                "watch": True,
                "resource_version": "1",
                "allow_watch_bookmarks": True,
                "timeout_seconds": 1,
            },
        ),
    ),
    (
        "list_pod_for_all_namespaces",
        "CoreV1Api",
        lambda s, n: ((), {"limit": 2, "field_selector": "status.phase!=Succeeded"}),
    ),
    ("list_pod_disruption_budget_for_all_namespaces", "PolicyV1Api", lambda s, n: ((), {})),
    ("list_service_for_all_namespaces", "CoreV1Api", lambda s, n: ((), {"limit": 500})),
    ("list_replication_controller_for_all_namespaces", "CoreV1Api", lambda s, n: ((), {})),
    ("list_replica_set_for_all_namespaces", "AppsV1Api", lambda s, n: ((), {"limit": 500})),
    (
        "list_stateful_set_for_all_namespaces",
        "AppsV1Api",
        lambda s, n: ((), {"watch": True, "resource_version": "1", "timeout_seconds": 1}),
    ),
    (
        "create_namespaced_pod_binding",
        "CoreV1Api",
        lambda s, n: ((n, "default", _binding(s, n)), {}),
    ),
    (
        "patch_namespaced_pod",
        "CoreV1Api",
        lambda s, n: ((n, "default", {"metadata": {"annotations": {"a": "b"}}}), {}),
    ),
    (
        "patch_namespaced_pod",
        "CoreV1Api",
        lambda s, n: (
            (n, "default", [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
            {},
        ),
    ),
    (
        "patch_namespaced_pod_status",
        "CoreV1Api",
        lambda s, n: ((n, "default", {"status": {"nominatedNodeName": "n1"}}), {}),
    ),
    ("delete_namespaced_pod", "CoreV1Api", lambda s, n: ((n, "default"), {})),
    ("create_namespaced_event", "EventsV1Api", lambda s, n: (("default", _event(n)), {})),
]


def _send(call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    response = call(*args, _preload_content=False, _request_timeout=10, **kwargs)
    if kwargs.get("watch"):
        response.close()
    else:
        _ = response.data
    response.release_conn()


def _comparable(record: Any, name: str) -> dict[str, Any]:
    headers = {k: v for k, v in record.headers.items() if k not in ("host", "content-length")}
    return {
        "method": record.method,
        "path": re.sub(f"/{re.escape(name)}(?=/|$)", "/NAME", record.path),
        "query": record.query,
        "headers": headers,
        "status": record.status,
    }


@pytest.mark.parametrize(
    ("method", "api", "arguments"),
    CALLS,
    ids=[
        "list-nodes",
        "watch-nodes",
        "list-pods",
        "list-pdbs",
        "list-services",
        "list-rcs",
        "list-replicasets",
        "watch-statefulsets",
        "create-binding",
        "patch-pod-merge",
        "patch-pod-json",
        "patch-pod-status",
        "delete-pod",
        "create-event",
    ],
)
def test_raw_calls_send_what_the_generated_client_sends(
    apiserver: LoopbackAPIServer, kube_api_client: Any, method: str, api: str, arguments: Call
) -> None:
    apiserver.create(node_obj("n1"))
    for name in ("g", "r"):
        apiserver.create(pod_obj(name))
    generated = getattr(getattr(k8s, api)(kube_api_client), method)
    raw = getattr(RawAPI(kube_api_client), method)
    assert RawAPI.MIRRORS[method] == api
    records = []
    for call, name in ((generated, "g"), (raw, "r")):
        apiserver.clear_requests()
        args, kwargs = arguments(apiserver, name)
        _send(call, args, kwargs)
        (record,) = apiserver.requests()
        records.append((record, args))
    (want, _), (got, raw_args) = records
    expected = _comparable(want, "g")
    if want.method == "POST":
        assert "content-type" not in expected["headers"]
        expected["headers"]["content-type"] = "application/json"
    assert _comparable(got, "r") == expected
    body = next((a for a in raw_args if isinstance(a, dict | list)), None)
    assert got.body == body  # as given, nothing dropped or rewritten


def test_raw_bodies_keep_what_kube_scheduler_sends(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    apiserver.create(node_obj("n1"))
    apiserver.create(pod_obj("p"))
    api = RawAPI(kube_api_client)
    _send(api.create_namespaced_event, ("default", _event("p")), {})
    (event,) = apiserver.requests(resource="events")
    assert event.body["eventTime"] == EVENT_TIME
    _send(api.create_namespaced_pod_binding, ("p", "default", _binding(apiserver, "p")), {})
    (bind,) = apiserver.binding_requests()
    assert bind.body["metadata"]["creationTimestamp"] is None
    assert apiserver.bound_nodes() == {"default/p": "n1"}


@pytest.mark.parametrize(
    ("code", "exception"),
    [
        (409, "ConflictException"),
        (404, "NotFoundException"),
        (500, "ServiceException"),
        (429, "ApiException"),
        (403, "ForbiddenException"),
    ],
)
def test_raw_failures_raise_what_the_generated_client_raises(
    apiserver: LoopbackAPIServer, kube_api_client: Any, code: int, exception: str
) -> None:
    apiserver.create(pod_obj("p"))
    caught = []
    body = {"status": {"nominatedNodeName": "n1"}}
    for api in (k8s.CoreV1Api(kube_api_client), RawAPI(kube_api_client)):
        apiserver.fail_next(1, code=code, subresource="status", retry_after=3)
        with pytest.raises(ApiException) as info:
            _send(api.patch_namespaced_pod_status, ("p", "default", body), {})
        caught.append(info.value)
    want, got = caught
    assert type(got).__name__ == type(want).__name__ == exception
    assert (got.status, got.reason, json.loads(got.body)) == (
        want.status,
        want.reason,
        json.loads(want.body),
    )
    assert got.headers.get("Retry-After") == want.headers.get("Retry-After")


@pytest.mark.parametrize(
    ("code", "exception"),
    [
        (400, "BadRequestException"),
        (401, "UnauthorizedException"),
        (403, "ForbiddenException"),
        (404, "NotFoundException"),
        (409, "ConflictException"),
        (422, "UnprocessableEntityException"),
        (503, "ServiceException"),
        (429, "ApiException"),
    ],
)
def test_an_error_answer_is_handed_back_as_the_exception_the_client_raises(
    code: int, exception: str
) -> None:
    raw = b"Content-Type: application/json\r\n\r\n"
    answer = WireResponse(Response(code, "Nope", 11, raw, None, b'{"code": %d}' % code, False))
    error = api_error(answer)
    assert type(error).__name__ == exception
    assert (error.status, error.reason, error.body) == (code, "Nope", f'{{"code": {code}}}')


@pytest.mark.parametrize(
    ("params", "query"),
    [
        ({}, ""),
        ({"limit": 500, "_continue": "a b"}, "continue=a%20b&limit=500"),
        (
            {"watch": True, "timeout_seconds": 300, "allow_watch_bookmarks": False},
            "allowWatchBookmarks=false&timeoutSeconds=300&watch=true",
        ),
        ({"resource_version": None, "_preload_content": False}, ""),
        ({"_preload_content": False, "_request_timeout": 30}, ""),  # a write's options
        ({"_request_timeout": 30, "grace_period_seconds": 0}, "gracePeriodSeconds=0"),
    ],
    ids=["none", "limit-and-continue", "watch", "internal-only", "write-options", "grace-period"],
)
def test_query_string(params: dict[str, Any], query: str) -> None:
    assert query_string(params) == query


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("default", "default"),
        ("pod-1.a_b~", "pod-1.a_b~"),
        ("", ""),
        ("a b", "a%20b"),
        ("ns/x", "ns%2Fx"),
        ("caf\u00e9", "caf%C3%A9"),
        ("x?y#z%", "x%3Fy%23z%25"),
    ],
)
def test_path_segments_are_quoted_as_quote_does(text: str, quoted: str) -> None:
    assert _segment(text) == quoted == quote(text, safe="")


@given(st.text())
def test_any_path_segment_is_quoted_as_quote_does(text: str) -> None:
    assert _segment(text) == quote(text, safe="")


def test_query_string_refuses_what_it_does_not_know() -> None:
    with pytest.raises(TypeError, match="unsupported query parameter\\(s\\): colour"):
        query_string({"colour": "red"})
