"""Per-node rule results shared by the pods of one equivalence class, kept between cycles.

Pods created from one template (a ReplicaSet's, a Job's) differ only in their names, so every
rule that reads nothing but the pod and the node it is asked about gives them the same answer
on a node that has not changed. kube-scheduler's scheduler_perf reaches its rates the same
way (equivalence classes, and looking at few nodes); we look at every node, so per-pod cost
can only stop growing with the cluster if a pod re-evaluates just the nodes that changed since
the last pod of its class — typically the one node the previous pod was assumed onto.

What is kept, per (program, policy, topology, configuration, filter mode, pod class): the
nodes the results describe (their immutable ``NodeInfo`` objects) and one column per rule —
each filter's verdict per node (pass, the shared ``Rejection``, the error) and each score's raw
value per node (never normalised values: normalisation reads all feasible nodes and is redone
every cycle). A column row stays valid while the node's ``NodeInfo`` is the very same object
and, for rules whose functions read other nodes (``Function.cluster_key``: spread and
inter-pod affinity counts, image spread), while that key compares equal; a rule calling a
function that does not say what it reads is re-evaluated every cycle, as is every rule of a
policy that reads ``pod.name`` (pods then share nothing). ``tests/engine/test_fast_path.py``
holds the cached path equal to the reference evaluator over sequences of pods of a few
templates placed one after another.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policyengine.engine.decision import Rejection
from policyengine.lang.compiler import CompiledPolicy, CompiledRule, Program
from policyengine.lang.reads import rule_reads
from policyengine.lang.schema import Function
from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Pod
from policyengine.model.snapshot import NodeInfo

# Attributes of ``pod`` that differ between pods alike; a policy reading one shares nothing.
POD_UNIQUE = frozenset({("pod", "name")})
# Left out of a pod's class (with its name, uid, creation timestamp and resource version):
# the owner's name and uid, identity and bookkeeping rather than scheduling input.
_OWNER_UNIQUE = ("name", "uid")

# About this many result cells (rules x nodes) are kept over all classes.
_CELLS = 6_000_000


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


@dataclass(frozen=True, eq=False)
class RulePlan:
    """``keyed``: the context functions whose ``cluster_key`` guards the rule's column;
    ``always``: the results are never reused across cycles."""

    rule: CompiledRule
    keyed: tuple[Function, ...]
    always: bool

    def key(self, context: Any) -> Hashable:
        return tuple(f.cluster_key(context) for f in self.keyed)  # type: ignore[misc]


@dataclass(frozen=True, eq=False)
class PolicyPlan:
    filters: tuple[RulePlan, ...]
    scores: tuple[RulePlan, ...]
    shareable: bool  # False when a rule reads a per-pod-unique attribute


def _plan_rule(rule: CompiledRule) -> tuple[RulePlan, bool]:
    reads = rule_reads(rule.source, rule.checked)
    if reads is None:
        return RulePlan(rule, (), True), False
    keyed = []
    always = False
    for function in reads.functions:
        if not function.needs_context:
            continue  # depends on its arguments alone
        if function.cluster_key is None:
            always = True
        else:
            keyed.append(function)
    return RulePlan(rule, tuple(keyed), always), not (reads.attributes & POD_UNIQUE)


_PLANS: dict[int, tuple[CompiledPolicy, PolicyPlan]] = {}
_PLANS_LOCK = threading.Lock()


def policy_plan(policy: CompiledPolicy) -> PolicyPlan:
    """The rule plans of ``policy``, computed once per compiled policy."""
    entry = _PLANS.get(id(policy))
    if entry is not None and entry[0] is policy:
        return entry[1]
    filters = [_plan_rule(rule) for rule in policy.filters]
    scores = [_plan_rule(rule) for rule in policy.scores]
    plan = PolicyPlan(
        tuple(p for p, _ in filters),
        tuple(p for p, _ in scores),
        all(ok for _, ok in (*filters, *scores)),
    )
    with _PLANS_LOCK:
        if len(_PLANS) > 256:
            _PLANS.clear()
        _PLANS[id(policy)] = (policy, plan)
    return plan


# --- the columns ---------------------------------------------------------------------------

_STALE = object()  # a column key no cluster key equals: the column must be recomputed


@dataclass(eq=False)
class FilterColumn:
    """One filter rule's verdicts per node row; ``rejection`` is None where it passed."""

    valid: np.ndarray
    passed: np.ndarray
    errored: np.ndarray
    rejection: np.ndarray  # object: Rejection | None
    error: np.ndarray  # object: str | None
    key: Any = _STALE

    @classmethod
    def empty(cls, size: int) -> FilterColumn:
        return cls(
            np.zeros(size, bool),
            np.zeros(size, bool),
            np.zeros(size, bool),
            np.full(size, None, object),
            np.full(size, None, object),
        )

    def store(self, rows: list[int], rule: CompiledRule, verdicts: list[Any]) -> None:
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
        self.valid[rows] = True
        self.passed[rows] = passed[ids]
        self.rejection[rows] = rejection[ids]
        self.error[rows] = error[ids]
        self.errored[rows] = (error != None)[ids]  # noqa: E711 (elementwise)


