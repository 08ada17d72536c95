from __future__ import annotations

import pytest

from policyengine.model.normalize import (
    default_normalize,
    go_div,
    min_max_normalize,
    spread_normalize,
)


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([1, 2, 3], False, [33, 66, 100]),
        ([1, 2, 3], True, [67, 34, 0]),
        ([5], False, [100]),
        ([], False, []),
    ],
    ids=["0,0,0-False", "0,0,0-True", "1,2,3-False", "1,2,3-True", "5-False", "empty-False"],
)
def test_default_normalize(scores: list[int], reverse: bool, expected: list[int]) -> None:
    assert default_normalize(scores, reverse=reverse) == expected


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([3, 3], [0, 0]),
        ([-5, 0, 5], [0, 50, 100]),
        ([0, 1, 3], [0, 33, 100]),
        ([0, 2, 3], [0, 66, 100]),  # float64 truncation
    ],
    ids=["3,3", "-5,0,5", "0,1,3", "0,2,3"],
)
def test_min_max_normalize(scores: list[int], expected: list[int]) -> None:
    assert min_max_normalize(scores) == expected


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([0, 0], [100, 100]),
        ([2, 4, None], [100, 50, 0]),
        ([1, 3], [100, 33]),
        ([None, None], [0, 0]),
    ],
    ids=["0,0", "2,4,None", "1,3", "None,None"],
)
def test_spread_normalize(scores: list[int | None], expected: list[int]) -> None:
    assert spread_normalize(scores) == expected


def test_go_div_truncates_toward_zero() -> None:
    assert go_div(7, 2) == 3
    assert go_div(-7, 2) == -3
    assert go_div(7, -2) == -3
