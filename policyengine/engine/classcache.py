"""Per-node rule results shared between pods, kept between cycles.

Pods created from one template (a ReplicaSet's, a Job's) differ only in their names, so every
rule that reads nothing but the pod and the node it is asked about gives them the same answer
on a node that has not changed. Pods of different templates mostly do too: a rule reading
only ``pod.tolerates_unschedulable`` and ``node.unschedulable`` answers alike for every pod
that tolerates the same; NodeResourcesFit's filter answers alike for pods with equal requests.
kube-scheduler's scheduler_perf reaches its rates with equivalence classes and by looking at
few nodes; we look at every node, so per-pod cost can only stop growing with the cluster if a
pod re-evaluates just the nodes that changed since a pod with the same inputs to the rule.

So results are kept **per rule**, keyed by what the rule reads of the pod (``lang.reads``,
following lets): the values of the ``pod.*`` attributes it names and, for each domain function
it calls that reads the pod (through the context or a ``pod`` argument), that function's
``pod_key`` (for the kube builtins, the plugin's prepared per-pod state). A rule that uses the
pod in a way this cannot describe (a function without ``pod_key``, ``pod`` compared whole)
is keyed by the pod's whole class instead: its spec and metadata but for name, uid,
timestamps and owner names.

A column holds one rule's result per node row: each filter's verdict (pass, the shared
``Rejection``, the error) or each score's raw value (never normalised values: normalisation
reads all feasible nodes and is redone every cycle), and for each row the identity of the
``NodeInfo`` it was computed for. A row is reused while the snapshot still holds that very
``NodeInfo`` and, for rules whose functions read other nodes (``Function.cluster_key``:
spread and inter-pod affinity counts, image spread), while that key compares equal; a rule
calling a function that does not say what it reads is re-evaluated every cycle.
``tests/engine/test_class_cache.py`` holds the shared columns equal to the reference evaluator
over sequences of pods of several templates placed one after another.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from policyengine.engine.decision import Rejection
from policyengine.engine.nodeviews import Frame
from policyengine.lang.compiler import CompiledPolicy, CompiledRule
from policyengine.lang.reads import rule_reads
from policyengine.lang.schema import Function
from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Pod
from policyengine.schedlib.records import POD

# The root whose value is fixed for a cycle (the pod); every other root varies per node and
# is covered by the row's NodeInfo identity.
POD_ROOT = "pod"
NODE_ROOT = "node"
# Left out of a pod's class (with its name, uid, creation timestamp and resource version):
# the owner's name and uid, identity and bookkeeping rather than scheduling input.
_OWNER_UNIQUE = ("name", "uid")

# About this many result cells (rows) are kept over all columns.
_CELLS = 2_000_000


def pod_class(pod: Pod) -> Hashable | None:
    """What makes ``pod`` alike to others: its whole spec and metadata but for its name, uid,
    timestamps and owner names; None when that cannot be hashed."""
    owners = tuple(
        FrozenDict({k: v for k, v in ref.items() if k not in _OWNER_UNIQUE})
        for ref in pod.owner_references
    )
    alike = dataclasses.replace(
        pod, name="", uid="", creation_timestamp="", resource_version="", owner_references=owners
    )
    try:
        hash(alike)
    except TypeError:
        return None
    return alike


# --- what each rule's results depend on ----------------------------------------------------

_ATOMS = frozenset({type(None), bool, int, float, str, Fraction})
_MAP = object()  # tags a frozen map, so a map never equals a list of pairs


def freeze(value: Any) -> Hashable:
    """A hashable value equal to another's exactly when the two values are equal as the
    language sees them (maps keep their order: a rule may iterate them). Raises TypeError for
    a value without value equality."""
    kind = type(value)
    if kind in _ATOMS:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Mapping):
        return (_MAP, tuple((k, freeze(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return tuple(map(freeze, value))
    if kind is set or kind is frozenset:
        return frozenset(map(freeze, value))
    params = getattr(value, "__dataclass_params__", None)
    if params is not None and params.frozen and params.eq:
        hash(value)
        return value  # type: ignore[no-any-return]
    raise TypeError(f"no value equality for {kind.__name__}")


def _entry(getter: Callable[[Any], Any], key: Any) -> Callable[[Any], Any]:
    """What reading ``getter(pod)[key]`` can give: whether a map holds the key and its value
    there (a total map reads a default when it does not); any other value, whole."""

    def read(pod_view: Any) -> Any:
        value = getter(pod_view)
        if isinstance(value, Mapping):
            return (True, value[key]) if key in value else (False,)
        return value

    return read


@dataclass(frozen=True, eq=False)
class RulePlan:
    """``keyed``: the context functions whose ``cluster_key`` guards the rule's column;
    ``always``: the results are never reused across cycles. ``pod_getters`` (the pod
    attributes the rule reads) and ``pod_functions`` (functions reading the pod) make the
    rule's share key; ``by_class`` when that cannot describe what the rule reads of the pod."""

    rule: CompiledRule
    keyed: tuple[Function, ...]
    always: bool
    index: int = 0
    pod_getters: tuple[Callable[[Any], Any], ...] = ()
    pod_functions: tuple[Function, ...] = ()
    by_class: bool = True

    def key(self, context: Any) -> Hashable:
        return tuple(f.cluster_key(context) for f in self.keyed)  # type: ignore[misc]

    def share_key(self, pod_view: Any, context: Any) -> Hashable:
        """What the rule reads of the pod; raises when it cannot be told for this pod."""
        return (
            tuple(freeze(get(pod_view)) for get in self.pod_getters),
            tuple(f.pod_key(context) for f in self.pod_functions),  # type: ignore[misc]
        )


