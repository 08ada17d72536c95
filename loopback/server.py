"""``LoopbackAPIServer``: the public face of the fake kube-apiserver.

Tests start one on 127.0.0.1 (ephemeral port, background thread), point the real
``kubernetes`` client at it through :meth:`kubeconfig` or :meth:`client_configuration`, seed
and inspect state directly (no HTTP, no fault injection, not recorded), arm faults, and
assert on the recorded requests.  Everything here delegates to the store, the API layer and
the fault injector; this module only decides what a test gets to call.
"""

from __future__ import annotations

import builtins
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import yaml

from . import errors
from .api import API, Binding, Request, ServerConfig
from .errors import APIError
from .faults import Faults, Match, Recorded, RequestLog
from .http import LoopbackHTTPServer
from .resources import Resource, Route, lookup
from .store import Store, clone

JSON = dict[str, Any]
T = TypeVar("T")
# aliases, because the ``list`` method shadows the builtin inside the class body
Objects = list[JSON]
Records = list[Recorded]
Bindings = list[Binding]

BOOTSTRAP_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


def _to_dict(obj: Any) -> JSON:
    """A dict, or a ``kubernetes.client`` model (kind inferred from ``V1ConfigMap`` & co)."""
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        from kubernetes.client import ApiClient

        body: JSON = ApiClient().sanitize_for_serialization(obj)
        m = re.match(r"^(?:[A-Z][a-z]+)?V\d+(?:alpha\d+|beta\d+)?([A-Z]\w*)$", type(obj).__name__)
        if m and not body.get("kind"):
            body["kind"] = m.group(1)
        return body
    raise TypeError(f"cannot store {type(obj).__name__}; pass a dict or a kubernetes model")


def _resource_for(obj: JSON) -> Resource:
    kind = obj.get("kind")
    if not kind:
        raise ValueError("object needs a kind to be seeded")
    api_version = obj.get("apiVersion") or ""
    group = api_version.split("/")[0] if "/" in api_version else ""
    if group:
        try:
            return lookup(f"{kind.lower()}.{group}")
        except KeyError:
            pass
    return lookup(kind)


