"""Node load in the loop: metrics.k8s.io polled through the real client from the loopback
server, judged fresh or stale, annotations alone when the metrics API is absent."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client
from structlog.testing import capture_logs

from loopback import LoopbackAPIServer
from policyengine.controller.cache import ClusterCache
from policyengine.controller.load import LoadPoller
from policyengine.model.load import NO_LOAD, NodeLoad
from tests.controller.builders import FAST, RunningScheduler, node, node_obj, pod_obj, program_from

NOW = dt.datetime(2026, 12, 2, 20, 0, 0, tzinfo=dt.UTC)
METRICS = "metrics.k8s.io"


def stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_metrics(name: str, cpu: str, when: dt.datetime, memory: str = "2Gi") -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": name},
        "timestamp": stamp(when),
        "window": "20s",
        "usage": {"cpu": cpu, "memory": memory},
    }


@pytest.fixture
def api(apiserver: LoopbackAPIServer):  # type: ignore[no-untyped-def]
    api_client = client.ApiClient(apiserver.client_configuration())
    yield api_client
    api_client.close()


def poller(api: client.ApiClient, *nodes: Any, now: dt.datetime = NOW) -> LoadPoller:
    cache = ClusterCache()
    for n in nodes:
        cache.set_node(n)
    return LoadPoller(api, cache, clock=lambda: now)


def loads(p: LoadPoller) -> dict[str, NodeLoad]:
    return {info.name: info.load for info in p._cache.snapshot().nodes}


def test_fresh_metrics_become_load_and_stale_ones_missing(
    apiserver: LoopbackAPIServer, api: client.ApiClient
) -> None:
    apiserver.create(node_metrics("n1", "1", NOW - dt.timedelta(seconds=30)))
    apiserver.create(node_metrics("n2", "3", NOW - dt.timedelta(minutes=6)))  # stale
    apiserver.create(node_metrics("gone", "1", NOW))  # not a node the cache knows
    p = poller(api, node("n1"), node("n2"), node("n3"))
    assert p.poll() is True
    assert loads(p) == {"n1": NodeLoad(0.25, 0.25, None, 30), "n2": NO_LOAD, "n3": NO_LOAD}
    assert p.metrics_available is True
    assert apiserver.count(verb="list", resource="nodes") == 1  # the metrics list, nothing else
    assert p.poll() is False  # nothing changed: no node replaced


def test_without_the_metrics_api_annotations_alone_and_said_once(
    apiserver: LoopbackAPIServer, api: client.ApiClient
) -> None:
    annotated = node("n1")
    annotated = replace(
        annotated,
        annotations={
            "load.policyengine.io/cpu": "0.7",
            "load.policyengine.io/gpu": "0.2",
            "load.policyengine.io/timestamp": stamp(NOW - dt.timedelta(seconds=5)),
        },
    )
    apiserver.create(node_metrics("n1", "1", NOW))
    apiserver.uninstall_group(METRICS)
    p = poller(api, annotated)
    with capture_logs() as logs:
        p.poll()
        p.poll()
    assert loads(p) == {"n1": NodeLoad(0.7, None, 0.2, 5)}
    said = [e for e in logs if "not served" in e["event"]]
    assert len(said) == 1 and said[0]["status"] == 404
    apiserver.install_group(METRICS)
    p.poll()  # back: the newer reading per field wins
    assert loads(p) == {"n1": NodeLoad(0.25, 0.25, 0.2, 5)}


def test_a_failed_list_keeps_the_last_metrics_until_they_are_stale(
    apiserver: LoopbackAPIServer, api: client.ApiClient
) -> None:
    apiserver.create(node_metrics("n1", "2", NOW))
    clock = [NOW]
    cache = ClusterCache()
    cache.set_node(node("n1"))
    p = LoadPoller(api, cache, clock=lambda: clock[0])
    p.poll()
    apiserver.fail_always(code=500, resource="nodes")
    clock[0] = NOW + dt.timedelta(minutes=4)
    p.poll()
    assert cache.snapshot().node("n1").load == NodeLoad(0.5, 0.25, None, 240)
    clock[0] = NOW + dt.timedelta(minutes=6)
    p.poll()
    assert cache.snapshot().node("n1").load == NO_LOAD
    assert p.metrics_available is True  # a 500 says nothing about the API's existence


def test_a_bad_node_metrics_item_is_skipped_with_one_warning(
    apiserver: LoopbackAPIServer, api: client.ApiClient
) -> None:
    bad = node_metrics("n2", "1", NOW)
    bad["timestamp"] = "noon"
    apiserver.create(bad)
    apiserver.create(node_metrics("n1", "1", NOW))
    p = poller(api, node("n1"), node("n2"))
    with capture_logs() as logs:
        p.poll()
        p.poll()
    assert loads(p) == {"n1": NodeLoad(0.25, 0.25, None, 0), "n2": NO_LOAD}
    warned = [e["detail"] for e in logs if e["event"] == "ignoring bad node load"]
    assert warned == ["NodeMetrics n2: timestamp: 'noon' is not an RFC 3339 time"]


IDLE_ONLY = """
policy "idle" {
  filter idle { (node.load.cpu ?? 1.0) < 0.5 } reason "node is busy or its load is unknown"
}
"""


def test_the_loop_places_by_measured_load(apiserver: LoopbackAPIServer) -> None:
    now = dt.datetime.now(dt.UTC)
    for name in ("busy", "idle", "unknown"):
        apiserver.create(node_obj(name, cpu="4"))
    apiserver.create(node_metrics("busy", "3600m", now))
    apiserver.create(node_metrics("idle", "400m", now))
    apiserver.create(node_metrics("unknown", "400m", now - dt.timedelta(minutes=10)))
    apiserver.create(pod_obj("p"))
    options = replace(FAST, load_poll_interval=0.2)
    with RunningScheduler(apiserver, program_from(IDLE_ONLY), options=options):
        apiserver.wait_for(lambda: "default/p" in apiserver.bound_nodes(), timeout=20)
    assert apiserver.bound_nodes() == {"default/p": "idle"}


def test_a_503_means_no_metrics_backend_annotations_alone(
    apiserver: LoopbackAPIServer, api: client.ApiClient
) -> None:
    # An APIService whose metrics-server is down answers 503: the same as no API at all, and
    # readings already received are dropped rather than kept (nothing will refresh them).
    apiserver.create(node_metrics("n1", "1", NOW))
    p = poller(api, node("n1"))
    p.poll()
    assert loads(p) == {"n1": NodeLoad(0.25, 0.25, None, 0)}
    apiserver.fail_always(code=503, resource="nodes")
    with capture_logs() as logs:
        p.poll()
    assert loads(p) == {"n1": NO_LOAD}
    assert p.metrics_available is False
    assert [e["status"] for e in logs if "not served" in e["event"]] == [503]
