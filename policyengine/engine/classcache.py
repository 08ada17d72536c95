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
reads all feasible nodes), and for each row the identity of the ``NodeInfo`` it was computed
for and of its Node object. A row is reused while the snapshot still holds that very
``NodeInfo`` and, for rules whose functions read other nodes (``Function.cluster_key``:
spread and inter-pod affinity counts, image spread), while that key compares equal; a rule
calling a function that does not say what it reads is re-evaluated every cycle.

Most rules read nothing of a node but its Node object (labels, taints, allocatable, the GPU
model: ``schedlib.records.NODE_STABLE_PATHS``, and builtins declaring ``stable_only``), and
the assume step gives a node a new ``NodeInfo`` but keeps that object: such a rule's rows stay
valid while the Node object does (the flag is part of the column's key, so a rule that is
stable for one pod and not for another never mixes the two). Share keys that depend on the
pod's class alone (``Function.pod_key_alike``) are computed once per class and configuration
(``CycleContext.alike``, which also keeps the plugins' pod-only PreFilter/PreScore states),
with their hash kept and interned (``ColumnKey``), and so are the cluster keys of rules whose
functions read only the pod (``Function.keys_alike``). ``engine.cycle`` keeps whole-cycle states per class on
top of the columns (``state_key``), trusting rows it does not look at through each column's
``epoch``, ``drops`` and ``stamps``. ``tests/engine/test_class_cache.py`` holds all of it
equal to the reference evaluator over sequences of pods of several templates placed one after
another, pods removed, Node objects replaced and cycles against older snapshots.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from policyengine.engine.decision import Rejection
from policyengine.engine.nodeviews import Frame
from policyengine.engine.rowgroups import Copied, row_functions
from policyengine.lang import nodes as n
from policyengine.lang.compiler import CompiledPolicy, CompiledRule
from policyengine.lang.reads import RuleReads, expression_reads, rule_reads
from policyengine.lang.runtime import Env
from policyengine.lang.schema import Function
from policyengine.model.frozen import FrozenDict, HashedKey
from policyengine.model.objects import Pod
from policyengine.schedlib.records import NODE_STABLE_PATHS, POD
from policyengine.schedlib.rowkeys import RowKeyed, split_keys

# The root whose value is fixed for a cycle (the pod); every other root varies per node and
# is covered by the row's NodeInfo identity.
POD_ROOT = "pod"
NODE_ROOT = "node"
# Left out of a pod's class (with its name, uid, creation timestamp and resource version):
# the owner's name and uid, identity and bookkeeping rather than scheduling input.
_OWNER_UNIQUE = ("name", "uid")
# The ``pod.*`` attributes that read what a pod class leaves out (``pod_class``).
_UNIQUE = frozenset({"name"})

# About this many result cells (rows) are kept over all columns.
_CELLS = 2_000_000
# Pod classes whose pod-only prepared states are kept.
_ALIKE = 4096
# Distinct column keys interned before the table starts over.
_INTERNED = 65_536


def pod_class(pod: Pod) -> Hashable | None:
    """What makes ``pod`` alike to others: its whole spec and metadata but for its name, uid,
    timestamps and owner names (compared whole); None when that cannot be hashed. Its hash is
    computed once (``ColumnKey``), of a few cheap fields only: equal classes have equal fields,
    and hashing every container's quantities cost more than the lookups."""
    owners = tuple(
        FrozenDict({k: v for k, v in ref.items() if k not in _OWNER_UNIQUE})
        for ref in pod.owner_references
    )
    # The compared fields' values in order (what ``dataclasses.replace`` and the dataclass's
    # ``==`` would compare, without building a Pod).
    alike = (_CLASS_TAG, owners, *map(pod.__getattribute__, _CLASS_FIELDS))
    try:
        return ColumnKey(alike, hash(tuple(map(pod.__getattribute__, _CLASS_HASHED))))
    except TypeError:
        return None


_CLASS_TAG = object()  # a pod class never equals another tuple
# The fields a class's hash reads (``pod_class``).
_CLASS_HASHED = ("namespace", "labels", "scheduler_name", "priority", "node_selector")
_CLASS_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(Pod)
    if f.compare
    and f.name not in ("name", "uid", "creation_timestamp", "resource_version", "owner_references")
)
assert set(_CLASS_HASHED) <= set(_CLASS_FIELDS)  # equal classes hash alike


