"""The versioned object store: one global resourceVersion, a retained history, watchers.

This is the etcd + watch-cache half of the apiserver.  Every write takes the next global
revision (so RVs compare numerically across kinds, as in the captures), is appended to a
bounded history that watches replay from and ``resourceVersionMatch=Exact`` lists roll back
through, and is pushed to each open watcher's own queue (so a watcher that is slow to drain
never loses events to compaction).  Each resource also has a *watch-cache RV* that only moves
when that resource changes: lists at ``resourceVersion=0`` and bookmarks report it, and a list
asking for a newer RV gets the real 504 (03-list-rv-ahead-of-watch-cache-504).

Objects are copied on the way in (a stored object is never changed in place, so a watcher
can serialise it later without the lock, and a change's ``prev`` is simply the object it
replaced), and copies are most of a write's cost: ``clone`` makes them with a marshal round
trip, two to three times faster than ``copy.deepcopy`` on JSON, and equal to it
(``test_store_clone.py``).  :meth:`Store.get` and :meth:`Store.items` hand out copies a caller
may change; :meth:`Store.peek`, :meth:`Store.commit`'s result and :meth:`Store.state_at` hand
out the stored objects themselves, read-only, for the paths that only view and serialise them
(a copy there was a third of the server's CPU in the end-to-end benchmark).

Each watcher waits on a condition of its own (sharing the store's lock), and a write wakes only
the watchers of the resource it changed: with one condition for all, every Event a scheduler
posts woke every informer's watch thread to find nothing to send.
"""

from __future__ import annotations

import bisect
import copy
import marshal
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .errors import LIST_TOO_OLD, expired

JSON = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)


def clone(obj: Any) -> Any:
    """A deep copy of ``obj``, as ``copy.deepcopy`` makes it. JSON values (dicts, lists, str,
    int, float, bool, None) take a marshal round trip; anything marshal cannot carry (a dict
    subclass, a datetime) falls back to ``copy.deepcopy``."""
    try:
        return marshal.loads(marshal.dumps(obj))
    except ValueError:
        return copy.deepcopy(obj)


