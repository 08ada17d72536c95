"""``engine.heap``: a long run's collector settings, and the process's given back after."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import pytest

from policyengine.engine import heap


@pytest.fixture(autouse=True)
def _collector_as_it_was() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


@pytest.mark.parametrize("raises", [False, True], ids=["returns", "raises"])
def test_long_run_freezes_and_collects_less_often_then_gives_both_back(raises: bool) -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError) if raises else contextlib.nullcontext(), heap.long_run():
        assert gc.get_threshold() == (heap.YOUNG, 10, 10)
        assert gc.get_freeze_count() > 0
        if raises:
            raise RuntimeError("the run failed")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_keep_for_long_run_keeps_the_older_generations_thresholds() -> None:
    gc.set_threshold(700, 7, 3)
    heap.keep_for_long_run()
    assert gc.get_threshold() == (heap.YOUNG, 7, 3)
    assert gc.get_freeze_count() > 0