# --- what each rule's results depend on ----------------------------------------------------

_ATOMS = frozenset({type(None), bool, int, float, str, Fraction})
_MAP = object()  # tags a frozen map, so a map never equals a list of pairs


def freeze(value: Any) -> Hashable:
    """A hashable value equal to another's exactly when the two values are equal as the
    language sees them (maps keep their order: a rule may iterate them). Raises TypeError for
    a value without value equality."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if isinstance(value, Mapping):
        return (_MAP, tuple((k, freeze(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return tuple(map(freeze, value))
    if kind is set or kind is frozenset:
        return frozenset(map(freeze, value))
    params = getattr(value, "__dataclass_params__", None)
    if params is not None and params.frozen and params.eq:
        hash(value)
        return value
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
    # The functions whose ``stable_only`` must hold for the rule's results to read only the
    # Node objects of its rows; None when the rule reads more whatever the pod.
    stable: tuple[Function, ...] | None = None
    # The share key is the same for every pod of a class under one configuration.
    alike: bool = False
    # The share key holds what a pod has of its own (its name): the column serves that pod
    # alone (a gang member's peers score), so a full cache drops it first.
    own: bool = False
    # The functions whose ``row_determined`` must hold for the rule's result at a row to be
    # decided by its row key (``rowgroups``); None when the rule reads the node otherwise.
    by_rows: tuple[Function, ...] | None = None
    # The rule may read what a pod class leaves out (the pod's name): a key by class then
    # holds the name too.
    named: bool = False
    # The cluster keys and the stable flag are the same for every pod of a class under one
    # configuration (``Function.keys_alike``): ``engine.cycle`` keeps them per class.
    keys_alike: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        # The callables themselves: every cycle asks each rule for its keys.
        object.__setattr__(self, "_cluster_keys", tuple(f.cluster_key for f in self.keyed))
        stable = () if self.stable is None else tuple(f.stable_only for f in self.stable)
        object.__setattr__(self, "_stable_checks", stable)
        alike = not self.always and all(f.keys_alike for f in (*self.keyed, *(self.stable or ())))
        object.__setattr__(self, "keys_alike", alike)

    def stable_now(self, context: Any) -> bool:
        """Whether this cycle's results read nothing of a node but its Node object."""
        if self.stable is None:
            return False
        checks = self._stable_checks  # type: ignore[attr-defined]
        if len(checks) == 1:
            return bool(checks[0](context))
        return all(check(context) for check in checks)

    def key(self, context: Any) -> Hashable:
        return tuple(f.cluster_key(context) for f in self.keyed)  # type: ignore[misc]

    def keys(self, context: Any) -> tuple[Hashable, np.ndarray | None]:
        """The cluster keys' whole parts, and their per-row parts (``schedlib.rowkeys``)."""
        functions = self._cluster_keys  # type: ignore[attr-defined]
        if len(functions) == 1:  # most rules call one context function: ``split_keys`` inline
            found = functions[0](context)
            if type(found) is RowKeyed:
                return (found.whole,), found.rows
            return (found,), None
        return split_keys(tuple(f(context) for f in functions))

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
    full = rule_reads(rule.source, rule.checked)
    if full is None:
        return RulePlan(rule, (), True, index)
    # Lets that read nothing but the pod's own attributes are keyed by their value, not by
    # what they read: ``let job = pod.labels["job"] ?? pod.name`` keys a gang's members
    # alike by their job instead of apart by their names.
    by_value = _pod_lets(rule, full.followed)
    reads = full
    if by_value:
        outside = rule_reads(rule.source, rule.checked, frozenset(by_value))
        if outside is not None:
            reads = outside
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
    getters.extend(_let_value(by_value[id(let)]) for let in reads.lets)
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
    # What the rule may read of the pod that its class leaves out (its name), lets keyed by
    # value included (a key by class then holds the name, and pods of a class key apart).
    named = _named(full)
    return RulePlan(
        rule,
        tuple(keyed),
        always,
        index,
        tuple(getters),
        tuple(readers.values()),
        by_class,
        _stable_functions(reads),
        not named and (by_class or all(f.pod_key_alike for f in readers.values())),
        own=_named(reads),  # the share key holds the name itself: the column is the pod's
        by_rows=row_functions(reads),
        named=named,
    )


