"""The store hands out copies or its own read-only objects as documented, keeps a change's
previous state, and wakes only the watchers of the resource that changed."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from loopback.store import Store

JSON = dict[str, Any]
KEY = ("default", "p")


def _pod(phase: str = "Pending") -> JSON:
    return {"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": phase}}


def test_reads_copy_or_share_as_documented() -> None:
    store = Store()
    stored = store.commit("ADDED", "pods", KEY, _pod(), None)
    assert store.peek("pods", KEY) is stored
    copy = store.get("pods", KEY)
    assert copy == stored and copy is not stored
    assert copy is not None
    copy["status"]["phase"] = "Running"
    assert stored["status"]["phase"] == "Pending"
    assert store.items("pods")[0] == stored and store.items("pods")[0] is not stored
    assert store.peek("pods", ("default", "missing")) is None


@pytest.mark.parametrize(("owned", "kept"), [(True, True), (False, False)])
def test_owned_objects_are_stored_as_given(owned: bool, kept: bool) -> None:
    store = Store()
    pod = _pod()
    stored = store.commit("ADDED", "pods", KEY, pod, None, owned=owned)
    assert (stored is pod) == kept
    assert stored["metadata"]["resourceVersion"] == "1"


@pytest.mark.parametrize(
    ("prev", "shared"),
    [
        ("stored", True),  # the stored object itself
        ("equal copy", True),  # a copy read under the lock: the stored one is kept
        ("different", False),  # anything else is copied
    ],
)
def test_a_change_keeps_the_replaced_object(prev: str, shared: bool) -> None:
    store = Store()
    first = store.commit("ADDED", "pods", KEY, _pod(), None)
    given = {
        "stored": first,
        "equal copy": store.get("pods", KEY),
        "different": _pod("Unknown"),
    }[prev]
    store.commit("MODIFIED", "pods", KEY, _pod("Running"), given)
    change = store.history[-1]
    assert change.prev == given
    assert (change.prev is first) == shared
    assert change.prev is not given or prev == "stored"


def test_state_at_rolls_back_through_history() -> None:
    store = Store()
    store.commit("ADDED", "pods", KEY, _pod(), None)
    added = store.peek("pods", KEY)
    store.commit("MODIFIED", "pods", KEY, _pod("Running"), added)
    running = store.peek("pods", KEY)
    store.commit("DELETED", "pods", KEY, running or {}, running)
    states = [store.state_at("pods", rv) for rv in range(4)]
    assert [s.get(KEY, {}).get("status") for s in states] == [
        None,
        {"phase": "Pending"},
        {"phase": "Running"},
        None,
    ]
    assert states[2][KEY] is running  # the stored object itself


def _waiting(
    store: Store, cond: threading.Condition, timeout: float
) -> tuple[threading.Thread, list[bool]]:
    """A thread waiting on ``cond`` (it is, once this returns), and what its wait returns."""
    woke: list[bool] = []
    ready = threading.Event()

    def wait() -> None:
        with cond:
            ready.set()
            woke.append(cond.wait(timeout))

    thread = threading.Thread(target=wait)
    thread.start()
    ready.wait()
    with store.lock:  # free again only once the thread waits
        pass
    return thread, woke


@pytest.mark.parametrize(
    ("written", "woken"),
    [("pods", {"pods"}), ("nodes", {"nodes"}), ("events", set())],
    ids=["pods", "nodes", "events"],
)
def test_a_write_wakes_only_its_resources_watchers(written: str, woken: set[str]) -> None:
    store = Store()
    watchers = {s: store.open_watch(s, None)[1] for s in ("pods", "nodes")}
    waits = {s: _waiting(store, w.cond, 0.5 if s not in woken else 30) for s, w in watchers.items()}
    store.commit("ADDED", written, KEY, _pod(), None)
    for thread, _ in waits.values():
        thread.join()
    assert {s for s, (_, woke) in waits.items() if woke == [True]} == woken
    assert {s for s, w in watchers.items() if w.queue} == woken


@pytest.mark.parametrize("how", ["drop", "shutdown"])
def test_dropping_or_stopping_wakes_every_watcher(how: str) -> None:
    store = Store()
    watcher = store.open_watch("pods", None)[1]
    thread, woke = _waiting(store, watcher.cond, 30)
    if how == "drop":
        assert store.drop_watches("pods") == 1
    else:
        store.shutdown()
    thread.join()
    assert woke == [True]
