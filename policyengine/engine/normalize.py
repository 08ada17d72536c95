"""Score normalisation by name: what ``normalize KIND`` in a score rule means.

Each rule's raw values over the feasible nodes become 0–100 here, with kube-scheduler's own
arithmetic where a kind reproduces one of its plugins (integer truncation included, so that
``kube-default.sched`` scores exactly as kube-scheduler does). ``None`` marks a node the rule
did not score (its guard was false): it gets 0 and takes no part in the maximum or minimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from policyengine.model.normalize import (
    MAX_NODE_SCORE,
    default_normalize,
    min_max_normalize,
    spread_normalize,
)

Values = Sequence[float | None]


def _integral(values: Values) -> list[int] | None:
    """The values as ints when every scored one is whole (the kube plugins' case)."""
    out = []
    for v in values:
        if v is None:
            continue
        if not float(v).is_integer():
            return None
        out.append(int(v))
    return out


def _scatter(values: Values, scored: Sequence[float]) -> list[float]:
    it = iter(scored)
    return [0.0 if v is None else float(next(it)) for v in values]


def _none(values: Values) -> list[float]:
    return [0.0 if v is None else min(max(float(v), 0.0), float(MAX_NODE_SCORE)) for v in values]


def _by_max(values: Values, reverse: bool) -> list[float]:
    present = [v for v in values if v is not None]
    ints = _integral(values)
    if ints is not None:
        return _scatter(values, default_normalize(ints, reverse=reverse))
    top = max([0.0, *present])
    if top == 0:
        scaled = [float(MAX_NODE_SCORE) if reverse else float(v) for v in present]
    else:
        scaled = [MAX_NODE_SCORE * v / top for v in present]
        if reverse:
            scaled = [MAX_NODE_SCORE - s for s in scaled]
    return _scatter(values, scaled)


def _minmax(values: Values) -> list[float]:
    present = [v for v in values if v is not None]
    ints = _integral(values)
    if ints is not None:
        return _scatter(values, min_max_normalize(ints))
    if not present:
        return [0.0] * len(values)
    lo, hi = min(present), max(present)
    scaled = [0.0 if hi == lo else MAX_NODE_SCORE * (v - lo) / (hi - lo) for v in present]
    return _scatter(values, scaled)


def _spread(values: Values) -> list[float]:
    as_ints: list[int | None] = [None if v is None else math.trunc(v) for v in values]
    return [float(s) for s in spread_normalize(as_ints)]


NORMALIZERS: dict[str, Callable[[Values], list[float]]] = {
    "none": _none,
    "max": lambda values: _by_max(values, reverse=False),
    "reverse": lambda values: _by_max(values, reverse=True),
    "minmax": _minmax,
    "pod_topology_spread": _spread,
}


def normalize(kind: str, values: Values) -> list[float]:
    return NORMALIZERS[kind](values)


# --- over numpy columns ------------------------------------------------------------------
#
# The engine keeps raw scores as float64 columns with a mask of the scored nodes; normalising
# 5,000 nodes value by value in Python cost more than scoring them. These give exactly what
# ``normalize`` gives (Go's truncating int64 division where the values are whole, the same
# IEEE operations in the same order otherwise); anything outside the range where int64 and
# float64 agree exactly (non-finite, or beyond 2**50) goes through ``normalize`` itself.

_EXACT = float(2**50)


def _go_div(a: np.ndarray, b: int) -> np.ndarray:
    q = np.abs(a) // abs(b)
    return np.where((a >= 0) == (b >= 0), q, -q)


# Each kind splits into the facts it reads of the whole feasible column (``_stats_*``: a
# tuple, equal between two columns exactly when every row normalises alike) and the per-row
# arithmetic given those facts (``_apply_*``), so the engine can normalise only the rows that
# changed while the facts stay the same.

Stats = tuple[object, ...]


def _stats_none(present: np.ndarray) -> Stats:
    return ()


def _apply_none(v: np.ndarray, scored: np.ndarray, stats: Stats) -> np.ndarray:
    return np.where(scored, clip_score(v), 0.0)


_TOP = float(MAX_NODE_SCORE)


def clip_score(v: np.ndarray) -> np.ndarray:
    """``np.clip(v, 0.0, 100.0)``, bit for bit (NaN and -0.0 kept), by the two ufuncs:
    ``np.clip``'s Python wrapper cost twice its work on a cycle's few rows."""
    return np.minimum(np.maximum(0.0, v), _TOP)


def _stats_by_max(present: np.ndarray) -> Stats:
    # Whether every value is whole, the maximum (at least 0), and whether none is negative
    # (``whole_normalised``: then every row normalises to 0-100).
    top_value = max(0.0, float(present.max())) if present.size else 0.0
    non_negative = not present.size or float(present.min()) >= 0.0
    return (bool(np.all(present == np.floor(present))), top_value, non_negative)


def _apply_by_max(v: np.ndarray, scored: np.ndarray, stats: Stats, reverse: bool) -> np.ndarray:
    integral, top_value, _ = stats
    assert isinstance(top_value, float)
    if integral:
        ints = v.astype(np.int64)
        top = int(top_value)
        if top == 0:
            out = np.full(v.shape, float(MAX_NODE_SCORE)) if reverse else ints.astype(np.float64)
        else:
            scaled = _go_div(MAX_NODE_SCORE * ints, top)
            out = (MAX_NODE_SCORE - scaled if reverse else scaled).astype(np.float64)
    elif top_value == 0:
        out = np.full(v.shape, float(MAX_NODE_SCORE)) if reverse else v.copy()
    else:
        out = (MAX_NODE_SCORE * v) / top_value
        if reverse:
            out = MAX_NODE_SCORE - out
    return np.where(scored, out, 0.0)


def _stats_minmax(present: np.ndarray) -> Stats:
    if not present.size:
        return (None,)
    if np.all(present == np.floor(present)):
        return (True, int(present.min()), int(present.max()))
    return (False, float(present.min()), float(present.max()))


def _apply_minmax(v: np.ndarray, scored: np.ndarray, stats: Stats) -> np.ndarray:
    if stats[0] is None:
        return np.zeros(v.shape)
    integral, lo, hi = stats
    if integral:
        assert isinstance(lo, int) and isinstance(hi, int)
        ints = v.astype(np.int64)
        diff = hi - lo
        if diff > 0:
            out = np.trunc(float(MAX_NODE_SCORE) * ((ints - lo).astype(np.float64) / float(diff)))
        else:
            out = np.zeros(v.shape)
    else:
        assert isinstance(lo, float) and isinstance(hi, float)
        out = np.zeros(v.shape) if hi == lo else (MAX_NODE_SCORE * (v - lo)) / (hi - lo)
    return np.where(scored, out, 0.0)


def _stats_spread(scored_values: np.ndarray) -> Stats:
    present = np.trunc(scored_values).astype(np.int64)
    lo = int(present.min()) if present.size else 0
    hi = max(0, int(present.max())) if present.size else 0
    return (lo, hi)


def _apply_spread(v: np.ndarray, scored: np.ndarray, stats: Stats) -> np.ndarray:
    lo, hi = stats
    assert isinstance(lo, int) and isinstance(hi, int)
    ints = np.trunc(v).astype(np.int64)
    if hi == 0:
        out = np.full(v.shape, float(MAX_NODE_SCORE))
    else:
        out = _go_div(MAX_NODE_SCORE * (hi + lo - ints), hi).astype(np.float64)
    return np.where(scored, out, 0.0)


Apply = Callable[[np.ndarray, np.ndarray, Stats], np.ndarray]

# Per kind: its facts of the scored rows' values (``_stats_*``), and its per-row arithmetic.
_KINDS: dict[str, tuple[Callable[[np.ndarray], Stats], Apply]] = {
    "none": (_stats_none, _apply_none),
    "max": (_stats_by_max, lambda v, scored, stats: _apply_by_max(v, scored, stats, False)),
    "reverse": (_stats_by_max, lambda v, scored, stats: _apply_by_max(v, scored, stats, True)),
    "minmax": (_stats_minmax, _apply_minmax),
    "pod_topology_spread": (_stats_spread, _apply_spread),
}


def _exact(v: np.ndarray) -> bool:
    """Whether the array arithmetic gives what ``normalize`` gives for these values: every
    one finite and below 2**50 in magnitude (a NaN or infinite maximum compares false)."""
    return not v.size or float(np.abs(v).max()) < _EXACT


def whole_normalised(kind: str, facts: Stats, whole_values: bool) -> bool:
    """Whether normalising a column of ``kind`` under ``facts`` gives a whole number from 0 to
    100 at every row (``whole_values``: the raw values are whole). A weighted sum of such
    columns is a whole number far below 2**53: float64 adds it exactly, in any order."""
    if kind == "pod_topology_spread":
        return facts[0] >= 0  # type: ignore[operator]  # truncated; hi + lo - v in [0, hi]
    if kind in ("max", "reverse"):
        return facts[0] is True and facts[2] is True  # whole, none negative: Go's division
    if kind == "minmax":
        return facts[0] is not False  # whole (truncated), or nothing scored (all 0)
    return kind == "none" and whole_values  # clipped to 0–100


def column_stats(kind: str, values: np.ndarray, scored: np.ndarray) -> Stats | None:
    """What normalising ``values`` (where ``scored``) reads of the whole column; None when the
    column needs ``normalize`` itself (values outside the exact range). Every kind reads the
    scored rows alone (an unscored row normalises to 0 whatever it holds)."""
    present = values[scored]
    if not _exact(present):
        return None
    return _KINDS[kind][0](present)


def unscored_stats(kind: str) -> Stats:
    """``column_stats`` of a column that scores no row (every kind reads scored rows alone,
    so these are the facts of an empty column); applying them gives +0.0 at every row."""
    found = _UNSCORED.get(kind)
    if found is None:
        found = _UNSCORED[kind] = _KINDS[kind][0](np.zeros(0))
    return found


_UNSCORED: dict[str, Stats] = {}


def apply_stats(kind: str, values: np.ndarray, scored: np.ndarray, stats: Stats) -> np.ndarray:
    """The normalised values of some rows of a column whose ``column_stats`` are ``stats``:
    exactly the rows of normalising the whole column."""
    # Extreme raw values (1e308, a denormal maximum) overflow to ±inf here exactly as the
    # reference's Python floats do, silently; the scores are clipped to 0–100 after.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _KINDS[kind][1](np.where(scored, values, 0.0), scored, stats)


def normalize_array(kind: str, values: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """``normalize`` over a float64 column; ``scored`` is False where the value is None (the
    value there is ignored)."""
    stats = column_stats(kind, values, scored)
    if stats is None:
        listed = [
            float(x) if s else None for x, s in zip(values.tolist(), scored.tolist(), strict=True)
        ]
        return np.array(normalize(kind, listed), dtype=np.float64)
    return apply_stats(kind, values, scored, stats)
