"""The informer against the loopback API server: list, watch, bookmarks, re-watch, relist."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.informer import Informer, InformerOptions
from tests.controller.builders import FAST_INFORMER, node_obj, pod_obj


class Recorder:
    """An event handler that mirrors the informer's view as ``{key: resourceVersion}``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, str] = {}
        self.log: list[tuple[str, str]] = []

    def _key(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]

    def on_add(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.seen[self._key(obj)] = obj["metadata"]["resourceVersion"]
            self.log.append(("add", self._key(obj)))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        with self.lock:
            self.seen[self._key(new)] = new["metadata"]["resourceVersion"]
            self.log.append(("update", self._key(new)))

    def on_delete(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.seen.pop(self._key(obj), None)
            self.log.append(("delete", self._key(obj)))

    def count(self, what: str, key: str) -> int:
        with self.lock:
            return self.log.count((what, key))


def server_view(server: LoopbackAPIServer, kind: str) -> dict[str, str]:
    out = {}
    for obj in server.list(kind):
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        out[key] = meta["resourceVersion"]
    return out


@pytest.fixture
def start_informer(
    apiserver: LoopbackAPIServer,
) -> Iterator[Callable[..., tuple[Informer, Recorder]]]:
    started: list[tuple[Informer, Any]] = []

    def start(
        kind: str = "pods",
        options: InformerOptions = FAST_INFORMER,
        field_selector: str | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        recorder: Recorder | None = None,
    ) -> tuple[Informer, Recorder]:
        api = apiserver.api_client()
        core = client.CoreV1Api(api)
        lister = core.list_node if kind == "nodes" else core.list_pod_for_all_namespaces
        recorder = recorder or Recorder()
        informer = Informer(
            kind,
            lister,
            recorder,
            options=options,
            field_selector=field_selector,
            transform=transform,
        )
        informer.start()
        started.append((informer, api))
        assert informer.wait_for_sync(5)
        return informer, recorder

    yield start
    for informer, api in started:
        informer.stop()
        api.close()


def test_list_then_watch_keeps_the_view_equal(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    for i in range(3):
        apiserver.create(pod_obj(f"p{i}"))
    informer, rec = start_informer()
    assert rec.seen == server_view(apiserver, "pods")
    apiserver.create(pod_obj("p3"))
    apiserver.set_status("pods", "default", "p0", {"phase": "Running"})
    apiserver.delete("pods", "default", "p1")
    apiserver.wait_for(lambda: rec.seen == server_view(apiserver, "pods"))
    assert informer.resource_version == str(apiserver.resource_version)


def test_list_is_paged(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    for i in range(7):
        apiserver.create(node_obj(f"n{i}"))
    options = InformerOptions(watch_timeout=(3, 3), page_size=3, backoff_initial=0.05)
    _, rec = start_informer("nodes", options)
    assert len(rec.seen) == 7
    assert apiserver.count(verb="list", resource="nodes") == 3


def test_bookmarks_advance_the_resource_version(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    """Changes the field selector hides reach us only as a BOOKMARK's resourceVersion; a
    re-watch then starts there instead of replaying them."""
    informer, rec = start_informer(field_selector="status.phase!=Succeeded")
    listed = int(informer.resource_version)
    apiserver.wait_for_watch("pods")
    done = pod_obj("finished")
    done["status"] = {"phase": "Succeeded"}
    apiserver.create(done)
    hidden_rv = apiserver.resource_version
    apiserver.wait_for(lambda: int(informer.resource_version) >= hidden_rv, timeout=5)
    assert int(informer.resource_version) > listed
    assert rec.log == []  # nothing was delivered but the bookmark
    watch = apiserver.requests(verb="watch", resource="pods")[0]
    assert watch.query["allowWatchBookmarks"] == ["true"]
    assert watch.query["fieldSelector"] == ["status.phase!=Succeeded"]
    assert "timeoutSeconds" in watch.query


def test_rewatch_after_timeout_and_drop_continues_from_last_rv(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    informer, rec = start_informer()
    apiserver.wait_for_watch("pods")
    apiserver.drop_watches("pods", graceful=True)
    apiserver.create(pod_obj("during-gap"))
    apiserver.wait_for(lambda: "default/during-gap" in rec.seen)
    apiserver.wait_for_watch("pods")
    apiserver.drop_watches("pods")  # abrupt: the client sees a protocol error
    apiserver.create(pod_obj("after-drop"))
    apiserver.wait_for(lambda: "default/after-drop" in rec.seen)
    assert informer.lists == 1  # re-watched from the RV each time, never relisted
    watches = apiserver.requests(verb="watch", resource="pods")
    assert len(watches) >= 3
    assert all(w.query.get("resourceVersion", [""])[0] not in ("", "0") for w in watches)
    assert rec.count("add", "default/during-gap") == 1


def test_410_relists_and_diffs_what_changed_while_away(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    for name in ("keep", "gone", "changed"):
        apiserver.create(pod_obj(name))
    informer, rec = start_informer()
    apiserver.wait_for_watch("pods")
    # Changes made while the watch is down and the history is compacted away.
    apiserver.delay(0.5, times=1, verb="watch", resource="pods")
    apiserver.drop_watches("pods")
    apiserver.delete("pods", "default", "gone")
    apiserver.set_status("pods", "default", "changed", {"phase": "Running"})
    apiserver.create(pod_obj("new"))
    apiserver.expire_history()
    apiserver.wait_for(lambda: informer.lists >= 2, timeout=5)
    apiserver.wait_for(lambda: rec.seen == server_view(apiserver, "pods"))
    assert rec.count("delete", "default/gone") == 1
    assert rec.count("update", "default/changed") == 1
    assert rec.count("add", "default/new") == 1
    assert rec.count("update", "default/keep") == 0  # unchanged: no spurious update


@pytest.mark.parametrize("code", [500, 503, 429])
def test_errors_are_retried_with_backoff(
    apiserver: LoopbackAPIServer,
    start_informer: Callable[..., tuple[Informer, Recorder]],
    code: int,
) -> None:
    apiserver.create(node_obj("n1"))
    retry_after = 0 if code == 429 else None
    apiserver.fail_next(2, code=code, verb="list", resource="nodes", retry_after=retry_after)
    _, rec = start_informer("nodes")
    assert rec.seen.keys() == {"n1"}
    failed = apiserver.requests(verb="list", resource="nodes", status=code)
    assert len(failed) == 2
    apiserver.fail_next(1, code=code, verb="watch", resource="nodes")
    apiserver.drop_watches("nodes", graceful=True)
    apiserver.create(node_obj("n2"))
    apiserver.wait_for(lambda: "n2" in rec.seen, timeout=5)


def test_stop_interrupts_a_blocked_watch(
    apiserver: LoopbackAPIServer,
) -> None:
    api = apiserver.api_client()
    options = InformerOptions(watch_timeout=(600, 600), backoff_initial=0.05)
    informer = Informer("nodes", client.CoreV1Api(api).list_node, Recorder(), options=options)
    informer.start()
    assert informer.wait_for_sync(5)
    apiserver.wait_for_watch("nodes")
    informer.stop(timeout=5)
    assert informer._thread is not None and not informer._thread.is_alive()
    api.close()


class Shapes(Recorder):
    """A recorder that also keeps the objects' top-level keys it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[tuple[str, ...]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.keys.append(tuple(sorted(obj)))
        super().on_add(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.keys.append(tuple(sorted(new)))
        super().on_update(old, new)


def test_a_transform_trims_listed_and_watched_objects_before_store_and_handler(
    apiserver: LoopbackAPIServer, start_informer: Callable[..., tuple[Informer, Recorder]]
) -> None:
    def keep_metadata(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": obj["metadata"]}

    apiserver.create(pod_obj("listed"))
    shapes = Shapes()
    informer, rec = start_informer(transform=keep_metadata, recorder=shapes)
    apiserver.create(pod_obj("watched"))
    apiserver.set_status("pods", "default", "listed", {"phase": "Running"})
    apiserver.wait_for(lambda: rec.seen == server_view(apiserver, "pods"))
    assert set(shapes.keys) == {("metadata",)}
    assert informer.get("default/watched") == {
        "metadata": informer.get("default/watched")["metadata"]
    }
