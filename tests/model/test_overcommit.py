"""Which overcommit applies to a pod, and how much allocatable it makes a node count."""

from __future__ import annotations

from fractions import Fraction

import pytest

from policyengine.model.load import NO_LOAD, NodeLoad
from policyengine.model.overcommit import (
    Overcommit,
    effective_allocatable,
    overcommit_ratio,
    overcommits_for,
)
from tests.model.builders import container, make_pod

FULL = {"cpu": "1", "memory": "1Gi"}
BURSTABLE = make_pod(containers=[container("a", {"cpu": "1"})])
BEST_EFFORT = make_pod(containers=[container("a")])
GUARANTEED = make_pod(containers=[container("a", FULL, FULL)])


@pytest.mark.parametrize(
    ("pod", "ratios", "bounds", "expected"),
    [
        (BURSTABLE, {"cpu": 1.5}, {}, (Overcommit("cpu", Fraction(3, 2)),)),
        (BEST_EFFORT, {"cpu": 2.0}, {}, (Overcommit("cpu", Fraction(2)),)),
        (GUARANTEED, {"cpu": 2.0}, {}, ()),  # promised exactly what it asked for
        (BURSTABLE, {}, {}, ()),
        (BURSTABLE, {"cpu": 1.0}, {}, ()),  # a ratio of 1 is no overcommit
        # The checker refuses incompressible resources; the engine ignores them regardless.
        (BURSTABLE, {"memory": 2.0, "nvidia.com/gpu": 2.0}, {}, ()),
        (
            BURSTABLE,
            {"cpu": 2.0},
            {"cpu": 0.8},
            (Overcommit("cpu", Fraction(2), Fraction(4, 5)),),
        ),
    ],
    ids=[
        "burstable",
        "best-effort",
        "guaranteed",
        "no-ratios",
        "ratio-of-1",
        "incompressible",
        "bounded",
    ],
)
def test_overcommits_for(pod, ratios, bounds, expected) -> None:
    assert overcommits_for(pod, ratios, bounds) == expected


PLAIN = (Overcommit("cpu", Fraction(3, 2)),)
BOUNDED = (Overcommit("cpu", Fraction(2), Fraction(4, 5)),)


@pytest.mark.parametrize(
    ("overcommits", "load", "allocatable"),
    [
        ((), NO_LOAD, 4000),
        (PLAIN, NO_LOAD, 6000),  # no bound: load does not matter
        (PLAIN, NodeLoad(cpu=1.0, age=1), 6000),
        (BOUNDED, NodeLoad(cpu=0.5, age=1), 8000),
        (BOUNDED, NodeLoad(cpu=0.8, age=1), 8000),  # at the bound still holds
        (BOUNDED, NodeLoad(cpu=0.81, age=1), 4000),
        (BOUNDED, NO_LOAD, 4000),  # missing or stale load: no overcommit
        (BOUNDED, NodeLoad(memory=0.1, gpu=0.1, age=1), 4000),  # cpu itself unknown
        ((Overcommit("cpu", Fraction(4, 3)),), NO_LOAD, 5333),  # rounded down to kube units
    ],
    ids=[
        "none",
        "plain-no-load",
        "plain-busy",
        "bounded-under",
        "bounded-at-the-bound",
        "bounded-over",
        "bounded-no-load",
        "bounded-cpu-unknown",
        "rounded-down",
    ],
)
def test_effective_allocatable(overcommits, load, allocatable) -> None:
    assert effective_allocatable(4000, "cpu", load, overcommits) == allocatable
    assert effective_allocatable(4000, "memory", load, overcommits) == 4000


def test_ratio_for_explain() -> None:
    assert overcommit_ratio("cpu", NO_LOAD, PLAIN) == Fraction(3, 2)
    assert overcommit_ratio("cpu", NO_LOAD, BOUNDED) is None
    assert overcommit_ratio("memory", NO_LOAD, PLAIN) is None
