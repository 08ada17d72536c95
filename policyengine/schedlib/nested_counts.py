"""Counts kept in nested maps, corrected step by step with no zero left behind.

The kept sums' histograms, the pair index's rows and the domain and term counts move by
deltas as pods come and go; a map that keeps no zero count and no empty inner map compares
equal to one counted afresh, which is how the tests hold them to fresh passes.
"""

from __future__ import annotations

from typing import Any


def add_count(counts: dict[Any, int], key: Any, delta: int) -> None:
    """``counts[key] += delta``, keeping no zero count."""
    left = counts.get(key, 0) + delta
    if left:
        counts[key] = left
    else:
        del counts[key]


def add_nested(counts: dict[Any, dict[Any, int]], outer: Any, inner: Any, delta: int) -> None:
    """``counts[outer][inner] += delta``, keeping no zero count and no empty inner map (the
    kept sums compare equal to ones summed afresh)."""
    found = counts.get(outer)
    if found is None:
        found = counts[outer] = {}
    # ``add_count`` written out: the kept sums call this once per pair they correct.
    left = found.get(inner, 0) + delta
    if left:
        found[inner] = left
    else:
        del found[inner]
        if not found:
            del counts[outer]
