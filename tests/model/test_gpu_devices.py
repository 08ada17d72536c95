from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyengine.model.gpu_devices import (
    BEST_FIT,
    FIRST_FIT,
    MOST_FREE,
    GpuDemand,
    GpuDevice,
    Grant,
    NodeGpus,
    share,
    whole,
)


def node(*memories: int) -> NodeGpus:
    return NodeGpus.of(GpuDevice(i, f"gpu{i}", "A", m) for i, m in enumerate(memories))


def used(state: NodeGpus) -> list[tuple[int, int, int]]:
    return [(u.used_cores, u.used_memory_mib, u.pods) for u in state.uses]


@pytest.mark.parametrize(
    ("placed", "demand", "rule", "expected"),
    [
        # a share lands on one device; best fit picks the fullest device that still fits
        ([], share(cores=25, memory_mib=1000), BEST_FIT, ["gpu0"]),
        (
            [("a", share(cores=60, memory_mib=4000))],
            share(cores=30, memory_mib=1000),
            BEST_FIT,
            ["gpu0"],
        ),
        (
            [("a", share(cores=60, memory_mib=4000))],
            share(cores=30, memory_mib=1000),
            FIRST_FIT,
            ["gpu0"],
        ),
        (
            [("a", share(cores=80, memory_mib=1000))],
            share(cores=30, memory_mib=1000),
            BEST_FIT,
            ["gpu1"],
        ),
        # memory limits a share even when compute is free
        (
            [("a", share(cores=10, memory_mib=7000))],
            share(cores=10, memory_mib=2000),
            BEST_FIT,
            ["gpu1"],
        ),
        # compute limits a share even when memory is free
        (
            [("a", share(cores=90, memory_mib=100))],
            share(cores=20, memory_mib=100),
            BEST_FIT,
            ["gpu1"],
        ),
        # a multi-GPU pod takes entirely free devices only
        ([("a", share(cores=5, memory_mib=10))], whole(2), BEST_FIT, ["gpu1", "gpu2"]),
        ([("a", share(cores=5, memory_mib=10))], whole(3), BEST_FIT, None),
        # a multi-device share takes distinct devices
        ([], share(cores=50, memory_mib=1000, devices=2), FIRST_FIT, ["gpu0", "gpu1"]),
        # spread (most free) takes the emptiest fitting device, then the next emptiest
        (
            [("a", share(cores=60, memory_mib=4000))],
            share(cores=30, memory_mib=1000),
            MOST_FREE,
            ["gpu1"],
        ),
        (
            # gpu0 keeps 40% and 4000 MiB free, gpu1 30% and 7900 MiB, gpu2 everything
            [("a", share(cores=60, memory_mib=4000)), ("b", share(cores=70, memory_mib=100))],
            share(cores=30, memory_mib=1000, devices=2),
            MOST_FREE,
            ["gpu2", "gpu1"],
        ),
        ([("a", share(cores=5, memory_mib=10))], whole(2), MOST_FREE, ["gpu1", "gpu2"]),
        # memory as a percentage of the device
        (
            [("a", share(cores=10, memory_percent=60))],
            share(cores=10, memory_percent=50),
            BEST_FIT,
            ["gpu1"],
        ),
    ],
    ids=[
        "share-on-an-empty-node",
        "best-fit-fullest",
        "first-fit",
        "best-fit-next-device",
        "memory-limits",
        "compute-limits",
        "whole-2-free-devices",
        "whole-3-too-few",
        "share-on-2-devices",
        "most-free",
        "most-free-2-devices",
        "whole-2-most-free",
        "memory-percent",
    ],
)
def test_choose(
    placed: list[tuple[str, GpuDemand]], demand: GpuDemand, rule: str, expected: list[str] | None
) -> None:
    state = node(8000, 8000, 8000)
    for key, d in placed:
        state = state.with_pod(key, d)
    chosen = state.choose(demand, rule)
    assert (None if chosen is None else [g.uuid for g in chosen]) == expected
    assert state.fits(demand) is (expected is not None)


def test_slots_limit_sharers() -> None:
    state = NodeGpus.of([GpuDevice(0, "g", "A", 8000, slots=2)])
    state = state.with_pod("a", share(cores=10)).with_pod("b", share(cores=10))
    assert not state.fits(share(cores=10))


