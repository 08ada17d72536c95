"""The class cache: the columns of recent (rule, pod inputs) pairs, owned by whoever runs
cycles (a simulation, a scheduler, an extender) and passed in ``CycleOptions.cache``.

Share keys that depend on the pod's class alone (``Function.pod_key_alike``) are computed once per class and configuration
(``CycleContext.alike``, which also keeps the plugins' pod-only PreFilter/PreScore states),
with their hash kept and interned (``ColumnKey``), and so are the cluster keys of rules whose
functions read only the pod (``Function.keys_alike``). ``engine.cycle`` keeps whole-cycle states per class on
top of the columns (``state_key``), trusting rows it does not look at through each column's
``epoch``, ``drops`` and ``stamps``. ``tests/engine/test_class_cache.py`` holds all of it
equal to the reference evaluator over sequences of pods of several templates placed one after
another, pods removed, Node objects replaced and cycles against older snapshots.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policyengine.engine.fastpath.columns import Column, FilterColumn, ScoreColumn
from policyengine.engine.fastpath.nodeviews import Frame
from policyengine.engine.fastpath.sharekeys import ColumnKey, PolicyPlan, RulePlan, pod_class
from policyengine.model.objects import Pod

# About this many result cells (rows) are kept over all columns.
_CELLS = 2_000_000
# About this many over all classes' last states: three arrays of rows each, counted again for
# every state kept beside one (``incremental.OTHERS``: up to 16 per filter key), so that a
# cluster of many filter keys, each shared by many score column sets, keeps them all.
_STATE_CELLS = 8_000_000
# Pod classes whose pod-only prepared states are kept.
_ALIKE = 4096
# Distinct column keys interned before the table starts over.
_INTERNED = 65_536

# --- one cycle's columns -------------------------------------------------------------------


@dataclass(eq=False)
class ClassEntry:
    """The columns one cycle works on, checked out of the cache: ``filters`` at once, each
    score's when scoring starts (score keys read the feasible set). ``names``/``ranks`` are
    the frame's. ``keys`` are where each column goes back (None: not kept)."""

    refs: tuple[Any, ...]  # program, policy, topology, config: compared by identity
    plan: PolicyPlan
    frame: Frame
    pod: Pod
    filters: list[FilterColumn] = field(default_factory=list)
    scores: list[ScoreColumn] = field(default_factory=list)
    keys: list[Hashable | None] = field(default_factory=list)
    _class: list[Hashable | None] = field(default_factory=list)

    @property
    def names(self) -> np.ndarray:
        return self.frame.names

    @property
    def ranks(self) -> np.ndarray:
        return self.frame.ranks

    def class_of_pod(self) -> Hashable | None:
        if not self._class:
            self._class.append(pod_class(self.pod))
        return self._class[0]


