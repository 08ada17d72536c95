"""Writes made from threads that may wait for them, on one kept-alive connection per thread.

(The loop's own writes — bindings, Events, condition patches — go through ``outbox``, which
reuses this module's answers and failures but never waits.) A bind and its ``Scheduled``
Event are two small requests per pod. Through the generated
client's ``RESTClientObject`` and urllib3's ``PoolManager`` each costs about 0.7 ms of CPU
before and after the network (header merging, URL parsing, pool lookup, retry and timeout
objects, the response wrapper); the same request on a plain ``http.client`` connection costs
about a third of that (measured against the loopback server), and with the request written
and the answer read by ``http1`` (``http.client``'s bytes and reading, without its per-header
checks and e-mail parsing of every answer) about half of that again. At hundreds of pods a
second that difference is a large part of the scheduler's CPU, so ``RawAPI``'s writes go
here:

* each thread that writes (the volume binder's workers, preemption's deletions, the PodGroup
  status writer) keeps one connection to the API server,
  made by the urllib3 pool the ``ApiClient`` already configured, so TLS (CA, client
  certificate, ``verify_ssl``, server name) is exactly the client's; a connection the server
  closed while idle is noticed before reuse and replaced, as urllib3 does;
* the client-side rate limit and the per-thread note of the request being sent (for error
  messages) are applied through the gate ``connection.install`` leaves on the client;
* failures are raised as the urllib3 path raises them with urllib3's retries turned off
  (``MaxRetryError`` whose ``reason`` is ``NewConnectionError``, ``ReadTimeoutError`` or
  ``ProtocolError``), so every caller's error handling and ``connection.classify``'s
  messages are unchanged; non-2xx answers become ``ApiException`` in ``rawapi``.

Clients with an HTTP proxy keep the urllib3 path (``usable``): tunnelling is urllib3's job.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Mapping
from typing import Any

import urllib3
from kubernetes import client as k8s
from urllib3.util.connection import is_connection_dropped

from policyengine.controller.connection import GATE
from policyengine.controller.http1 import Response, host_header, read_response, request_bytes


class WireResponse:
    """A finished response, read in full: what the callers of ``RawAPI``'s writes use of a
    urllib3 response (``status``, ``reason``, ``data``, ``headers``, ``release_conn()``),
    and what ``ApiException.from_response`` reads (``getheaders()``)."""

    __slots__ = ("_answer", "data", "reason", "status")

    def __init__(self, answer: Response):
        self._answer = answer
        self.status = answer.status
        self.reason = answer.reason
        self.data = answer.data

    @property
    def headers(self) -> http.client.HTTPMessage:
        return self._answer.headers

    def getheaders(self) -> http.client.HTTPMessage:
        return self._answer.headers

    def read(self) -> bytes:
        return self.data

    def release_conn(self) -> None:
        """Nothing to release: the body was read and the connection is the thread's."""


def usable(api_client: k8s.ApiClient) -> bool:
    """Whether writes of this client can take the kept-alive path (no proxy, http or https)."""
    cfg = api_client.configuration
    return not getattr(cfg, "proxy", None) and str(cfg.host).startswith(("http://", "https://"))


class KeepAliveSender:
    """Sends one request at a time per thread on that thread's connection."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self._client = api_client
        self._local = threading.local()

    def _connection(self, origin: str) -> tuple[Any, Any, bytes]:
        local = self._local
        pool = getattr(local, "pool", None)
        conn = getattr(local, "conn", None)
        if pool is None or getattr(local, "origin", None) != origin:
            pool = self._client.rest_client.pool_manager.connection_from_url(origin)
            conn = None
        if conn is None:
            conn = pool._new_conn()  # configured as the pool configures its own (TLS included)
            local.host = host_header(conn)
        elif conn.sock is not None and is_connection_dropped(conn):
            conn.close()  # the server closed it while idle: reconnect rather than fail
        local.pool, local.conn, local.origin = pool, conn, origin
        return pool, conn, local.host

    def send(
        self, method: str, url: str, headers: Mapping[str, str], body: Any, timeout: Any
    ) -> WireResponse:
        """Send ``method url`` with ``body`` as JSON; the whole response, whatever its
        status. Raises urllib3's errors (see the module docstring)."""
        gate = getattr(self._client.rest_client, GATE, None)
        if gate is not None:
            gate(method, url)
        origin, target = split_url(url)
        data = None if body is None else json.dumps(body).encode("utf-8")
        pool, conn, host = self._connection(origin)
        seconds = timeout_seconds(timeout)
        conn.timeout = seconds
        sock = conn.sock
        if sock is not None and sock.gettimeout() != seconds:
            sock.settimeout(seconds)  # two fcntl calls: only when the timeout changes
        try:
            # What http.client.HTTPConnection.request and getresponse do, minus their
            # overhead (http1); connecting is still the urllib3 connection's.
            wire = request_bytes(method, target, host, headers, data)
            if conn.sock is None:
                conn.connect()
            conn.sock.sendall(wire)
            response = read_response(conn.sock, method)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as error:
            conn.close()
            raise transport_error(pool, target, error, seconds) from error
        if response.will_close:
            conn.close()
        return WireResponse(response)


def split_url(url: str) -> tuple[str, str]:
    """``url``'s origin (``scheme://host:port``) and its request target (path and query)."""
    scheme, _, rest = url.partition("://")
    slash = rest.find("/")
    origin = f"{scheme}://{rest[:slash] if slash >= 0 else rest}"
    return origin, url[len(origin) :] or "/"


def transport_error(
    pool: Any, target: str, error: Exception, seconds: float | None
) -> urllib3.exceptions.MaxRetryError:
    """``error`` (connecting, writing or reading ``target``, with a read timeout of
    ``seconds``) as urllib3 raises it with its retries off: a ``MaxRetryError`` whose reason
    is the connection's own urllib3 error, ``SSLError``, ``ReadTimeoutError`` or
    ``ProtocolError``."""
    reason: Exception
    if isinstance(error, urllib3.exceptions.HTTPError):  # connecting: refused, TLS, name
        reason = error
    elif isinstance(error, ssl.SSLError | ssl.CertificateError):
        reason = urllib3.exceptions.SSLError(error)
    elif isinstance(error, TimeoutError):
        reason = urllib3.exceptions.ReadTimeoutError(
            pool, target, f"Read timed out. (read timeout={seconds})"
        )
    else:
        reason = urllib3.exceptions.ProtocolError("Connection aborted.", error)
    wrapped = urllib3.exceptions.MaxRetryError(pool, target, reason)
    wrapped.__cause__ = error
    return wrapped


def timeout_seconds(timeout: Any) -> float | None:
    """A request timeout as the generated client takes it (seconds, or (connect, read))."""
    if isinstance(timeout, tuple):
        return max(float(t) for t in timeout if t is not None) if any(timeout) else None
    return float(timeout) if timeout else None
