"""What a rule reads of the pod: the key its per-node results are shared under.

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
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from policyengine.engine.fastpath.rowgroups import looked_functions, row_functions
from policyengine.lang import nodes as n
from policyengine.lang.compiler import CompiledPolicy, CompiledRule
from policyengine.lang.reads import RuleReads, expression_reads, rule_reads
from policyengine.lang.runtime import Env
from policyengine.lang.schema import Function
from policyengine.lang.types import INT, NUMERIC, Nullable
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


def pod_class(pod: Pod) -> Hashable | None:
    """What makes ``pod`` alike to others: its whole spec and metadata but for its name, uid,
    timestamps and owner names (compared whole); None when that cannot be hashed. Its hash is
    computed once (``ColumnKey``) of every compared field: pods alike in their labels but not
    in the rest (a DaemonSet's pods, each pinned to its node; a workflow's steps) then land in
    buckets of their own, where a hash of a few fields put them all in one, each lookup
    comparing the pod with every class of the bucket (quadratic in a rollout's pods)."""
    if pod.uses_storage:
        # The storage plugins read claims and volumes, which change as pods are placed: what
        # keys hold for such a pod is worked out anew every cycle, never kept per class.
        return None
    owners = tuple(
        FrozenDict({k: v for k, v in ref.items() if k not in _OWNER_UNIQUE})
        for ref in pod.owner_references
    )
    # The compared fields' values in order (what ``dataclasses.replace`` and the dataclass's
    # ``==`` would compare, without building a Pod).
    alike = (_CLASS_TAG, owners, *map(pod.__getattribute__, _CLASS_FIELDS))
    try:
        return ColumnKey(alike)
    except TypeError:
        return None


_CLASS_TAG = object()  # a pod class never equals another tuple
_CLASS_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(Pod)
    if f.compare
    and f.name not in ("name", "uid", "creation_timestamp", "resource_version", "owner_references")
)


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
    # The functions whose ``looked_at`` tells the only rows the rule can tell apart
    # (``rowgroups.looked_functions``); None when it may tell any two rows apart.
    by_looked: tuple[Function, ...] | None = None
    # A filter whose guard reads the node through such functions alone: at every row none of
    # them looks at, the guard gives one answer, and when that is false each such row passes
    # (``rules.filter_at``); None otherwise.
    guard_looked: tuple[Function, ...] | None = None
    # The rule may read what a pod class leaves out (the pod's name): a key by class then
    # holds the name too.
    named: bool = False
    # Per function of ``keyed`` (by id), the literals the rule's calls pass where it narrows
    # its key (``Function.narrowed_key``); a function not named keys by ``cluster_key``.
    narrowed: tuple[tuple[int, frozenset[Any]], ...] = ()
    # The rule's raw score at a node is its row key itself (its body is one call of a function
    # with ``Function.row_values``): rows whose key moved are read, not evaluated.
    row_values: Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    # The checker typed the rule's body an int (or a null): its raw scores are whole numbers.
    whole_values: bool = False
    # A score rule whose guard reads no function of the cycle's context and whose body never
    # gives null: the nodes it leaves unscored are those its guard excluded, whatever the
    # cluster keys (the body's) say, so a move of the keys keeps them (``rules.rekeyed``).
    guard_keeps: bool = False
    # The cluster keys and the stable flag are the same for every pod of a class under one
    # configuration (``Function.keys_alike``): ``engine.cycle`` keeps them per class.
    keys_alike: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        # The callables themselves: every cycle asks each rule for its keys.
        narrowed = dict(self.narrowed)
        object.__setattr__(
            self, "_cluster_keys", tuple(_cluster_key(f, narrowed.get(id(f))) for f in self.keyed)
        )
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
        return tuple(key(context) for key in self._cluster_keys)  # type: ignore[attr-defined]

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


