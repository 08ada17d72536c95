"""kube-scheduler's NormalizeScore variants, as pure functions over the feasible nodes' scores.

Raw plugin scores are normalised to 0..100 over the feasible nodes only, with Go's int64
arithmetic (division truncates toward zero) or, where kube uses float64, the same IEEE doubles
and the same truncation. The engine applies these after scoring every feasible node, then
multiplies by the plugin weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize(
    scores: Sequence[int], *, reverse: bool = False, max_priority: int = MAX_NODE_SCORE
) -> list[int]:
    """``helper.DefaultNormalizeScore``: scale by the maximum; ``reverse`` turns it upside down.

    All zero: stays zero, or every node gets ``max_priority`` when reversed. Used by
    NodeAffinity (plain) and TaintToleration (reversed).
    """
    top = max((s for s in scores), default=0)
    top = max(top, 0)
    if top == 0:
        return [max_priority if reverse else s for s in scores]
    out = []
    for s in scores:
        v = go_div(max_priority * s, top)
        out.append(max_priority - v if reverse else v)
    return out


def min_max_normalize(scores: Sequence[int], *, max_priority: int = MAX_NODE_SCORE) -> list[int]:
    """InterPodAffinity: ``100 * (s - min) / (max - min)`` in float64, truncated; all equal → 0."""
    if not scores:
        return []
    lo = min(scores)
    hi = max(scores)
    diff = hi - lo
    out = []
    for s in scores:
        f = 0.0
        if diff > 0:
            f = float(max_priority) * (float(s - lo) / float(diff))
        out.append(math.trunc(f))
    return out


def spread_normalize(
    scores: Sequence[int | None], *, max_priority: int = MAX_NODE_SCORE
) -> list[int]:
    """PodTopologySpread: fewer matching pods is better; ``None`` marks an ignored node (→ 0).

    ``100 * (max + min - s) / max`` over the non-ignored nodes; a maximum of 0 gives 100.
    """
    present = [s for s in scores if s is not None]
    lo = min(present) if present else 0
    hi = max([0, *present])
    out = []
    for s in scores:
        if s is None:
            out.append(0)
        elif hi == 0:
            out.append(max_priority)
        else:
            out.append(go_div(max_priority * (hi + lo - s), hi))
    return out
