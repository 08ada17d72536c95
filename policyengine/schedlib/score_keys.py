"""PodTopologySpread's and InterPodAffinity's scores as row-keyed results.

Both scores read the cluster beyond the node they score: spread the matching pods in the
node's domains, inter-pod affinity the weights summed in them. As a plain cluster key that
is the whole snapshot, so every placement threw away every node's score, and a soft spread
(every Deployment behind a Service has one by default) cost a full pass per pod.

What each reads of a node is small, though, and is what its row key holds here
(``rowkeys.RowKeyed``): per spread constraint the count at the node's domain (the node's own
matching pods for a hostname constraint, -1 where the node lacks the key), per affinity
topology key the summed weight at the node's value. The rest of what the score reads — the
constraints, namespace and normalising weights; the affinity keys — is the pod key
(``pod_key``). A node's score is decided by the two (``row_determined``), reads nothing of
its ``NodeInfo`` outside them (``stable_only``), and a placement changes the row keys of one
domain's rows only: a cache recomputes those, once per distinct key.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from policyengine.model.plugins import inter_pod_affinity as affinity
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib.domains import label_column
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.spread_score import go_rounded, weighted_sums


def spread_pod_key(state: spread.ScoreState, require_all: bool) -> Hashable:
    """What the spread score reads of the pod besides the row keys: its constraints and
    namespace, and whether a node missing a key is left unscored. The normalising weights
    are not: they move with the number of feasible nodes (a hostname constraint's size), and
    the row keys hold the scores they give."""
    return ("spread-score", state.constraints, state.namespace, require_all)


def spread_rows(state: spread.ScoreState, ctx: Any) -> RowKeyed:
    """Per row the raw score ``pod_topology_spread.score`` gives the node (-1 where a node
    missing a key is left unscored): the counts at the node's domains (its own matching pods
    for a hostname constraint) weighted as the plugin weighs them. A count that moves, or a
    weight that moves with the feasible nodes' number, changes the rows whose score it
    changes, and no other (most nodes hold no matching pod: their score reads no weight)."""
    total, missing = weighted_sums(state, ctx.snapshot)
    rounded = go_rounded(total)
    if missing is not None and spread.requires_all_keys(ctx.pod.pod, ctx.config):
        rounded[missing] = -1
    return RowKeyed(("spread-score",), rounded)


def spread_values(ctx: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The spread score at nodes whose row keys (``spread_rows``) are ``rows``: the key is
    the raw score, -1 where the node is left unscored (``Function.row_values``)."""
    rounded = rows[:, 0]
    scored = rounded >= 0
    return np.where(scored, rounded, 0).astype(np.float64), scored


def affinity_pod_key(state: affinity.ScoreState) -> Hashable:
    """What the affinity score reads of the pod besides the row keys: the topology keys."""
    return ("affinity-score", tuple(sorted(state.topology_score)))


def affinity_rows(state: affinity.ScoreState, ctx: Any) -> RowKeyed:
    """Per row and topology key (sorted) the weight summed at the node's value (0 without
    the label): the score is their sum."""
    snapshot: ClusterSnapshot = ctx.snapshot
    columns = [
        label_column(snapshot, key).gather(state.topology_score[key])
        for key in sorted(state.topology_score)
    ]
    return RowKeyed(("affinity-score",), _side_by_side(columns, snapshot))


def _side_by_side(columns: list[np.ndarray], snapshot: ClusterSnapshot) -> np.ndarray:
    if not columns:
        return np.zeros((snapshot.num_nodes, 0), np.int64)
    return columns[0].reshape(-1, 1) if len(columns) == 1 else np.column_stack(columns)


def score_rows(ctx: Any, kind: str, state: Any, make: Any) -> RowKeyed:
    """The row key ``make(state, ctx)``, made once per cycle (the cluster key and the batch
    form both read it)."""
    return ctx.prepared((kind, "score-rows", id(state)), lambda: make(state, ctx))
