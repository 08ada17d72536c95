"""Score normalisation by name, table-driven: kube-scheduler's arithmetic where it applies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.engine.normalize import (
    NORMALIZERS,
    apply_stats,
    clip_score,
    column_stats,
    normalize,
    normalize_array,
    unscored_stats,
)

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


# The engine normalises only the rows that changed while a column's facts stay the same
# (``column_stats``): applied to any rows, the facts of the whole column give exactly the
# whole column's normalised values there.

VALUES = st.one_of(
    st.none(),
    st.integers(-5, 300).map(float),
    st.floats(-10, 300, allow_nan=False).map(lambda v: round(v, 2)),
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(NORMALIZERS)),
    values=st.lists(VALUES, min_size=1, max_size=12),
    data=st.data(),
)
def test_facts_of_the_column_normalise_any_rows_alike(
    kind: str, values: list[float | None], data: st.DataObject
) -> None:
    raw = np.array([0.0 if v is None else v for v in values])
    scored = np.array([v is not None for v in values])
    whole = normalize_array(kind, raw, scored)
    assert whole.tolist() == normalize(kind, values)
    facts = column_stats(kind, raw, scored)
    assert facts is not None
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, len(values) - 1)))), np.int64)
    part = apply_stats(kind, raw[rows], scored[rows], facts)
    assert part.tolist() == whole[rows].tolist()


@pytest.mark.parametrize(
    ("outside", "kind"),
    [
        (float(2**60), "max"),
        (-float(2**50), "minmax"),
        (math.inf, "none"),
        (-math.inf, "reverse"),
        (math.nan, "pod_topology_spread"),
    ],
    ids=["2**60", "-2**50", "inf", "-inf", "nan"],
)
def test_values_outside_the_exact_range_have_no_facts(outside: float, kind: str) -> None:
    raw = np.array([1.0, outside])
    assert column_stats(kind, raw, np.array([True, True])) is None
    assert column_stats(kind, raw, np.array([True, False])) is not None  # unscored: not read


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(sorted(NORMALIZERS)),
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=12),
)
def test_a_column_scoring_no_row_has_the_facts_of_none_and_normalises_to_plus_zero(
    kind: str, values: list[float]
) -> None:
    # ``engine.fastpath.fullpass.score_all`` takes these facts instead of reading such a column.
    raw = np.array(values, np.float64)
    none = np.zeros(len(values), bool)
    facts = column_stats(kind, raw, none)
    assert facts == unscored_stats(kind) and repr(facts) == repr(unscored_stats(kind))
    out = apply_stats(kind, raw, none, unscored_stats(kind))
    assert out.tobytes() == np.zeros(len(values)).tobytes()  # +0.0, never -0.0
    assert normalize(kind, [None] * len(values)) == [0.0] * len(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=12))
def test_clip_score_is_np_clip_bit_for_bit(values: list[float]) -> None:
    v = np.array([*values, -0.0, 0.0, 100.0], np.float64)
    assert clip_score(v).tobytes() == np.clip(v, 0.0, 100.0).tobytes()
