"""How the scheduler reaches the API server, and what it says when that goes wrong.

Four jobs, kept together because they share one view of a request:

* **Where to connect.** ``--kubeconfig PATH``, else the ``KUBECONFIG`` variable (a
  ``:``-separated list, merged as kubectl does), else the pod's service account (in-cluster
  config). A source that is named but broken is an error, not a reason to try the next one;
  when nothing is configured the error lists what was tried.
* **How fast.** A token bucket (``--kube-api-qps``, ``--kube-api-burst``; client-go's client
  side rate limit) is put in front of every request of the client by wrapping
  ``ApiClient.rest_client.request``, the one method the generated client sends every request
  through (``ApiClient.call_api``); the writes that bypass it (``rawapi``'s kept-alive
  connections) pass the same gate, which ``install`` leaves on the client. A watch takes one
  token when it starts.
* **What went wrong.** :func:`classify` turns an ``ApiException`` or a urllib3 error into a
  :class:`Failure` whose message names the server, the verb and the resource and says what to
  do (``forbidden: User "…" cannot list resource "pods" … — grant it in the ClusterRole (see
  deploy/)``, ``API server http://… unreachable: connection refused``).
* **Trying again.** :func:`retry` repeats a call with capped, jittered exponential backoff
  while the failure is one time can fix (unreachable, throttled, 5xx, and also 401/403, since
  RBAC and tokens are fixed while the scheduler runs), logs each failure once with the delay
  (``… — retrying in 2s``), and gives up only when asked to stop.

urllib3's own retries are turned off on clients built here: they retry without backoff and
would multiply a request's timeout, which the leader elector's renew deadline relies on.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)

from policyengine import __version__
from policyengine.controller.logs import get_logger

T = TypeVar("T")

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
RBAC_HINT = "grant it in the ClusterRole (see deploy/)"
CREDENTIALS_HINT = (
    "check the token or client certificate of the kubeconfig, or the pod's service account token"
)
# client-go logs a client-side throttling wait only when it is long enough to matter.
_THROTTLE_LOG_AFTER = 1.0

_log = get_logger("policyengine.connection")


# --- where to connect ----------------------------------------------------------------------


class ConnectionConfigError(Exception):
    """No usable connection settings; ``str(error)`` says what was tried and what to do."""


@dataclass
class Connection:
    """An ``ApiClient`` with rate limiting installed, and where its settings came from."""

    client: k8s.ApiClient
    host: str
    source: str
    limiter: TokenBucket | None = None

    def close(self) -> None:
        self.client.close()


def load_configuration(
    kubeconfig: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    token_file: str = SERVICE_TOKEN_FILENAME,
    cert_file: str = SERVICE_CERT_FILENAME,
) -> tuple[k8s.Configuration, str]:
    """The client configuration and a description of its source (for logs and errors)."""
    env = os.environ if environ is None else environ
    cfg = k8s.Configuration()
    if kubeconfig:
        _load_kubeconfig(cfg, kubeconfig, f"--kubeconfig {kubeconfig}")
        return cfg, f"--kubeconfig {kubeconfig}"
    from_env = env.get("KUBECONFIG", "")
    if from_env:
        _load_kubeconfig(cfg, from_env, f"KUBECONFIG={from_env}")
        return cfg, f"KUBECONFIG={from_env}"
    missing = [name for name in (SERVICE_HOST_ENV_NAME, SERVICE_PORT_ENV_NAME) if not env.get(name)]
    if missing:
        raise ConnectionConfigError(
            "no Kubernetes API server configured: --kubeconfig was not given, KUBECONFIG is "
            f"not set, and this is not a pod ({' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set); pass --kubeconfig PATH"
        )
    try:
        InClusterConfigLoader(token_file, cert_file, environ=dict(env)).load_and_set(cfg)
    except ConfigException as error:
        raise ConnectionConfigError(
            f"in-cluster config (no --kubeconfig, no KUBECONFIG): {error} "
            f"(service account files {token_file}, {cert_file}); "
            "mount the service account token or pass --kubeconfig PATH"
        ) from None
    return cfg, "in-cluster service account"


def _load_kubeconfig(cfg: k8s.Configuration, paths: str, label: str) -> None:
    files = [p for p in paths.split(os.pathsep) if p]
    if not any(Path(p).expanduser().is_file() for p in files):
        shown = "no such file" if len(files) == 1 else "none of these files exists"
        raise ConnectionConfigError(f"{label}: {shown}")
    try:
        k8s_config.load_kube_config(
            config_file=paths, client_configuration=cfg, persist_config=False
        )
    except Exception as error:  # YAML, missing contexts, unreadable certificates, exec plugins
        raise ConnectionConfigError(f"{label}: not a usable kubeconfig: {error}") from None


POOL_SIZE = 32


def connect(
    kubeconfig: str | None = None,
    *,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    environ: Mapping[str, str] | None = None,
    **files: str,
) -> Connection:
    """An ``ApiClient`` for the configured server, rate limited to ``qps``/``burst``.

    ``qps <= 0`` turns client-side limiting off. Nothing is sent yet: see :func:`wait_for_api`.
    """
    cfg, source = load_configuration(kubeconfig, environ=environ, **files)
    cfg.retries = urllib3.util.Retry(total=0, redirect=0)
    # A dozen watches, the volume binder's workers, preemption's deletions and the lease share
    # this client's pool (the loop's binds and Events have connections of their own,
    # controller/outbox.py): urllib3's default of 10 would make them queue and warn "pool is
    # full".
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, POOL_SIZE)
    api_client = k8s.ApiClient(cfg)
    # The pid tells replicas apart in the API server's audit log (and in tests).
    api_client.user_agent = f"policyengine/{__version__} (pid {os.getpid()})"
    limiter = TokenBucket(qps, burst) if qps > 0 else None
    install(api_client, limiter)
    return Connection(api_client, cfg.host, source, limiter)


# --- how fast ------------------------------------------------------------------------------


class TokenBucket:
    """client-go's token bucket: ``burst`` requests at once, then ``qps`` a second.

    A caller reserves a token and sleeps until it is due, so concurrent callers are served in
    the order they asked and the bucket never hands out more than it holds.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()
        self.requests = 0
        self.throttled = 0  # requests that had to wait

    def reserve(self) -> float:
        """Take a token now; return how long the caller must wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            self.requests += 1
            if self._tokens >= 0:
                return 0.0
            self.throttled += 1
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Wait for a token; return the time waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


_last = threading.local()

# The attributes of an installed client's ``rest_client`` holding its gate and its token
# bucket (see ``install``).
GATE = "policyengine_gate"
LIMITER = "policyengine_limiter"


def install(api_client: k8s.ApiClient, limiter: TokenBucket | None) -> None:
    """Put ``limiter`` in front of every request ``api_client`` sends.

    The wrapper also notes, per thread, the method and URL of the request being sent, so a
    failure can be reported with its verb and resource (``ApiException`` carries neither).
    """
    rest = api_client.rest_client
    send = rest.request

    def gate(method: str, url: str) -> None:
        _last.request = (method, url)
        if limiter is not None:
            waited = limiter.acquire()
            if waited > _THROTTLE_LOG_AFTER:
                info = request_info(method, url)
                _log.info(
                    f"waited {waited:.1f}s for client-side throttling (--kube-api-qps)",
                    verb=info.verb,
                    resource=info.full_resource,
                )

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        gate(method, url)
        return send(method, url, *args, **kwargs)

    rest.request = request  # type: ignore[method-assign]  # deliberately wrapping the client's method
    # The same gate for the requests that bypass urllib3's layers (controller/keepalive.py).
    setattr(rest, GATE, gate)
    # The bucket itself for writes that must not sleep for a token (controller/outbox.py).
    setattr(rest, LIMITER, limiter)


# --- what went wrong -----------------------------------------------------------------------


@dataclass(frozen=True)
class RequestInfo:
    """A request as the apiserver's RequestInfo resolver names it."""

    verb: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    group: str = ""
    server: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @property
    def call(self) -> str:
        """``list pods``, ``create pods/binding``: what the request was asking for."""
        return f"{self.verb} {self.full_resource}".strip()


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_info(method: str, url: str) -> RequestInfo:
    """The verb, resource, namespace and name a request URL stands for."""
    parts = urlsplit(url)
    server = f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""
    segments = [s for s in parts.path.split("/") if s]
    query = parse_qs(parts.query)
    method = method.upper()
    if segments[:1] == ["api"] and len(segments) >= 2:
        group, rest = "", segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        group, rest = segments[1], segments[3:]
    else:  # /version, /healthz, discovery
        return RequestInfo(method.lower(), "/" + "/".join(segments), server=server)
    watch = query.get("watch", [""])[0].lower() in ("true", "1")
    if rest[:1] == ["watch"]:
        watch, rest = True, rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return RequestInfo(method.lower(), group=group, server=server)
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method in ("GET", "HEAD"):
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return RequestInfo(verb, resource, subresource, namespace, name, group, server)