@dataclass
class Change:
    """One committed write, as the watch cache keeps it."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    storage: str
    key: Key
    obj: JSON
    prev: JSON | None


@dataclass(eq=False)
class Watcher:
    storage: str
    start_rv: int
    queue: deque[Change] = field(default_factory=deque)
    closed: str = ""  # "", "graceful", "abrupt"
    info: JSON = field(default_factory=dict)
    # notified when ``queue`` grows, ``closed`` is set or the store stops; built on the store's
    # lock by ``Store.open_watch``
    cond: threading.Condition = field(default_factory=threading.Condition)


class Store:
    def __init__(self, history_limit: int = 100_000) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.objects: dict[str, dict[Key, JSON]] = {}
        self.history: list[Change] = []
        self._history_rvs: list[int] = []
        self.compacted_rv = 0
        self.cache_floor = 0
        self.last_rv: dict[str, int] = {}
        self.watchers: set[Watcher] = set()
        self.history_limit = history_limit
        self.stopping = False

    # ------------------------------------------------------------------ reads

    def get(self, storage: str, key: Key) -> JSON | None:
        with self.lock:
            obj = self.objects.get(storage, {}).get(key)
            return clone(obj) if obj is not None else None

    def peek(self, storage: str, key: Key) -> JSON | None:
        """The stored object itself (read-only: never change it), or None."""
        with self.lock:
            return self.objects.get(storage, {}).get(key)

    def items(self, storage: str, namespace: str = "") -> list[JSON]:
        with self.lock:
            table = self.objects.get(storage, {})
            keys = sorted(k for k in table if not namespace or k[0] == namespace)
            return [clone(table[k]) for k in keys]

    def cache_rv(self, storage: str) -> int:
        """The RV the watch cache of ``storage`` has seen (moves only on its own changes)."""
        with self.lock:
            return max(self.cache_floor, self.last_rv.get(storage, 0))

    def state_at(self, storage: str, rv: int) -> dict[Key, JSON]:
        """The objects of ``storage`` as they were at revision ``rv`` (410 when compacted);
        the stored objects themselves, read-only."""
        with self.lock:
            if rv < self.compacted_rv:
                raise expired(LIST_TOO_OLD)
            state = {k: v for k, v in self.objects.get(storage, {}).items()}
            start = bisect.bisect_right(self._history_rvs, rv)
            for change in reversed(self.history[start:]):
                if change.storage != storage:
                    continue
                if change.type == "ADDED":
                    state.pop(change.key, None)
                elif change.prev is not None:
                    state[change.key] = change.prev
            return state

    # ------------------------------------------------------------------ writes

    def commit(
        self,
        type_: str,
        storage: str,
        key: Key,
        obj: JSON,
        prev: JSON | None,
        *,
        owned: bool = False,
    ) -> JSON:
        """Write (a copy of) ``obj`` at the next revision and tell the watchers; returns the
        stored object (read-only).  ``owned``: ``obj`` shares nothing with anyone, and its
        caller hands it over, so it is stored as it is.  ``prev`` is the object the write
        replaces, as the caller read it under the lock: the change keeps the stored one it
        equals."""
        with self.lock:
            self.rv += 1
            stored = obj if owned else clone(obj)
            stored.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            table = self.objects.setdefault(storage, {})
            if prev is not None:
                # Stored objects never change, so the one being replaced is the previous state
                # as it is; only a caller's object that is not (or no longer) stored is copied.
                current = table.get(key)
                prev = current if current is prev or current == prev else clone(prev)
            if type_ == "DELETED":
                table.pop(key, None)
            else:
                table[key] = stored
            change = Change(
                self.rv,
                type_,
                storage,
                key,
                stored,
                prev,
            )
            self.history.append(change)
            self._history_rvs.append(self.rv)
            self.last_rv[storage] = self.rv
            if len(self.history) > self.history_limit:
                drop = len(self.history) - self.history_limit
                self.compacted_rv = self.history[drop - 1].rv
                del self.history[:drop]
                del self._history_rvs[:drop]
            for watcher in self.watchers:
                if watcher.storage == storage and not watcher.closed:
                    watcher.queue.append(change)
                    watcher.cond.notify()
            self.cond.notify_all()  # lists waiting for this resource's watch cache
            return stored

    def compact(self, rv: int | None = None, *, reset_cache: bool = True) -> int:
        """Forget history up to ``rv`` (default: now).  Watches and exact lists from older
        revisions get 410 afterwards; like the captured apiserver restart, every watch cache
        is re-initialised at the compaction revision."""
        with self.lock:
            target = self.rv if rv is None else min(rv, self.rv)
            idx = bisect.bisect_right(self._history_rvs, target)
            del self.history[:idx]
            del self._history_rvs[:idx]
            self.compacted_rv = max(self.compacted_rv, target)
            if reset_cache:
                self.cache_floor = max(self.cache_floor, target)
            return self.compacted_rv

    # ------------------------------------------------------------------ watches

    def open_watch(
        self, storage: str, start_rv: int | None, info: JSON | None = None
    ) -> tuple[list[Change], Watcher]:
        """Register a watcher and return what it must send first.

        ``start_rv=None`` means "from now, with the current state as ADDED events";
        otherwise the retained changes after ``start_rv`` (the caller checked the window).
        """
        with self.lock:
            if start_rv is None:
                initial = [
                    Change(
                        int(obj["metadata"]["resourceVersion"]),
                        "ADDED",
                        storage,
                        key,
                        obj,
                        None,
                    )
                    for key, obj in sorted(self.objects.get(storage, {}).items())
                ]
                watcher = Watcher(
                    storage,
                    self.cache_rv(storage),
                    info=dict(info or {}),
                    cond=threading.Condition(self.lock),
                )
            else:
                if start_rv < self.compacted_rv:
                    raise WatchExpired(start_rv, self.compacted_rv)
                start = bisect.bisect_right(self._history_rvs, start_rv)
                initial = [c for c in self.history[start:] if c.storage == storage]
                watcher = Watcher(
                    storage, start_rv, info=dict(info or {}), cond=threading.Condition(self.lock)
                )
            self.watchers.add(watcher)
            return initial, watcher

    def close_watch(self, watcher: Watcher) -> None:
        with self.lock:
            self.watchers.discard(watcher)

    def drop_watches(self, storage: str | None = None, mode: str = "abrupt") -> int:
        with self.lock:
            count = 0
            for watcher in self.watchers:
                if storage is None or watcher.storage == storage:
                    watcher.closed = mode
                    watcher.cond.notify_all()
                    count += 1
            self.cond.notify_all()
            return count

    def shutdown(self) -> None:
        with self.lock:
            self.stopping = True
            for watcher in self.watchers:
                watcher.cond.notify_all()
            self.cond.notify_all()


class WatchExpired(Exception):
    """A watch asked for a revision older than the retained window."""

    def __init__(self, asked: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {asked} ({oldest})")
        self.asked = asked
        self.oldest = oldest
