"""How a long run keeps its heap: the cyclic collector set for a scheduler's allocations.

A run holds a large cluster for its whole length, and each cycle allocates few containers but
large ones: a derived snapshot's tuple of every node, per-cycle lists over the feasible nodes.
CPython's defaults serve neither. Full collections walk the whole cluster, and the young
generation, collected after 700 net allocations (every dozen cycles or so), is walked with
those large containers in it each time: about 8% of a 10,000-pod ``mixed`` run (``python -m
benchmarks mixed``) went to the collector.

So a long run (``simulate``, ``replay``, ``run``) moves what is alive at its start into the
permanent generation (``gc.freeze``; reference counting still frees it, only cycles among
those objects would outlive the run) and collects the young generation after ``YOUNG`` net
allocations: the collector's share falls to 2–3%, a run's CPU by about 6%, the memory held
between collections by a few MB.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG = 10_000  # net container allocations between young-generation collections


def keep_for_long_run() -> None:
    """Freeze what is alive now and collect the young generation less often, for the rest
    of the process (``policyengine run``: the process is the run)."""
    gc.freeze()
    gc.set_threshold(YOUNG, *gc.get_threshold()[1:])


@contextlib.contextmanager
def long_run() -> Iterator[None]:
    """``keep_for_long_run`` for the ``with`` block, the collector as it was afterwards (a
    ``simulate`` may run inside a longer-lived process: the tests, a notebook)."""
    with young_collected_less_often():
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()


@contextlib.contextmanager
def young_collected_less_often() -> Iterator[None]:
    """The young generation collected after ``YOUNG`` net allocations within the ``with``
    block, as before it afterwards."""
    threshold = gc.get_threshold()
    gc.set_threshold(YOUNG, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