def _named(reads: RuleReads) -> bool:
    """Whether the rule reads the pod's name: by name, or through the pod used whole
    (``[p.name for p in [pod]]``)."""
    return (
        POD_ROOT in reads.bare_roots
        or any(root == POD_ROOT and name in _UNIQUE for root, name in reads.attributes)
        or any(root == POD_ROOT and name in _UNIQUE for root, name, _ in reads.entries)
    )


def _pod_lets(rule: CompiledRule, reached: Sequence[n.Let]) -> dict[int, Callable[[Env], Any]]:
    """The lets of ``reached`` (those the rule's evaluation reaches) that read nothing but
    attributes of the pod (no function reading the context, no root used whole, no other
    root), by the let's id, with their evaluators (``CompiledRule.lets``)."""
    if not rule.lets or rule.checked is None:
        return {}
    found: dict[int, Callable[[Env], Any]] = {}
    for let in reached:
        evaluate = rule.lets.get(let.name)
        if evaluate is None:
            continue
        reads = expression_reads(let.expr, rule.checked)
        if reads is not None and _pod_only(reads):
            found[id(let)] = evaluate
    return found


def _pod_only(reads: RuleReads) -> bool:
    return (
        not reads.bare_roots
        and not reads.root_args
        and not any(f.needs_context for f in reads.functions)
        and all(root == POD_ROOT and name in POD.fields for root, name in reads.attributes)
        and all(root == POD_ROOT and name in POD.fields for root, name, _ in reads.entries)
        and all(path[0] == POD_ROOT for path in reads.paths)
    )


def _let_value(evaluate: Callable[[Env], Any]) -> Callable[[Any], Any]:
    """A share-key getter: the let's value for the pod (an error raises: the key is then
    not told, and the pod's class keys the column)."""

    def value(pod_view: Any) -> Any:
        return evaluate(Env({POD_ROOT: pod_view}))

    return value


def _stable_functions(reads: RuleReads) -> tuple[Function, ...] | None:
    """The functions that must declare themselves stable for the rule to read nothing of a node
    but its Node object (``schedlib.records.NODE_STABLE_PATHS``); None when it reads more
    (or may: a root used whole, another per-node root, a function that does not say)."""
    if reads.bare_roots - {POD_ROOT}:
        return None
    for path in reads.paths:
        if path[0] == POD_ROOT:
            continue
        if path[0] != NODE_ROOT:
            return None
        if not any(path[1 : len(p) + 1] == p for p in NODE_STABLE_PATHS):
            return None
    wanted: dict[int, Function] = {}
    for function in reads.functions:
        if function.needs_context:
            wanted[id(function)] = function
    for function, root in reads.root_args:
        if root != POD_ROOT:
            wanted[id(function)] = function
    if any(f.stable_only is None for f in wanted.values()):
        return None
    return tuple(wanted.values())


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


# Every store into a column takes the next stamp, so a cache that remembers the stamp it last
# saw knows which rows were computed since (``Column.stamps``).
_STAMPS = itertools.count(1)


def next_stamp() -> int:
    return next(_STAMPS)


# Partial invalidations (``by_row``) a column remembers; a cache older than them starts over.
_DROPS = 64
# Tables a column tracks between two stores; lent to more, the next store copies regardless.
_BORROWERS = 8


