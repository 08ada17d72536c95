"""``SharedRows`` reads exactly as the tuple the same replacements make: indexing (negative
rows and slices too), ``len``, iteration, ``flat``, ``==`` and pickling, through chains of
derivations long enough to fold their replacements into new bases, and every rows object of
a chain keeps its own content (derivations never change their parent)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import shared_rows
from policyengine.model.shared_rows import SharedRows

SIZE = 9


def _check(got: SharedRows[int], want: tuple[int, ...]) -> None:
    assert len(got) == len(want)
    assert tuple(got) == want
    assert got.flat() == want
    assert got == want and got == SharedRows(want)
    assert [got[row] for row in range(-len(want), len(want))] == [
        want[row] for row in range(-len(want), len(want))
    ]
    assert got[1:4] == want[1:4]
    assert pickle.loads(pickle.dumps(got)) == got
    assert hash(got) == hash(want)


@settings(max_examples=300, deadline=None)
@given(
    start=st.lists(st.integers(0, 5), min_size=SIZE, max_size=SIZE),
    edits=st.lists(st.tuples(st.integers(0, SIZE - 1), st.integers(0, 5)), max_size=40),
    fold=st.sampled_from([1, 2, 64]),
)
def test_replacements_read_as_the_tuple_they_make(start, edits, fold) -> None:  # type: ignore[no-untyped-def]
    got: SharedRows[int] = SharedRows(tuple(start))
    want = list(start)
    chain = [(got, tuple(want))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shared_rows, "_FOLD", fold)  # small bounds fold often
        for row, value in edits:
            got = got.with_row(row, value)
            want[row] = value
            chain.append((got, tuple(want)))
    for rows, content in chain:  # every link still reads as it was made
        _check(rows, content)


@pytest.mark.parametrize(
    ("row", "error"),
    [(SIZE, IndexError), (-1, IndexError), (2**40, IndexError)],
    ids=["past the end", "negative", "far past the end"],
)
def test_a_replaced_row_is_one_of_the_rows(row: int, error: type[Exception]) -> None:
    rows = SharedRows(tuple(range(SIZE)))
    with pytest.raises(error):
        rows.with_row(row, 0)


def test_a_numpy_integer_reads_the_replaced_row() -> None:
    rows = SharedRows(tuple(range(SIZE))).with_row(3, 30)
    assert rows[np.int64(3)] == 30 and rows[np.int64(-SIZE + 3)] == 30
    assert rows[np.int64(4)] == 4


def test_reading_past_the_end_raises_as_a_tuple_does() -> None:
    rows = SharedRows(tuple(range(SIZE))).with_row(0, 7)
    with pytest.raises(IndexError):
        rows[SIZE]
    with pytest.raises(IndexError):
        rows[-SIZE - 1]


def test_a_derivation_shares_its_parent_s_tuple_until_it_folds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(shared_rows, "_FOLD", 2)
    base = tuple(range(SIZE))
    one = SharedRows(base).with_row(0, 10).with_row(1, 11)
    assert one._base is base  # two replacements: still the parent's tuple
    three = one.with_row(2, 12)
    assert three._base is not base and three._over == {}  # the third folds them in
    assert three.flat() == (10, 11, 12, *base[3:])