def last_request() -> RequestInfo | None:
    """The request this thread sent last through an installed client (see :func:`install`)."""
    sent = getattr(_last, "request", None)
    return request_info(*sent) if sent else None


def forget_last_request() -> None:
    _last.request = None


@dataclass(frozen=True)
class Failure:
    """A failed API call, classified: ``message`` is what an operator should read."""

    kind: str  # unreachable, not-kubernetes, unauthorized, forbidden, throttled, server, conflict, not-found, invalid, other
    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    info: RequestInfo | None = field(default=None, compare=False)


_RETRYABLE_KINDS = frozenset({"unreachable", "unauthorized", "forbidden", "throttled", "server"})
_KINDS = {400: "invalid", 404: "not-found", 409: "conflict", 410: "expired", 422: "invalid"}
_RBAC = re.compile(r" is forbidden: (User \".*)$", re.DOTALL)


def _status_body(error: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _retry_after(error: ApiException, body: Mapping[str, Any]) -> float | None:
    header = (error.headers or {}).get("Retry-After")
    for value in (header, (body.get("details") or {}).get("retryAfterSeconds")):
        try:
            if value is not None:
                return float(value)
        except (TypeError, ValueError):
            continue
    return None


def classify(
    error: BaseException,
    *,
    info: RequestInfo | None = None,
    server: str | None = None,
) -> Failure:
    """What ``error`` means for the operator.

    ``info`` names the request (default: the last one this thread sent through an installed
    client); ``server`` the API server's URL when the error does not carry it.
    """
    info = info or last_request()
    where = server or (info.server if info and info.server else "") or "(unknown)"
    call = f" ({info.call})" if info and info.call else ""
    if isinstance(error, ApiException):
        return _classify_status(error, info, where, call)
    if isinstance(error, urllib3.exceptions.HTTPError | OSError):
        return _classify_transport(error, info, where, call)
    return Failure("other", f"{type(error).__name__}: {error}{call}", False, info=info)


def _classify_status(
    error: ApiException, info: RequestInfo | None, where: str, call: str
) -> Failure:
    status = int(error.status or 0)
    if status == 0:  # the client's own failure (TLS, a body it could not build)
        reason = str(error.reason or "").replace("\n", ": ")
        return Failure("unreachable", f"API server {where}: {reason}{call}", True, info=info)
    body = _status_body(error)
    server_message = str(body.get("message") or error.reason or "")
    reason = str(body.get("reason") or error.reason or "")
    retry_after = _retry_after(error, body)
    if status == 403:
        rbac = _RBAC.search(server_message)
        if rbac:
            message = f"forbidden: {rbac.group(1)} — {RBAC_HINT}"
        else:
            message = f"forbidden{call}: {server_message} — {RBAC_HINT}"
        return Failure("forbidden", message, True, status, info=info)
    if status == 401:
        message = (
            f"unauthorized: API server {where} rejected the credentials{call} — {CREDENTIALS_HINT}"
        )
        return Failure("unauthorized", message, True, status, info=info)
    if status == 429:
        message = f"API server {where} is throttling requests (429 TooManyRequests){call}"
        return Failure("throttled", message, True, status, retry_after, info)
    if status >= 500:
        message = f"API server {where} failed{call}: {status} {reason}: {server_message}"
        return Failure("server", message, True, status, retry_after, info)
    kind = _KINDS.get(status, "other")
    label = info.call if info and info.call else "request"
    message = f"{label} failed: {status} {reason}: {server_message}"
    return Failure(kind, message, False, status, retry_after, info)


def _classify_transport(
    error: BaseException, info: RequestInfo | None, where: str, call: str
) -> Failure:
    cause: BaseException = error
    if isinstance(error, urllib3.exceptions.MaxRetryError):
        pool = error.pool
        if pool is not None and getattr(pool, "host", None):
            where = f"{pool.scheme}://{pool.host}:{pool.port}"
        cause = error.reason or error
    if isinstance(cause, NotKubernetesError):
        return Failure("not-kubernetes", f"API server {where} {cause}{call}", True, info=info)
    if isinstance(cause, urllib3.exceptions.NameResolutionError):
        what = f"unreachable: cannot resolve {getattr(cause.conn, 'host', 'the host')}"
    elif isinstance(cause, urllib3.exceptions.NewConnectionError):
        what = f"unreachable: {_socket_reason(cause)}"
    elif isinstance(cause, urllib3.exceptions.ConnectTimeoutError):
        what = "unreachable: connection timed out"
    elif isinstance(cause, urllib3.exceptions.ReadTimeoutError | TimeoutError):
        what = "did not answer in time"
    elif isinstance(cause, urllib3.exceptions.SSLError):
        what = f"TLS error: {cause}"
    elif isinstance(cause, urllib3.exceptions.ProtocolError):
        what = "closed the connection unexpectedly"
    elif isinstance(cause, OSError):
        what = f"unreachable: {_socket_reason(cause)}"
    else:
        what = f"unreachable: {cause}"
    return Failure("unreachable", f"API server {where} {what}{call}".rstrip(), True, info=info)


def _socket_reason(error: BaseException) -> str:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror[:1].lower() + seen.strerror[1:]
        seen = seen.__cause__ or seen.__context__
    text = str(error)
    return text.rsplit(": ", 1)[-1] if ": " in text else text


def describe(error: BaseException, **kwargs: Any) -> str:
    """The operator's message for ``error`` (see :func:`classify`)."""
    return classify(error, **kwargs).message


# --- trying again --------------------------------------------------------------------------


class Stopped(Exception):
    """The stop event was set while a call was waiting to be retried."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial``, times ``factor`` per attempt, at most ``cap``.

    Each delay is shortened by a random fraction up to ``jitter`` so that many clients
    failing at once (an API server restart) do not come back in lockstep, even at the cap.
    """

    initial: float = 1.0
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.2

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        rng = rng or random.Random()
        base = self.initial
        while True:
            capped = min(base, self.cap)
            yield capped * (1.0 - self.jitter * rng.random())
            base *= self.factor


DEFAULT_BACKOFF = Backoff()


def _seconds(delay: float) -> str:
    return f"{delay:.0f}s" if delay >= 1.5 else f"{delay:.1f}s"


def retry(
    call: Callable[[], T],
    *,
    stop: threading.Event | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    info: RequestInfo | None = None,
    server: str | None = None,
    log: Any = None,
    attempts: int | None = None,
    retryable: Callable[[Failure], bool] | None = None,
    rng: random.Random | None = None,
    on_failure: Callable[[Failure, float], None] | None = None,
) -> T:
    """``call()``, repeated with backoff while it fails in a way time can fix.

    Each failure is logged as a warning, ``<message> — retrying in 2s``, with its ``kind``,
    ``verb``, ``resource``, ``attempt`` and ``retry_in``. A failure that is not retryable
    (404, 409, 422, a bug) is raised at once; so is the last one when ``attempts`` runs out.
    A 429's ``Retry-After`` lengthens the delay. When ``stop`` is set during a wait,
    :class:`Stopped` is raised.
    """
    logger = log if log is not None else _log
    should_retry = retryable or (lambda failure: failure.retryable)
    delays = backoff.delays(rng)
    attempt = 0
    while True:
        attempt += 1
        forget_last_request()
        try:
            return call()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as error:
            failure = classify(error, info=info, server=server)
            if not should_retry(failure) or (attempts is not None and attempt >= attempts):
                raise
            if stop is not None and stop.is_set():
                # Told to stop while the call hung: nothing to retry, nothing to report.
                raise Stopped(failure.message) from error
            delay = next(delays)
            if failure.retry_after is not None:
                delay = max(delay, failure.retry_after)
            if on_failure is not None:
                on_failure(failure, delay)
            known = {
                "status": failure.status,
                "verb": (failure.info.verb if failure.info else None) or None,
                "resource": (failure.info.full_resource if failure.info else None) or None,
            }
            logger.warning(
                f"{failure.message} — retrying in {_seconds(delay)}",
                kind=failure.kind,
                # What is not known (no status for a refused connection) is left out.
                **{key: value for key, value in known.items() if value is not None},
                attempt=attempt,
                retry_in=round(delay, 3),
            )
            if stop is not None:
                if stop.wait(delay):
                    raise Stopped(failure.message) from error
            else:
                time.sleep(delay)


class NotKubernetesError(urllib3.exceptions.HTTPError):
    """Something answered, but not as a Kubernetes API server does (a wrong port, a proxy, a
    web server): told apart from a refused connection, and retried as one, since whoever
    fixes the address should not have to restart the scheduler."""


_NOT_KUBERNETES_HINT = (
    "check the server address and port in the kubeconfig (a proxy? another service?)"
)


def _version(version_api: Any) -> str:
    """``GET /version`` as the API server answers it: JSON with a ``gitVersion``."""
    try:
        response = version_api.get_code(_request_timeout=10, _preload_content=False)
    except ApiException as error:
        status = int(error.status or 0)
        if status in (0, 401, 403, 429) or status >= 500:
            raise  # the API server's own answers: classified as they are everywhere
        raise NotKubernetesError(
            f"answered GET /version with {status} {error.reason or ''}".rstrip()
            + f": not a Kubernetes API server — {_NOT_KUBERNETES_HINT}"
        ) from None
    body = bytes(response.data or b"")
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("gitVersion"), str):
        kind = response.headers.get("content-type", "") or "no content type"
        raise NotKubernetesError(
            f"answered GET /version with {kind}, not the API server's version document: not a "
            f"Kubernetes API server — {_NOT_KUBERNETES_HINT}"
        )
    return str(document["gitVersion"])


def wait_for_api(
    connection: Connection,
    *,
    stop: threading.Event | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    log: Any = None,
) -> str:
    """Block until the API server answers ``GET /version``; return its git version. Anything
    else that answers (an HTML page, a 404) is reported and retried like a refused
    connection."""
    version_api = k8s.VersionApi(connection.client)
    # No call named: "API server … unreachable: connection refused" says it all here.
    info = RequestInfo("", server=connection.host)
    return retry(
        lambda: _version(version_api),
        stop=stop,
        backoff=backoff,
        info=info,
        server=connection.host,
        log=log,
    )