@dataclass(eq=False)
class ScoreColumn:
    """One score rule's raw values per node row; ``scored`` is False where it gave null."""

    valid: np.ndarray
    values: np.ndarray
    scored: np.ndarray
    errored: np.ndarray
    error: np.ndarray  # object: str | None
    key: Any = _STALE

    @classmethod
    def empty(cls, size: int) -> ScoreColumn:
        return cls(
            np.zeros(size, bool),
            np.zeros(size, np.float64),
            np.zeros(size, bool),
            np.zeros(size, bool),
            np.full(size, None, object),
        )

    def store(self, rows: list[int], results: list[Any]) -> None:
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
        self.valid[rows] = True
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


@dataclass(eq=False)
class ClassEntry:
    """The results of one class: ``nodes`` are the ``NodeInfo`` objects the columns describe."""

    refs: tuple[Any, ...]  # program, policy, topology, config: compared by identity
    plan: PolicyPlan
    nodes: tuple[NodeInfo, ...] = ()
    names: np.ndarray = field(default_factory=lambda: np.empty(0, object))
    filters: list[FilterColumn] = field(default_factory=list)
    scores: list[ScoreColumn] = field(default_factory=list)
    ranks: np.ndarray | None = None  # each row's position in node-name order
    ready: bool = False

    def align(self, nodes: tuple[NodeInfo, ...]) -> None:
        """Make the columns describe ``nodes``: rows whose ``NodeInfo`` changed are invalid."""
        size = len(nodes)
        if not self.ready or len(self.nodes) != size:
            self.ready = True
            self.filters = [FilterColumn.empty(size) for _ in self.plan.filters]
            self.scores = [ScoreColumn.empty(size) for _ in self.plan.scores]
            self.names = np.array([info.node.name for info in nodes] or [], dtype=object)
            self.ranks = None
        elif self.nodes is not nodes:
            changed = np.fromiter(map(operator.is_not, nodes, self.nodes), bool, size)
            if changed.any():
                rows = np.flatnonzero(changed)
                fresh = ~changed
                columns: list[FilterColumn | ScoreColumn] = [*self.filters, *self.scores]
                for column in columns:
                    column.valid &= fresh
                names = [nodes[row].node.name for row in rows.tolist()]
                if names != self.names[rows].tolist():
                    self.names[rows] = names
                    self.ranks = None
        self.nodes = nodes


def new_entry(refs: tuple[Any, ...], plan: PolicyPlan) -> ClassEntry:
    return ClassEntry(refs, plan)


class ClassCache:
    """The entries of the recent classes, least recently used dropped first.

    A cycle takes its class's entry out (``checkout``) and puts it back when done
    (``checkin``), so two threads never work on one entry: a concurrent cycle of the same
    class starts afresh.
    """

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, ClassEntry] = OrderedDict()
        self._lock = threading.Lock()

    def checkout(self, key: Hashable, refs: tuple[Any, ...], plan: PolicyPlan) -> ClassEntry:
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is None or len(entry.refs) != len(refs) or entry.plan is not plan:
            return new_entry(refs, plan)
        if any(a is not b for a, b in zip(entry.refs, refs, strict=True)):
            return new_entry(refs, plan)
        return entry

    def checkin(self, key: Hashable, entry: ClassEntry) -> None:
        cells = max(1, len(entry.nodes) * (len(entry.filters) + len(entry.scores)))
        limit = max(4, min(256, _CELLS // cells))
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CACHE = ClassCache()


def class_key(
    program: Program,
    policy: CompiledPolicy,
    plan: PolicyPlan,
    pod: Pod,
    topology: Any,
    config: Any,
    all_filters: bool,
) -> tuple[Hashable, tuple[Any, ...]] | None:
    """The cache key of ``pod``'s class and the objects the entry must have been made with;
    None when the pod shares nothing with others."""
    if not plan.shareable:
        return None
    alike = pod_class(pod)
    if alike is None:
        return None
    refs = (program, policy, topology, config)
    return (id(program), id(policy), id(topology), id(config), all_filters, alike), refs
