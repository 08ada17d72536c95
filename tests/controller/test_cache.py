"""The cluster cache: incremental snapshot, assume / forget / confirm / expire."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from policyengine.controller.cache import (
    NODE_ADDED,
    NODE_CHANGED,
    NODE_UNCHANGED,
    AssumeError,
    ClusterCache,
)
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot
from tests.controller.builders import node, pod


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(clock: Clock) -> ClusterCache:
    c = ClusterCache(assume_ttl=30.0, clock=clock)
    for name in ("n1", "n2", "n3"):
        c.set_node(node(name))
    return c


def placed(cache: ClusterCache) -> dict[str, str]:
    return dict(cache.snapshot().pod_nodes)


def cpu_units(snap: ClusterSnapshot, name: str) -> int:
    return snap.node(name).requested_units.get("cpu", 0)


def test_a_pod_event_rebuilds_only_its_node(cache: ClusterCache) -> None:
    before = cache.snapshot()
    cache.set_pod(pod("a", node="n2", cpu="500m"))
    after = cache.snapshot()
    assert after is not before
    assert after.node("n1") is before.node("n1")
    assert after.node("n3") is before.node("n3")
    assert after.node("n2").generation != before.node("n2").generation
    assert cpu_units(after, "n2") == 500
    assert cpu_units(before, "n2") == 0  # the old snapshot never changes


def test_pod_update_replaces_and_delete_frees(cache: ClusterCache) -> None:
    assert cache.set_pod(pod("a", node="n1", cpu="1")) is True
    assert cache.set_pod(pod("a", node="n1", cpu="1", labels={"v": "2"})) is False
    snap = cache.snapshot()
    assert cpu_units(snap, "n1") == 1000
    assert snap.pod("default/a").labels["v"] == "2"
    assert cache.remove_pod("default/a") is True
    assert cpu_units(cache.snapshot(), "n1") == 0
    assert cache.remove_pod("default/a") is False


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({}, NODE_UNCHANGED),
        ({"cpu": "8"}, NODE_CHANGED),
        ({"labels": {"zone": "b"}}, NODE_CHANGED),
    ],
    ids=["empty", "cpu=8", "labels=zone=b"],
)
def test_node_update_reports_relevance_and_keeps_pods(
    cache: ClusterCache, change: dict, expect: str
) -> None:
    cache.set_pod(pod("a", node="n1"))
    assert cache.set_node(node("n1", **change)) == expect
    assert placed(cache) == {"default/a": "n1"}


def test_pods_before_their_node_and_after_its_deletion(cache: ClusterCache) -> None:
    cache.set_pod(pod("early", node="n9", cpu="1"))
    assert "default/early" not in placed(cache)
    assert cache.set_node(node("n9")) == NODE_ADDED
    assert placed(cache)["default/early"] == "n9"
    cache.remove_node("n9")
    assert "n9" not in cache.snapshot()
    assert "default/early" not in placed(cache)
    cache.set_node(node("n9"))  # the node comes back (relist): so does its pod
    assert cpu_units(cache.snapshot(), "n9") == 1000


def test_assume_counts_at_once_and_forget_undoes(cache: ClusterCache) -> None:
    p = pod("p", cpu="2")
    cache.assume(p, "n1")
    assert cpu_units(cache.snapshot(), "n1") == 2000
    assert cache.is_assumed("default/p")
    with pytest.raises(AssumeError):
        cache.assume(p, "n2")  # never placed twice
    assert cache.forget("default/p") is True
    assert cpu_units(cache.snapshot(), "n1") == 0
    assert not cache.is_assumed("default/p")


def test_assume_on_unknown_node_fails(cache: ClusterCache) -> None:
    with pytest.raises(AssumeError):
        cache.assume(pod("p"), "gone")


@pytest.mark.parametrize("bound_to", ["n1", "n2"])
def test_watch_confirmation_replaces_the_assumption(cache: ClusterCache, bound_to: str) -> None:
    cache.assume(pod("p", cpu="1"), "n1")
    assert cache.set_pod(pod("p", cpu="1", node=bound_to)) is False  # not new: it was ours
    assert cache.assumed() == {}
    snap = cache.snapshot()
    assert placed(cache) == {"default/p": bound_to}
    assert sum(cpu_units(snap, n) for n in ("n1", "n2", "n3")) == 1000  # counted once


@pytest.mark.parametrize(
    ("confirmed", "kept"),
    [
        # the pod we assumed, only its resourceVersion moved: the snapshot stays as it is
        (lambda: replace(pod("p", cpu="1", node="n1"), resource_version="7"), True),
        # bound elsewhere, or changed on the way (labels, requests): the node is rebuilt
        (lambda: pod("p", cpu="1", node="n2"), False),
        (lambda: pod("p", cpu="1", node="n1", labels={"app": "x"}), False),
        (lambda: pod("p", cpu="2", node="n1"), False),
    ],
    ids=["only-resource-version", "bound-elsewhere", "labels-changed", "requests-changed"],
)
def test_a_confirmation_equal_to_the_assumption_keeps_the_snapshot(
    cache: ClusterCache, confirmed: Callable[[], Pod], kept: bool
) -> None:
    cache.assume(pod("p", cpu="1"), "n1")
    assumed = cache.snapshot()
    real = confirmed()
    assert cache.set_pod(real) is False
    assert (cache.snapshot() is assumed) is kept
    assert cache.assumed() == {}
    assert cache.pod("default/p") == real
    assert placed(cache) == {"default/p": real.node_name}
    snap = cache.snapshot()
    assert sum(cpu_units(snap, n) for n in ("n1", "n2", "n3")) == cpu_units(snap, real.node_name)
    # and the pod then leaves as any other
    assert cache.remove_pod("default/p") is True
    assert placed(cache) == {}
    assert sum(cpu_units(cache.snapshot(), n) for n in ("n1", "n2", "n3")) == 0


def test_assumption_expires_only_after_its_bind_finished(cache: ClusterCache, clock: Clock) -> None:
    cache.assume(pod("p"), "n1")
    clock.now = 1000
    assert cache.cleanup_expired() == []  # bind still running: never expires
    cache.finish_binding("default/p")
    clock.now = 1029
    assert cache.cleanup_expired() == []
    clock.now = 1030
    assert cache.cleanup_expired() == ["default/p"]
    assert placed(cache) == {}


def test_deleting_an_assumed_pod_drops_the_assumption(cache: ClusterCache) -> None:
    cache.assume(pod("p"), "n1")
    assert cache.remove_pod("default/p") is False  # no real pod left, only the assumption
    assert placed(cache) == {} and cache.assumed() == {}


def test_is_assumed_distinguishes_a_recreated_pod(cache: ClusterCache) -> None:
    cache.assume(pod("p", uid="u1"), "n1")
    assert cache.is_assumed("default/p", "u1")
    assert not cache.is_assumed("default/p", "u2")


def test_removing_a_node_drops_its_assumptions(cache: ClusterCache) -> None:
    cache.assume(pod("p"), "n2")
    cache.remove_node("n2")
    assert cache.assumed() == {}
    cache.assume(pod("p"), "n1")  # may be placed again


def test_readers_never_see_a_half_applied_update(cache: ClusterCache) -> None:
    """Each snapshot a reader takes is internally consistent while writers run."""
    stop = threading.Event()
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            snap = cache.snapshot()
            on_nodes = {p.key for info in snap.nodes for p in info.pods}
            if on_nodes != set(snap.pod_nodes):
                problems.append("pod index disagrees with nodes")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(300):
        cache.set_pod(pod(f"p{i}", node=f"n{i % 3 + 1}"))
        if i % 2:
            cache.remove_pod(f"default/p{i - 1}")
        cache.assume(pod(f"q{i}"), "n1")
        cache.forget(f"default/q{i}")
    stop.set()
    for t in threads:
        t.join()
    assert problems == []
