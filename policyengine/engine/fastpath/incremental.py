"""The incremental pass: a class's next cycle starting from its last one (``State``).

It re-examines only the rows the node frames logged as changed (and, per rule, the rows its
row keys dropped), renormalises a rule over every row only when its facts moved, and brings a
score rule it cannot follow from the last cycle (a column invalidated or replaced, a key
changed, a zone's worth of dropped rows) up to date on its own over the feasible rows. It gives
up — returning None, so the cycle runs a full pass — when the whole state is in doubt: an
error, a filter column it cannot follow, a log that does not reach back, or more changed rows
than ``limit`` allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from policyengine.engine.fastpath.classes import ClassEntry
from policyengine.engine.fastpath.columns import Column, FilterColumn, ScoreColumn
from policyengine.engine.fastpath.nodeviews import Frame, NodeViews
from policyengine.engine.fastpath.rules import (
    Normalisers,
    Scored,
    column_key,
    filter_at,
    normalised,
    normalised_whole,
    prepare,
    rekeyed,
    store_at,
)
from policyengine.engine.fastpath.sharekeys import RulePlan
from policyengine.engine.normalize import (
    Stats,
    apply_stats,
    column_stats,
    whole_normalised,
)
from policyengine.lang.evaluators import NodeBatch
from policyengine.schedlib.context import CycleContext


@dataclass(eq=False)
class State:
    """What a class's last cycle left for its next one: where its frame stands in its views'
    log (not the frame: states of many classes would keep as many frames alive), the stamp
    after its stores (``seen``), the columns it read and their epochs, each row's first
    rejecting filter (-1: feasible), and per score rule the normalisation facts
    (``normalize.column_stats``; None: normalised value by value) with the totals they gave."""

    log: NodeViews | None
    seq: int
    size: int
    seen: int
    filters: tuple[FilterColumn, ...]
    filter_epochs: tuple[int, ...]
    first_rejected_by: np.ndarray
    feasible: np.ndarray
    scores: tuple[ScoreColumn, ...] = ()
    score_epochs: tuple[int, ...] = ()
    stats: list[Stats | None] = field(default_factory=list)
    totals: np.ndarray | None = None
    inside: np.ndarray | None = None  # the gang candidates' rows (None: no candidates)
    # The last states of this filter key whose score columns differ from this one's, by
    # their columns' ids (``scoring_state``).
    others: dict[tuple[int, ...], State] = field(default_factory=dict)


# States kept beside a class's last one: classes that filter alike but score apart (pod
# templates with equal requests and different images; Deployments of one size behind
# different Services, each spread by its own selector) take turns on one filter key. Too few,
# and five such Deployments with the Jobs of their size (the mixed benchmark's) evict each
# other's states and run a full score pass every other cycle.
OTHERS = 16


def scoring_state(
    state: State, entry: ClassEntry, changed: set[int], feasible: np.ndarray, inside: Any
) -> tuple[State, set[int]]:
    """The state to score from and the rows to look at again: ``state`` itself, or, when its
    score columns are not this cycle's, the last state of this cycle's columns kept beside it
    (``others``), with the rows changed since that one and the rows whose feasibility moved."""
    if same_columns(state.scores, entry.scores):
        return state, changed
    older = state.others.get(tuple(map(id, entry.scores)))
    frame = entry.frame
    if (
        older is None
        or not same_columns(older.scores, entry.scores)
        or frame.log is None
        or older.log is not frame.log
        or older.size != frame.size
    ):
        return state, changed
    rows = frame.log.changed_since(older.seq, frame)
    if rows is None:
        return state, changed
    rows.update(np.flatnonzero(older.feasible != feasible).tolist())
    rows.update(moved_inside(older.inside, inside))
    return older, rows


def others(state: State | None, kept: State) -> dict[tuple[int, ...], State]:
    """What ``kept`` keeps beside it: the states ``state`` kept and ``state`` itself, by their
    score columns, but for ``kept``'s own columns; the most recent few."""
    if state is None:
        return {}
    mine = tuple(map(id, kept.scores))
    out = {key: other for key, other in state.others.items() if key != mine}
    theirs = tuple(map(id, state.scores))
    if theirs != mine and state.totals is not None:
        out.pop(theirs, None)
        out[theirs] = replace(state, others={})
    while len(out) > OTHERS:
        del out[next(iter(out))]
    return out


