"""The full pass: every filter over every row (all of them, or up to each row's first
rejection), then every score over the feasible rows, as a class's first pod and anything the
incremental pass gives up on run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from policyengine.engine.decision import (
    Rejection,
    RejectionGroup,
    RejectionTable,
)
from policyengine.engine.fastpath.classes import ClassEntry
from policyengine.engine.fastpath.idle import (
    EXACT_WEIGHT,
)
from policyengine.engine.fastpath.rules import Scored, filter_at, prepare, store_at
from policyengine.engine.normalize import (
    Stats,
    apply_stats,
    column_stats,
    normalize,
    unscored_stats,
)
from policyengine.lang.evaluators import NodeBatch
from policyengine.schedlib.context import CycleContext


def filter_first(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
    prepared: Sequence[bool] = (),
) -> np.ndarray:
    """Each filter over the nodes still in the running, re-evaluating only the rows whose
    cached verdict is not valid (``fastpath.columns``); each row's first rejecting rule (-1: none).
    The first columns may have been brought to this cycle's keys already (``prepared``: their
    stable flags, from ``same_keys``).

    A node leaves the running at its first rejection, so every node sees exactly the rules it
    would see node by node. Errors are reported in node order, then rule order, as a
    node-by-node loop would meet them.
    """
    size = batch.size
    alive = np.ones(size, bool)
    first_rejected_by = np.full(size, -1, np.int64)
    found: list[tuple[int, int, str]] = []
    frame = entry.frame
    for index, (plan, column) in enumerate(zip(entry.plan.filters, entry.filters, strict=True)):
        if not alive.any():
            break
        stable = prepared[index] if index < len(prepared) else prepare(plan, column, context)
        rows = np.flatnonzero(alive & ~column.valid(frame, stable))
        if len(rows):
            column.store(rows, plan.rule, filter_at(plan, column, rows, batch, context), frame)
        if column.errors:
            for row in np.flatnonzero(alive & column.errored).tolist():
                found.append((row, index, column.error[row]))
        first_rejected_by[alive & ~column.passed] = index
        alive &= column.passed
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    return first_rejected_by


def filter_all(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
) -> tuple[np.ndarray, dict[str, tuple[Rejection, ...]]]:
    """Every filter on every node (what ``filter`` and ``explain`` show)."""
    size = batch.size
    found: list[tuple[int, int, str]] = []
    failed: list[np.ndarray] = []
    frame = entry.frame
    for index, (plan, column) in enumerate(zip(entry.plan.filters, entry.filters, strict=True)):
        stable = prepare(plan, column, context)
        rows = np.flatnonzero(~column.valid(frame, stable))
        if len(rows):
            column.store(rows, plan.rule, filter_at(plan, column, rows, batch, context), frame)
        if column.errors:
            for row in np.flatnonzero(column.errored).tolist():
                found.append((row, index, column.error[row]))
        failed.append(~column.passed)
    found.sort(key=lambda item: (item[0], item[1]))
    errors.extend(message for _, _, message in found)
    any_failed = np.zeros(size, bool)
    for fail in failed:
        any_failed |= fail
    infeasible: dict[str, tuple[Rejection, ...]] = {}
    for row in np.flatnonzero(any_failed).tolist():
        found_at = [entry.filters[i].rejection(row) for i, fail in enumerate(failed) if fail[row]]
        infeasible[entry.names[row]] = tuple(r for r in found_at if r is not None)
    return ~any_failed, infeasible


def first_rejections(
    entry: ClassEntry, first_rejected_by: np.ndarray, feasible: int
) -> RejectionTable | dict[str, tuple[Rejection, ...]]:
    """``Decision.infeasible`` built when read, from the columns as they are now (lent: a
    later store copies them) and ``first_rejected_by`` (never changed: the next cycle copies it)."""
    dead = len(first_rejected_by) - feasible
    if not dead:
        return {}
    names = entry.names
    columns = [(column.codes, column.made) for column in entry.filters]

    def build() -> dict[str, tuple[Rejection, ...]]:
        rows = np.flatnonzero(first_rejected_by >= 0)
        out: dict[str, tuple[Rejection, ...]] = {}
        for name, row, index in zip(
            names[rows].tolist(), rows.tolist(), first_rejected_by[rows].tolist(), strict=True
        ):
            codes, made = columns[index]
            rejection = made[codes[row]]
            assert rejection is not None
            out[name] = (rejection,)
        return out

    def groups() -> list[RejectionGroup]:
        rows = np.flatnonzero(first_rejected_by >= 0)
        at_filter = first_rejected_by[rows]
        out: list[RejectionGroup] = []
        # Filter indexes and rejection codes are small counts: bincount finds the distinct
        # ones in one pass (``np.unique`` sorts or hashes).
        for index in np.flatnonzero(np.bincount(at_filter)).tolist():
            where = rows[at_filter == index]
            codes, made = columns[index]
            found = codes[where]
            for code in np.flatnonzero(np.bincount(found)).tolist():
                rejection = made[code]
                assert rejection is not None
                out.append((rejection, names[where[found == code]].tolist()))
        return out

    table = RejectionTable(build, dead, groups)
    for column in entry.filters:
        column.lend(table)
    return table


# At most one row in this many feasible: the full pass normalises and sums those rows alone.
_FEW_SHARE = 4


def score_all(
    entry: ClassEntry,
    feasible: np.ndarray,
    batch: NodeBatch,
    context: CycleContext,
    errors: list[str],
) -> Scored:
    """Each score rule's raw values over the feasible rows (cached rows reused), normalised
    over them, weighted and summed in rule order as a node-by-node sum would. Columns are
    whole (one row per node); the rows outside ``feasible`` take no part."""
    size = batch.size
    frame = entry.frame
    totals = np.zeros(size)
    # Normalising is row by row and an infeasible row normalises to 0: with few feasible rows
    # (a pod pinned to its node, a narrow selector) only those are normalised and summed.
    # (An infinite weight makes NaN of an infeasible row's 0: that path keeps every row.)
    inside = np.flatnonzero(feasible)
    few = len(inside) * _FEW_SHARE <= size and all(
        math.isfinite(plan.rule.weight) for plan in entry.plan.scores
    )
    if few:
        sums = np.zeros(len(inside))
    stats: list[Stats | None] = []
    normalisers: list[Callable[[np.ndarray], np.ndarray]] = []
    unscored: np.ndarray | None = None  # what a rule scoring no feasible row normalises to
    for plan, column in zip(entry.plan.scores, entry.scores, strict=True):
        rule = plan.rule
        stable = prepare(plan, column, context)
        todo = np.flatnonzero(feasible & ~column.valid(frame, stable))
        if len(todo):
            store_at(plan, column, todo, batch, context, frame)
        if column.errors:
            errors.extend(column.error[feasible & column.errored].tolist())
        kind = rule.normalize or "none"
        mask = column.scored & feasible
        if abs(rule.weight) <= EXACT_WEIGHT and not mask.any():
            # Scoring no feasible row, the rule normalises every row to +0.0 and adds exactly
            # nothing to the totals (they start at +0.0, and a sum never makes -0.0 of them).
            if unscored is None:
                unscored = np.zeros(size)
            stats.append(unscored_stats(kind))
            normalisers.append(unscored.__getitem__)
            continue
        facts = column_stats(kind, column.values, mask)
        if facts is None:
            norm = np.zeros(size)
            listed = [
                float(v) if s else None
                for v, s in zip(column.values[inside].tolist(), mask[inside].tolist(), strict=True)
            ]
            norm[inside] = normalize(kind, listed)
        elif few:
            norm = np.zeros(size)
            norm[inside] = apply_stats(kind, column.values[inside], mask[inside], facts)
        else:
            norm = apply_stats(kind, column.values, mask, facts)
        if few:
            sums = sums + rule.weight * norm[inside]
        else:
            totals = totals + rule.weight * norm
        stats.append(facts)
        normalisers.append(norm.__getitem__)
    if few:
        totals[inside] = sums
    return totals, stats, normalisers