@dataclass(eq=False)
class Column:
    """Rows valid for a node while ``ids`` holds its current ``NodeInfo``'s identity (0: not
    computed), or, for results that read only the Node object, while ``oids`` holds its Node
    object's; ``infos`` keeps those objects alive so an identity is never reused meanwhile.

    What a cache of whole cycles (``engine.cycle``) needs to trust rows it does not look at:
    ``epoch`` counts invalidations of every row, ``drops`` logs the rows ``by_row`` dropped
    (stamp, rows), ``stamps`` the stamp of each row's last store. Decisions read the result
    arrays later (``lend``): a store after a lend copies them first, unless every table they
    were lent to is gone (most decisions are dropped once their node is read).
    """

    ids: np.ndarray
    infos: list[Any]
    key: Any = _STALE
    row_keys: np.ndarray | None = None  # the row parts of the cluster keys, one row per node
    oids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    stamps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    stamp: int = 0  # the last store's stamp: no row of ``stamps`` is later
    epoch: int = 0
    drops: list[tuple[int, np.ndarray]] = field(default_factory=list)
    drops_since: int = 0  # ``drops`` holds every drop stamped after this
    errors: int = 0  # rows holding an error
    lent: bool = False
    # The tables the arrays were lent to since the last store (None: copy whatever they are).
    borrowers: list[weakref.ref[Any]] | None = field(default_factory=list)
    busy: bool = False  # checked out by a cycle (``ClassCache``)

    @property
    def size(self) -> int:
        return len(self.ids)

    def by_row(self, keys: np.ndarray | None) -> None:
        """Rows whose part of the cluster keys moved since they were computed are no longer
        valid (``schedlib.rowkeys``); the whole part is compared by ``key``."""
        old, self.row_keys = self.row_keys, keys
        if old is None and keys is None:
            return
        if old is None or keys is None or old.shape != keys.shape:
            self.invalidate()
            return
        dropped = np.flatnonzero((old != keys).any(axis=1))
        if len(dropped):
            self.ids[dropped] = 0
            self.oids[dropped] = 0
            self.drops.append((next_stamp(), dropped))
            if len(self.drops) > _DROPS:
                self.drops_since = self.drops.pop(0)[0]

    def dropped_since(self, stamp: int) -> np.ndarray | None:
        """Rows ``by_row`` dropped after ``stamp``; None when the log does not reach back."""
        if stamp < self.drops_since:
            return None
        found = [rows for at, rows in self.drops if at > stamp]
        if not found:
            return _NO_ROWS
        return found[0] if len(found) == 1 else np.concatenate(found)

    def valid(self, frame: Frame, stable: bool = False) -> np.ndarray:
        if stable:
            return self.oids == frame.oids
        return self.ids == frame.ids

    def valid_at(self, frame: Frame, stable: bool, rows: np.ndarray) -> np.ndarray:
        if stable:
            return self.oids[rows] == frame.oids[rows]
        return self.ids[rows] == frame.ids[rows]

    def invalidate(self) -> None:
        self.ids[:] = 0
        self.oids[:] = 0
        self.epoch += 1

    def _mark(self, rows: np.ndarray, frame: Frame) -> None:
        stamp = self.stamp = next_stamp()
        if len(rows) == len(self.ids):
            self.ids = frame.ids.copy()
            self.oids = frame.oids.copy()
            self.infos = list(frame.nodes)
            self.stamps[:] = stamp
            return
        self.ids[rows] = frame.ids[rows]
        self.oids[rows] = frame.oids[rows]
        infos = self.infos
        at = rows.tolist()
        # The views' infos: the frame's ``nodes`` may not be built.
        for row, view in zip(at, frame.views.pick(at), strict=True):
            infos[row] = view.info
        self.stamps[rows] = stamp

    def lend(self, borrower: object = None) -> None:
        """The result arrays are read by ``borrower`` (a decision's table; None: by anything)
        from now on: the next store copies them while it is alive."""
        self.lent = True
        borrowers = self.borrowers
        if borrowers is not None:
            if borrower is None or len(borrowers) >= _BORROWERS:
                self.borrowers = None
            else:
                borrowers.append(weakref.ref(borrower))

    def _own(self) -> None:
        if self.lent:
            borrowers = self.borrowers
            if borrowers is None or any(ref() is not None for ref in borrowers):
                self._copy_results()
            self.lent = False
            self.borrowers = []

    def _copy_results(self) -> None:
        raise NotImplementedError


