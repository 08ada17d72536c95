"""A rule run over rows of a cycle's nodes and stored in its column: the steps both the full
pass and the incremental pass take, and the normalisers that read a score column whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from policyengine.engine.fastpath.columns import Column, ScoreColumn
from policyengine.engine.fastpath.nodeviews import Frame
from policyengine.engine.fastpath.rowgroups import determined_now, groups, looked_groups
from policyengine.engine.fastpath.sharekeys import RulePlan
from policyengine.engine.normalize import (
    Stats,
    apply_stats,
)
from policyengine.lang.compiler import CompiledRule
from policyengine.lang.copied import Copied
from policyengine.lang.evaluators import NodeBatch
from policyengine.lang.runtime import PASSED, ROOTS, FilterVerdict
from policyengine.lang.schema import Function
from policyengine.schedlib.context import CycleContext

# The root a cycle's batch holds every node's view under (``engine.cycle``).
NODE_ROOT = "node"
STALE_KEY = object()


def column_key(plan: RulePlan, context: CycleContext) -> tuple[Any, np.ndarray | None, bool]:
    """The rule's column key this cycle (its cluster keys' whole parts and whether it reads
    only Node objects), the cluster keys' row parts, and that flag."""
    if plan.always:
        return STALE_KEY, None, False
    # Keys read only the pod and the configuration (``RulePlan.keys_alike``): kept per class.
    memo = context.alike if plan.keys_alike else None
    if memo is not None:
        kept: tuple[Any, np.ndarray | None, bool] | None = memo.get(plan)
        if kept is not None:
            return kept
    whole, by_row = plan.keys(context)
    stable = plan.stable_now(context)
    found = (whole, stable), by_row, stable
    if memo is not None and by_row is None:
        memo[plan] = found
    return found


def prepare(plan: RulePlan, column: Column, context: CycleContext) -> bool:
    """Bring ``column`` to this cycle's key (invalidating what it no longer holds); whether
    its rows are valid by Node object."""
    key, by_row, stable = column_key(plan, context)
    if key is STALE_KEY or (column.key != key and not rekeyed(plan, column, key)):
        column.invalidate()
        column.key = key
    column.by_row(by_row)
    return stable


def rekeyed(plan: RulePlan, column: Column, key: Any) -> bool:
    """Whether ``column`` (whose key is not ``key``) was brought to ``key`` keeping some rows:
    for a score rule whose guard reads nothing the key covers (``RulePlan.guard_keeps``),
    a move of the key leaves the rows the guard excluded as they are (a GPU rule's key moving
    with the cluster's GPU pods leaves every node without GPUs unscored), when the rows'
    validity is told as before (the same stable flag). Otherwise nothing is done."""
    old = column.key
    if not plan.guard_keeps or key is STALE_KEY or type(old) is not tuple or old[1] != key[1]:
        return False
    assert isinstance(column, ScoreColumn)
    column.keep_unscored()
    column.key = key
    return True


def filter_many(rule: CompiledRule, batch: NodeBatch) -> list[FilterVerdict]:
    if rule.filter_many is not None:
        return rule.filter_many(batch)
    return [rule.filter(batch.env_at(i)) for i in range(batch.size)]


def filter_at(
    plan: RulePlan, column: Column, rows: np.ndarray, batch: NodeBatch, context: CycleContext
) -> Sequence[FilterVerdict]:
    """The rule's verdicts at ``rows`` (of the whole ``batch``): for a rule decided by its
    row key (``rowgroups``), at one row per distinct key, copied to the others."""
    found = None
    if plan.by_rows is not None and determined_now(plan.by_rows, context):
        found = groups(column.row_keys, rows)
    if found is None and plan.by_looked is not None:
        nodes = batch.column(ROOTS.slot(NODE_ROOT))
        if nodes is not None:
            found = looked_groups(plan.by_looked, context, nodes, rows)
    if found is not None:
        first, inverse = found
        some = filter_many(plan.rule, batch.take(rows[first].tolist()))
        if all(verdict.error is None for verdict in some):  # an error may name its node
            return Copied(some, inverse)
    elif plan.guard_looked is not None:
        shut = _shut_outside(plan, plan.guard_looked, batch, context, rows)
        if shut is not None:
            return shut
    wanted = rows.tolist()
    return filter_many(plan.rule, batch if len(wanted) == batch.size else batch.take(wanted))


def _shut_outside(
    plan: RulePlan,
    guard_looked: tuple[Function, ...],
    batch: NodeBatch,
    context: CycleContext,
    rows: np.ndarray,
) -> Copied | None:
    """The verdicts at ``rows`` of a filter whose guard only its looked-at rows can tell
    apart (``RulePlan.guard_looked``), when that guard is false at the others: those pass as
    a false guard passes them, and the rule is evaluated at the looked-at rows alone (a
    DaemonSet's pod: its one node). None otherwise."""
    nodes = batch.column(ROOTS.slot(NODE_ROOT))
    guard = plan.rule.guard
    if nodes is None or guard is None:
        return None
    found = looked_groups(guard_looked, context, nodes, rows)
    if found is None:
        return None
    first, inverse = found
    try:
        if guard(batch.env_at(int(rows[first[-1]]))) is not False:
            return None
    except Exception:
        return None  # the rule reports it, evaluated node by node
    looked = rows[first[:-1]].tolist()
    some = filter_many(plan.rule, batch.take(looked)) if looked else []
    if any(verdict.error is not None for verdict in some):
        return None
    return Copied([*some, PASSED], inverse)


Scored = tuple[np.ndarray, list[Stats | None], Sequence[Callable[[np.ndarray], np.ndarray]]]


