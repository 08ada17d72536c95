"""The PodGroup source and status writer against the loopback server (real client, no loop)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog
from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.podgroups import PodGroupSource, PodGroupStatusWriter
from tests.controller import builders
from tests.controller.builders import FAST_INFORMER, podgroup

GROUP = "scheduling.x-k8s.io"


class Recorder:
    """Handler and CRD callback that remember what they were told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.crd: list[bool] = []
        self.added: list[str] = []

    def on_crd(self, installed: bool) -> None:
        with self.lock:
            self.crd.append(installed)

    def on_add(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.added.append(obj["metadata"]["name"])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        return None

    def on_delete(self, obj: dict[str, Any]) -> None:
        return None


def wait_until(what: str, condition: Callable[[], bool], seen: Callable[[], Any]) -> None:
    builders.wait_until(what, condition, seen, timeout=10)


def checks(server: LoopbackAPIServer) -> list[str]:
    """The 404s answered for podgroups (an unserved path has no resource in the log)."""
    return [r.path for r in server.requests(status=404) if "/podgroups" in r.path]


def source(server: LoopbackAPIServer, recorder: Recorder) -> tuple[PodGroupSource, Any]:
    api = client.ApiClient(server.client_configuration())
    made = PodGroupSource(api, recorder, recorder.on_crd, options=FAST_INFORMER, recheck=0.1)
    return made, api


def test_a_missing_crd_is_logged_once_rechecked_quietly_and_picked_up_when_installed(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    server = apiserver_factory(uninstalled_groups=(GROUP,))
    server.create(podgroup("g", 2))
    recorder = Recorder()
    made, api = source(server, recorder)
    with structlog.testing.capture_logs() as logs:
        made.start()
        try:
            wait_until("synced", made.has_synced, lambda: made.installed)
            wait_until("three checks", lambda: len(checks(server)) >= 3, lambda: checks(server))
            assert made.installed is False and recorder.crd == [False]
            assert recorder.added == []
            server.install_group(GROUP)
            wait_until("the list", lambda: recorder.added == ["g"], lambda: recorder.added)
        finally:
            made.stop()
            api.close()
    assert recorder.crd == [False, True] and made.installed is True
    # Threads other tests left behind may log too: look at this module's lines only.
    ours = [e for e in logs if str(e["event"]).startswith("PodGroup CRD")]
    assert [e["event"] for e in ours if e["log_level"] == "info"] == [
        "PodGroup CRD installed; gang scheduling is on"
    ]
    warnings = [e["event"] for e in ours if e["log_level"] == "warning"]
    assert warnings == [
        "PodGroup CRD not installed; gang scheduling is off and pods labelled "
        "scheduling.x-k8s.io/pod-group wait"
    ]


def test_other_errors_decide_nothing_and_are_retried(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(podgroup("g", 2))
    apiserver.fail_next(2, code=503, resource="podgroups")
    recorder = Recorder()
    made, api = source(apiserver, recorder)
    made.start()
    try:
        wait_until("synced", made.has_synced, lambda: apiserver.count(resource="podgroups"))
        wait_until("the list", lambda: recorder.added == ["g"], lambda: recorder.added)
    finally:
        made.stop()
        api.close()
    assert recorder.crd == [True]
    assert apiserver.count(resource="podgroups", status=503) == 2


def test_the_status_writer_sends_each_change_once_and_retries_after_a_failure(
    apiserver: LoopbackAPIServer,
) -> None:
    apiserver.create(podgroup("g", 2))
    api = client.ApiClient(apiserver.client_configuration())
    writer = PodGroupStatusWriter(api)
    writer.start()
    try:
        pending = {"phase": "Pending", "scheduled": 0}
        assert writer.patch("default", "g", pending) is True
        assert writer.patch("default", "g", dict(pending)) is False  # the same again
        assert writer.flush()
        apiserver.fail_next(1, code=500, resource="podgroups", subresource="status")
        assert writer.patch("default", "g", {"phase": "Scheduled", "scheduled": 2}) is True
        assert writer.flush()
        # The failed one is not remembered as sent: the same patch goes out again.
        assert writer.patch("default", "g", {"phase": "Scheduled", "scheduled": 2}) is True
        assert writer.flush()
    finally:
        writer.stop()
        api.close()
    patches = apiserver.requests(verb="patch", resource="podgroups", subresource="status")
    assert [r.status for r in patches] == [200, 500, 200]
    assert [r.headers.get("content-type") for r in patches] == ["application/merge-patch+json"] * 3
    stored = apiserver.get("podgroups", "default", "g")
    assert stored is not None and stored["status"] == {"phase": "Scheduled", "scheduled": 2}
