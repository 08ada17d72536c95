"""``SharedList`` reads exactly as the list the same replacements make: indexing, slices,
``pick``, iteration, ``len`` and ``==``, through chains of derivations long enough to fold
their rows into new lists, read whole at any point or not at all, and every sequence of a
chain keeps its own content (a derivation never changes its parent)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import shared_list
from policyengine.model.shared_list import SharedList

SIZE = 9

steps = st.lists(
    st.tuples(
        st.lists(st.tuples(st.integers(0, SIZE - 1), st.integers(0, 99)), max_size=4),
        st.booleans(),  # read the whole sequence after this step (it is then kept flat)
    ),
    min_size=1,
    max_size=40,
)


def _check(got: SharedList[int], want: list[int]) -> None:
    assert len(got) == len(want)
    assert [got[i] for i in range(len(want))] == want
    assert got.pick(range(len(want) - 1, -1, -1)) == want[::-1]
    assert got[-1] == want[-1] and got[2:5] == want[2:5]


@settings(max_examples=200, deadline=None)
@given(steps=steps)
def test_a_chain_of_replacements_reads_as_the_lists_they_make(
    steps: list[tuple[list[tuple[int, int]], bool]],
) -> None:
    current = SharedList(range(SIZE))
    want = list(range(SIZE))
    chain = [(current, list(want))]
    for rows, read_whole in steps:
        current = current.replaced(rows)
        for row, item in rows:
            want[row] = item
        _check(current, want)
        if read_whole:
            assert list(current) == want and current.flat() == want and current == want
        chain.append((current, list(want)))
    for got, wanted in chain:  # every member of the chain still reads as it did
        _check(got, wanted)
        assert list(got) == wanted


def test_replacements_fold_into_a_new_list_past_the_bound() -> None:
    size = 2 * shared_list._FOLD
    start = SharedList([0] * size)
    current = start
    for step in range(shared_list._FOLD):
        current = current.replaced([(step, step + 1), (0, -step)])
        # Until the fold the chain shares the first list and holds the rows replaced.
        assert (current._base is start._base) == (step < shared_list._FOLD - 1)
    assert current._over == {} and current.flat() is current._base
    last = shared_list._FOLD - 1
    assert current.flat()[: last + 2] == [-last, *range(2, last + 2), 0]
    assert start.flat() == [0] * size


@pytest.mark.parametrize(
    ("rows", "message"),
    [([(3, 1)], "row 3 of 3"), ([(-1, 1)], "row -1 of 3")],
    ids=["3,1", "-1,1"],
)
def test_a_row_outside_the_sequence_is_refused(rows: list[tuple[int, int]], message: str) -> None:
    with pytest.raises(IndexError, match=message):
        SharedList([1, 2, 3]).replaced(rows)


def test_it_equals_the_lists_and_sequences_holding_the_same() -> None:
    shared = SharedList([1, 2]).replaced([(0, 5)])
    assert shared == [5, 2] and shared == SharedList([5, 2]) and shared == (5, 2)
    assert shared != [1, 2]
    assert repr(shared) == "SharedList([5, 2])"


def test_many_rows_are_picked_from_the_whole_list() -> None:
    size = 3 * shared_list._FOLD
    shared = SharedList(range(size)).replaced([(5, -5), (size - 1, -1)])
    rows = list(range(size - 1, -1, -2))
    want = [-1 if r == size - 1 else -5 if r == 5 else r for r in rows]
    assert shared._flat is None
    assert shared.pick(rows) == want
    assert shared._flat is not None  # built once, read by later picks too
    assert shared.pick(rows[:3]) == want[:3] and shared.pick([5]) == [-5]


@pytest.mark.parametrize(
    "rows",
    [[], [4], [4, 1], list(range(3 * shared_list._FOLD))],
    ids=["none", "one", "two", "every row"],
)
def test_picked_items_tell_their_rows_and_where_they_came_from(rows: list[int]) -> None:
    shared = SharedList(range(3 * shared_list._FOLD)).replaced([(4, -4)])
    picked = shared.pick(rows)
    assert isinstance(picked, shared_list.Picked)
    assert picked == [-4 if r == 4 else r for r in rows]
    assert picked.rows == rows and picked.of is shared