@dataclass(frozen=True, eq=False)
class PolicyPlan:
    filters: tuple[RulePlan, ...]
    scores: tuple[RulePlan, ...]


def _plan_rule(rule: CompiledRule, index: int) -> RulePlan:
    reads = rule_reads(rule.source, rule.checked)
    if reads is None:
        return RulePlan(rule, (), True, index)
    keyed = []
    always = False
    for function in reads.functions:
        if not function.needs_context:
            continue  # depends on its arguments alone
        if function.cluster_key is None:
            always = True
        else:
            keyed.append(function)
    getters: list[Callable[[Any], Any]] = []
    by_class = bool(reads.bare_roots - {NODE_ROOT})
    for root, name in sorted(reads.attributes):
        if root == NODE_ROOT:
            continue
        field_ = POD.fields.get(name) if root == POD_ROOT else None
        if field_ is None:
            by_class = True
            continue
        getters.append(field_.getter)
    for root, name, key in sorted(reads.entries, key=repr):
        if root == NODE_ROOT:
            continue
        field_ = POD.fields.get(name) if root == POD_ROOT else None
        if field_ is None:
            by_class = True
            continue
        getters.append(_entry(field_.getter, key))
    readers: dict[int, Function] = {}
    for function in reads.functions:
        if function.needs_context:
            readers[id(function)] = function
    for function, root in reads.root_args:
        if root != NODE_ROOT:
            readers[id(function)] = function
    for function in readers.values():
        if function.pod_key is None:
            by_class = True
    return RulePlan(
        rule, tuple(keyed), always, index, tuple(getters), tuple(readers.values()), by_class
    )


_PLANS: dict[int, tuple[CompiledPolicy, PolicyPlan]] = {}
_PLANS_LOCK = threading.Lock()


def policy_plan(policy: CompiledPolicy) -> PolicyPlan:
    """The rule plans of ``policy``, computed once per compiled policy."""
    entry = _PLANS.get(id(policy))
    if entry is not None and entry[0] is policy:
        return entry[1]
    plan = PolicyPlan(
        tuple(_plan_rule(rule, i) for i, rule in enumerate(policy.filters)),
        tuple(_plan_rule(rule, i) for i, rule in enumerate(policy.scores)),
    )
    with _PLANS_LOCK:
        if len(_PLANS) > 256:
            _PLANS.clear()
        _PLANS[id(policy)] = (policy, plan)
    return plan


# --- the columns ---------------------------------------------------------------------------

_STALE = object()  # a column key no cluster key equals: the column must be recomputed


@dataclass(eq=False)
class Column:
    """Rows valid for a node while ``ids`` holds its current ``NodeInfo``'s identity (0: not
    computed); ``infos`` keeps those objects alive so an identity is never reused meanwhile."""

    ids: np.ndarray
    infos: np.ndarray
    key: Any = _STALE

    @property
    def size(self) -> int:
        return len(self.ids)

    def valid(self, frame: Frame) -> np.ndarray:
        return self.ids == frame.ids  # type: ignore[no-any-return]

    def invalidate(self) -> None:
        self.ids[:] = 0

    def _mark(self, rows: np.ndarray, frame: Frame) -> None:
        if len(rows) == len(self.ids):
            self.ids = frame.ids.copy()
            self.infos = frame.infos.copy()
            return
        self.ids[rows] = frame.ids[rows]
        self.infos[rows] = frame.infos[rows]


def _ids(size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(size, np.int64), np.full(size, None, object)


@dataclass(eq=False)
class FilterColumn(Column):
    """One filter rule's verdicts per node row; ``rejection`` is None where it passed."""

    passed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    rejection: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # Rejection|None
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None

    @classmethod
    def empty(cls, size: int) -> FilterColumn:
        return cls(
            *_ids(size),
            passed=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            rejection=np.full(size, None, object),
            error=np.full(size, None, object),
        )

    def store(
        self, rows: np.ndarray, rule: CompiledRule, verdicts: list[Any], frame: Frame
    ) -> None:
        ids, distinct = _distinct(verdicts)
        made: dict[tuple[tuple[str, ...], object], Rejection] = {}
        passed = np.empty(len(distinct), bool)
        rejection = np.full(len(distinct), None, object)
        error = np.full(len(distinct), None, object)
        for index, verdict in enumerate(distinct):
            passed[index] = verdict.passed
            if verdict.error is not None:
                error[index] = str(verdict.error)
            if verdict.passed:
                continue
            # Thousands of nodes fail for the same reasons: one (frozen) Rejection serves them.
            key = (verdict.reasons, verdict.error)
            found = made.get(key)
            if found is None:
                found = made[key] = Rejection(
                    rule.qualified_name,
                    tuple(verdict.reasons),
                    str(verdict.error) if verdict.error else None,
                )
            rejection[index] = found
        self._mark(rows, frame)
        self.passed[rows] = passed[ids]
        self.rejection[rows] = rejection[ids]
        self.error[rows] = error[ids]
        self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)