def moved_inside(was: np.ndarray | None, now: np.ndarray | None) -> list[int]:
    """The rows a change of gang candidates (``_inside``) took in or out since the state's
    cycle: their feasibility may have moved while their rows did not change."""
    if was is now:
        return []
    if was is None or now is None:
        return np.flatnonzero(~(now if was is None else was)).tolist()  # type: ignore[operator]
    return np.flatnonzero(was != now).tolist()


def same_keys(
    plans: Sequence[RulePlan],
    columns: Sequence[Column],
    epochs: Sequence[int],
    context: CycleContext,
    fresh: Sequence[bool] | None = None,
    prepared: list[bool] | None = None,
) -> list[bool] | None:
    """Each rule's stable flag when every column still holds what the class's last cycle read
    (same key, same epoch once the row keys are applied); None otherwise. A ``fresh`` column
    (not the one the last cycle read) is only brought to this cycle's key. ``prepared`` gets
    the stable flags of the first columns brought to this cycle's key (as ``prepare`` would
    bring them), so that a full pass after a refusal need not take their keys again."""
    stables = []
    for index, (plan, column, epoch) in enumerate(zip(plans, columns, epochs, strict=True)):
        if plan.always:
            return None
        if fresh is not None and fresh[index]:
            try:
                stables.append(prepare(plan, column, context))
            except Exception:
                return None
            continue
        try:
            key, by_row, stable = column_key(plan, context)
        except Exception:  # the full pass meets it where the rule is reached
            return None
        if column.key != key:
            return None
        if by_row is not None or column.row_keys is not None:
            column.by_row(by_row)
        if prepared is not None:
            prepared.append(stable)
        if column.epoch != epoch:
            return None
        stables.append(stable)
    return stables


def dropped(
    columns: Sequence[Column], seen: int, rows: set[int], limit: int | None = None
) -> set[int] | None:
    """``rows`` with the rows the columns' row keys dropped since stamp ``seen``; None when a
    drop log does not reach back, or (given ``limit``) when that makes more than ``limit``
    rows: counted before any set is built (a zone's count moving drops thousands)."""
    found = []
    for column in columns:
        dropped = column.dropped_since(seen)
        if dropped is None:
            return None
        if len(dropped):
            found.append(dropped)
    if limit is not None and len(rows) > limit:
        return None
    if not found:
        return rows
    if limit is not None:
        if any(len(dropped) > limit for dropped in found):
            return None
        if len(rows) + sum(len(dropped) for dropped in found) > limit:  # they may overlap
            union = np.unique(np.concatenate([np.fromiter(rows, np.int64, len(rows)), *found]))
            return None if len(union) > limit else set(union.tolist())
    return rows.union(*(dropped.tolist() for dropped in found))


def too_many(rows: set[int], frame: Frame) -> bool:
    """Whether so many rows changed that one pass over every row is the cheaper way."""
    return len(rows) > limit(frame)


