"""PodTopologySpread's PreScore and score over thousands of nodes at once.

The plugin's own steps (``model.plugins.pod_topology_spread``) walk the feasible nodes in
Python: PreScore reads each node's labels to find the ignored nodes and the domains, and the
score reads each node's labels again and, for a hostname constraint, counts the matching
pods on the node. Every Deployment behind a Service is spread that way by default (by
hostname and zone), so on 5,000 nodes those walks were most of a pod's cycle.

Here the same answers come from columns over the snapshot's rows that outlive the cycle:
each label's value per row (``domains.label_column``, kept across assume steps) and, per
selector and namespace, each row's count of matching pods (``host_counts``), corrected only
at the rows whose node gained or lost a pod the selector can match since it was last read.
A cycle then gathers and adds numpy columns. The arithmetic is the plugin's, in the same
floating-point order, so every score is exactly the plugin's; ``tests/schedlib/
test_spread_score.py`` holds them equal node for node and the fast-path property tests whole
decisions.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from policyengine.lang.vector import ints
from policyengine.model.frozen import FrozenDict
from policyengine.model.labels import Selector
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.schedlib.domains import RowColumns, label_column
from policyengine.schedlib.node_rows import pair_rows, rows_at
from policyengine.schedlib.steplog import label_marks

HOSTNAME = spread.HOSTNAME

# --- matching pods per row ------------------------------------------------------------------

# (selector, namespace) pairs: about one per Deployment being scheduled.
_COUNTS: RowColumns[np.ndarray] = RowColumns(256)


def host_counts(snapshot: ClusterSnapshot, selector: Selector, namespace: str) -> np.ndarray:
    """Per row of ``snapshot.nodes``: ``pod_topology_spread.count_matching`` of the row's
    pods (read only; the array is shared with later calls)."""

    marks = label_marks((selector,))

    def build(nodes: Sequence[NodeInfo]) -> np.ndarray:
        rows = pair_rows(snapshot, marks)  # only these nodes hold a pod the selector can match
        if rows is None:
            return np.fromiter(
                (spread.count_matching(info.pods, selector, namespace) for info in nodes),
                np.int64,
                len(nodes),
            )
        counts = np.zeros(len(nodes), np.int64)
        counts[rows] = [spread.count_matching(nodes[row].pods, selector, namespace) for row in rows]
        return counts

    def patch(
        counts: np.ndarray, old: Sequence[NodeInfo], nodes: Sequence[NodeInfo], rows: list[int]
    ) -> np.ndarray:
        if not rows:
            return counts
        counts = counts.copy()
        for row in rows:
            counts[row] = spread.count_matching(nodes[row].pods, selector, namespace)
        return counts

    return _COUNTS.get((selector, namespace), snapshot, marks, build, patch)


# --- PreScore -------------------------------------------------------------------------------


def score_state(
    pod: Any,
    snapshot: ClusterSnapshot,
    constraints: tuple[spread.Constraint, ...],
    feasible: Sequence[NodeInfo],
    require_all: bool,
    counted: Callable[[AbstractSet[spread.Pair]], dict[spread.Pair, int]],
) -> spread.ScoreState:
    """``pod_topology_spread.score_state`` read from the label columns: equal to it."""
    picked = rows_at(snapshot, feasible)
    if picked is None or not len(picked):
        return spread.score_state(pod, constraints, feasible, require_all, counted)
    columns = [label_column(snapshot, c.topology_key) for c in constraints]
    found = _domains(constraints, columns, picked, feasible, require_all)
    ignored, pairs, weights = found
    return spread.ScoreState(
        constraints, pod.namespace, ignored, FrozenDict(counted(pairs)), weights
    )


_Domains = tuple[frozenset[str], frozenset[spread.Pair], tuple[float, ...]]
# Per constraints (by identity, with the label columns and the rows they were read at) and
# whether every key is required: the last feasible rows' domains. A class's next cycle mostly
# finds the same feasible rows, and comparing them costs a fraction of reading every feasible
# row's labels again.
_LAST_DOMAINS: dict[tuple[int, bool], tuple[Any, list[Any], np.ndarray, _Domains]] = {}
_LAST_KEPT = 1024


def _domains(
    constraints: tuple[spread.Constraint, ...],
    columns: list[Any],
    picked: np.ndarray,
    feasible: Sequence[NodeInfo],
    require_all: bool,
) -> _Domains:
    """The nodes ignored (lacking a key, when every key is required), the (key, value)
    domains of the feasible rows ``picked`` and each constraint's normalising weight."""
    last = _LAST_DOMAINS.get((id(constraints), require_all))
    if (
        last is not None
        and last[0] is constraints
        and all(map(operator.is_, last[1], columns))
        and len(last[2]) == len(picked)
        and np.array_equal(last[2], picked)
    ):
        return last[3]
    codes = [column.codes[picked] for column in columns]
    ignored: frozenset[str] = frozenset()
    keep = None
    if require_all:
        missing = np.zeros(len(picked), bool)
        for column_codes in codes:
            missing |= column_codes < 0
        if missing.any():
            ignored = frozenset(feasible[i].node.name for i in np.flatnonzero(missing).tolist())
            keep = ~missing
    pairs: set[spread.Pair] = set()
    weights = []
    for c, column, column_codes in zip(constraints, columns, codes, strict=True):
        kept = column_codes if keep is None else column_codes[keep]
        if c.topology_key == HOSTNAME:
            size = len(feasible) - len(ignored)
        else:
            names = column.names
            # A missing label reads as "", as kube's map lookup does: one domain with "".
            # The codes present (-1: no label), by counting rather than sorting.
            present = (np.flatnonzero(np.bincount(kept + 1)) - 1).tolist() if len(kept) else []
            values = {names[code] if code >= 0 else "" for code in present}
            pairs.update((c.topology_key, value) for value in values)
            size = len(values)
        weights.append(spread.topology_normalizing_weight(size))
    found = (ignored, frozenset(pairs), tuple(weights))
    if not ignored:  # the names of ignored nodes are read by row: not kept
        if len(_LAST_DOMAINS) >= _LAST_KEPT:
            _LAST_DOMAINS.clear()
        _LAST_DOMAINS[id(constraints), require_all] = (constraints, columns, picked.copy(), found)
    return found