class LoopbackAPIServer:
    """A kube-apiserver v1.28 look-alike for tests (see the package docstring)."""

    def __init__(
        self,
        *,
        bookmark_interval: float = 60.0,
        bookmark_lead: float = 2.0,
        default_watch_timeout: float = 1800.0,
        too_large_rv_wait: float = 3.0,
        history_limit: int = 100_000,
        user: str = "system:serviceaccount:kube-system:policyengine",
        token: str | None = None,
        terminate_bound_pods_after: float | None = None,
        uninstalled_groups: Iterable[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.config = ServerConfig(
            bookmark_interval=bookmark_interval,
            bookmark_lead=bookmark_lead,
            default_watch_timeout=default_watch_timeout,
            too_large_rv_wait=too_large_rv_wait,
            user=user,
            token=token,
            terminate_bound_pods_after=terminate_bound_pods_after,
            uninstalled_groups=frozenset(uninstalled_groups),
        )
        self.store = Store(history_limit)
        self.faults = Faults()
        self.log = RequestLog()
        self.api = API(self.store, self.faults, self.log, self.config)
        self.api.on_graceful_delete = self._graceful_delete
        self._host, self._port = host, port
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timers: list[threading.Timer] = []
        for name in BOOTSTRAP_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self.store.cache_floor = self.store.rv

    # ================================================================ lifecycle

    def start(self) -> LoopbackAPIServer:
        if self._httpd is not None:
            return self
        self._httpd = LoopbackHTTPServer((self._host, self._port), self.api)
        self._port = self._httpd.server_address[1]
        self.api.server_address = f"{self._host}:{self._port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"loopback-apiserver-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._httpd is None:
            return
        self.store.shutdown()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> LoopbackAPIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def crashes(self) -> list[str]:
        """Tracebacks of exceptions inside the fake (each was answered with a 500)."""
        return list(self._httpd.crashes) if self._httpd is not None else []

    # ================================================================ client wiring

    def kubeconfig(
        self, path: str | Path, *, namespace: str = "default", context: str = "loopback"
    ) -> Path:
        """Write a kubeconfig for this server and return its path."""
        user: JSON = {"token": self.config.token or "loopback-token"}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
            "preferences": {},
        }
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(doc, sort_keys=False))
        return target

    def client_configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` for this server."""
        from kubernetes import client

        cfg = client.Configuration(host=self.url)
        cfg.api_key = {"authorization": self.config.token or "loopback-token"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return cfg

    def api_client(self) -> Any:
        from kubernetes import client

        return client.ApiClient(self.client_configuration())

    # ================================================================ seeding and inspection

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion (etcd revision)."""
        return self.store.rv

    def create(self, obj: Any) -> JSON:
        """Store an object directly (defaulted like a create, but status is kept as given,
        missing namespaces are created, no managedFields).  Returns the stored object."""
        body = _to_dict(obj)
        res = _resource_for(body)
        # the API's answers share parts with the stored objects; a test may change its copy
        return clone(self.api.create_object(res, body, manager="loopback-apiserver", seeding=True))

    def create_all(self, objs: Iterable[Any]) -> list[JSON]:
        out = []
        for obj in objs:
            body = _to_dict(obj)
            if body.get("kind", "").endswith("List") and "items" in body:
                out.extend(self.create_all(body["items"]))
            else:
                out.append(self.create(body))
        return out

    def load_yaml(self, text: str) -> list[JSON]:
        """Seed every object of a (multi-document, possibly ``kind: List``) YAML text."""
        return self.create_all(doc for doc in yaml.safe_load_all(text) if doc)

    def get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        res = lookup(kind)
        obj = self.store.get(res.key, (namespace or "" if res.namespaced else "", name))
        return self.api.view(res, obj) if obj is not None else None

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JSON]:
        res = lookup(kind)
        query: dict[str, builtins.list[str]] = {}
        if label_selector:
            query["labelSelector"] = [label_selector]
        if field_selector:
            query["fieldSelector"] = [field_selector]
        req = Request("GET", "", query, {})
        route = Route(resource=res, namespace=namespace or "")
        result = self.api.list_objects(res, route, req)
        return [
            clone(self.api.view(res, {**item, "kind": res.kind, "apiVersion": res.api_version}))
            for item in result["items"]
        ]

    def update(self, obj: Any) -> JSON:
        """Replace an object directly, status included (a MODIFIED event, no preconditions)."""
        body = _to_dict(obj)
        res = _resource_for(body)
        meta = body.get("metadata") or {}
        with self.store.lock:
            existing = self.store.get(
                res.key, (meta.get("namespace", "") if res.namespaced else "", meta["name"])
            )
            if existing is None:
                raise errors.not_found(res.plural, meta["name"], res.group)
            return clone(self.api.write_update(res, existing, body, "", None, seeding=True))

    def set_status(self, kind: str, namespace: str | None, name: str, status: JSON) -> JSON:
        """Merge ``status`` into an object's status (e.g. a pod's phase) as a kubelet would."""
        res = lookup(kind)
        with self.store.lock:
            existing = self.store.get(res.key, (namespace or "", name))
            if existing is None:
                raise errors.not_found(res.plural, name, res.group)
            view = self.api.view(res, existing)
            view["status"] = {**(view.get("status") or {}), **status}
            return clone(self.api.write_update(res, existing, view, "status", None, seeding=True))

    def delete(
        self, kind: str, namespace: str | None, name: str, *, grace_period_seconds: int | None = 0
    ) -> JSON | None:
        """Delete directly.  The default grace 0 removes even a bound pod at once; pass
        ``None`` for the API's graceful behaviour.  Returns None when nothing was there."""
        res = lookup(kind)
        with self.store.lock:
            existing = self.store.get(res.key, (namespace or "", name))
            if existing is None:
                return None
            return clone(self.api.delete_object(res, existing, grace_period_seconds))

    def bind(self, namespace: str, name: str, node: str) -> None:
        """Bind a pod directly, with the apiserver's binding rules (raises APIError)."""
        self.api.bind_pod(namespace, name, node)

    def bindings(self) -> Bindings:
        """Every successful binding (HTTP or direct), in order."""
        with self.api._bind_lock:
            return list(self.api.bindings)

    def binding_count(self) -> int:
        """How many bindings succeeded so far (what a poller needs, without a copy)."""
        with self.api._bind_lock:
            return len(self.api.bindings)

    def bound_nodes(self) -> dict[str, str]:
        """``{"ns/pod": node}`` for every successful binding."""
        return {f"{b.namespace}/{b.name}": b.node for b in self.bindings()}

    def events(
        self, *, reason: str | None = None, regarding: str | None = None, core: bool = False
    ) -> Objects:
        """Stored Events (events.k8s.io/v1 view, or core/v1 with ``core=True``)."""
        res = lookup("events" if core else "events.events.k8s.io")
        out = []
        for obj in self.store.items(res.key):
            view = self.api.view(res, obj)
            ref = view.get("involvedObject" if core else "regarding") or {}
            if reason is not None and view.get("reason") != reason:
                continue
            if regarding is not None and ref.get("name") != regarding:
                continue
            out.append(view)
        return out

    def finish_pod_deletions(self) -> int:
        """Play kubelet: remove every pod that is gracefully terminating.  Returns how many."""
        count = 0
        for pod in self.store.items("pods"):
            if pod["metadata"].get("deletionTimestamp"):
                count += self.api.finish_pod_deletion(
                    pod["metadata"]["namespace"], pod["metadata"]["name"]
                )
        return count

    def _graceful_delete(self, res: Resource, namespace: str, name: str) -> None:
        after = self.config.terminate_bound_pods_after
        if after is None:
            return
        timer = threading.Timer(after, self.api.finish_pod_deletion, args=(namespace, name))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    # ================================================================ recorded traffic

    def requests(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        method: str | None = None,
        status: int | None = None,
    ) -> Records:
        """Recorded requests matching every given filter, oldest first."""
        plural = _plural(resource)
        out = []
        for rec in self.log.all():
            if verb is not None and rec.verb != verb:
                continue
            if plural is not None and rec.resource != plural:
                continue
            if subresource is not None and rec.subresource != subresource:
                continue
            if namespace is not None and rec.namespace != namespace:
                continue
            if name is not None and rec.name != name:
                continue
            if method is not None and rec.method != method.upper():
                continue
            if status is not None and rec.status != status:
                continue
            out.append(rec)
        return out

    def count(self, **filters: Any) -> int:
        return len(self.requests(**filters))

    def binding_requests(self) -> Records:
        return [
            r
            for r in self.requests(verb="create")
            if r.subresource == "binding" or r.resource == "bindings"
        ]

    def clear_requests(self) -> None:
        self.log.clear()

    def open_watches(self, resource: str | None = None) -> int:
        with self.store.lock:
            if resource is None:
                return len(self.store.watchers)
            key = lookup(resource).key
            return sum(1 for w in self.store.watchers if w.storage == key)

    def wait_for(
        self, predicate: Callable[[], T], timeout: float = 5.0, interval: float = 0.01
    ) -> T:
        """Poll ``predicate`` until it returns something truthy; raise TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout}s")
            time.sleep(interval)

    def wait_for_watch(self, resource: str, count: int = 1, timeout: float = 5.0) -> None:
        self.wait_for(lambda: self.open_watches(resource) >= count, timeout)

    # ================================================================ faults

    def fail_next(
        self,
        n: int = 1,
        *,
        code: int = 500,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        retry_after: int | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``n`` matching requests with ``code`` (500 InternalError, 429
        TooManyRequests with Retry-After, 503, 409, ...) instead of serving them."""
        match = Match(verb, _plural(resource), subresource, namespace, name)
        self.faults.fail(match, times=n, code=code, retry_after=retry_after, message=message)

    def fail_always(self, *, code: int = 500, **match: Any) -> None:
        retry_after = match.pop("retry_after", None)
        message = match.pop("message", None)
        m = Match(
            match.get("verb"),
            _plural(match.get("resource")),
            match.get("subresource"),
            match.get("namespace"),
            match.get("name"),
        )
        self.faults.fail(m, times=None, code=code, retry_after=retry_after, message=message)

    def throttle_next(self, n: int = 1, *, retry_after: int = 1, **match: Any) -> None:
        """429 TooManyRequests with ``Retry-After`` for the next ``n`` matching requests."""
        self.fail_next(n, code=429, retry_after=retry_after, **match)

    def forbid(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        user: str | None = None,
    ) -> None:
        """RBAC-deny matching requests with the real 403 message until :meth:`clear_faults`."""
        self.faults.forbid(Match(verb, _plural(resource), subresource, namespace, name), user)

    def delay(self, seconds: float, *, times: int | None = None, **match: Any) -> None:
        """Sleep ``seconds`` before serving matching requests (the request still succeeds)."""
        m = Match(
            match.get("verb"),
            _plural(match.get("resource")),
            match.get("subresource"),
            match.get("namespace"),
            match.get("name"),
        )
        self.faults.delay(m, seconds, times)

    def delay_binds(self, seconds: float, *, times: int | None = None) -> None:
        self.delay(seconds, times=times, verb="create", resource="pods", subresource="binding")

    def drop_watches(self, resource: str | None = None, *, graceful: bool = False) -> int:
        """Close open watches: by default cut the TCP connection mid-stream (the client sees a
        protocol error); ``graceful=True`` ends them cleanly as a timeout would."""
        key = lookup(resource).key if resource else None
        return self.store.drop_watches(key, "graceful" if graceful else "abrupt")

    def expire_history(self, rv: int | None = None) -> int:
        """Compact history up to ``rv`` (default: now), as ``etcdctl compact`` plus an apiserver
        restart do: watches from older RVs get the 410 ERROR event, exact lists and old
        continue tokens get 410.  Returns the oldest RV still servable."""
        return self.store.compact(rv)

    compact = expire_history

    def require_token(self, token: str | None) -> None:
        """Answer 401 Unauthorized unless ``Authorization: Bearer <token>`` (None: no auth)."""
        self.config.token = token

    def clear_faults(self) -> None:
        self.faults.clear()

    def uninstall_group(self, group: str) -> None:
        """Serve ``group`` as a cluster without its CRD does: 404 on every path under it (the
        objects stay stored, and come back with ``install_group``)."""
        self.config.uninstalled_groups = self.config.uninstalled_groups | {group}

    def install_group(self, group: str) -> None:
        """Serve ``group`` again (its CRD was installed)."""
        self.config.uninstalled_groups = self.config.uninstalled_groups - {group}


def _plural(resource: str | None) -> str | None:
    if resource is None:
        return None
    try:
        return lookup(resource).plural
    except KeyError:
        return resource


__all__ = ["APIError", "Binding", "LoopbackAPIServer"]