def _cluster_key(function: Function, literals: frozenset[Any] | None) -> Callable[[Any], Hashable]:
    """``function``'s cluster key for a rule whose calls pass ``literals`` where it narrows
    its key (None: they do not, or it does not narrow)."""
    if literals is None or function.narrowed_key is None:
        assert function.cluster_key is not None
        return function.cluster_key
    narrowed = function.narrowed_key[1]
    return lambda context: narrowed(context, literals)


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
    literals = dict(reads.literals)
    narrowed = tuple(
        (id(f), found)
        for f in keyed
        if f.narrowed_key is not None and (found := literals.get(id(f))) is not None
    )
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
        by_looked=looked_functions(reads),
        guard_looked=_guard_looked(rule),
        named=named,
        narrowed=narrowed,
        row_values=_row_values(rule, reads),
        whole_values=_whole_values(rule),
        guard_keeps=_guard_keeps(rule),
    )


def _guard_looked(rule: CompiledRule) -> tuple[Function, ...] | None:
    """``RulePlan.guard_looked``: the functions through which a filter's guard alone reads
    the node, when each says where it looks (``rowgroups.looked_functions``)."""
    source, checked = rule.source, rule.checked
    if not isinstance(source, n.Filter) or source.guard is None or checked is None:
        return None
    if rule.guard is None:
        return None
    reads = expression_reads(source.guard, checked)
    return None if reads is None else looked_functions(reads)


def _whole_values(rule: CompiledRule) -> bool:
    """Whether the checker typed the score rule's body an int (a null scores nothing)."""
    source, checked = rule.source, rule.checked
    if not isinstance(source, n.Score) or checked is None:
        return False
    return checked.types.get(id(source.body)) in (INT, Nullable(INT))


def _guard_keeps(rule: CompiledRule) -> bool:
    """Whether the score rule has a guard reading no function of the cycle's context and a
    body the checker typed a number, never null (``RulePlan.guard_keeps``)."""
    source, checked = rule.source, rule.checked
    if not isinstance(source, n.Score) or source.guard is None or checked is None:
        return False
    if checked.types.get(id(source.body)) not in NUMERIC:
        return False
    reads = expression_reads(source.guard, checked)
    return reads is not None and not any(f.needs_context for f in reads.functions)


def _row_values(
    rule: CompiledRule, reads: RuleReads
) -> Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """``Function.row_values`` of the one function a score rule's body is a bare call of,
    ``f(pod, node)`` with no guard and nothing else read; None otherwise."""
    source = rule.source
    if not isinstance(source, n.Score) or source.guard is not None:
        return None
    body = source.body
    if not isinstance(body, n.Call) or len(reads.functions) != 1:
        return None
    function = reads.functions[0]
    if (
        function.row_values is None
        or body.func != function.name
        or [getattr(arg, "id", None) for arg in body.args] != [POD_ROOT, NODE_ROOT]
        or {root for _, root in reads.root_args} != {POD_ROOT, NODE_ROOT}
        or reads.attributes
        or reads.entries
        or reads.bare_roots
        or reads.lets
        or reads.followed
    ):
        return None
    return function.row_values


def alike_for_a_class(reads: RuleReads) -> bool:
    """Whether what ``reads`` describes is the same for every pod of a class (``pod_class``):
    attributes of the pod but its name, and functions of their arguments alone (none reading
    the cycle's context, no root passed whole)."""
    return not (
        _named(reads)
        or reads.bare_roots
        or reads.root_args
        or any(function.needs_context for function in reads.functions)
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

STALE = object()  # a column key no cluster key equals: the column must be recomputed


class ColumnKey(HashedKey):
    """A key (a column's, a pod class's) with its hash computed once: pods of a class look
    their columns up by the same key object cycle after cycle (``CycleContext.alike``), and
    equal keys are interned (``ClassCache._intern``) so lookups mostly compare identities."""

    __slots__ = ()

    def __getitem__(self, index: int) -> Any:
        return self.value[index]
