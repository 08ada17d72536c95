"""Score normalisation by name: what ``normalize KIND`` in a score rule means.

Each rule's raw values over the feasible nodes become 0–100 here, with kube-scheduler's own
arithmetic where a kind reproduces one of its plugins (integer truncation included, so that
``kube-default.sched`` scores exactly as kube-scheduler does). ``None`` marks a node the rule
did not score (its guard was false): it gets 0 and takes no part in the maximum or minimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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


def _scatter(values: Values, scored: list[float]) -> list[float]:
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
