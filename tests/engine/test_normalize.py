"""Score normalisation by name, table-driven: kube-scheduler's arithmetic where it applies."""

from __future__ import annotations

import pytest

from policyengine.engine.normalize import normalize

CASES = [
    # kind, raw values (None = not scored), normalised
    ("none", [0, 50, 130, -5, None], [0, 50, 100, 0, 0]),
    ("max", [0, 1, 3], [0, 33, 100]),  # integer truncation as in kube's DefaultNormalizeScore
    ("max", [0, 0], [0, 0]),
    ("max", [2.5, 5.0, None], [50.0, 100.0, 0]),  # fractional values use true division
    ("reverse", [0, 1, 3], [100, 67, 0]),
    ("reverse", [0, 0, None], [100, 100, 0]),  # all zero: every scored node gets 100
    ("reverse", [None, None], [0, 0]),  # nothing scored (PreScore skip): nothing to reverse
    ("minmax", [2, 4, 6], [0, 50, 100]),
    ("minmax", [5, 5], [0, 0]),
    ("minmax", [-3, 0, 3], [0, 50, 100]),
    ("pod_topology_spread", [0, 2, 4, None], [100, 50, 0, 0]),
    ("pod_topology_spread", [0, 0], [100, 100]),
]


@pytest.mark.parametrize(
    ("kind", "values", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_normalize(kind: str, values: list[float | None], expected: list[float]) -> None:
    assert normalize(kind, values) == [float(e) for e in expected]
