"""``/metrics``, ``/healthz`` and ``/readyz`` on one small HTTP server.

Kubernetes decides from these whether to restart the scheduler (liveness), whether to count it
as available (readiness), and Prometheus scrapes the metrics; none of it deserves a web
framework, so this is the standard library's threading HTTP server on a daemon thread.

* ``/healthz`` — 200 while every liveness check passes: the scheduler's loop is alive and a
  leader is renewing its lease. 503 otherwise, so the kubelet restarts a wedged process.
* ``/readyz`` — 200 once the replica is useful: the leader (or a scheduler without leader
  election) once its caches have synced; a **standby** once it has reached the API server and
  read the lease. A standby is ready on purpose: it is what takes over, and a Deployment
  whose standbys are never ready would stall every rolling update. The role is in the body.
* Both answer JSON: ``{"status": "ok" | "failing", "checks": {name: "ok" | reason}, ...details}``
  where details include the role, the scheduler name and the policy version.
* ``/metrics`` — the Prometheus text format of the scheduler's own registry.

The default address is ``0.0.0.0:10251``: kube-scheduler's old plain-HTTP port, free since it
went HTTPS-only on 10259, so probes written for either are not confused. Port 0 picks a free
port (tests), which :attr:`HealthServer.address` then reports.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from policyengine.controller.httpserve import BackgroundHTTPServer, StateServer

DEFAULT_ADDRESS = "0.0.0.0:10251"

# A check returns None when all is well, else the reason it fails.
Check = Callable[[], str | None]


class Health:
    """Named liveness and readiness checks, and details to show beside them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, Check] = {}
        self._ready: dict[str, Check] = {}
        self._details: dict[str, Callable[[], Any]] = {}

    def add_liveness(self, name: str, check: Check) -> None:
        with self._lock:
            self._live[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        with self._lock:
            self._ready[name] = check

    def add_detail(self, name: str, value: Callable[[], Any]) -> None:
        with self._lock:
            self._details[name] = value

    def live(self) -> tuple[bool, dict[str, Any]]:
        return self._evaluate(self._live)

    def ready(self) -> tuple[bool, dict[str, Any]]:
        # Whatever keeps a process from being live keeps it from being ready too.
        with self._lock:
            checks = {**self._live, **self._ready}
        return self._evaluate(checks)

    def _evaluate(self, checks: dict[str, Check]) -> tuple[bool, dict[str, Any]]:
        with self._lock:
            checks = dict(checks)
            details = dict(self._details)
        results: dict[str, str] = {}
        for name, check in checks.items():
            try:
                problem = check()
            except Exception as error:  # a broken check is a failing check, not a 500
                problem = f"check failed: {type(error).__name__}: {error}"
            results[name] = "ok" if problem is None else problem
        ok = all(result == "ok" for result in results.values())
        body: dict[str, Any] = {"status": "ok" if ok else "failing", "checks": results}
        for name, value in details.items():
            try:
                body[name] = value()
            except Exception as error:
                body[name] = f"unavailable: {type(error).__name__}"
        return ok, body


@dataclass(frozen=True)
class _Served:
    health: Health
    metrics: Callable[[], bytes]


class _Handler(BaseHTTPRequestHandler):
    server: StateServer[_Served]
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path == "/metrics":
            self._send(HTTPStatus.OK, self.server.state.metrics(), CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/livez"):
            self._report(*self.server.state.health.live())
        elif path == "/readyz":
            self._report(*self.server.state.health.ready())
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found: try /metrics, /healthz or /readyz\n")

    def _report(self, ok: bool, body: dict[str, Any]) -> None:
        status = HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE
        payload = (json.dumps(body, sort_keys=True) + "\n").encode()
        self._send(status, payload, "application/json")

    def _send(self, status: HTTPStatus, payload: bytes, content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the scheduler's own log


class HealthServer:
    """The HTTP server, serving on a daemon thread until :meth:`close`."""

    def __init__(self, address: str, health: Health, metrics: Callable[[], bytes]) -> None:
        served = _Served(health, metrics)
        self._http = BackgroundHTTPServer(address, _Handler, "policyengine-health", served)

    @property
    def address(self) -> tuple[str, int]:
        return self._http.address

    @property
    def url(self) -> str:
        return self._http.url

    def close(self) -> None:
        self._http.close()
