"""API internals that have a plain definition: Audit-Id texts, and watch event lines."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback import LoopbackAPIServer
from loopback.api import Request, dumps, uuid4_text
from loopback.resources import Resource, Route, lookup
from loopback.store import Change

JSON = dict[str, Any]


@pytest.mark.parametrize(
    "bits",
    [0, 1, (1 << 128) - 1, 0x0123456789ABCDEF0123456789ABCDEF],
    ids=["zero", "one", "all-ones", "mixed"],
)
def test_uuid4_text_edges(bits: int) -> None:
    assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


@given(st.integers(0, (1 << 128) - 1))
def test_uuid4_text_is_uuids(bits: int) -> None:
    assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


def _reference_line(
    server: LoopbackAPIServer, res: Resource, change: Change, passes: Callable[[JSON], bool]
) -> bytes | None:
    """The cacher's rule over views, as the watch defines it."""
    api = server.api
    cur = api.view(res, change.obj) if change.type != "DELETED" else None
    prev = api.view(res, change.prev) if change.prev is not None else None
    cur_ok, old_ok = cur is not None and passes(cur), prev is not None and passes(prev)
    if cur_ok and cur is not None:
        return dumps({"type": "MODIFIED" if old_ok else "ADDED", "object": cur}) + b"\n"
    if old_ok and prev is not None:
        prev["metadata"]["resourceVersion"] = str(change.rv)
        return dumps({"type": "DELETED", "object": prev}) + b"\n"
    return None


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"b": "2", "a": "1"}},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}
EVENT = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "e", "namespace": "default"},
    "eventTime": "2024-01-02T03:04:05.000000Z",
    "reason": "Scheduled",
    "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    "reportingController": "sched",
    "reportingInstance": "sched-1",
    "action": "Binding",
    "type": "Normal",
}


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        ("pods", {}),
        ("pods", {"fieldSelector": ["status.phase!=Succeeded,status.phase!=Failed"]}),
        ("pods", {"fieldSelector": ["status.phase=Running"]}),
        ("pods", {"labelSelector": ["a=1"]}),
        ("pods", {"fieldSelector": ["spec.nodeName=n1"]}),
        ("events", {"fieldSelector": ["reason=Scheduled"]}),
        ("events.events.k8s.io", {"fieldSelector": ["reason=Scheduled"]}),
        ("events.events.k8s.io", {"fieldSelector": ["reportingController=sched"]}),
    ],
    ids=[
        "pods",
        "pods-not-finished",
        "pods-running",
        "pods-by-label",
        "pods-on-node",
        "events-by-reason",
        "events.k8s.io-by-reason",
        "events.k8s.io-by-controller",
    ],
)
def test_event_lines_follow_the_cachers_rule(kind: str, query: dict[str, list[str]]) -> None:
    server = LoopbackAPIServer()
    res = lookup(kind)
    passes = server.api._selectors(res, Request("GET", "", query, {}), Route(resource=res))
    if res.key == "events":
        server.create(EVENT)
        stored = server.get(kind, "default", "e") or {}
        server.update({**EVENT, "reason": "Other", "metadata": stored["metadata"]})
        server.update({**EVENT, "metadata": (server.get(kind, "default", "e") or {})["metadata"]})
        server.delete(kind, "default", "e")
    else:
        server.create(POD)
        server.set_status("pods", "default", "p", {"phase": "Running"})
        server.bind("default", "p", "n1")
        server.set_status("pods", "default", "p", {"phase": "Succeeded"})
        server.delete("pods", "default", "p")
    changes = [c for c in server.store.history if c.storage == res.key]
    lines = [server.api._event_line(res, c, passes) for c in changes]
    assert lines == [_reference_line(server, res, c, passes) for c in changes]
    assert {json.loads(x)["type"] for x in lines if x} & {"ADDED", "MODIFIED"}


def _reference_items(
    server: LoopbackAPIServer, res: Resource, query: dict[str, list[str]]
) -> list[JSON]:
    """Every object viewed, then selected (what a list defines), one page of ``limit``."""
    route = Route(resource=res)
    passes = server.api._selectors(res, Request("GET", "", query, {}), route)
    views = [server.api.view(res, o) for _, o in sorted(server.store.objects[res.key].items())]
    chosen = [v for v in views if passes(v)]
    limit = int(query.get("limit", ["0"])[0])
    for view in chosen:
        view.pop("kind", None)
        view.pop("apiVersion", None)
    return chosen[:limit] if limit else chosen


@pytest.mark.parametrize("kind", ["pods", "events", "events.events.k8s.io"])
@pytest.mark.parametrize(
    "query",
    [
        {},
        {"limit": ["2"]},
        {"fieldSelector": ["status.phase=Running"]},
        {"fieldSelector": ["reason=Scheduled"], "limit": ["1"]},
        {"labelSelector": ["a=1"], "limit": ["2"]},
    ],
    ids=[
        "empty",
        "limit=2",
        "fieldSelector=status.phase=Running",
        "fieldSelector=reason=Scheduled limit=1",
        "labelSelector=a=1 limit=2",
    ],
)
def test_lists_select_and_page_as_defined(kind: str, query: dict[str, list[str]]) -> None:
    res = lookup(kind)
    if "reason=Scheduled" in str(query) and res.key != "events":
        query = {**query, "fieldSelector": ["status.phase!=Failed"]}
    if "status.phase" in str(query) and res.key == "events":
        query = {**query, "fieldSelector": ["type=Normal"]}
    server = LoopbackAPIServer()
    for i in range(4):
        labels = {"a": str(i % 2)}
        server.create({**POD, "metadata": {**POD["metadata"], "name": f"p{i}", "labels": labels}})
        server.create(
            {**EVENT, "metadata": {**EVENT["metadata"], "name": f"e{i}", "labels": labels}}
        )
        if i % 2:
            server.set_status("pods", "default", f"p{i}", {"phase": "Running"})
    route = Route(resource=res)
    got = server.api.list_objects(res, route, Request("GET", "", query, {}))
    assert got["items"] == _reference_items(server, res, query)
    assert got["items"]  # the query selects something
