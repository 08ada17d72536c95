"""List-then-watch for one resource, so the scheduler's view never silently drifts.

A scheduler that misses one event places pods on nodes that no longer exist, or counts
capacity that was freed long ago, and nothing tells it. This is client-go's reflector +
informer in small, on the raw JSON wire (the generated client models are slow and reject some
of what the server sends):

* **list** (paged, a consistent read) and hand every object to the handler, then **watch**
  from the list's resourceVersion with ``allowWatchBookmarks=true`` and a randomised
  ``timeoutSeconds``;
* keep the resourceVersion of every event, bookmarks included, and after a timeout or a
  dropped connection **re-watch from it** — nothing is replayed twice and nothing is lost;
* on **410 Gone** (the HTTP status, or the ERROR event in the stream) **relist** and diff the
  new list against the local store, so that objects deleted while we were away produce
  delete events and changed ones produce updates;
* on 5xx, 429 (honouring ``Retry-After``) and connection errors log the verb and resource
  and retry with exponential backoff — the informer never gives up and never exits on its
  own.

Watch events are read in batches (``watchlines``): after a read that held events the thread
pauses a few milliseconds, so a busy watch is read a few hundred times a second rather than
once per event. Handlers run on the informer's thread, in event order; an exception in a handler is logged
and does not stop the informer. ``has_synced()`` turns true once the first list has been
delivered. A ``transform`` (client-go's ``SetTransform``) trims each object as it arrives,
before it is stored or handed on, so a store of objects the scheduler reads little of (a
ReplicaSet's whole pod template) does not hold what it never reads.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes.client.exceptions import ApiException

from policyengine.controller import watchlines, wirejson
from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON

log = get_logger(__name__)


class EventHandler(Protocol):
    def on_add(self, obj: JSON) -> None: ...
    def on_update(self, old: JSON, new: JSON) -> None: ...
    def on_delete(self, obj: JSON) -> None: ...


@dataclass(frozen=True)
class InformerOptions:
    """Timings. The defaults are client-go's (``watch_pause`` is ours); tests shorten them."""

    watch_timeout: tuple[int, int] = (300, 600)  # timeoutSeconds drawn from this range
    read_slack: float = 30.0  # client read timeout beyond timeoutSeconds (dead connections)
    connect_timeout: float = 10.0
    # After a read of watch events, seconds before the next read (controller/watchlines.py).
    watch_pause: float = watchlines.DEFAULT_PAUSE
    page_size: int = 500
    backoff_initial: float = 0.8
    backoff_max: float = 30.0


class _Gone(Exception):
    """The watch's resourceVersion was compacted away: relist."""


