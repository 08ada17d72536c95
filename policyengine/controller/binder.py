"""Asynchronous binds: the scheduling loop decides, a thread pool tells the API server.

A bind is one HTTP round trip; waiting for it inside the scheduling loop would cap the
loop at the server's latency. kube-scheduler therefore assumes the pod in its cache and binds
in the background, and so do we. The binder POSTs the ``pods/binding`` subresource with the
body kube-scheduler sends (``k8s-wire/06-kube-scheduler-client-requests.txt``), classifies the
answer, and hands it to a callback that owns the consequences (confirm, forget, requeue):

* 201 → ``BOUND``;
* 409 → ``CONFLICT``: the pod is already bound (by someone else, or by an earlier attempt of
  ours whose answer was lost) or was recreated under the same name — drop it, the watch tells
  the cache where it really is;
* anything else (5xx, 429, 403, 404, connection errors, timeouts) → ``FAILED``: the caller
  forgets the assumption and requeues the pod with backoff.

The GPU devices chosen (HAMi's assignment annotations) ride on the Binding's
``metadata.annotations``, which the API server copies onto the pod in the same update that sets
its node: one request instead of HAMi's PATCH-then-bind, and no device annotations left on a pod
whose bind failed.

At most one bind per pod is ever in flight: ``bind`` refuses a second one.
"""

from __future__ import annotations

import enum
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.rawapi import RawAPI
from policyengine.controller.workers import WorkerPool
from policyengine.model.objects import Pod

log = structlog.get_logger(__name__)


class BindOutcome(enum.Enum):
    BOUND = "bound"
    CONFLICT = "conflict"
    FAILED = "failed"


@dataclass(frozen=True)
class BindResult:
    pod: Pod
    node: str
    outcome: BindOutcome
    status: int | None  # HTTP status, None for a connection error
    message: str
    seconds: float


def binding_body(
    pod: Pod, node: str, annotations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The Binding exactly as kube-scheduler v1.28 posts it, with ``annotations`` (for the pod)
    in its metadata when given."""
    metadata: dict[str, Any] = {
        "name": pod.name,
        "namespace": pod.namespace,
        "uid": pod.uid,
        "creationTimestamp": None,
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "kind": "Binding",
        "apiVersion": "v1",
        "metadata": metadata,
        "target": {"kind": "Node", "name": node},
    }


class Binder:
    """A pool of bind workers (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        workers: int = 16,
        request_timeout: float = 30.0,
        on_in_flight: Callable[[int], None] | None = None,
    ) -> None:
        self._core = RawAPI(api_client)
        self._pool = WorkerPool(workers, "bind")
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight: set[str] = set()
        self._closed = False
        self._on_in_flight = on_in_flight

    def bind(
        self,
        pod: Pod,
        node: str,
        callback: Callable[[BindResult], None],
        annotations: Mapping[str, str] | None = None,
    ) -> bool:
        """Start binding ``pod`` to ``node``; ``callback`` gets the result on a worker thread.
        False (and nothing happens) when a bind of this pod is in flight or the binder is
        shut down. ``annotations`` (the GPU devices chosen, in HAMi's annotations) travel on
        the Binding: the pod has them from the moment it has its node, so the device plugin
        finds them when the kubelet starts it."""
        with self._lock:
            if self._closed or pod.key in self._in_flight:
                return False
            self._in_flight.add(pod.key)
            count = len(self._in_flight)
        self._report(count)
        fields = annotations or {}
        if not self._pool.submit(lambda: self._run(pod, node, callback, fields)):
            # Shut down after the check above (a shutdown that gave up waiting): not started.
            with self._lock:
                self._in_flight.discard(pod.key)
                count = len(self._in_flight)
                self._idle.notify_all()
            self._report(count)
            return False
        return True

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def is_binding(self, key: str) -> bool:
        with self._lock:
            return key in self._in_flight

    def shutdown(self, timeout: float | None = None) -> bool:
        """Refuse new binds and wait for those in flight (their callbacks included).
        False if some were still running at the timeout."""
        with self._lock:
            self._closed = True
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._in_flight:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._idle.wait(left)
            finished = not self._in_flight
        self._pool.shutdown(wait=finished)
        return finished

    def _run(
        self,
        pod: Pod,
        node: str,
        callback: Callable[[BindResult], None],
        annotations: Mapping[str, str],
    ) -> None:
        start = time.perf_counter()
        try:
            result = self._post(pod, node, annotations, start)
        except Exception as exc:  # a bug here must not leave the pod in flight forever
            log.exception("bind crashed", pod=pod.key, node=node)
            result = BindResult(pod, node, BindOutcome.FAILED, None, str(exc), 0.0)
        # The pod leaves the in-flight set before the callback runs, so a requeued pod
        # can be bound again as soon as the callback has requeued it.
        with self._lock:
            self._in_flight.discard(pod.key)
            count = len(self._in_flight)
        self._report(count)
        try:
            callback(result)
        except Exception:
            log.exception("bind callback failed", pod=pod.key, node=node)
        finally:
            with self._lock:
                self._idle.notify_all()

    def _post(
        self, pod: Pod, node: str, annotations: Mapping[str, str], start: float
    ) -> BindResult:
        try:
            response = self._core.create_namespaced_pod_binding(
                pod.name,
                pod.namespace,
                binding_body(pod, node, annotations),
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            status = int(response.status)
            _ = response.data  # read the Status body, or the pooled connection is unusable
            response.release_conn()
            return BindResult(pod, node, BindOutcome.BOUND, status, "", time.perf_counter() - start)
        except ApiException as exc:
            message = _message(exc)
            outcome = BindOutcome.CONFLICT if exc.status == 409 else BindOutcome.FAILED
            return BindResult(pod, node, outcome, exc.status, message, time.perf_counter() - start)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            return BindResult(
                pod,
                node,
                BindOutcome.FAILED,
                None,
                f"{type(exc).__name__}: {exc}",
                time.perf_counter() - start,
            )

    def _report(self, count: int) -> None:
        if self._on_in_flight is not None:
            try:
                self._on_in_flight(count)
            except Exception:
                log.exception("on_bind hook failed")


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except ValueError:
        return str(exc.reason)