def test_release_frees_exactly_its_share() -> None:
    base = node(8000, 8000)
    state = base.with_pod("a", share(cores=30, memory_mib=3000))
    state = state.with_pod("b", share(cores=20, memory_mib=1000))
    state = state.with_pod("c", whole(1))
    assert used(state) == [(50, 4000, 2), (100, 8000, 1)]
    after = state.without_pod("a")
    assert used(after) == [(20, 1000, 1), (100, 8000, 1)]
    assert after.grants["b"] == (Grant("gpu0", 20, 1000, "A"),)
    assert used(after.without_pod("b").without_pod("c")) == used(base)
    assert after.without_pod("nobody") is after


def test_explicit_grants_win_and_unknown_devices_are_dropped() -> None:
    state = node(8000, 8000).with_pod(
        "a", share(cores=10), [Grant("gpu1", 10, 500), Grant("gpu9", 10, 500)]
    )
    assert used(state) == [(0, 0, 0), (10, 500, 1)]
    assert state.grants["a"] == (Grant("gpu1", 10, 500),)


def test_accounting_totals() -> None:
    state = node(8000, 8000).with_pod("a", share(cores=50, memory_mib=2000)).with_pod("b", whole(1))
    assert state.total_gpus == 2
    assert state.allocated_gpus == 1.5
    assert state.allocated_memory_mib == 10000
    assert state.total_memory_mib == 16000


@pytest.mark.parametrize(
    ("placed", "shapes", "expected"),
    [
        # an empty node: every shape can use everything
        ([], [(share(cores=25, memory_mib=1000), 1.0)], 0.0),
        # 10% free on gpu0 is unusable by a 25% shape
        ([("a", share(cores=90, memory_mib=1000))], [(share(cores=25, memory_mib=1000), 1.0)], 0.1),
        # a whole-GPU shape cannot use the free part of a shared device
        ([("a", share(cores=50, memory_mib=1000))], [(whole(1), 1.0)], 0.5),
        # weighted: half the shapes lose 0.5, half lose nothing
        (
            [("a", share(cores=50, memory_mib=1000))],
            [(whole(1), 1.0), (share(cores=25, memory_mib=1000), 1.0)],
            0.25,
        ),
        # memory exhausted: the free compute is lost to every shape
        ([("a", share(cores=20, memory_mib=8000))], [(share(cores=10, memory_mib=100), 1.0)], 0.8),
        # a two-GPU shape cannot use a node with one free device
        ([("a", whole(1))], [(whole(2), 1.0)], 1.0),
    ],
    ids=[
        "empty-node",
        "unusable-remainder",
        "whole-shape-on-a-shared-device",
        "weighted",
        "memory-exhausted",
        "two-gpus-on-one-free",
    ],
)
def test_fragmentation(
    placed: list[tuple[str, GpuDemand]], shapes: list[tuple[GpuDemand, float]], expected: float
) -> None:
    state = node(8000, 8000)
    for key, d in placed:
        state = state.with_pod(key, d)
    assert state.fragmentation(shapes) == pytest.approx(expected)


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, str, GpuDemand]]:
    demands = st.one_of(
        st.builds(whole, st.integers(1, 2)),
        st.builds(
            share,
            cores=st.integers(0, 100),
            memory_mib=st.integers(0, 8000),
            devices=st.integers(1, 2),
        ),
    )
    ops = draw(
        st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from("abcdef"), demands))
    )
    return ops


@given(operations())
def test_incremental_state_equals_the_grants_it_holds(
    ops: list[tuple[str, str, GpuDemand]],
) -> None:
    """Whatever the sequence of placements and releases, each device's usage is exactly the sum
    of the grants held on it, never beyond capacity, and releasing everything restores the
    empty node."""
    base = node(8000, 8000, 8000)
    state = base
    for op, key, demand in ops:
        state = state.with_pod(key, demand) if op == "add" else state.without_pod(key)
        for u in state.uses:
            held = [
                g for grants in state.grants.values() for g in grants if g.uuid == u.device.uuid
            ]
            assert u.used_cores == sum(g.cores for g in held)
            assert u.used_memory_mib == sum(g.memory_mib for g in held)
            assert u.pods == len(held)
            assert u.used_cores <= 100 and u.used_memory_mib <= 8000
    for key in list(state.grants):
        state = state.without_pod(key)
    assert state.uses == base.uses