class _StreamError(Exception):
    """An ERROR event other than 410 in the watch stream."""


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    """List+watch of one resource (module docstring).

    ``list_func`` is the generated client's list method for the resource, e.g.
    ``CoreV1Api(api).list_node``; it is called with ``_preload_content=False`` for both the
    list and the watch.
    """

    def __init__(
        self,
        resource: str,
        list_func: Callable[..., Any],
        handler: EventHandler,
        *,
        field_selector: str | None = None,
        options: InformerOptions | None = None,
        rng: random.Random | None = None,
        transform: Callable[[JSON], JSON] | None = None,
    ) -> None:
        self.resource = resource
        self._list_func = list_func
        self._handler = handler
        self._transform = transform
        self._field_selector = field_selector
        self._options = options or InformerOptions()
        self._rng = rng or random.Random()
        self._store: dict[str, JSON] = {}
        self._store_lock = threading.Lock()
        self._resource_version = ""
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._response: Any = None
        self._response_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failures = 0
        self.lists = 0  # how many (re)lists completed
        self.watches = 0  # how many watches were opened

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self.run, name=f"informer-{self.resource}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop watching: interrupts a blocked read, then joins the thread."""
        self._stopping.set()
        with self._response_lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def resource_version(self) -> str:
        return self._resource_version

    def get(self, key: str) -> JSON | None:
        """The last state of an object as the watch delivered it (read-only)."""
        with self._store_lock:
            return self._store.get(key)

    def keys(self) -> list[str]:
        with self._store_lock:
            return list(self._store)

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        need_list = True
        while not self._stopping.is_set():
            verb = "list" if need_list else "watch"
            try:
                if need_list:
                    self._list_and_replace()
                    need_list = False
                    verb = "watch"
                opened = time.monotonic()
                if self._watch_once() == 0 and time.monotonic() - opened < 1.0:
                    # A server that closes watches at once must not make us spin.
                    self._fail("watch", "watch closed immediately", None)
            except _Gone:
                log.info("watch history expired; relisting", resource=self.resource)
                need_list = True
            except ApiException as exc:
                if self._stopping.is_set():
                    break
                if exc.status == 410:
                    log.info("resource version expired; relisting", resource=self.resource)
                    need_list = True
                    continue
                self._fail(verb, f"HTTP {exc.status}: {_status_message(exc)}", _retry_after(exc))
            except (urllib3.exceptions.HTTPError, OSError, ValueError, _StreamError) as exc:
                if self._stopping.is_set():
                    break
                self._fail(verb, f"{type(exc).__name__}: {exc}", None)
            except Exception as exc:  # never let the informer die
                if self._stopping.is_set():
                    break
                log.exception("informer error", resource=self.resource, verb=verb)
                self._fail(verb, f"{type(exc).__name__}: {exc}", None)
        log.debug("informer stopped", resource=self.resource)

    def _fail(self, verb: str, error: str, retry_after: float | None) -> None:
        self._failures += 1
        delay = min(
            self._options.backoff_initial * 2 ** (self._failures - 1), self._options.backoff_max
        )
        if retry_after is not None:
            delay = max(delay, retry_after)
        delay *= 1 + 0.1 * self._rng.random()  # jitter, so replicas do not retry in lockstep
        log.warning(
            "list/watch failed; retrying",
            verb=verb,
            resource=self.resource,
            error=error,
            retry_in=round(delay, 3),
        )
        self._stopping.wait(delay)

    def _list_and_replace(self) -> None:
        items: dict[str, JSON] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self._options.page_size}
            if token:
                kwargs["_continue"] = token
            if self._field_selector:
                kwargs["field_selector"] = self._field_selector
            response = self._list_func(
                _preload_content=False,
                _request_timeout=(self._options.connect_timeout, 60.0),
                **kwargs,
            )
            body = wirejson.loads(response.data)
            response.release_conn()
            transform = self._transform
            for item in body.get("items") or ():
                items[object_key(item)] = item if transform is None else transform(item)
            meta = body.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                list_rv = str(meta.get("resourceVersion") or "")
                break
        self._replace(items)
        self._resource_version = list_rv
        self.lists += 1
        self._failures = 0
        self._synced.set()
        log.debug("listed", resource=self.resource, count=len(items), resource_version=list_rv)

    def _replace(self, items: dict[str, JSON]) -> None:
        """Make the store equal to a fresh list, telling the handler what changed."""
        with self._store_lock:
            old = self._store
            self._store = dict(items)
        for key, obj in old.items():
            if key not in items:
                self._dispatch("delete", obj)
        for key, obj in items.items():
            previous = old.get(key)
            if previous is None:
                self._dispatch("add", obj)
            elif _rv(previous) != _rv(obj):
                self._dispatch("update", obj, previous)

    def _watch_once(self) -> int:
        """One watch until it ends; returns how many events it delivered."""
        low, high = self._options.watch_timeout
        timeout = self._rng.randint(low, high) if high > low else low
        kwargs: dict[str, Any] = {}
        if self._field_selector:
            kwargs["field_selector"] = self._field_selector
        response = self._list_func(
            watch=True,
            resource_version=self._resource_version or None,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(self._options.connect_timeout, timeout + self._options.read_slack),
            **kwargs,
        )
        with self._response_lock:
            self._response = response
        self.watches += 1
        delivered = 0
        try:
            if self._stopping.is_set():
                return delivered
            for line in watchlines.lines(response, self._options.watch_pause):
                self._handle_line(line)
                delivered += 1
                if self._stopping.is_set():
                    break
            return delivered
        finally:
            with self._response_lock:
                self._response = None
            # A watch may end half-read (stop, drop): never hand its socket back for reuse.
            with contextlib.suppress(Exception):
                response.close()
            with contextlib.suppress(Exception):
                response.release_conn()

    def _handle_line(self, line: bytes) -> None:
        event = wirejson.loads(line)
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise _Gone(obj.get("message", ""))
            raise _StreamError(f"{code}: {obj.get('message', '')}")
        rv = _rv(obj)
        key = object_key(obj)
        if self._transform is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
            obj = self._transform(obj)
        if kind == "BOOKMARK":
            pass
        elif kind in ("ADDED", "MODIFIED"):
            with self._store_lock:
                previous = self._store.get(key)
                self._store[key] = obj
            if previous is None:
                self._dispatch("add", obj)
            else:
                self._dispatch("update", obj, previous)
        elif kind == "DELETED":
            with self._store_lock:
                self._store.pop(key, None)
            self._dispatch("delete", obj)
        else:
            log.warning("unknown watch event", resource=self.resource, type=kind)
            return
        if rv:
            self._resource_version = rv
        self._failures = 0

    def _dispatch(self, what: str, obj: JSON, previous: JSON | None = None) -> None:
        try:
            if what == "add":
                self._handler.on_add(obj)
            elif what == "update":
                self._handler.on_update(previous or {}, obj)
            else:
                self._handler.on_delete(obj)
        except Exception:
            log.exception(
                "event handler failed", resource=self.resource, event=what, object=object_key(obj)
            )


def _status_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except ValueError:
        return str(exc.reason)


def _retry_after(exc: ApiException) -> float | None:
    headers = exc.headers or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
