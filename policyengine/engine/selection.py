"""Choosing among nodes of equal best total: kube-scheduler's seeded random choice, or a
policy's ``select lowest|highest { KEY }``.

Random ties spread pods: every tie is a coin toss between equally good nodes, and over
thousands of placements the tosses scatter pods over nodes a packing policy meant to keep
whole. A policy that wants placement deterministic and packing-friendly orders the tied nodes
by a key (``select lowest { node.name }``: the first by name; ``select highest { ... }``: by a
label, a load, a fill level). Nodes whose keys are still equal fall back to the seeded choice,
so a run stays reproducible by ``--seed``. The fast path (compiled key) and the reference
(the key's syntax tree walked) share this one function, and so decide alike.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from policyengine.lang.runtime import Env

_MISSING = object()
MISSING = _MISSING  # a key that failed to evaluate (``pick_by_values``)


def pick_by_key(
    mode: str,
    candidates: Sequence[tuple[str, Env]],
    key: Callable[[Env], Any],
    rng: random.Random,
) -> str:
    """The winner among ``candidates`` (tied nodes in name order, with each one's env): the
    least (``lowest``) or greatest (``highest``) ``key``; nodes whose key fails to evaluate
    come after every other; equal keys by ``rng`` as kube-scheduler's choice among them."""
    values: list[Any] = []
    for _, env in candidates:
        try:
            values.append(key(env))
        except Exception:  # a key that fails on a node ranks it last, never stops the cycle
            values.append(_MISSING)
    return pick_by_values(mode, [name for name, _ in candidates], values, rng)


def pick_by_values(
    mode: str, names: Sequence[str], values: Sequence[Any], rng: random.Random
) -> str:
    """``pick_by_key`` with the keys known (``MISSING`` where a key failed)."""
    present = [v for v in values if v is not _MISSING]
    if present:
        target = min(present) if mode == "lowest" else max(present)
        winners = [
            name for name, v in zip(names, values, strict=True) if v is not _MISSING and v == target
        ]
    else:
        winners = list(names)
    return winners[0] if len(winners) == 1 else rng.choice(winners)
