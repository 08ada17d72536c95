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
    whole_normalised,
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


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(NORMALIZERS)),
    values=st.lists(VALUES, min_size=0, max_size=12),
)
def test_a_column_said_to_normalise_whole_does(kind: str, values: list[float | None]) -> None:
    raw = np.array([0.0 if v is None else v for v in values])
    scored = np.array([v is not None for v in values], bool)
    facts = column_stats(kind, raw, scored)
    assert facts is not None
    whole_values = all(v is None or float(v).is_integer() for v in values)
    if whole_normalised(kind, facts, whole_values):
        normalised = apply_stats(kind, raw, scored, facts)
        assert all(float(v).is_integer() and 0 <= v <= 100 for v in normalised.tolist())


@pytest.mark.parametrize(
    ("kind", "values", "whole"),
    [
        ("pod_topology_spread", [0.5, 3.0], True),  # truncated first
        ("max", [1.0, 3.0], True),
        ("max", [1.5, 3.0], False),  # true division
        ("max", [-1.0, 3.0], False),  # below 0
        ("reverse", [-(2.0**40), 1.0], False),
        ("pod_topology_spread", [-1.0, 3.0], False),
        ("reverse", [], True),
        ("minmax", [2.0, 4.0], True),
        ("minmax", [], True),  # nothing scored: all 0
        ("minmax", [2.5, 4.0], False),
        ("none", [2.0, 4.0], True),  # an int-typed body: clipped to 0-100
    ],
    ids=[
        "spread",
        "max whole",
        "max fractions",
        "max negative",
        "reverse negative",
        "spread negative",
        "reverse empty",
        "minmax whole",
        "minmax empty",
        "minmax fractions",
        "none whole",
    ],
)
def test_which_columns_normalise_whole(kind: str, values: list[float], whole: bool) -> None:
    raw = np.array(values, float)
    facts = column_stats(kind, raw, np.ones(len(values), bool))
    assert facts is not None
    assert whole_normalised(kind, facts, whole_values=True) is whole
    assert whole_normalised("none", facts, whole_values=False) is False


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
