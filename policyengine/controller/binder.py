"""Asynchronous binds: the scheduling loop decides, and goes on while the API server binds.

A bind is one HTTP round trip; waiting for it inside the scheduling loop would cap the
loop at the server's latency. kube-scheduler therefore assumes the pod in its cache and binds
in the background, and so do we: the binding is written on one of the outbox's non-blocking
connections (``outbox``), and its answer handled when the loop next pumps the outbox (or, for a
binder without a loop, on the outbox's own thread). The binder POSTs the ``pods/binding``
subresource with the body kube-scheduler sends
(``k8s-wire/06-kube-scheduler-client-requests.txt``), classifies the answer, and hands it to a
callback that owns the consequences (confirm, forget, requeue):

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

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.logs import get_logger
from policyengine.controller.outbox import DEFAULT_CONNECTIONS, Answer, Outbox
from policyengine.controller.rawapi import RawAPI
from policyengine.model.objects import Pod

log = get_logger(__name__)


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
    """Binds sent through an outbox (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        outbox: Outbox | None = None,
        connections: int = DEFAULT_CONNECTIONS,
        request_timeout: float = 30.0,
        on_in_flight: Callable[[int], None] | None = None,
    ) -> None:
        # Without an outbox of the caller's (pumped by its loop), one of our own, on its
        # own thread.
        self._own = outbox is None
        if outbox is None:
            outbox = Outbox(api_client, connections=connections)
            outbox.start()
        self._outbox = outbox
        self._core = RawAPI(api_client, outbox=outbox)
        self._timeout = request_timeout
        self._lock = threading.Lock()
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
        """Start binding ``pod`` to ``node``; ``callback`` gets the result once the answer is
        in (where the outbox is pumped). False (and nothing happens) when a bind of this pod
        is in flight or the binder is shut down. ``annotations`` (the GPU devices chosen, in
        HAMi's annotations) travel on the Binding: the pod has them from the moment it has its
        node, so the device plugin finds them when the kubelet starts it."""
        with self._lock:
            if self._closed or pod.key in self._in_flight:
                return False
            self._in_flight.add(pod.key)
            count = len(self._in_flight)
        self._report(count)
        start = time.perf_counter()
        self._core.create_namespaced_pod_binding(
            pod.name,
            pod.namespace,
            binding_body(pod, node, annotations),
            _request_timeout=self._timeout,
            _then=lambda answer: self._answered(pod, node, callback, start, answer),
        )
        return True

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def is_binding(self, key: str) -> bool:
        with self._lock:
            return key in self._in_flight

    def shutdown(self, timeout: float | None = None) -> bool:
        """Refuse new binds and wait for those in flight (their callbacks included),
        pumping the outbox if no thread does. False if some were still running at the
        timeout."""
        with self._lock:
            self._closed = True
        finished = self._outbox.drain(timeout, until=lambda: not self.in_flight())
        if self._own:
            self._outbox.close()
        return finished

    def _answered(
        self,
        pod: Pod,
        node: str,
        callback: Callable[[BindResult], None],
        start: float,
        answer: Answer,
    ) -> None:
        try:
            result = _result(pod, node, answer, time.perf_counter() - start)
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

    def _report(self, count: int) -> None:
        if self._on_in_flight is not None:
            try:
                self._on_in_flight(count)
            except Exception:
                log.exception("on_bind hook failed")


def _result(pod: Pod, node: str, answer: Answer, seconds: float) -> BindResult:
    """What the API server's answer (or the transport's error) means for the bind."""
    if isinstance(answer, ApiException):
        outcome = BindOutcome.CONFLICT if answer.status == 409 else BindOutcome.FAILED
        return BindResult(pod, node, outcome, answer.status, _message(answer), seconds)
    if isinstance(answer, urllib3.exceptions.HTTPError | OSError):
        message = f"{type(answer).__name__}: {answer}"
        return BindResult(pod, node, BindOutcome.FAILED, None, message, seconds)
    if isinstance(answer, BaseException):
        raise answer
    return BindResult(pod, node, BindOutcome.BOUND, int(answer.status), "", seconds)


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except ValueError:
        return str(exc.reason)
