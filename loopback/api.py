"""The verbs: what each request does to the store and what it answers.

This module is the apiserver's REST layer without the HTTP: it resolves a request to
(verb, resource, subresource, namespace, name), applies fault injection, and runs the same
registry rules the captures show (create defaulting, optimistic concurrency, status
subresources, graceful pod deletion, binding, list RV semantics and paging, watch replay with
bookmarks and 410).  :mod:`loopback.http` only frames what this returns.
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import yaml

from . import errors, kinds, managedfields, selectors
from .errors import APIError, Cause
from .faults import Faults, Recorded, RequestInfo, RequestLog
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .resources import GROUP_VERSIONS, RESOURCES, Resource, Route, lookup, parse_path
from .store import Change, Store, Watcher, WatchExpired, clone

JSON = dict[str, Any]

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


@dataclass
class ServerConfig:
    """Knobs of the loopback server (defaults are the real apiserver's where it has one)."""

    bookmark_interval: float = 60.0
    bookmark_lead: float = 2.0
    default_watch_timeout: float = 1800.0
    too_large_rv_wait: float = 3.0
    user: str = "system:serviceaccount:kube-system:policyengine"
    token: str | None = None
    terminate_bound_pods_after: float | None = None
    version: str = "v1.28.7"
    # API groups whose CRDs are not installed: every path under them is 404, as on a cluster
    # without the CRD (podgroups without scheduler-plugins).
    uninstalled_groups: frozenset[str] = frozenset()


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes = b""

    def q(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass
class WatchResponse:
    """A streaming answer: each item is one NDJSON line; ``None`` means cut the connection."""

    lines: Iterator[bytes | None]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Binding:
    """A successful pod binding, as recorded for :meth:`LoopbackAPIServer.bindings`."""

    namespace: str
    name: str
    uid: str
    node: str
    resource_version: str
    time: float


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# uuid4() reads os.urandom, a system call that lets other threads in on every response's
# Audit-Id; a private generator (seeded from urandom once, untouched by random.seed) does not.
_uuid_rng = random.Random()


# the bits ``uuid.UUID(int=..., version=4)`` clears, and sets: RFC 4122 variant, version 4
_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` without building the UUID."""
    text = f"{(bits & _UUID4_CLEAR) | _UUID4_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def random_uuid() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` spells it."""
    return uuid4_text(_uuid_rng.getrandbits(128))


def _random_suffix() -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(random.choice(alphabet) for _ in range(5))


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class API:
    def __init__(self, store: Store, faults: Faults, log: RequestLog, config: ServerConfig) -> None:
        self.store = store
        self.faults = faults
        self.log = log
        self.config = config
        self.bindings: list[Binding] = []
        self._bind_lock = threading.Lock()
        self.on_graceful_delete: Callable[[Resource, str, str], None] | None = None
        self.server_address = ""

    # ================================================================ entry point

    def handle(self, req: Request) -> Response | WatchResponse:
        record = Recorded(req.method, req.path, req.query, dict(req.headers), req.body)
        self.log.add(record)
        try:
            result = self._dispatch(req, record)
        except APIError as err:
            result = Response(err.code, err.body, err.headers)
        record.status = result.status if isinstance(result, Response) else 200
        return result

    def _dispatch(self, req: Request, record: Recorded) -> Response | WatchResponse:
        if self.config.token is not None:
            auth = req.headers.get("authorization", "")
            if auth != f"Bearer {self.config.token}":
                raise errors.unauthorized()
        route = parse_path(req.path)
        if route is None or (route.group and route.group in self.config.uninstalled_groups):
            raise errors.unknown_path()
        if route.discovery:
            return self._discovery(route, req)
        assert route.resource is not None
        res = route.resource
        verb = self._verb(req, route)
        record.verb, record.resource, record.subresource = verb, res.plural, route.subresource
        record.namespace, record.name = route.namespace, route.name
        # like the apiserver's RequestInfoFactory, a namespace object is "in" its own namespace
        scope_ns = route.name if res.plural == "namespaces" else route.namespace
        info = RequestInfo(
            verb, res.plural, res.ident, route.subresource, scope_ns, route.name, res.group
        )
        injected = self.faults.check(info, self.config.user)
        if injected is not None:
            raise injected
        pause = self.faults.delay_for(info)
        if pause > 0:
            time.sleep(pause)
        if verb == "watch":
            return self.watch(res, route, req)
        if verb == "list":
            return Response(200, self.list_objects(res, route, req))
        if verb == "get":
            return Response(200, self.get(res, route))
        if verb == "create":
            if res.plural == "bindings" or route.subresource == "binding":
                return self.bind(res, route, req)
            return self.create(res, route, req)
        if verb == "update":
            return self.update(res, route, req)
        if verb == "patch":
            return self.patch(res, route, req)
        if verb == "delete":
            return self.delete(res, route, req)
        if verb == "deletecollection":
            return self.delete_collection(res, route, req)
        raise errors.method_not_allowed()

    @staticmethod
    def _verb(req: Request, route: Route) -> str:
        method = req.method.upper()
        item = bool(route.name)
        if method in ("GET", "HEAD"):
            if route.watch_path or _flag(req.q("watch")):
                return "watch"
            return "get" if item else "list"
        if method == "POST":
            if route.subresource == "binding" or (
                route.resource and route.resource.plural == "bindings" and not item
            ):
                return "create"
            if item:
                raise errors.method_not_allowed()
            return "create"
        if method == "PUT":
            if not item:
                raise errors.method_not_allowed()
            return "update"
        if method == "PATCH":
            if not item:
                raise errors.method_not_allowed()
            return "patch"
        if method == "DELETE":
            return "delete" if item else "deletecollection"
        raise errors.method_not_allowed()

    # ================================================================ views

    def view(self, res: Resource, obj: JSON, *, item: bool = False) -> JSON:
        """The stored object as ``res``'s API version shows it."""
        if res.key == "events":
            out = (
                kinds.event_core_to_v1(obj)
                if res.group == "events.k8s.io"
                else kinds.core_event_shape(obj)
            )
        else:
            out = {"kind": res.kind, "apiVersion": res.api_version}
            out.update({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})
        out["metadata"] = kinds.ordered_metadata(out.get("metadata") or {})
        if item:
            out.pop("kind", None)
            out.pop("apiVersion", None)
        return out

    @staticmethod
    def internal(res: Resource, obj: JSON) -> JSON:
        if res.key == "events":
            if res.group == "events.k8s.io":
                return kinds.event_v1_to_core(obj)
            return kinds.core_event_shape(obj)
        out = dict(obj)
        out["kind"], out["apiVersion"] = res.kind, res.api_version
        return out

    # ================================================================ bodies

    def _parse_body(self, res: Resource, req: Request, *, patch: bool = False) -> Any:
        ctype = req.content_type
        raw = req.body or b""
        if (
            not patch
            and ctype
            and ctype not in ("application/json", "application/yaml", "text/yaml", "*/*")
        ):
            raise errors.unsupported_media(
                ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
            )
        text = raw.decode("utf-8", "replace")
        if ctype in ("application/yaml", "text/yaml", "application/apply-patch+yaml"):
            try:
                return yaml.safe_load(text) if text.strip() else None
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error converting YAML to JSON: {exc}") from None
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as exc:
            excerpt = text if len(text) <= 30 else text[:30] + " ..."
            pos = exc.pos if isinstance(exc, json.JSONDecodeError) else len(text)
            why = (
                "unexpected end of JSON input"
                if pos >= len(text.rstrip())
                else f"invalid character {text[pos]!r} looking for beginning of value"
            )
            if patch:
                raise errors.bad_request(why) from None
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {res.kind}): "
                f"couldn't get version/kind; json parse error: {why} ({excerpt})"
            ) from None

    def _object_body(self, res: Resource, req: Request, expect_kind: str | None = None) -> JSON:
        body = self._parse_body(res, req)
        kind = expect_kind or res.kind
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind})"
            )
        want_version = "v1" if expect_kind == "Binding" else res.api_version
        if body.get("apiVersion") and body["apiVersion"] != want_version:
            raise errors.bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version ({want_version})"
            )
        if body.get("kind") and body["kind"] != kind:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {body['kind']}"
            )
        body["kind"], body["apiVersion"] = kind, want_version
        if not isinstance(body.get("metadata"), dict):
            body["metadata"] = {}
        return body

    @staticmethod
    def _manager(req: Request | None, default: str = "loopback-apiserver") -> str:
        if req is None:
            return default
        explicit = req.q("fieldManager")
        if explicit:
            return explicit
        agent = req.headers.get("user-agent", "")
        return agent.split("/")[0] if agent else "unknown"

    # ================================================================ create

    def create(self, res: Resource, route: Route, req: Request) -> Response:
        body = self._object_body(res, req)
        meta = body["metadata"]
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = route.namespace
        dry = req.q("dryRun") == "All"
        stored = self.create_object(
            res, body, manager=self._manager(req), seeding=False, dry_run=dry
        )
        return Response(201, stored)

    def create_object(
        self, res: Resource, body: JSON, *, manager: str, seeding: bool, dry_run: bool = False
    ) -> JSON:
        obj = clone(body)
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace", "") if res.namespaced else ""
        if not res.namespaced:
            meta.pop("namespace", None)
        if res.namespaced and not namespace:
            namespace = meta["namespace"] = "default"
        if res.namespaced and self.store.peek("namespaces", ("", namespace)) is None:
            if not seeding:
                raise errors.not_found("namespaces", namespace)
            self.create_object(
                lookup("namespaces"),
                {"metadata": {"name": namespace}},
                manager=manager,
                seeding=True,
            )
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + _random_suffix()
        name = meta.get("name", "")
        if not name:
            raise errors.invalid(
                res.kind,
                "",
                [Cause("metadata.name", "Required value", "name or generateName is required")],
                res.kind,
            )
        if meta.get("resourceVersion") and not seeding:
            raise errors.internal_error(
                "resourceVersion should not be set on objects to be created"
            )
        kept = {k: meta[k] for k in ("uid", "creationTimestamp") if seeding and meta.get(k)}
        for drop in (
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ):
            meta.pop(drop, None)
        now = kinds.utcnow()
        meta["uid"] = kept.get("uid") or random_uuid()
        meta["creationTimestamp"] = kept.get("creationTimestamp") or kinds.fmt_time(now)
        if res.generation:
            meta["generation"] = 1
        if not res.custom:
            obj = kinds.normalize_times(obj)
            meta = obj["metadata"]
        obj = self._default(res, obj, create=True, seeding=seeding)
        causes = kinds.validate(res.kind, res.api_version, obj)
        if causes:
            raise errors.invalid(res.kind, name, causes, res.kind)
        key = (namespace, name)
        if self.store.peek(res.key, key) is not None:
            raise errors.already_exists(res.plural, name, res.group)
        if not seeding:
            zero = managedfields.zero_object(res.kind, res.api_version, res.custom)
            obj["metadata"]["managedFields"] = managedfields.record(
                None,
                old=zero,
                new=obj,
                manager=manager,
                api_version=res.api_version,
                subresource="",
                has_status=res.has_status,
                now=kinds.fmt_time(now),
            )
        if res.plural == "pods":
            obj = kinds.admit_pod(obj, self._priority_classes())
        internal = self.internal(res, obj)
        if dry_run:
            return self.view(res, internal)
        with self.store.lock:
            if self.store.peek(res.key, key) is not None:
                raise errors.already_exists(res.plural, name, res.group)
            # ``internal`` was built from a copy of the body: the store may keep it as it is
            stored = self.store.commit("ADDED", res.key, key, internal, None, owned=True)
        return self.view(res, stored)

    def _priority_classes(self) -> dict[str, JSON]:
        return {
            pc["metadata"]["name"]: pc
            for pc in self.store.items("priorityclasses.scheduling.k8s.io")
        }

    def _default(self, res: Resource, obj: JSON, *, create: bool, seeding: bool) -> JSON:
        kind = res.kind
        if res.plural == "pods":
            status = obj.get("status")
            obj = kinds.default_pod(obj)
            if create:
                base = kinds.pod_create_status(obj)
                if seeding and isinstance(status, dict):
                    base.update(status)
                obj["status"] = kinds.order_pod_status(base)
        elif kind == "Node":
            obj.setdefault("spec", {})
            obj["status"] = kinds.default_node_status(obj.get("status"))
        elif kind == "Namespace" and create:
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
            labels = obj["metadata"].setdefault("labels", {})
            labels.setdefault("kubernetes.io/metadata.name", obj["metadata"]["name"])
        elif kind == "PodDisruptionBudget" and create and not seeding:
            obj["status"] = {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            }
        elif res.custom and create and not seeding:
            obj.pop("status", None)
        return obj

    # ================================================================ get / list

    def get(self, res: Resource, route: Route) -> JSON:
        obj = self.store.get(res.key, (route.namespace, route.name))
        if obj is None:
            raise errors.not_found(res.plural, route.name, res.group)
        return self.view(res, obj)

    def _selectors(self, res: Resource, req: Request, route: Route) -> Callable[[JSON], bool]:
        labels, fields = selectors.check_selectors(
            req.q("labelSelector"), req.q("fieldSelector"), res.ident, res.namespaced
        )
        if route.name:
            fields.append(selectors.FieldRequirement("metadata.name", "=", route.name))
        namespace = route.namespace

        def passes(view: JSON) -> bool:
            if namespace and (view.get("metadata") or {}).get("namespace") != namespace:
                return False
            if labels and not selectors.labels_match(labels, view):
                return False
            return not fields or selectors.object_fields_match(fields, res.ident, view)

        return passes

    def _check_list_options(self, req: Request) -> tuple[str | None, str | None]:
        rv, match = req.q("resourceVersion"), req.q("resourceVersionMatch")
        if match and not rv:
            raise errors.invalid_options(
                "ListOptions",
                [
                    Cause(
                        "resourceVersionMatch",
                        "Forbidden",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                ],
            )
        if match and match not in ("Exact", "NotOlderThan"):
            raise errors.invalid_options(
                "ListOptions",
                [
                    Cause(
                        "resourceVersionMatch",
                        "Unsupported value",
                        'supported values: "Exact", "NotOlderThan"',
                        match,
                        True,
                    )
                ],
            )
        if match == "Exact" and rv == "0":
            raise errors.invalid_options(
                "ListOptions",
                [
                    Cause(
                        "resourceVersionMatch",
                        "Forbidden",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                ],
            )
        if rv:
            try:
                if int(rv) < 0:
                    raise ValueError
            except ValueError:
                raise errors.bad_request(
                    f'invalid resource version: strconv.ParseUint: parsing "{rv}": invalid syntax'
                ) from None
        return rv, match

    @staticmethod
    def _key_str(route: Route, res: Resource, key: tuple[str, str]) -> str:
        if res.namespaced and not route.namespace:
            return f"{key[0]}/{key[1]}"
        return key[1]

    @staticmethod
    def encode_continue(rv: int, start: str) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def decode_continue(token: str) -> tuple[int, str]:
        try:
            padded = token + "=" * (-len(token) % 4)
            data = json.loads(base64.urlsafe_b64decode(padded.encode()))
            if data.get("v") != "meta.k8s.io/v1":
                raise ValueError
            return int(data["rv"]), str(data["start"])
        except (ValueError, KeyError, TypeError):
            raise errors.bad_request(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            ) from None

    def _wait_for_cache(self, storage: str, wanted: int) -> None:
        deadline = time.monotonic() + self.config.too_large_rv_wait
        with self.store.cond:
            while self.store.cache_rv(storage) < wanted:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.store.stopping:
                    raise errors.too_large_rv(wanted, self.store.cache_rv(storage))
                self.store.cond.wait(remaining)

    def list_objects(self, res: Resource, route: Route, req: Request) -> JSON:
        rv, match = self._check_list_options(req)
        passes = self._selectors(res, req, route)
        has_selector = bool(req.q("labelSelector") or req.q("fieldSelector"))
        token = req.q("continue")
        try:
            limit = int(req.q("limit") or 0)
        except ValueError:
            raise errors.bad_request("invalid limit") from None
        start = ""
        paged = limit > 0
        if token:
            if rv:
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            token_rv, start = self.decode_continue(token)
            with self.store.lock:
                if token_rv == -1:
                    snapshot, list_rv = self._current(res), self.store.rv
                elif token_rv < self.store.compacted_rv:
                    fresh = self.encode_continue(-1, start)
                    raise errors.expired(errors.CONTINUE_TOO_OLD, metadata={"continue": fresh})
                else:
                    snapshot, list_rv = self.store.state_at(res.key, token_rv), token_rv
        elif not rv:
            with self.store.lock:
                snapshot, list_rv = self._current(res), self.store.rv
        elif match == "Exact":
            wanted = int(rv)
            with self.store.lock:
                if wanted > self.store.rv:
                    raise errors.too_large_rv(wanted, self.store.rv)
                snapshot, list_rv = self.store.state_at(res.key, wanted), wanted
        else:
            wanted = int(rv)
            if wanted == 0 or not paged:
                if wanted:
                    self._wait_for_cache(res.key, wanted)
                with self.store.lock:
                    snapshot, list_rv = self._current(res), self.store.cache_rv(res.key)
                paged = False  # the watch cache ignores limit
            else:
                with self.store.lock:
                    if wanted > self.store.rv:
                        raise errors.too_large_rv(wanted, self.store.rv)
                    snapshot, list_rv = self._current(res), self.store.rv
        keys = sorted(snapshot)
        # As in a watch, selectors read a stored object as they read its view (Events
        # apart): only the rows of this page are viewed.
        raw = res.key != "events"
        rows = []
        for key in keys:
            if start and self._key_str(route, res, key) <= start:
                continue
            obj = snapshot[key] if raw else self.view(res, snapshot[key])
            if passes(obj):
                rows.append((key, obj))
        meta: JSON = {"resourceVersion": str(list_rv)}
        if paged and len(rows) > limit:
            last = rows[limit - 1][0]
            meta["continue"] = self.encode_continue(
                list_rv, self._key_str(route, res, last) + "\x00"
            )
            if not has_selector:
                meta["remainingItemCount"] = len(rows) - limit
            rows = rows[:limit]
        items = []
        for _, obj in rows:
            view = self.view(res, obj) if raw else obj
            if res.custom:
                # A custom resource's list is unstructured: its items keep apiVersion and kind,
                # ListMeta's setters write "continue" even when empty, and Go marshals the
                # map with its keys sorted.
                items.append({"apiVersion": res.api_version, "kind": res.kind, **view})
                continue
            view.pop("kind", None)
            view.pop("apiVersion", None)
            items.append(view)
        if res.custom:
            meta = {"continue": "", **meta}
            return {
                "apiVersion": res.api_version,
                "items": items,
                "kind": res.list_kind,
                "metadata": dict(sorted(meta.items())),
            }
        return {
            "kind": res.list_kind,
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": items,
        }

    def _current(self, res: Resource) -> dict[tuple[str, str], JSON]:
        return {k: v for k, v in self.store.objects.get(res.key, {}).items()}

    # ================================================================ watch

    def watch(self, res: Resource, route: Route, req: Request) -> WatchResponse:
        passes = self._selectors(res, req, route)
        rv = req.q("resourceVersion")
        if rv:
            try:
                int(rv)
            except ValueError:
                raise errors.bad_request(
                    f'invalid resource version: strconv.ParseUint: parsing "{rv}": invalid syntax'
                ) from None
        timeout_text = req.q("timeoutSeconds")
        try:
            timeout = float(timeout_text) if timeout_text else 0.0
        except ValueError:
            raise errors.bad_request(f"invalid timeoutSeconds: {timeout_text}") from None
        if timeout <= 0:
            timeout = self.config.default_watch_timeout
        bookmarks = _flag(req.q("allowWatchBookmarks"))
        start = None if rv in (None, "", "0") else int(rv)
        info = {"path": req.path, "resource": res.ident, "namespace": route.namespace}
        try:
            initial, watcher = self.store.open_watch(res.key, start, info)
        except WatchExpired as exp:
            line = (
                dumps({"type": "ERROR", "object": errors.watch_expired(exp.asked, exp.oldest)})
                + b"\n"
            )
            return WatchResponse(iter([line]))
        return WatchResponse(self._stream(res, watcher, initial, passes, timeout, bookmarks))

    def _event_line(
        self, res: Resource, change: Change, passes: Callable[[JSON], bool]
    ) -> bytes | None:
        """The cacher's rule: an object entering the selection is ADDED, leaving it DELETED
        (the previous state at the new RV), staying in it MODIFIED."""
        # Selectors read the same values in a stored object as in its view, but for Events,
        # whose two API versions name their fields differently: view only what is sent.
        raw = res.key != "events"
        cur = change.obj if change.type != "DELETED" else None
        if cur is not None and not raw:
            cur = self.view(res, cur)
        cur_ok = cur is not None and passes(cur)
        prev = change.prev
        if prev is not None and not raw:
            prev = self.view(res, prev)
        old_ok = prev is not None and passes(prev)
        if cur_ok and cur is not None:
            kind, obj = ("MODIFIED" if old_ok else "ADDED"), self.view(res, cur) if raw else cur
        elif old_ok and prev is not None:
            kind, obj = "DELETED", self.view(res, prev) if raw else prev
            obj["metadata"]["resourceVersion"] = str(change.rv)
        else:
            return None
        return dumps({"type": kind, "object": obj}) + b"\n"

    def bookmark_object(self, res: Resource, rv: int) -> JSON:
        obj: JSON = {"kind": res.kind, "apiVersion": res.api_version}
        if res.custom:
            obj["metadata"] = {"resourceVersion": str(rv)}
            return obj
        zero = managedfields.zero_object(res.kind, res.api_version, False)
        if res.kind == "Node":
            zero["status"] = kinds.default_node_status({})
        obj["metadata"] = {"resourceVersion": str(rv), "creationTimestamp": None}
        for k, v in zero.items():
            if k != "metadata":
                obj[k] = v
        if res.key == "events" and res.group != "events.k8s.io":
            obj = {
                "kind": "Event",
                "apiVersion": "v1",
                **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
            }
        return obj

    def _next_bookmark(self, now: float, deadline: float) -> float | None:
        at = min(now + self.config.bookmark_interval, deadline - self.config.bookmark_lead)
        return at if at > now else None

    def _stream(
        self,
        res: Resource,
        watcher: Watcher,
        initial: list[Change],
        passes: Callable[[JSON], bool],
        timeout: float,
        bookmarks: bool,
    ) -> Iterator[bytes | None]:
        store = self.store
        try:
            for change in initial:
                line = self._event_line(res, change, passes)
                if line:
                    yield line
            started = time.monotonic()
            deadline = started + timeout
            next_bm = self._next_bookmark(started, deadline) if bookmarks else None
            while True:
                with watcher.cond:
                    while not watcher.queue and not watcher.closed and not store.stopping:
                        wake = deadline if next_bm is None else min(deadline, next_bm)
                        remaining = wake - time.monotonic()
                        if remaining <= 0:
                            break
                        watcher.cond.wait(remaining)
                    changes = list(watcher.queue)
                    watcher.queue.clear()
                    closed = watcher.closed or ("graceful" if store.stopping else "")
                for change in changes:
                    line = self._event_line(res, change, passes)
                    if line:
                        yield line
                if closed == "abrupt":
                    yield None
                    return
                if closed:
                    return
                now = time.monotonic()
                if now >= deadline:
                    return
                if next_bm is not None and now >= next_bm:
                    rv = store.cache_rv(res.key)
                    if rv > watcher.start_rv:  # the cacher never sends a bookmark at the start RV
                        yield (
                            dumps({"type": "BOOKMARK", "object": self.bookmark_object(res, rv)})
                            + b"\n"
                        )
                    next_bm = self._next_bookmark(now, deadline)
        finally:
            store.close_watch(watcher)

    # ================================================================ update / patch

    def update(self, res: Resource, route: Route, req: Request) -> Response:
        body = self._object_body(res, req)
        meta = body["metadata"]
        if meta.get("name") and meta["name"] != route.name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({route.name})"
            )
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = route.namespace
        meta["name"] = route.name
        manager = self._manager(req)
        dry = req.q("dryRun") == "All"
        with self.store.lock:
            existing = self.store.peek(res.key, (route.namespace, route.name))  # read-only
            if existing is None:
                if res.create_on_update and not route.subresource:
                    meta.pop("resourceVersion", None)
                    return Response(
                        201,
                        self.create_object(res, body, manager=manager, seeding=False, dry_run=dry),
                    )
                raise errors.not_found(res.plural, route.name, res.group)
            rv = str(meta.get("resourceVersion") or "")
            if not rv and not res.unconditional_update:
                cause = Cause(
                    "metadata.resourceVersion",
                    "Invalid value",
                    "must be specified for an update",
                    value_text="0x0",
                )
                raise errors.invalid(
                    errors.qualified(res.plural, res.group),
                    route.name,
                    [cause],
                    res.plural,
                    res.group,
                )
            if rv and rv != existing["metadata"]["resourceVersion"]:
                raise errors.stale(res.plural, route.name, res.group)
            uid = meta.get("uid")
            if uid and uid != existing["metadata"].get("uid"):
                raise errors.uid_precondition(
                    res.plural,
                    route.name,
                    res.etcd_key(route.namespace, route.name),
                    uid,
                    existing["metadata"]["uid"],
                    res.group,
                )
            result = self.write_update(res, existing, body, route.subresource, manager, dry_run=dry)
        return Response(200, result)

    def patch(self, res: Resource, route: Route, req: Request) -> Response:
        ctype = req.content_type
        if res.custom and ctype == "application/strategic-merge-patch+json":
            raise errors.unsupported_media(
                [
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ]
            )
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_patch()
        apply = ctype == "application/apply-patch+yaml"
        if apply and not req.q("fieldManager"):
            raise errors.invalid_options(
                "PatchOptions",
                [Cause("fieldManager", "Required value", "is required for apply patch")],
            )
        body = self._parse_body(res, req, patch=True)
        manager = self._manager(req)
        dry = req.q("dryRun") == "All"
        with self.store.lock:
            existing = self.store.peek(res.key, (route.namespace, route.name))  # read-only
            if existing is None:
                if apply and not route.subresource and isinstance(body, dict):
                    body.setdefault("metadata", {})["name"] = route.name
                    if res.namespaced:
                        body["metadata"]["namespace"] = route.namespace
                    return Response(
                        201,
                        self.create_object(res, body, manager=manager, seeding=False, dry_run=dry),
                    )
                raise errors.not_found(res.plural, route.name, res.group)
            current = self.view(res, existing)
            try:
                if ctype == "application/json-patch+json":
                    patched = json_patch(current, body)
                elif ctype == "application/merge-patch+json":
                    if not isinstance(body, dict):
                        raise PatchError("invalid JSON document for a merge patch", 400)
                    patched = merge_patch(current, body)
                else:
                    patched = strategic_merge_patch(current, body, keyed=not res.custom)
            except PatchError as exc:
                reason = "BadRequest" if exc.code == 400 else "Invalid"
                raise APIError(
                    exc.code,
                    errors.status(
                        exc.code,
                        reason,
                        str(exc),
                        {} if exc.code != 400 else None,
                        with_details=exc.code != 400,
                    ),
                ) from None
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            want_rv = (
                (body.get("metadata") or {}).get("resourceVersion")
                if isinstance(body, dict)
                else None
            )
            if want_rv and str(want_rv) != existing["metadata"]["resourceVersion"]:
                raise errors.stale(res.plural, route.name, res.group)
            want_uid = (body.get("metadata") or {}).get("uid") if isinstance(body, dict) else None
            if want_uid and want_uid != existing["metadata"]["uid"]:
                raise errors.uid_precondition(
                    res.plural,
                    route.name,
                    res.etcd_key(route.namespace, route.name),
                    want_uid,
                    existing["metadata"]["uid"],
                    res.group,
                )
            patched.setdefault("metadata", {})
            for keep in ("name", "namespace", "uid", "creationTimestamp"):
                if keep in current["metadata"]:
                    patched["metadata"][keep] = current["metadata"][keep]
            apply_config = body if apply and isinstance(body, dict) else None
            result = self.write_update(
                res,
                existing,
                patched,
                route.subresource,
                manager,
                apply_config=apply_config,
                dry_run=dry,
            )
        return Response(200, result)

    def write_update(
        self,
        res: Resource,
        existing: JSON,
        new_view: JSON,
        subresource: str,
        manager: str | None,
        *,
        apply_config: JSON | None = None,
        dry_run: bool = False,
        seeding: bool = False,
    ) -> JSON:
        """Store ``new_view`` over ``existing`` with the registry's update rules."""
        old_view = self.view(res, existing)
        # normalize_times rebuilds every map and list: a copy already
        new = clone(new_view) if res.custom else kinds.normalize_times(new_view)
        new["kind"], new["apiVersion"] = old_view["kind"], old_view["apiVersion"]
        old_meta = old_view["metadata"]
        meta = new.setdefault("metadata", {})
        for keep in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if keep in old_meta:
                meta[keep] = old_meta[keep]
            else:
                meta.pop(keep, None)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if subresource == "status":
            result = clone(old_view)
            status = new.get("status")
            if status is None:
                result.pop("status", None)
            else:
                result["status"] = (
                    kinds.order_pod_status(status) if res.plural == "pods" else status
                )
            new = result
        else:
            if res.has_status and not seeding:
                if "status" in old_view:
                    new["status"] = old_view["status"]
                else:
                    new.pop("status", None)
            if res.plural == "pods":
                new = kinds.default_pod(new)
                if not seeding:
                    self._check_pod_update(old_view, new)
            elif res.kind == "Node":
                new.setdefault("spec", {})
                new["status"] = kinds.default_node_status(new.get("status"))
        if res.generation and not subresource:
            strip = ("metadata", "status", "kind", "apiVersion")
            if {k: v for k, v in new.items() if k not in strip} != {
                k: v for k, v in old_view.items() if k not in strip
            }:
                meta = new["metadata"]
                meta["generation"] = int(old_meta.get("generation") or 1) + 1
        new["metadata"].pop("managedFields", None)
        comparable_old = {
            **old_view,
            "metadata": {k: v for k, v in old_view["metadata"].items() if k != "managedFields"},
        }
        if new == comparable_old and apply_config is None:
            return old_view
        if not seeding and manager is not None:
            new["metadata"]["managedFields"] = managedfields.record(
                old_meta.get("managedFields"),
                old=old_view,
                new=new,
                manager=manager,
                api_version=res.api_version,
                subresource=subresource,
                has_status=res.has_status,
                now=kinds.fmt_time(kinds.utcnow()),
                apply_config=apply_config,
            )
        elif old_meta.get("managedFields"):
            new["metadata"]["managedFields"] = old_meta["managedFields"]
        if new == old_view:
            return old_view
        internal = self.internal(res, new)
        if dry_run:
            return self.view(res, internal)
        key = (old_meta.get("namespace", ""), old_meta["name"])
        meta = internal["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
        ):
            stored = self.store.commit("DELETED", res.key, key, internal, existing)
        else:
            stored = self.store.commit("MODIFIED", res.key, key, internal, existing)
        return self.view(res, stored)

    _POD_MUTABLE = (
        "activeDeadlineSeconds",
        "tolerations",
        "schedulingGates",
        "terminationGracePeriodSeconds",
    )

    def _check_pod_update(self, old: JSON, new: JSON) -> None:
        def masked(spec: JSON) -> JSON:
            out = {k: v for k, v in (spec or {}).items() if k not in self._POD_MUTABLE}
            for field_name in ("containers", "initContainers"):
                out[field_name] = [
                    {k: v for k, v in c.items() if k != "image"} for c in out.get(field_name) or []
                ]
            return out

        if masked(old.get("spec") or {}) != masked(new.get("spec") or {}):
            name = old["metadata"]["name"]
            detail = (
                "pod updates may not change fields other than `spec.containers[*].image`,"
                "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)"
            )
            raise errors.invalid("Pod", name, [Cause("spec", "Forbidden", detail)], "Pod")

    # ================================================================ delete

    def _delete_options(self, res: Resource, req: Request | None) -> JSON:
        opts: JSON = {}
        if req is None:
            return opts
        if req.body and req.body.strip():
            body = self._parse_body(res, req, patch=True)
            if isinstance(body, dict):
                opts.update(body)
        grace = req.q("gracePeriodSeconds")
        if grace is not None:
            try:
                opts["gracePeriodSeconds"] = int(grace)
            except ValueError:
                raise errors.bad_request(f"invalid gracePeriodSeconds: {grace}") from None
        if req.q("dryRun") == "All":
            opts["dryRun"] = ["All"]
        return opts

    def delete(self, res: Resource, route: Route, req: Request | None) -> Response:
        opts = self._delete_options(res, req)
        with self.store.lock:
            existing = self.store.get(res.key, (route.namespace, route.name))
            if existing is None:
                raise errors.not_found(res.plural, route.name, res.group)
            pre = opts.get("preconditions") or {}
            key = res.etcd_key(route.namespace, route.name)
            if pre.get("uid") and pre["uid"] != existing["metadata"]["uid"]:
                raise errors.uid_precondition(
                    res.plural, route.name, key, pre["uid"], existing["metadata"]["uid"], res.group
                )
            if (
                pre.get("resourceVersion")
                and pre["resourceVersion"] != existing["metadata"]["resourceVersion"]
            ):
                raise errors.rv_precondition(
                    res.plural,
                    route.name,
                    key,
                    pre["resourceVersion"],
                    existing["metadata"]["resourceVersion"],
                    res.group,
                )
            if opts.get("dryRun"):
                return Response(200, self.view(res, existing))
            return Response(200, self.delete_object(res, existing, opts.get("gracePeriodSeconds")))

    def delete_object(self, res: Resource, existing: JSON, grace: int | None) -> JSON:
        meta = existing["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        now = kinds.utcnow()
        if res.plural == "namespaces":
            for storage in sorted({r.key for r in RESOURCES if r.namespaced}):
                for obj in self.store.items(storage, meta["name"]):
                    self.store.commit(
                        "DELETED", storage, (meta["name"], obj["metadata"]["name"]), obj, obj
                    )
        if res.plural == "pods":
            spec = existing.get("spec") or {}
            phase = (existing.get("status") or {}).get("phase")
            if grace is None:
                grace = int(spec.get("terminationGracePeriodSeconds", 30))
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0
            grace = max(grace, 0)
            current = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and current is not None and grace >= current:
                return self.view(res, existing)
            marked = clone(existing)
            marked["metadata"]["deletionTimestamp"] = kinds.fmt_time(now + timedelta(seconds=grace))
            marked["metadata"]["deletionGracePeriodSeconds"] = grace
            stored = self.store.commit("MODIFIED", res.key, key, marked, existing)
            if grace > 0 or marked["metadata"].get("finalizers"):
                if grace > 0 and self.on_graceful_delete is not None:
                    self.on_graceful_delete(res, key[0], key[1])
                return self.view(res, stored)
            final = self.store.commit("DELETED", res.key, key, stored, stored)
            return self.view(res, final)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self.view(res, existing)
            marked = clone(existing)
            marked["metadata"]["deletionTimestamp"] = kinds.fmt_time(now)
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            return self.view(res, self.store.commit("MODIFIED", res.key, key, marked, existing))
        final = self.store.commit("DELETED", res.key, key, existing, existing)
        if res.return_deleted_object:
            return self.view(res, final)
        return errors.success(
            None,
            {
                "name": meta["name"],
                **({"group": res.group} if res.group else {}),
                "kind": res.plural,
                "uid": meta.get("uid", ""),
            },
        )

    def delete_collection(self, res: Resource, route: Route, req: Request) -> Response:
        passes = self._selectors(res, req, route)
        opts = self._delete_options(res, req)
        deleted = []
        with self.store.lock:
            for obj in self.store.items(res.key, route.namespace):
                if passes(self.view(res, obj)):
                    out = self.delete_object(res, obj, opts.get("gracePeriodSeconds"))
                    if out.get("kind") != "Status":
                        out.pop("kind", None)
                        out.pop("apiVersion", None)
                        deleted.append(out)
            rv = self.store.rv
        return Response(
            200,
            {
                "kind": res.list_kind,
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(rv)},
                "items": deleted,
            },
        )

    def finish_pod_deletion(self, namespace: str, name: str) -> bool:
        """What a kubelet does at the end of a graceful deletion: the final DELETE."""
        pods = lookup("pods")
        with self.store.lock:
            existing = self.store.get(pods.key, (namespace, name))
            if existing is None or not existing["metadata"].get("deletionTimestamp"):
                return False
            self.delete_object(pods, existing, 0)
            return True

    # ================================================================ binding

    def bind(self, res: Resource, route: Route, req: Request) -> Response:
        body = self._object_body(res, req, expect_kind="Binding")
        meta = body["metadata"]
        if meta.get("namespace") and meta["namespace"] != route.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if route.subresource == "binding":
            pod_name = route.name
            if meta.get("name") and meta["name"] != route.name:
                raise errors.bad_request("name in URL does not match name in Binding object")
        else:
            pod_name = meta.get("name", "")
        target = body.get("target") or {}
        causes = []
        if target.get("kind") not in (None, "", "Node"):
            causes.append(
                Cause(
                    "target.kind",
                    "Unsupported value",
                    'supported values: "Node", "<empty>"',
                    target.get("kind"),
                    True,
                )
            )
        if not target.get("name"):
            causes.append(Cause("target.name", "Required value"))
        if causes:
            raise errors.invalid("Binding.core", pod_name, causes, "Binding")
        return Response(
            201,
            self.bind_pod(
                route.namespace,
                pod_name,
                target["name"],
                uid=meta.get("uid"),
                annotations=meta.get("annotations"),
            ),
        )

    def bind_pod(
        self,
        namespace: str,
        name: str,
        node: str,
        *,
        uid: str | None = None,
        annotations: JSON | None = None,
    ) -> JSON:
        pods = lookup("pods")
        with self.store.lock:
            existing = self.store.peek(pods.key, (namespace, name))  # read-only
            if existing is None:
                raise errors.not_found("pods", name)
            meta = existing["metadata"]
            if uid and uid != meta["uid"]:
                raise errors.uid_precondition(
                    "pods", name, pods.etcd_key(namespace, name), uid, meta["uid"]
                )
            if meta.get("deletionTimestamp"):
                raise errors.internal_error(
                    f"pod {name} is being deleted, cannot be assigned to a host"
                )
            spec = existing.get("spec") or {}
            if spec.get("nodeName"):
                raise errors.already_bound(name, spec["nodeName"])
            if spec.get("schedulingGates"):
                raise errors.internal_error(f"pod {name} has non-empty .spec.schedulingGates")
            updated = clone(existing)
            updated_spec = kinds.default_pod(updated)["spec"]
            rebuilt = {}
            for k, v in updated_spec.items():
                if k == "securityContext" and "nodeName" not in rebuilt:
                    rebuilt["nodeName"] = node
                rebuilt[k] = v
            rebuilt.setdefault("nodeName", node)
            updated["spec"] = rebuilt
            if annotations:
                updated["metadata"].setdefault("annotations", {}).update(annotations)
            status = updated.setdefault("status", {})
            conditions = list(status.get("conditions") or [])
            now = kinds.fmt_time(kinds.utcnow())
            new_cond = {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }
            for i, cond in enumerate(conditions):
                if cond.get("type") == "PodScheduled":
                    if cond.get("status") == "True":
                        new_cond["lastTransitionTime"] = cond.get("lastTransitionTime", now)
                    conditions[i] = new_cond
                    break
            else:
                conditions.append(new_cond)
            status["conditions"] = conditions
            updated["status"] = kinds.order_pod_status(status)
            stored = self.store.commit(
                "MODIFIED", pods.key, (namespace, name), updated, existing, owned=True
            )
            with self._bind_lock:
                self.bindings.append(
                    Binding(
                        namespace,
                        name,
                        meta["uid"],
                        node,
                        stored["metadata"]["resourceVersion"],
                        time.time(),
                    )
                )
        return errors.success(201)

    # ================================================================ discovery

    def _discovery(self, route: Route, req: Request) -> Response:
        kind = route.discovery
        if kind in ("healthz", "livez", "readyz"):
            return Response(200, b"ok", content_type="text/plain; charset=utf-8")
        if kind == "version":
            return Response(
                200,
                {
                    "major": "1",
                    "minor": self.config.version.split(".")[1],
                    "gitVersion": self.config.version,
                    "gitCommit": "loopback",
                    "gitTreeState": "clean",
                    "buildDate": "2024-02-14T10:32:39Z",
                    "goVersion": "go1.21.7",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
        if kind == "root":
            paths = sorted(
                {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"}
                | {f"/apis/{g}/{v}" for g, v in self._served_group_versions()}
                | {f"/apis/{g}" for g, _ in self._served_group_versions()}
            )
            return Response(200, {"paths": paths})
        if kind == "api":
            return Response(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}
                    ],
                },
            )
        if kind == "apis":
            groups = [self._group(g) for g in sorted({g for g, _ in self._served_group_versions()})]
            return Response(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        if kind == "group":
            if not any(g == route.group for g, _ in GROUP_VERSIONS):
                raise errors.unknown_path()
            return Response(
                200, {"kind": "APIGroup", "apiVersion": "v1", **self._group(route.group)}
            )
        table = GROUP_VERSIONS[(route.group, route.version)]
        group_version = f"{route.group}/{route.version}" if route.group else route.version
        resources = []
        for res in table.values():
            verbs = [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
            if res.plural == "bindings":
                verbs = ["create"]
            entry = {
                "name": res.plural,
                "singularName": res.singular,
                "namespaced": res.namespaced,
                "kind": res.kind,
                "verbs": verbs,
            }
            if res.short_names:
                entry["shortNames"] = list(res.short_names)
            resources.append(entry)
            for sub in sorted(res.subresources):
                sub_kind = "Binding" if sub == "binding" else res.kind
                sub_verbs = ["create"] if sub == "binding" else ["get", "patch", "update"]
                resources.append(
                    {
                        "name": f"{res.plural}/{sub}",
                        "singularName": "",
                        "namespaced": res.namespaced,
                        "kind": sub_kind,
                        "verbs": sub_verbs,
                    }
                )
        return Response(
            200,
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": resources,
            },
        )

    def _served_group_versions(self) -> list[tuple[str, str]]:
        return [(g, v) for g, v in GROUP_VERSIONS if g and g not in self.config.uninstalled_groups]

    @staticmethod
    def _group(group: str) -> JSON:
        versions = [
            {"groupVersion": f"{group}/{v}", "version": v} for g, v in GROUP_VERSIONS if g == group
        ]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}


__all__ = ["API", "PATCH_TYPES", "Binding", "Request", "Response", "ServerConfig", "WatchResponse"]
