"""The few API calls the scheduling loop makes, sent on the raw JSON wire.

The generated ``kubernetes`` client is built for convenience, not for a loop that binds
hundreds of pods a second: importing ``CoreV1Api`` alone costs 0.5–1.5 s of startup (hundreds
of pydantic-validated methods), and every call goes through argument validation, model
conversion of the body and header negotiation before urllib3 sees it — about 40% of a bind's
CPU, measured alone. kube-scheduler's client-go does none of that: it serialises the object
and posts it.

``RawAPI`` offers the calls of ``CoreV1Api``, ``AppsV1Api``, ``EventsV1Api`` and ``PolicyV1Api`` that the
loop uses, under the same names and arguments (so an ``Informer`` takes ``RawAPI.list_node``
where it took ``CoreV1Api.list_node``), and answers the way the generated client answers with
``_preload_content=False``: the urllib3 response on 2xx (for the writes, a ``WireResponse``
read in full, with the same ``status``, ``data`` and ``release_conn()``), ``ApiException``
(with status, reason, body and headers) otherwise. Lists and watches go through the
``ApiClient``'s ``rest_client``; writes go on a kept-alive connection per thread made by
the same urllib3 pool (``keepalive``: a third of the CPU); both use its TLS settings and
timeouts and pass the client-side rate limit that ``connection`` installs, and carry the
client's default headers (User-Agent) and credentials (a bearer token from the
configuration's refresh hook, as the generated client asks it, but at most once a second).
A write given ``_then=callback`` (the loop's bindings, Events and condition patches) is not
waited for: it goes through the ``RawAPI``'s outbox (``outbox``) and ``callback`` gets the
answer — the ``WireResponse``, or the ``ApiException`` or transport error the call would
have raised — where the outbox is pumped. Its body is serialised by orjson (compact, the
same JSON).

What goes on the wire is what kube-scheduler sends (``k8s-wire/06-kube-scheduler-client-
requests.txt``): bodies as given (a Binding keeps ``creationTimestamp: null``, an Event its
``eventTime`` with microseconds), ``Content-Type: application/json`` on POST, strategic merge
for a dict PATCH body and JSON patch for a list, the generated client's query parameters.
``tests/controller/test_rawapi.py`` holds each call's path, query, headers and body equal to
what the generated client sends, apart from these named differences. Only the named methods
are calls (``tests/deploy/test_rbac.py`` derives the RBAC from them through ``MIRRORS``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import orjson
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.keepalive import (
    KeepAliveSender,
    WireResponse,
    timeout_seconds,
    usable,
)
from policyengine.controller.outbox import Answer, Outbox

ACCEPT = "application/json"
JSON_TYPE = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Seconds the credentials read from the configuration are reused (see ``_prepare``).
AUTH_REUSE = 1.0

# Query parameters by the generated client's argument names, in the order it sends them.
_QUERY = (
    ("pretty", "pretty"),
    ("allow_watch_bookmarks", "allowWatchBookmarks"),
    ("_continue", "continue"),
    ("dry_run", "dryRun"),
    ("field_manager", "fieldManager"),
    ("field_selector", "fieldSelector"),
    ("field_validation", "fieldValidation"),
    ("force", "force"),
    ("grace_period_seconds", "gracePeriodSeconds"),
    ("label_selector", "labelSelector"),
    ("limit", "limit"),
    ("orphan_dependents", "orphanDependents"),
    ("propagation_policy", "propagationPolicy"),
    ("resource_version", "resourceVersion"),
    ("resource_version_match", "resourceVersionMatch"),
    ("send_initial_events", "sendInitialEvents"),
    ("timeout_seconds", "timeoutSeconds"),
    ("watch", "watch"),
)
_KNOWN = frozenset(name for name, _ in _QUERY)
# Options the generated methods take that are not query parameters.
_OPTIONS = frozenset({"_preload_content", "_request_timeout", "_then", "async_req", "body"})
_ALLOWED = _KNOWN | _OPTIONS
# The characters ``quote`` never escapes: a name made of them only (every Kubernetes name and
# namespace) is its own quoted form.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return quote(str(value))


def query_string(params: Mapping[str, Any]) -> str:
    """``params`` (the generated client's argument names) as its URL query; None is left out."""
    keys = params.keys()
    if not keys <= _ALLOWED:
        unknown = set(keys) - _ALLOWED
        raise TypeError(f"unsupported query parameter(s): {', '.join(sorted(unknown))}")
    if keys.isdisjoint(_KNOWN):
        return ""  # the writes: only options (timeouts), no query
    return "&".join(
        f"{wire}={_value(params[name])}" for name, wire in _QUERY if params.get(name) is not None
    )


def api_error(response: Any) -> ApiException:
    """The ``ApiException`` (the subclass for its status) the generated client raises for
    the error answer ``response``. ``ApiException.from_response`` raises it rather than
    return it; this returns it, for a caller that hands it on as a value."""
    try:
        ApiException.from_response(http_resp=response, body=None, data=None)
    except ApiException as error:
        return error
    raise AssertionError("ApiException.from_response returned")  # pragma: no cover


def _segment(text: str) -> str:
    text = str(text)
    return text if _UNQUOTED(text) else quote(text, safe="")


class RawAPI:
    """The loop's calls on the raw wire (module docstring)."""

    # The generated API class each call mirrors (same name, path and verb): what
    # ``tests/deploy/test_rbac.py`` reads to derive the RBAC the calls need.
    MIRRORS: ClassVar[dict[str, str]] = {
        "list_node": "CoreV1Api",
        "list_pod_for_all_namespaces": "CoreV1Api",
        "list_pod_disruption_budget_for_all_namespaces": "PolicyV1Api",
        "list_service_for_all_namespaces": "CoreV1Api",
        "list_replication_controller_for_all_namespaces": "CoreV1Api",
        "list_replica_set_for_all_namespaces": "AppsV1Api",
        "list_stateful_set_for_all_namespaces": "AppsV1Api",
        "create_namespaced_pod_binding": "CoreV1Api",
        "patch_namespaced_pod": "CoreV1Api",
        "patch_namespaced_pod_status": "CoreV1Api",
        "delete_namespaced_pod": "CoreV1Api",
        "create_namespaced_event": "EventsV1Api",
        # Storage: the objects VolumeBinding reads, and its binding of claims.
        "list_persistent_volume": "CoreV1Api",
        "list_persistent_volume_claim_for_all_namespaces": "CoreV1Api",
        "list_storage_class": "StorageV1Api",
        "list_csi_node": "StorageV1Api",
        "list_csi_driver": "StorageV1Api",
        "list_csi_storage_capacity_for_all_namespaces": "StorageV1Api",
        "patch_persistent_volume": "CoreV1Api",
        "patch_namespaced_persistent_volume_claim": "CoreV1Api",
    }

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        outbox: Outbox | None = None,
    ) -> None:
        self._client = api_client
        self._sender = KeepAliveSender(api_client) if usable(api_client) else None
        self._outbox = outbox if self._sender is not None else None
        self._clock = clock
        # (until, headers, query) of the credentials last asked of the configuration
        self._auth: tuple[float, dict[str, Any], list[tuple[str, str]]] | None = None

    # ------------------------------------------------------------------ the one request

    def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        *,
        content_type: str | None = None,
        timeout: Any = None,
    ) -> Any:
        """Send one request; the urllib3 response on 2xx (read ``.data``, then
        ``release_conn()``), else ``ApiException`` as the generated client raises it.
        Writes go on the thread's kept-alive connection (``keepalive``) and answer a
        ``WireResponse`` read in full."""
        headers, url = self._prepare(method, path, params, body, content_type)
        client = self._client
        if method != "GET" and self._sender is not None:
            answer = self._sender.send(method, url, headers, body, timeout)
            if not 200 <= answer.status <= 299:
                raise api_error(answer)
            return answer
        response = client.rest_client.request(
            method, url, headers=headers, body=body, _request_timeout=timeout
        )
        if not 200 <= response.status <= 299:
            response.read()
            raise api_error(response)
        return response.response

    def _prepare(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        body: Any,
        content_type: str | None,
    ) -> tuple[dict[str, Any], str]:
        """The request's headers (credentials included) and full URL."""
        headers: dict[str, Any] = {"Accept": ACCEPT}
        if content_type is not None:
            headers["Content-Type"] = content_type
        client = self._client
        headers.update(client.default_headers)
        if client.cookie:
            headers["Cookie"] = client.cookie
        now = self._clock()
        auth = self._auth
        if auth is None or now >= auth[0]:
            # The configuration's refresh hook (a kubeconfig's token, exec plugin or
            # provider; the service account's token file) runs on every ask, about 0.15 ms;
            # the answer is reused for a second, well inside client-go's own token caching.
            fresh: dict[str, Any] = {}
            asked: list[tuple[str, str]] = []
            client.update_params_for_auth(fresh, asked, ["BearerToken"], path, method, body)
            auth = self._auth = (now + AUTH_REUSE, fresh, asked)
        headers.update(auth[1])
        query = auth[2]
        url = client.configuration.host + path
        text = query_string(params or {})
        extra = "&".join(f"{k}={_value(v)}" for k, v in query)
        if text or extra:
            url += "?" + "&".join(part for part in (text, extra) if part)
        return headers, url

    # ------------------------------------------------------------------ lists and watches

    def list_node(self, **params: Any) -> Any:
        return self._request("GET", "/api/v1/nodes", params, timeout=params.get("_request_timeout"))

    def list_pod_for_all_namespaces(self, **params: Any) -> Any:
        return self._request("GET", "/api/v1/pods", params, timeout=params.get("_request_timeout"))

    def list_pod_disruption_budget_for_all_namespaces(self, **params: Any) -> Any:
        return self._request(
            "GET",
            "/apis/policy/v1/poddisruptionbudgets",
            params,
            timeout=params.get("_request_timeout"),
        )

    def list_persistent_volume(self, **params: Any) -> Any:
        return self._list("/api/v1/persistentvolumes", params)

    def list_persistent_volume_claim_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/api/v1/persistentvolumeclaims", params)

    def list_storage_class(self, **params: Any) -> Any:
        return self._list("/apis/storage.k8s.io/v1/storageclasses", params)

    def list_csi_node(self, **params: Any) -> Any:
        return self._list("/apis/storage.k8s.io/v1/csinodes", params)

    def list_csi_driver(self, **params: Any) -> Any:
        return self._list("/apis/storage.k8s.io/v1/csidrivers", params)

    def list_csi_storage_capacity_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/apis/storage.k8s.io/v1/csistoragecapacities", params)

    def list_service_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/api/v1/services", params)

    def list_replication_controller_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/api/v1/replicationcontrollers", params)

    def list_replica_set_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/apis/apps/v1/replicasets", params)

    def list_stateful_set_for_all_namespaces(self, **params: Any) -> Any:
        return self._list("/apis/apps/v1/statefulsets", params)

    def _list(self, path: str, params: Mapping[str, Any]) -> Any:
        return self._request("GET", path, params, timeout=params.get("_request_timeout"))

    # ------------------------------------------------------------------ writes

    def patch_persistent_volume(self, name: str, body: Any, **params: Any) -> Any:
        return self._write("PATCH", f"/api/v1/persistentvolumes/{_segment(name)}", body, params)

    def patch_namespaced_persistent_volume_claim(
        self, name: str, namespace: str, body: Any, **params: Any
    ) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/persistentvolumeclaims/{_segment(name)}"
        return self._write("PATCH", path, body, params)

    def create_namespaced_pod_binding(
        self, name: str, namespace: str, body: Mapping[str, Any], **params: Any
    ) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}/binding"
        return self._write("POST", path, body, params)

    def patch_namespaced_pod(self, name: str, namespace: str, body: Any, **params: Any) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
        return self._write("PATCH", path, body, params)

    def patch_namespaced_pod_status(
        self, name: str, namespace: str, body: Any, **params: Any
    ) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}/status"
        return self._write("PATCH", path, body, params)

    def delete_namespaced_pod(self, name: str, namespace: str, **params: Any) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
        return self._write("DELETE", path, params.get("body"), params)

    def create_namespaced_event(
        self, namespace: str, body: Mapping[str, Any], **params: Any
    ) -> Any:
        path = f"/apis/events.k8s.io/v1/namespaces/{_segment(namespace)}/events"
        return self._write("POST", path, body, params)

    def _write(self, method: str, path: str, body: Any, params: Mapping[str, Any]) -> Any:
        content_type: str | None
        if body is None:
            content_type = None
        elif method == "PATCH":
            content_type = JSON_PATCH if isinstance(body, list) else STRATEGIC_MERGE
        else:
            content_type = JSON_TYPE
        if body is not None and not isinstance(body, Mapping | list):
            # A generated model (V1DeleteOptions and the like): its JSON form.
            body = self._client.sanitize_for_serialization(body)
        then = params.get("_then")
        if then is None:
            return self._request(
                method,
                path,
                params,
                body,
                content_type=content_type,
                timeout=params.get("_request_timeout"),
            )
        params = {k: v for k, v in params.items() if k != "_then"}
        if self._outbox is not None:
            self._later(self._outbox, method, path, params, body, content_type, then)
            return None
        # A client behind a proxy: sent now, ``then`` called before this returns.
        try:
            answer: Answer = self._write(method, path, body, params)
        except Exception as error:
            answer = error
        then(answer)
        return None

    def _later(
        self,
        outbox: Outbox,
        method: str,
        path: str,
        params: Mapping[str, Any],
        body: Any,
        content_type: str | None,
        then: Callable[[Answer], None],
    ) -> None:
        """A write whose answer goes to ``then`` where ``outbox`` is pumped: the 2xx
        ``WireResponse``, else the ``ApiException`` or transport error ``_request`` would
        raise."""
        headers, url = self._prepare(method, path, params, body, content_type)
        # orjson: a tenth of json.dumps's time for an Event; the same JSON, without the
        # blanks after separators.
        data = None if body is None else orjson.dumps(body)

        def done(answer: Answer) -> None:
            if isinstance(answer, WireResponse) and not 200 <= answer.status <= 299:
                answer = api_error(answer)
            then(answer)

        outbox.submit(
            method, url, headers, data, timeout_seconds(params.get("_request_timeout")), done
        )