_NO_ROWS = np.zeros(0, np.int64)


def _ids(size: int) -> tuple[np.ndarray, list[Any]]:
    return np.zeros(size, np.int64), [None] * size


@dataclass(eq=False)
class FilterColumn(Column):
    """One filter rule's verdicts per node row: ``codes`` indexes ``made``, the rejections
    the column has met (0: None, it passed). A decision reads the codes later and ``made``
    only grows, so lending the codes costs an int copy at the next store, not an object one."""

    passed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None
    made: list[Rejection | None] = field(default_factory=lambda: [None])
    _made: dict[tuple[Any, ...], int] = field(default_factory=dict)

    @classmethod
    def empty(cls, size: int) -> FilterColumn:
        return cls(
            *_ids(size),
            oids=np.zeros(size, np.int64),
            stamps=np.zeros(size, np.int64),
            passed=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            codes=np.zeros(size, np.int32),
            error=np.full(size, None, object),
        )

    def rejection(self, row: int) -> Rejection | None:
        return self.made[self.codes[row]]

    def store(
        self, rows: np.ndarray, rule: CompiledRule, verdicts: Sequence[Any], frame: Frame
    ) -> None:
        if len(self.made) > 2 * len(self.ids) + 256:
            self._compact()
        if (
            len(verdicts) <= _FEW_RESULTS
            and not self.errors
            and type(verdicts) is not Copied
            and all(verdict.error is None for verdict in verdicts)
        ):
            # A few rows (a cycle re-examining the nodes changed since its class's last):
            # verdict by verdict, without grouping equal ones first.
            few = [0 if v.passed else self._code(v.reasons, None, rule) for v in verdicts]
            self._own()
            self._mark(rows, frame)
            self.passed[rows] = [verdict.passed for verdict in verdicts]
            self.codes[rows] = few
            return
        ids, distinct = _distinct(verdicts)
        passed = np.empty(len(distinct), bool)
        codes = np.zeros(len(distinct), np.int32)
        error = np.full(len(distinct), None, object)
        failed = False
        for index, verdict in enumerate(distinct):
            passed[index] = verdict.passed
            if verdict.error is not None:
                error[index] = str(verdict.error)
                failed = True
            if verdict.passed:
                continue
            codes[index] = self._code(verdict.reasons, verdict.error, rule)
        self._own()
        self._mark(rows, frame)
        self.passed[rows] = passed[ids]
        self.codes[rows] = codes[ids]
        if failed or self.errors:  # otherwise every row holds no error already
            self.error[rows] = error[ids]
            self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)
            self.errors = int(np.count_nonzero(self.errored))

    def _code(self, reasons: Sequence[str], error: Any, rule: CompiledRule) -> int:
        """The code of the rejection with ``reasons`` and ``error``: thousands of nodes fail
        for the same reasons, and one (frozen) ``Rejection`` serves them."""
        key = (reasons, error)
        code = self._made.get(key)
        if code is None:
            code = self._made[key] = len(self.made)
            self.made.append(
                Rejection(rule.qualified_name, tuple(reasons), str(error) if error else None)
            )
        return code

    def _compact(self) -> None:
        """Forget the rejections no row holds (reasons that name nodes or counts would
        otherwise pile up); decisions holding the old codes keep the old list."""
        live = np.unique(self.codes)
        remap = np.zeros(len(self.made), np.int32)
        made: list[Rejection | None] = [None]
        for code in live.tolist():
            if code:
                remap[code] = len(made)
                made.append(self.made[code])
        self.codes = remap[self.codes]
        self.lent = False
        self.borrowers = []
        self.made = made
        self._made = {}
        for code, rejection in enumerate(made):
            if rejection is not None:
                key = (rejection.reasons, rejection.error)
                self._made.setdefault(key, code)

    def _copy_results(self) -> None:
        self.codes = self.codes.copy()  # what a decision reads (``passed`` is not)


