"""``controller.health``: the HTTP server behind the kubelet's probes and Prometheus' scrape.

Real HTTP against a server on an ephemeral port: status codes, JSON bodies with each check's
result and the details, the metrics text, and checks that fail or break.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from policyengine.controller.health import Health, HealthServer, parse_address
from policyengine.controller.metrics import Metrics


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


class Switch:
    def __init__(self, problem: str | None = None) -> None:
        self.problem = problem

    def __call__(self) -> str | None:
        return self.problem


@pytest.fixture
def health() -> Health:
    return Health()


@pytest.fixture
def served(health: Health) -> Iterator[tuple[HealthServer, Metrics]]:
    metrics = Metrics()
    server = HealthServer("127.0.0.1:0", health, metrics.render)
    yield server, metrics
    server.close()


def body(text: str) -> Any:
    return json.loads(text)


def test_healthy_and_ready(health: Health, served: tuple[HealthServer, Metrics]) -> None:
    server, _ = served
    health.add_liveness("loop", Switch())
    health.add_readiness("caches", Switch())
    health.add_detail("policy_version", lambda: "abc123")
    for path in ("/healthz", "/readyz"):
        status, content_type, text = get(server.url + path)
        assert (status, content_type) == (200, "application/json")
        assert body(text)["status"] == "ok"
        assert body(text)["policy_version"] == "abc123"
    assert body(get(server.url + "/healthz")[2])["checks"] == {"loop": "ok"}
    assert body(get(server.url + "/readyz")[2])["checks"] == {"loop": "ok", "caches": "ok"}


def test_not_ready_until_the_caches_sync(
    health: Health, served: tuple[HealthServer, Metrics]
) -> None:
    server, _ = served
    caches = Switch("the caches have not synced yet")
    health.add_liveness("loop", Switch())
    health.add_readiness("caches", caches)
    status, _, text = get(server.url + "/readyz")
    assert status == 503
    assert body(text) == {
        "status": "failing",
        "checks": {"loop": "ok", "caches": "the caches have not synced yet"},
    }
    assert get(server.url + "/healthz")[0] == 200  # not ready is not unhealthy
    caches.problem = None
    assert get(server.url + "/readyz")[0] == 200


def test_a_failing_liveness_check_fails_both(
    health: Health, served: tuple[HealthServer, Metrics]
) -> None:
    server, _ = served
    health.add_liveness("loop", Switch("the scheduler loop failed: RuntimeError"))
    for path in ("/healthz", "/livez", "/readyz"):
        status, _, text = get(server.url + path)
        assert status == 503
        assert body(text)["checks"]["loop"] == "the scheduler loop failed: RuntimeError"


def test_a_broken_check_is_a_failing_check(
    health: Health, served: tuple[HealthServer, Metrics]
) -> None:
    server, _ = served

    def broken() -> str | None:
        raise KeyError("x")

    health.add_readiness("broken", broken)
    health.add_detail("also_broken", lambda: 1 / 0)
    status, _, text = get(server.url + "/readyz")
    assert status == 503
    assert body(text)["checks"] == {"broken": "check failed: KeyError: 'x'"}
    assert body(text)["also_broken"] == "unavailable: ZeroDivisionError"


def test_metrics(served: tuple[HealthServer, Metrics]) -> None:
    server, metrics = served
    metrics.set_leader(True)
    status, content_type, text = get(server.url + "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=")
    assert "policyengine_leader 1.0" in text.splitlines()


def test_unknown_paths(served: tuple[HealthServer, Metrics]) -> None:
    server, _ = served
    assert get(server.url + "/nope")[:2] == (404, "text/plain")


def test_port_zero_reports_the_port_it_got(health: Health) -> None:
    server = HealthServer(":0", health, lambda: b"")
    host, port = server.address
    assert host == "0.0.0.0" and port > 0
    assert server.url == f"http://127.0.0.1:{port}"
    server.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0:10251", ("0.0.0.0", 10251)),
        (":8080", ("0.0.0.0", 8080)),
        ("[::1]:9000", ("::1", 9000)),
        ("localhost:0", ("localhost", 0)),
    ],
    ids=["0.0.0.0:10251", ":8080", "[::1]:9000", "localhost:0"],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["10251", "host:", "host:port", "host:70000"])
def test_parse_address_rejects(text: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_address(text)
    assert str(error.value) == f"{text!r} is not HOST:PORT"