def score_many(rule: CompiledRule, batch: NodeBatch) -> Sequence[Any]:
    if rule.score_many is not None:
        return rule.score_many(batch)
    return [rule.score(batch.env_at(i)) for i in range(batch.size)]


def store_scores(
    rule: CompiledRule, column: ScoreColumn, rows: np.ndarray, batch: NodeBatch, frame: Frame
) -> None:
    """The rule's scores at ``rows`` (the nodes of ``batch``) into ``column``: as plain
    numbers when they all are (a few changed rows: no ``ScoreValue`` per node)."""
    numbers = rule.score_numbers(batch) if rule.score_numbers is not None else None
    if numbers is None:
        column.store(rows, score_many(rule, batch), frame)
    else:
        column.store_array(rows, *numbers, frame)


def store_at(
    plan: RulePlan,
    column: ScoreColumn,
    rows: np.ndarray,
    batch: NodeBatch,
    context: CycleContext,
    frame: Frame,
) -> None:
    """The rule's scores at ``rows`` (of the whole ``batch``) into ``column``: for a rule
    whose score is its row key (``RulePlan.row_values``), read off the keys; for a rule
    decided by its row key (``rowgroups``), at one row per distinct key, copied to the others
    (when every one is a plain number: an error may name its node)."""
    rule = plan.rule
    keys = column.row_keys
    if plan.row_values is not None and keys is not None and determined_now(plan.by_rows, context):
        column.store_array(rows, *plan.row_values(context, keys[rows]), frame)
        return
    if rule.score_numbers is not None and plan.by_rows is not None:
        found = groups(keys, rows) if determined_now(plan.by_rows, context) else None
        if found is not None:
            first, inverse = found
            numbers = rule.score_numbers(batch.take(rows[first].tolist()))
            if numbers is not None:
                values, scored = numbers
                column.store_array(rows, values[inverse], scored[inverse], frame)
                return
    wanted = rows.tolist()
    store_scores(
        rule, column, rows, batch if len(wanted) == batch.size else batch.take(wanted), frame
    )


def normalised(
    column: ScoreColumn, kind: str, facts: Stats, rows: np.ndarray, scored: np.ndarray, seen: int
) -> np.ndarray:
    """``apply_stats`` at ``rows`` (where the column scores ``scored``). A column no store
    touched since the state's cycle (a rule reading Node objects only) is mostly left as it
    is for many cycles: it is normalised whole once per facts, and read at the rows until a
    store (classes whose feasible sets give equal facts share it). Normalising is row by
    row, so a row reads alike either way."""
    kept = _kept_normalised(column, kind, facts)
    if kept is not None:
        return kept[rows]
    if column.stamp <= seen:
        return normalised_whole(column, kind, facts)[rows]
    return apply_stats(kind, column.values[rows], scored, facts)


def _kept_normalised(column: ScoreColumn, kind: str, facts: Stats) -> np.ndarray | None:
    """The column's whole normalised values for ``kind`` and ``facts``, if kept since its
    last store."""
    kept = column.normalised
    if (
        kept is not None
        and kept[2] == column.stamp
        and kept[0] == kind
        and _same_facts(kept[1], facts)
    ):
        return kept[3]
    return None


def _same_facts(kept: Stats, facts: Stats) -> bool:
    """Equal facts (``repr`` too: 0.0 and -0.0, an int and its float, normalise apart)."""
    return kept is facts or (kept == facts and repr(kept) == repr(facts))


def normalised_whole(column: ScoreColumn, kind: str, facts: Stats) -> np.ndarray:
    """``apply_stats`` over every row of ``column`` (rows outside the feasible set may hold
    anything: the caller reads the feasible ones), kept on the column: after a store of a few
    rows under the same facts, only those rows are normalised again (the kept array is read
    by the caller alone, never handed out)."""
    kept = column.normalised
    if kept is not None and kept[0] == kind and _same_facts(kept[1], facts):
        if kept[2] == column.stamp:
            return kept[3]
        rows = (column.stamps > kept[2]).nonzero()[0]
        if len(rows) <= len(column.values) // _PATCHED:
            whole = kept[3]
            with np.errstate(all="ignore"):
                whole[rows] = apply_stats(kind, column.values[rows], column.scored[rows], facts)
            column.normalised = (kind, facts, column.stamp, whole)
            return whole
    with np.errstate(all="ignore"):
        whole = apply_stats(kind, column.values, column.scored, facts)
    column.normalised = (kind, facts, column.stamp, whole)
    return whole


# A kept normalisation is patched at the rows stored since while they are at most this
# fraction of the column (1/4); beyond, normalising every row costs about the same.
_PATCHED = 4


class Normalisers(Sequence[Callable[[np.ndarray], np.ndarray]]):
    """Each rule's normalised values at some rows, read later (the columns are lent by then:
    their arrays are taken now). Made when read: most decisions never read one."""

    __slots__ = ("_feasible", "_plans", "_scored", "_stats", "_values")

    def __init__(
        self,
        plans: Sequence[RulePlan],
        columns: Sequence[ScoreColumn],
        feasible: np.ndarray,
        stats: Sequence[Stats | None],
    ):
        self._plans = plans
        self._values = [column.values for column in columns]
        self._scored = [column.scored for column in columns]
        self._feasible = feasible
        self._stats = stats

    def __len__(self) -> int:
        return len(self._plans)

    @overload
    def __getitem__(self, index: int) -> Callable[[np.ndarray], np.ndarray]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Callable[[np.ndarray], np.ndarray]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        kind = self._plans[index].rule.normalize or "none"
        values = self._values[index]
        scored = self._scored[index]
        feasible = self._feasible
        facts = self._stats[index]
        assert facts is not None

        def at(rows: np.ndarray) -> np.ndarray:
            return apply_stats(kind, values[rows], scored[rows] & feasible[rows], facts)

        return at