def limit(frame: Frame) -> int:
    return max(frame.size // 8, FEW)


FEW = 32


def score_limit(frame: Frame) -> int:
    """The feasible rows a score rule's row keys may drop before it is brought up to date
    over every feasible row instead (a zone's count moving drops a fifth of a five-zone
    cluster: re-scored incrementally, the other rules keep their normalisation), and the rows
    the filters' row keys may drop before the filter stage runs a full pass (a hard zone
    spread's count moving at each placement of its app)."""
    return max(frame.size // 2, FEW)


def same_columns(kept: Sequence[Column], columns: Sequence[Column]) -> bool:
    return len(kept) == len(columns) and all(a is b for a, b in zip(kept, columns, strict=True))


def changed_rows(state: State, entry: ClassEntry) -> set[int] | None:
    """The rows to look at again since ``state``'s cycle; None: every row."""
    frame = entry.frame
    if frame.log is None or state.log is not frame.log or state.size != frame.size:
        return None
    if not same_columns(state.filters, entry.filters):
        return None
    if any(column.errors for column in entry.filters):
        return None
    return frame.log.changed_since(state.seq, frame)


def filter_rows(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    state: State,
    changed: set[int],
    prepared: list[bool] | None = None,
) -> np.ndarray | None:
    """First rejections with ``state``'s for every row but ``changed`` (to which the rows
    the columns' row keys dropped are added); None when that cannot be trusted, or is not
    worth it (``too_many``). ``prepared``: as ``same_keys``."""
    plans = entry.plan.filters
    columns = entry.filters
    stables = same_keys(plans, columns, state.filter_epochs, context, prepared=prepared)
    if stables is None:
        return None
    if too_many(changed, entry.frame):
        return None
    # Rows a row key dropped share few keys (a zone's count moved: its thousand rows, one
    # key), evaluated once per key: as many as a score rule may follow (``score_limit``).
    found = dropped(columns, state.seen, changed, score_limit(entry.frame))
    if found is None:
        return None
    changed.update(found)
    first_rejected_by = state.first_rejected_by.copy()
    if not changed:
        return first_rejected_by
    rows = np.array(sorted(changed), np.int64)
    dead = np.full(len(rows), -1, np.int64)
    frame = entry.frame
    # The rows still in the running (``live.rows``), their positions in ``rows`` and the
    # frame's identities there, narrowed only when a rule rejects one: few numpy calls per
    # rule. On a few rows a reduction (``.all()``) costs more than the rest of a rule's work,
    # so whole row sets are compared as bytes (``Rows``).
    at = np.arange(len(rows))
    live = Rows(rows, frame)
    for index, (plan, column, stable) in enumerate(zip(plans, columns, stables, strict=True)):
        sub = live.rows
        found = column.oids[sub] if stable else column.ids[sub]
        if found.tobytes() != (live.oids_bytes if stable else live.ids_bytes):
            todo = sub[found != (live.oids if stable else live.ids)]
            column.store(todo, plan.rule, filter_at(plan, column, todo, batch, context), frame)
            if column.errors:
                return None
        ok = column.passed[sub]
        if ok.tobytes() != live.all_true:
            dead[at[~ok]] = index
            at = at[ok]
            live = live.narrowed(ok)
            if not len(at):
                break
    first_rejected_by[rows] = dead
    return first_rejected_by


class Rows:
    """Some rows of a frame with the frame's identities there, also as bytes: whether a
    column's rows all hold these identities (or all passed) is one bytes comparison."""

    __slots__ = ("all_true", "ids", "ids_bytes", "oids", "oids_bytes", "rows")

    def __init__(self, rows: np.ndarray, frame: Frame | None, ids: Any = None, oids: Any = None):
        self.rows = rows
        self.ids = frame.ids[rows] if frame is not None else ids
        self.oids = frame.oids[rows] if frame is not None else oids
        self.ids_bytes = self.ids.tobytes()
        self.oids_bytes = self.oids.tobytes()
        self.all_true = b"\x01" * len(rows)  # a bool array's bytes where every row is True

    def narrowed(self, keep: np.ndarray) -> Rows:
        return Rows(self.rows[keep], None, self.ids[keep], self.oids[keep])


def score_rows(
    entry: ClassEntry,
    batch: NodeBatch,
    context: CycleContext,
    state: State,
    changed: set[int],
    feasible: np.ndarray,
) -> Scored | None:
    """``score_all`` from ``state``'s totals: each rule looks again only at the ``changed``
    rows and the rows its row keys dropped; a rule's normalisation is redone over every row
    only when its facts moved. None when ``state`` cannot be trusted.

    A rule whose column cannot be followed from the state's — a column the state did not
    read (a rule keyed by something each pod of the class has of its own, such as its name:
    gang members differ only there), a key or epoch that moved, a drop log that does not
    reach back, more dropped rows than ``limit`` (a zone's count moving), a rule that is never
    kept (``RulePlan.always``) — is brought up to date over every feasible row, as the full
    pass would, while the others stay incremental; the totals are then summed anew. When only
    some rules' facts moved and every rule normalises to whole numbers (``_whole_totals``),
    the kept totals move instead by what those rules add now beside what they added."""
    plans = entry.plan.scores
    columns = entry.scores
    if state.totals is None or len(state.scores) != len(columns):
        return None
    if any(column.errors for column in columns) or any(s is None for s in state.stats):
        return None
    frame = entry.frame
    rows = np.array(sorted(changed), np.int64)
    moved = rows[state.feasible[rows] != feasible[rows]]
    live = rows[feasible[rows]]
    at_live = Rows(live, frame)
    stats = list(state.stats)
    touched = [moved] if len(moved) else []
    whole = False
    rebuilt = False  # some rule was brought up to date over every feasible row
    most = score_limit(frame)
    for index, (plan, column) in enumerate(zip(plans, columns, strict=True)):
        kind = plan.rule.normalize or "none"
        drops, stable = _followed(plan, column, state, index, context)
        extra = drops if drops is None or not len(drops) else drops[feasible[drops]]
        if extra is None or len(extra) > most:
            # Up to date over every feasible row, as the full pass brings it.
            try:
                stable = prepare(plan, column, context)
            except Exception:  # the full pass meets it where the rule is reached
                return None
            todo = np.flatnonzero(feasible & ~column.valid(frame, stable))
            if len(todo):
                store_at(plan, column, todo, batch, context, frame)
            if column.errors:
                return None
            whole = rebuilt = True
            if kind != "none":
                facts = column_stats(kind, column.values, column.scored & feasible)
                if facts is None:
                    return None
                stats[index] = facts
            continue
        mine = live
        checked = at_live
        if len(extra):
            mine = _union(live, extra, frame.size)
            checked = Rows(mine, frame)
        renewed = mine[:0]
        if len(mine):
            found_ids = column.oids[mine] if stable else column.ids[mine]
            if found_ids.tobytes() != (checked.oids_bytes if stable else checked.ids_bytes):
                todo = mine[found_ids != (checked.oids if stable else checked.ids)]
                store_at(plan, column, todo, batch, context, frame)
                if column.errors:
                    return None
            if column.stamp > state.seen:  # no row was stored since otherwise
                renewed = mine[column.stamps[mine] > state.seen]
        if not len(renewed) and not len(moved):
            continue
        if len(renewed):
            touched.append(renewed)
        if kind == "none":
            continue
        if not len(renewed) and not column.scored[moved].any():
            continue  # only unscored rows joined or left: the facts read scored rows alone
        facts = column_stats(kind, column.values, column.scored & feasible)
        if facts is None:
            return None
        if facts != stats[index] or repr(facts) != repr(stats[index]):
            stats[index] = facts
            whole = True
    normalisers = Normalisers(plans, columns, feasible, stats)
    assert state.totals is not None
    if whole and not rebuilt and _whole_totals(plans, stats, state.stats):
        # Whole numbers: the totals move by what the rules whose facts moved now add at each
        # row beside what they added (exact in any order); the touched rows are summed anew
        # below, the infeasible ones set back to 0.
        totals = state.totals.copy()
        with np.errstate(all="ignore"):
            for plan, column, facts, was in zip(plans, columns, stats, state.stats, strict=True):
                if facts is was:
                    continue
                kind = plan.rule.normalize or "none"
                now = normalised_whole(column, kind, facts)  # type: ignore[arg-type]
                then = apply_stats(kind, column.values, column.scored, was)  # type: ignore[arg-type]
                totals += plan.rule.weight * (now - then)
        totals[~feasible] = 0.0
        if not touched:
            return totals, stats, normalisers
    elif whole:
        # Summed over every row in rule order (each row as a node-by-node sum would), the
        # infeasible ones then set to 0: they may hold anything on the way.
        totals = np.zeros(frame.size)
        with np.errstate(all="ignore"):
            for plan, column, facts in zip(plans, columns, stats, strict=True):
                kind = plan.rule.normalize or "none"
                norm = normalised_whole(column, kind, facts)  # type: ignore[arg-type]
                totals = totals + plan.rule.weight * norm
        totals[~feasible] = 0.0
        return totals, stats, normalisers
    else:
        totals = state.totals.copy()
    if touched:
        # The touched rows: renewed rows repeat from rule to rule (the same live rows).
        distinct = {some.tobytes(): some for some in touched}
        if len(distinct) == 1:
            at = next(iter(distinct.values()))
        else:  # a mask, not ``np.unique``: thousands of moved rows when a zone flips
            hit = np.zeros(frame.size, bool)
            for some in distinct.values():
                hit[some] = True
            at = hit.nonzero()[0]
        # Infeasible rows total 0 (every rule normalises them to 0); a rule scoring none of
        # the feasible ones adds exactly 0 to each (``part`` is never -0.0), so it is left out.
        inside = at[feasible[at]]
        part = np.zeros(len(inside))
        unscored = bytes(len(inside))
        for plan, column, facts in zip(plans, columns, stats, strict=True):
            scored = column.scored[inside]
            if scored.tobytes() == unscored:
                continue
            kind = plan.rule.normalize or "none"
            norm = normalised(column, kind, facts, inside, scored, state.seen)  # type: ignore[arg-type]
            part = part + plan.rule.weight * norm
        totals[at] = 0.0
        totals[inside] = part
    return totals, stats, normalisers


def _whole_totals(
    plans: Sequence[RulePlan], stats: Sequence[Stats | None], was: Sequence[Stats | None]
) -> bool:
    """Whether every rule, under its facts now and at the state's cycle, normalises to whole
    numbers and weighs by an int: the totals are then whole numbers, exact in any order."""
    for plan, facts, then in zip(plans, stats, was, strict=True):
        kind = plan.rule.normalize or "none"
        if facts is None or then is None or type(plan.rule.weight) is not int:
            return False
        whole = plan.whole_values
        if not (whole_normalised(kind, facts, whole) and whole_normalised(kind, then, whole)):
            return False
    return True


def _union(some: np.ndarray, others: np.ndarray, size: int) -> np.ndarray:
    """The sorted distinct rows of two arrays of rows, by a mask over the frame's rows: a
    few C calls, where ``np.union1d``'s sort and its Python steps cost more even for a few
    rows."""
    hit = np.zeros(size, bool)
    hit[some] = True
    hit[others] = True
    return hit.nonzero()[0]


def _followed(
    plan: RulePlan, column: ScoreColumn, state: State, index: int, context: CycleContext
) -> tuple[np.ndarray | None, bool]:
    """The rows ``column``'s row keys dropped since ``state``'s cycle, once it is brought to
    this cycle's key, and whether its rows are valid by Node object; None when the column
    cannot be followed from the state's (``score_rows``): it is then brought to the key by
    ``prepare``."""
    if plan.always or column is not state.scores[index]:
        return None, False
    try:
        key, by_row, stable = column_key(plan, context)
    except Exception:  # ``prepare`` meets it again, where the full pass would
        return None, False
    if column.key != key and not rekeyed(plan, column, key):
        return None, stable
    if by_row is not None or column.row_keys is not None:
        column.by_row(by_row)
    if column.epoch != state.score_epochs[index]:
        return None, stable
    return column.dropped_since(state.seen), stable