@dataclass(eq=False)
class ScoreColumn(Column):
    """One score rule's raw values per node row; ``scored`` is False where it gave null."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    scored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    errored: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # str | None
    # Every row normalised (kind, the facts, the stamp of the last store they read, the
    # values): ``engine.cycle`` reads them while no row was stored since.
    normalised: tuple[str, Any, int, np.ndarray] | None = None

    @classmethod
    def empty(cls, size: int) -> ScoreColumn:
        return cls(
            *_ids(size),
            oids=np.zeros(size, np.int64),
            stamps=np.zeros(size, np.int64),
            values=np.zeros(size, np.float64),
            scored=np.zeros(size, bool),
            errored=np.zeros(size, bool),
            error=np.full(size, None, object),
        )

    def store(self, rows: np.ndarray, results: Sequence[Any], frame: Frame) -> None:
        if (
            len(results) <= _FEW_RESULTS
            and not self.errors
            and all(result.error is None for result in results)
        ):
            # A few rows (a cycle re-examining the nodes changed since its class's last):
            # straight from the values, without grouping equal results first.
            given = [result.value for result in results]
            self._own()
            self._mark(rows, frame)
            self.values[rows] = np.array(
                [0.0 if value is None else value for value in given], np.float64
            )
            self.scored[rows] = [value is not None for value in given]
            return
        ids, distinct = _distinct(results)
        values = np.zeros(len(distinct), np.float64)
        scored = np.zeros(len(distinct), bool)
        error = np.full(len(distinct), None, object)
        failed = False
        for index, result in enumerate(distinct):
            if result.value is not None:
                values[index] = result.value
                scored[index] = True
            if result.error is not None:
                error[index] = str(result.error)
                failed = True
        self._own()
        self._mark(rows, frame)
        self.values[rows] = values[ids]
        self.scored[rows] = scored[ids]
        if failed or self.errors:  # otherwise every row holds no error already
            self.error[rows] = error[ids]
            self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)
            self.errors = int(np.count_nonzero(self.errored))

    def store_numbers(
        self, rows: np.ndarray, numbers: Sequence[float | None], frame: Frame
    ) -> None:
        """``store`` of results given as their values (``CompiledRule.score_numbers``: plain
        floats, None where not scored; never an error)."""
        self._own()
        self._mark(rows, frame)
        self.values[rows] = [0.0 if value is None else value for value in numbers]
        self.scored[rows] = [value is not None for value in numbers]
        if self.errors:
            self.error[rows] = None
            self.errored[rows] = False
            self.errors = int(np.count_nonzero(self.errored))

    def _copy_results(self) -> None:
        self.values = self.values.copy()
        self.scored = self.scored.copy()


# Results a store takes value by value rather than grouped (``ScoreColumn.store``).
_FEW_RESULTS = 16


def _distinct(items: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Each item's position among the distinct objects of ``items`` (by identity), and those
    objects. Verdicts are mostly shared objects (``PASSED``, one rejection per reason), so the
    per-node work is a few C-level passes instead of a Python loop."""
    if type(items) is Copied:  # one result per distinct row key, copied (``rowgroups``)
        return items.inverse, items.results
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


class ColumnKey(HashedKey):
    """A key (a column's, a pod class's) with its hash computed once: pods of a class look
    their columns up by the same key object cycle after cycle (``CycleContext.alike``), and
    equal keys are interned (``ClassCache._intern``) so lookups mostly compare identities."""

    __slots__ = ()

    def __getitem__(self, index: int) -> Any:
        return self.value[index]


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
            while self._state_cells > _CELLS and len(self._states) > 1:
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

    def __len__(self) -> int:
        return len(self._columns)