# --- Score ----------------------------------------------------------------------------------


def scores(state: spread.ScoreState, infos: Sequence[NodeInfo], ctx: Any) -> Sequence[Any]:
    """``pod_topology_spread.score_rows(state, infos)``: each node's raw score, None for the
    nodes it ignores."""
    if ctx is None or len(infos) < _FEW:
        return spread.score_rows(state, infos)
    snapshot: ClusterSnapshot = ctx.snapshot
    picked = rows_at(snapshot, infos)
    if picked is None:
        return spread.score_rows(state, infos)
    rounded = go_rounded(weighted_sums(state, snapshot, picked)[0])
    if not state.ignored:
        return ints(rounded)
    out: list[Any] = rounded.tolist()
    ignored = state.ignored
    for i, info in enumerate(infos):
        if info.node.name in ignored:
            out[i] = None
    return out


def weighted_sums(
    state: spread.ScoreState, snapshot: ClusterSnapshot, picked: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per row of ``picked`` (None: every row) the plugin's sum before rounding, and where
    the row lacks some constraint's key (None: no row does). Each constraint's part (count
    times weight, plus maxSkew - 1; nothing where the node lacks the key) is read from a
    table per domain code, not computed per row: one gather per zone constraint."""
    total: np.ndarray | None = None
    missing: np.ndarray | None = None
    for c, weight in zip(state.constraints, state.weights, strict=True):
        labels = label_column(snapshot, c.topology_key)
        codes = labels.codes if picked is None else labels.codes[picked]
        lacking = None if labels.complete else codes < 0
        offset = float(c.max_skew - 1)
        # The plugin's order of operations: count * weight, + (maxSkew - 1), added to the sum.
        if c.topology_key == HOSTNAME:
            counts = host_counts(snapshot, c.selector, state.namespace)
            part = (counts if picked is None else counts[picked]) * weight + offset
            if lacking is not None:
                part[lacking] = 0.0
        else:
            by_value = {
                value: n for (key, value), n in state.pair_counts.items() if key == c.topology_key
            }
            parts = labels.table(by_value) * weight + offset
            parts[-1] = 0.0  # code -1: the node lacks the key
            part = parts[codes]
        if lacking is not None:
            missing = lacking if missing is None else missing | lacking
        total = part if total is None else total + part
    if total is None:
        total = np.zeros(snapshot.num_nodes if picked is None else len(picked))
    return total, missing


def go_rounded(total: np.ndarray) -> np.ndarray:
    """Go's math.Round (half away from zero) of sums that are never negative, as ints."""
    whole = np.floor(total)
    return whole.astype(np.int64) + (total - whole >= 0.5)


_FEW = 8  # fewer rows are scored by the plugin's own loop: numpy's fixed costs are higher