@dataclass(eq=False)
class ScoreColumn(Column):
    """One score rule's raw values per node row; ``scored`` is False where it gave null."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    scored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None

    @classmethod
    def empty(cls, size: int) -> ScoreColumn:
        return cls(
            *_ids(size),
            values=np.zeros(size, np.float64),
            scored=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            error=np.full(size, None, object),
        )

    def store(self, rows: np.ndarray, results: list[Any], frame: Frame) -> None:
        ids, distinct = _distinct(results)
        values = np.zeros(len(distinct), np.float64)
        scored = np.zeros(len(distinct), bool)
        error = np.full(len(distinct), None, object)
        for index, result in enumerate(distinct):
            if result.value is not None:
                values[index] = result.value
                scored[index] = True
            if result.error is not None:
                error[index] = str(result.error)
        self._mark(rows, frame)
        self.values[rows] = values[ids]
        self.scored[rows] = scored[ids]
        self.error[rows] = error[ids]
        self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)


def _distinct(items: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Each item's position among the distinct objects of ``items`` (by identity), and those
    objects. Verdicts are mostly shared objects (``PASSED``, one rejection per reason), so the
    per-node work is a few C-level passes instead of a Python loop."""
    ids = list(map(id, items))
    first = dict(zip(ids, items, strict=True))
    position = {key: index for index, key in enumerate(first)}
    return np.fromiter(map(position.__getitem__, ids), np.int64, len(ids)), list(first.values())


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


class ClassCache:
    """Columns of recent (rule, pod inputs) pairs, least recently used dropped first.

    A cycle takes each of its columns out (``checkout``) and puts them back when done
    (``checkin``), so two threads never work on one column: a concurrent cycle wanting the
    same one starts afresh.
    """

    def __init__(self) -> None:
        self._columns: OrderedDict[Hashable, tuple[tuple[Any, ...], Column]] = OrderedDict()
        self._lock = threading.Lock()
        self._cells = 0

    def checkout(
        self,
        refs: tuple[Any, ...],
        plan: PolicyPlan,
        pod: Pod,
        pod_view: Any,
        context: Any,
        frame: Frame,
    ) -> ClassEntry:
        """The cycle's entry with its filter columns."""
        entry = ClassEntry(refs, plan, frame, pod)
        for rule in plan.filters:
            column = self._column(entry, rule, "filter", pod_view, context)
            entry.filters.append(column)  # type: ignore[arg-type]
        return entry

    def score_columns(self, entry: ClassEntry, pod_view: Any, context: Any) -> None:
        """Check out ``entry``'s score columns (once the feasible set is known)."""
        for rule in entry.plan.scores:
            column = self._column(entry, rule, "score", pod_view, context)
            entry.scores.append(column)  # type: ignore[arg-type]

    def _column(
        self, entry: ClassEntry, rule: RulePlan, kind: str, pod_view: Any, context: Any
    ) -> Column:
        size = entry.frame.size
        fresh: Callable[[int], Column] = (
            FilterColumn.empty if kind == "filter" else ScoreColumn.empty
        )
        if rule.always:  # recomputed every cycle: nothing to keep
            entry.keys.append(None)
            return fresh(size)
        share: Hashable | None = None
        if not rule.by_class:
            try:
                share = rule.share_key(pod_view, context)
                hash(share)
            except Exception:
                share = None
        if share is None:
            alike = entry.class_of_pod()
            share = None if alike is None else ("class", alike)
        if share is None:
            entry.keys.append(None)
            return fresh(size)
        refs = entry.refs
        key = (*map(id, refs), kind, rule.index, share)
        entry.keys.append(key)
        with self._lock:
            found = self._columns.pop(key, None)
            if found is not None:
                self._cells -= found[1].size
        if (
            found is None
            or found[1].size != size
            or any(a is not b for a, b in zip(found[0], refs, strict=True))
        ):
            return fresh(size)
        return found[1]

    def checkin(self, entry: ClassEntry) -> None:
        columns: list[Column] = [*entry.filters, *entry.scores]
        with self._lock:
            for key, column in zip(entry.keys, columns, strict=False):
                if key is None:
                    continue
                old = self._columns.pop(key, None)
                if old is not None:
                    self._cells -= old[1].size
                self._columns[key] = (entry.refs, column)
                self._cells += column.size
            while self._cells > _CELLS and len(self._columns) > 1:
                _, (_, dropped) = self._columns.popitem(last=False)
                self._cells -= dropped.size

    def clear(self) -> None:
        with self._lock:
            self._columns.clear()
            self._cells = 0

    def __len__(self) -> int:
        return len(self._columns)


CACHE = ClassCache()