def _same_refs(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two refs tuples hold the very same objects (program, policy, topology, config),
    in one C-level pass: every column checkout asks (mostly of one tuple: ``ClassCache.refs``)."""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


_COMPUTE = object()  # a key kept per class is not: the rule's share key reads the cluster


class ClassCache:
    """Columns of recent (rule, pod inputs) pairs, least recently used dropped first.

    A cycle marks each of its columns busy (``checkout``) and frees them when done
    (``checkin``), so two threads never work on one column: a concurrent cycle wanting the
    same one starts afresh.
    """

    def __init__(self) -> None:
        # Each entry: the refs its column was computed under, the column, the key itself.
        self._columns: OrderedDict[Hashable, tuple[tuple[Any, ...], Column, Hashable]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()
        self._cells = 0
        # Whole-cycle states (``engine.cycle``), by the refs and filter share keys they serve.
        self._states: OrderedDict[Hashable, tuple[tuple[Any, ...], Any, int]] = OrderedDict()
        self._state_cells = 0
        # Each class's states under one config, with the key object they are filed under (so
        # marking them recently used compares identities, not two pods' specs).
        self._alike: OrderedDict[Hashable, tuple[Any, dict[Any, Any], Hashable]] = OrderedDict()
        self._interned: dict[ColumnKey, ColumnKey] = {}
        self._refs: tuple[Any, ...] = ()
        # The policy governing each class under a profile, with the program that chose it.
        self._governors: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()

    def refs(self, *refs: Any) -> tuple[Any, ...]:
        """``refs`` as one tuple, the very tuple of the last call when it holds the same
        objects: the checks that a column or state belongs to them then compare one identity."""
        last = self._refs
        if _same_refs(last, refs):
            return last
        self._refs = refs
        return refs

    def _intern(self, key: ColumnKey) -> ColumnKey:
        """The first key equal to ``key`` still known (keys kept per class only: a few per
        class and rule): the cache's lookups by it then find their entries by identity
        instead of comparing two keys' values."""
        interned = self._interned
        if len(interned) > _INTERNED:
            interned.clear()  # identities only save time: forgetting them is always right
        return interned.setdefault(key, key)

    def class_of(self, pod: Pod) -> Hashable | None:
        """``pod_class(pod)``, the very key object of the class's earlier pods: the cycle's
        lookups by it (its states, its governing policy) then compare one identity instead
        of two pods' specs."""
        klass = pod_class(pod)
        if klass is None or type(klass) is not ColumnKey:
            return klass
        return self._intern(klass)

    def alike(self, klass: Hashable | None, config: Any) -> dict[Any, Any] | None:
        """The states kept for pods of class ``klass`` under ``config`` (``CycleContext.alike``);
        None when the class is unknown."""
        if klass is None:
            return None
        key = (klass, id(config))
        with self._lock:
            found = self._alike.get(key)
            if found is None or found[0] is not config:
                self._alike.pop(key, None)
                found = self._alike[key] = (config, {}, key)
                if len(self._alike) > _ALIKE:
                    self._alike.popitem(last=False)
            else:
                self._alike.move_to_end(found[2])
        return found[1]

    def governor(self, key: Hashable, program: Any, choose: Callable[[], Any]) -> Any:
        """The policy ``choose()`` gives for ``key`` (a class and a profile) under ``program``,
        chosen once while kept (``fastpath.governors``)."""
        found = self._governors.get(key)
        if found is not None and found[0] is program:
            return found[1]
        policy = choose()
        with self._lock:
            self._governors[key] = (program, policy)
            if len(self._governors) > _ALIKE:
                self._governors.popitem(last=False)
        return policy

    def state_key(self, entry: ClassEntry) -> Hashable | None:
        """Where the whole-cycle state of ``entry``'s pods is kept: its refs and the share keys
        of its filter columns (None when a column is not kept)."""
        keys = entry.keys[: len(entry.filters)]
        if any(key is None for key in keys):
            return None
        return ("state", *map(id, entry.refs), *keys)

    def take_state(self, key: Hashable, refs: tuple[Any, ...]) -> Any | None:
        """The state kept under ``key`` (taken out: one cycle works on it at a time)."""
        with self._lock:
            found = self._states.pop(key, None)
            if found is None:
                return None
            self._state_cells -= found[2]
        if not _same_refs(found[0], refs):
            return None
        return found[1]

    def put_state(self, key: Hashable, refs: tuple[Any, ...], state: Any, cells: int) -> None:
        with self._lock:
            old = self._states.pop(key, None)
            if old is not None:
                self._state_cells -= old[2]
            self._states[key] = (refs, state, cells)
            self._state_cells += cells
            while self._state_cells > _STATE_CELLS and len(self._states) > 1:
                _, (_, _, dropped) = self._states.popitem(last=False)
                self._state_cells -= dropped

    def checkout(
        self,
        refs: tuple[Any, ...],
        plan: PolicyPlan,
        pod: Pod,
        pod_view: Any,
        context: Any,
        frame: Frame,
        klass: Hashable | None = None,
    ) -> ClassEntry:
        """The cycle's entry with its filter columns (``klass``: the pod's class, when known)."""
        entry = ClassEntry(refs, plan, frame, pod)
        if klass is not None:
            entry._class.append(klass)
        entry.filters.extend(self._columns_of(entry, plan.filters, "filter", pod_view, context))
        return entry

    def score_columns(self, entry: ClassEntry, pod_view: Any, context: Any) -> None:
        """Check out ``entry``'s score columns (once the feasible set is known)."""
        entry.scores.extend(self._columns_of(entry, entry.plan.scores, "score", pod_view, context))

    def _columns_of(
        self,
        entry: ClassEntry,
        rules: tuple[RulePlan, ...],
        kind: str,
        pod_view: Any,
        context: Any,
    ) -> list[Any]:
        """The columns of ``rules`` for this cycle, checked out under one lock: the kept one
        of each rule's key when no other cycle works on it, otherwise a fresh one."""
        keys = self._keys(entry, rules, kind, pod_view, context)
        size = entry.frame.size
        refs = entry.refs
        columns = self._columns
        found: list[Column | None] = []
        with self._lock:
            for at, key in enumerate(keys):
                kept = None if key is None else columns.get(key)
                if kept is not None:
                    keys[at] = kept[2]  # the key it is filed under: later lookups by identity
                if (
                    kept is None
                    or kept[1].busy  # another cycle works on it: start afresh
                    or len(kept[1].ids) != size
                    or not _same_refs(kept[0], refs)
                ):
                    found.append(None)
                else:
                    kept[1].busy = True
                    found.append(kept[1])
        entry.keys.extend(keys)
        fresh: Callable[[int], Column] = (
            FilterColumn.empty if kind == "filter" else ScoreColumn.empty
        )
        return [fresh(size) if column is None else column for column in found]

    def _keys(
        self,
        entry: ClassEntry,
        rules: tuple[RulePlan, ...],
        kind: str,
        pod_view: Any,
        context: Any,
    ) -> list[Hashable | None]:
        """Each rule's column key (None: not kept). Those of the rules whose share key is
        the same for every pod of a class (``RulePlan.alike``) are kept per class
        (``CycleContext.alike``), beside the refs whose ids they hold and the rules."""
        refs = entry.refs
        memo: dict[Any, Any] | None = context.alike
        slot = (kind, id(rules))
        kept = None if memo is None else memo.get(slot)
        if kept is not None and kept[0] is rules and _same_refs(kept[1], refs):
            return [
                self._key(entry, rule, kind, pod_view, context) if key is _COMPUTE else key
                for rule, key in zip(rules, kept[2], strict=True)
            ]
        keys = [self._key(entry, rule, kind, pod_view, context) for rule in rules]
        if memo is not None:
            alike = tuple(
                key if rule.alike else _COMPUTE for rule, key in zip(rules, keys, strict=True)
            )
            memo[slot] = (rules, refs, alike)
        return keys

    def _key(
        self, entry: ClassEntry, rule: RulePlan, kind: str, pod_view: Any, context: Any
    ) -> Hashable | None:
        if rule.always:  # recomputed every cycle: nothing to keep
            return None
        ids = tuple(map(id, entry.refs))
        key: ColumnKey | None = None
        if not rule.by_class:
            try:
                key = ColumnKey((*ids, kind, rule.index, rule.share_key(pod_view, context)))
            except Exception:
                key = None  # not told for this pod (or unhashable): shared by its class alone
        if key is None:
            alike = entry.class_of_pod()
            if alike is None:
                return None
            part = ("class", alike, entry.pod.name) if rule.named else ("class", alike)
            key = ColumnKey((*ids, kind, rule.index, part))
        # Keys kept per class are interned; the others are made anew each cycle, and their
        # entries' keys serve (``_columns_of``).
        return self._intern(key) if rule.alike else key

    def checkin(self, entry: ClassEntry) -> None:
        columns: list[Column] = [*entry.filters, *entry.scores]
        plans = [*entry.plan.filters, *entry.plan.scores]
        with self._lock:
            for key, column, plan in zip(entry.keys, columns, plans, strict=False):
                if key is None:
                    continue
                column.busy = False
                old = self._columns.get(key)
                if old is not None and old[1] is column:
                    self._columns.move_to_end(key, last=not plan.own)
                    continue
                if old is not None:
                    self._cells -= old[1].size
                    del self._columns[key]
                self._columns[key] = (entry.refs, column, key)
                self._cells += column.size
                if plan.own:  # least recently used, as it were: the next to go
                    self._columns.move_to_end(key, last=False)
            while self._cells > _CELLS and len(self._columns) > 1:
                _, (_, dropped, _) = self._columns.popitem(last=False)
                self._cells -= dropped.size

    def clear(self) -> None:
        with self._lock:
            self._columns.clear()
            self._cells = 0
            self._states.clear()
            self._state_cells = 0
            self._alike.clear()
            self._governors.clear()

    def __len__(self) -> int:
        return len(self._columns)
