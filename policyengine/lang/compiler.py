"""The compiler: one ordered list of named passes from sources to an executable ``Program``.

As in OPA, compiling is a fixed sequence of passes over one mutable compilation state —
load (read and parse, following imports), link (library rules spliced into policies), check
(types and costs, by the checker), plan (closures, by the planner). Every pass returns its
diagnostics; compiling stops after the first pass that produced an error, so later passes may
rely on what earlier ones proved. A ``Program`` is immutable and safe to share between
threads; ``cache`` keeps one per version of the sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from policyengine.diagnostics import Diagnostic, Severity, Span, sorted_diagnostics
from policyengine.lang import nodes as n
from policyengine.lang.checker import CheckResult, check
from policyengine.lang.cost import RuleCost
from policyengine.lang.evaluators import (
    BatchBody,
    NodeBatch,
    ScoreArrays,
    filter_batch_evaluator,
    filter_evaluator,
    match_evaluator,
    score_batch_evaluator,
    score_evaluator,
    score_numbers_evaluator,
)
from policyengine.lang.link import Linked, LinkedPolicy, LinkedRule, link
from policyengine.lang.loader import RecordedSources, Unit, load, load_texts
from policyengine.lang.planner import PLAN_ERROR, Plan, PlanError, Planner, batch_form
from policyengine.lang.runtime import Closure, Env, FilterVerdict, ScoreValue
from policyengine.lang.schema import Schema
from policyengine.lang.types import BOOL, ListType, non_null
from policyengine.lang.values import Value

DEFAULT_PROFILE = "policyengine"
DEFAULT_NORMALIZE = "none"

# --- what compiling produces ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledRule:
    """One effective rule of one policy.

    ``per_node`` is false when guard, body and reason read nothing that varies per node; the
    engine may then evaluate the rule once per pod. ``cost`` is the checker's static bound.
    """

    kind: str  # "filter" or "score"
    name: str
    qualified_name: str
    library: str | None
    weight: int
    normalize: str
    span: Span
    cost: int | None
    per_node: bool
    filter: Callable[[Env], FilterVerdict] = field(repr=False)
    score: Callable[[Env], ScoreValue] = field(repr=False)
    # What the reference evaluator and ``explain``'s traces need to walk the rule's tree
    # (``lang.reference``, ``lang.trace``): the rule as written, the policy or library whose
    # lets it sees, the checker's side tables and the source texts the spans point into.
    source: n.Filter | n.Score | None = field(default=None, repr=False)
    owner: n.Policy | None = field(default=None, repr=False)
    checked: CheckResult | None = field(default=None, repr=False)
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    # The same rule over a ``NodeBatch`` (one pod, many nodes): one verdict or value per node,
    # equal to ``filter``/``score`` on each node's env. None for rules built by hand.
    filter_many: Callable[[NodeBatch], list[FilterVerdict]] | None = field(default=None, repr=False)
    score_many: Callable[[NodeBatch], list[ScoreValue]] | None = field(default=None, repr=False)
    # ``score_many``'s values as arrays (the floats, 0.0 where not scored, and the scored
    # mask) when every one is a plain number or null; None when one is not (``score_many`` then tells why). None for rules without
    # a batch form.
    score_numbers: Callable[[NodeBatch], ScoreArrays | None] | None = field(
        default=None, repr=False
    )
    # ``idle(pod_env)`` true: for this pod the rule passes every node (a filter) or scores
    # none (a score), raising nothing: its guard reads false without reading a node, or its
    # body is a call that does nothing for the pod (``Function.idle``). It may raise (then
    # it tells nothing). None: never told.
    idle: Callable[[Env], bool] | None = field(default=None, repr=False)
    # The rule's guard alone, at one node's env (None: no guard, or one always true); it may
    # raise, as the rule would. A false guard passes a filter's node and scores none.
    guard: Callable[[Env], Any] | None = field(default=None, repr=False)
    # The owner's lets that vary with the pod alone, by name: each evaluates its let on an
    # ``Env`` holding the pod (caches key results by a let's value instead of by what it
    # reads: ``engine.fastpath.sharekeys``).
    lets: Mapping[str, Closure] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, eq=False)
class CompiledGang:
    """A policy's ``gang`` block: topology levels to try (lowest first), whether the last one
    is required, and rules evaluated once per candidate domain (roots pod, gang, domain)."""

    levels: tuple[str, ...]
    required: bool
    filters: tuple[CompiledRule, ...]
    scores: tuple[CompiledRule, ...]
    span: Span


@dataclass(frozen=True, eq=False)
class CompiledPreempt:
    """One ``preempt`` rule: ``applies(env)`` reads the pod alone; ``allows(env)`` reads the
    pod, a candidate ``victim`` and its ``node``. A runtime error in either counts as false
    (the rule does not apply; the pod is not evicted), never as permission."""

    span: Span
    applies: Callable[[Env], bool] = field(repr=False)
    allows: Callable[[Env], bool] = field(repr=False)
    source: n.Preempt | None = field(default=None, repr=False)
    library: str | None = None


@dataclass(frozen=True, eq=False)
class CompiledSelect:
    """``select lowest|highest { KEY }``: among the nodes of equal best total, the one whose
    ``key(env)`` (an env with ``pod`` and ``node``) is least or greatest wins; nodes still
    tied are left to the seeded random choice. ``source``: the statement, for the reference
    evaluator."""

    mode: str
    key: Closure = field(repr=False)
    source: n.Select = field(repr=False)
    # The key over a ``NodeBatch`` of the tied nodes at once, when it has such a form.
    many: BatchBody | None = field(default=None, repr=False)
    # The key is ``node.name`` itself: node names are unique, so the winner is the first or
    # last tied node in name order, with no key to evaluate.
    by_name: bool = False


@dataclass(frozen=True, eq=False)
class CompiledDevice:
    """``device MODE [{ SHAPES }]``: ``shapes(env)`` (an env with ``pod``) gives the shape maps
    ``least_fragmentation`` weighs; None for the modes that weigh none."""

    mode: str
    shapes: Closure | None = field(default=None, repr=False)
    source: n.Device | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class CompiledPolicy:
    name: str
    span: Span
    match: Callable[[Env], bool] = field(repr=False)
    rules: tuple[CompiledRule, ...]
    filters: tuple[CompiledRule, ...]
    scores: tuple[CompiledRule, ...]
    overcommit: Mapping[str, float]
    # Resource -> the measured load up to which its ratio holds (``overcommit … max_load L``).
    overcommit_max_load: Mapping[str, float] = field(default_factory=dict)
    gang: CompiledGang | None = None  # the policy's gang block, if it has one
    # The policy's own preempt rules, then those of the libraries it uses, in order; empty
    # means kube-scheduler's rule: any pod of lower priority may be evicted.
    preempt: tuple[CompiledPreempt, ...] = ()
    # ``select lowest|highest { KEY }``; None: kube-scheduler's seeded random choice among
    # equal totals (``select random``, the default).
    select: CompiledSelect | None = None
    # ``device MODE``: how a pod gets its GPU devices in the chosen node; None: best fit.
    device: CompiledDevice | None = None
    # The ``match`` expression (None: the policy matches every pod), for what reads it.
    match_expr: n.Expr | None = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Program:
    """An executable policy set: its policies, which scheduler runs which, and its version."""

    policies: tuple[CompiledPolicy, ...]
    profiles: Mapping[str, tuple[str, ...]]
    digest: str
    version: str
    sources: Mapping[str, str] = field(repr=False)
    _governors: Mapping[str, tuple[CompiledPolicy, ...]] = field(repr=False)
    # The checker's side tables (types, bindings, calls, patterns), for the reference evaluator.
    checked: CheckResult | None = field(default=None, repr=False)
    # The sources by name, to build this version again elsewhere (the scheduler records it).
    recorded: RecordedSources | None = field(default=None, repr=False)

    def governing_policy(self, scheduler_name: str, env: Env) -> CompiledPolicy | None:
        """The first policy of the scheduler's profile whose ``match`` holds for the pod."""
        for policy in self.governors(scheduler_name):
            if policy.match(env):
                return policy
        return None

    def governors(self, scheduler_name: str) -> tuple[CompiledPolicy, ...]:
        """The policies ``governing_policy`` tries for the scheduler's profile, in order."""
        return self._governors.get(scheduler_name, ())

    def policy(self, name: str) -> CompiledPolicy | None:
        return next((p for p in self.policies if p.name == name), None)

    def env(
        self, roots: Mapping[str, Value] | None = None, context: Any = None, **named: Value
    ) -> Env:
        """An ``Env`` for this program's rules (the same as ``Env({**roots, **named}, context)``)."""
        return Env({**(roots or {}), **named}, context)


@dataclass(frozen=True, eq=False)
class CompileResult:
    program: Program | None
    diagnostics: tuple[Diagnostic, ...]
    unit: Unit | None
    passes: tuple[str, ...] = ()  # the passes that ran, in order

    @property
    def ok(self) -> bool:
        return self.program is not None


# --- the compilation state and the passes --------------------------------------------------


@dataclass(eq=False)
class Compilation:
    """What the passes share; each pass fills in one more field."""

    schema: Schema
    read: Callable[[], Unit]
    unit: Unit | None = None
    linked: Linked | None = None
    checked: CheckResult | None = None
    program: Program | None = None


Pass = Callable[[Compilation], Iterable[Diagnostic]]


def load_pass(state: Compilation) -> Iterable[Diagnostic]:
    state.unit = state.read()
    return state.unit.diagnostics


def link_pass(state: Compilation) -> Iterable[Diagnostic]:
    assert state.unit is not None
    state.linked = link(state.unit)
    return state.linked.diagnostics


def check_pass(state: Compilation) -> Iterable[Diagnostic]:
    assert state.unit is not None
    state.checked = check(state.unit, state.schema, linked=state.linked)
    return state.checked.diagnostics


def plan_pass(state: Compilation) -> Iterable[Diagnostic]:
    assert state.unit is not None and state.linked is not None
    builder = _ProgramBuilder(state)
    program = builder.build()
    if not any(d.is_error for d in builder.problems):
        state.program = program
    return builder.problems


PASSES: tuple[tuple[str, Pass], ...] = (
    ("load", load_pass),
    ("link", link_pass),
    ("check", check_pass),
    ("plan", plan_pass),
)


def run(state: Compilation, passes: Iterable[tuple[str, Pass]] = PASSES) -> CompileResult:
    """Run ``passes`` in order, stopping after the first one that reports an error."""
    diagnostics: list[Diagnostic] = []
    ran: list[str] = []
    for name, run_pass in passes:
        ran.append(name)
        found = list(run_pass(state))
        diagnostics.extend(found)
        if any(d.is_error for d in found):
            state.program = None
            break
    unique = list(dict.fromkeys(diagnostics))
    return CompileResult(state.program, tuple(sorted_diagnostics(unique)), state.unit, tuple(ran))


def compile_unit(unit: Unit, schema: Schema) -> CompileResult:
    return run(Compilation(schema, lambda: unit))


def compile_paths(paths: Iterable[str | Path], schema: Schema) -> CompileResult:
    paths = list(paths)
    return run(Compilation(schema, lambda: load(paths)))


def compile_texts(texts: Mapping[str, str], schema: Schema) -> CompileResult:
    texts = dict(texts)
    return run(Compilation(schema, lambda: load_texts(texts)))


# --- planning a whole program --------------------------------------------------------------


def _plan_error(span: Span, message: str) -> Diagnostic:
    return Diagnostic(PLAN_ERROR, Severity.ERROR, message, span)


class _Evaluators(NamedTuple):
    """A rule's evaluators as the compiler builds them once per rule and policy (the
    ``CompiledRule`` fields of the same names); a filter's ``score`` and a score's ``filter``
    raise."""

    filter: Callable[[Env], FilterVerdict]
    score: Callable[[Env], ScoreValue]
    per_node: bool
    filter_many: Callable[[NodeBatch], list[FilterVerdict]] | None
    score_many: Callable[[NodeBatch], list[ScoreValue]] | None
    idle: Callable[[Env], bool] | None
    score_numbers: Callable[[NodeBatch], ScoreArrays | None] | None
    guard: Callable[[Env], Any] | None


class _ProgramBuilder:
    """Turns the linked, checked unit into a ``Program``; collects what it cannot plan."""

    def __init__(self, state: Compilation):
        assert state.unit is not None and state.linked is not None
        self.unit: Unit = state.unit
        self.linked: Linked = state.linked
        self.schema = state.schema
        checked = state.checked
        self.planner = Planner(
            state.schema,
            checked.types if checked is not None else None,
            checked.patterns if checked is not None else None,
        )
        self.costs: Mapping[int, RuleCost] = checked.rule_costs if checked is not None else {}
        self.checked = checked
        self.sources: Mapping[str, str] = MappingProxyType(dict(self.unit.sources))
        self.problems: list[Diagnostic] = []
        # A library rule used by several policies is planned once.
        self._evaluators: dict[tuple[int, str], _Evaluators] = {}
        self._lets: dict[int, Mapping[str, Closure]] = {}

    def build(self) -> Program:
        policies = []
        for linked_policy in self.linked.policies:
            policy = self._policy(linked_policy)
            if policy is not None:
                policies.append(policy)
        profiles = self._profiles()
        by_name: dict[str, CompiledPolicy] = {}
        for policy in policies:
            by_name.setdefault(policy.name, policy)
        governors = {
            scheduler: tuple(by_name[name] for name in names if name in by_name)
            for scheduler, names in profiles.items()
        }
        return Program(
            policies=tuple(policies),
            profiles=MappingProxyType(profiles),
            digest=self.unit.digest,
            version=self.unit.version,
            sources=self.sources,
            _governors=MappingProxyType(governors),
            checked=self.checked,
            recorded=self.unit.recorded(),
        )

    def _policy(self, linked: LinkedPolicy) -> CompiledPolicy | None:
        policy = linked.policy
        match = None
        if policy.match is not None:
            try:
                match = self.planner.expression(policy.match.expr, policy).fn
            except PlanError as error:
                self.problems.append(error.diagnostic)
        rules = []
        for linked_rule in linked.rules:
            try:
                rules.append(self._rule(linked_rule))
            except PlanError as error:
                self.problems.append(error.diagnostic)
        return CompiledPolicy(
            name=policy.name,
            span=policy.span,
            match=match_evaluator(match),
            rules=tuple(rules),
            filters=tuple(r for r in rules if r.kind == "filter"),
            scores=tuple(r for r in rules if r.kind == "score"),
            overcommit=MappingProxyType(self._overcommit(policy)),
            overcommit_max_load=MappingProxyType(self._overcommit_max_load(policy)),
            gang=self._gang(linked),
            preempt=self._preempts(policy),
            select=self._select(policy),
            device=self._device(policy),
            match_expr=policy.match.expr if policy.match is not None else None,
        )

    def _device(self, policy: n.Policy) -> CompiledDevice | None:
        statements = policy.devices
        if not statements:
            return None
        statement = statements[0]
        shapes = None
        if statement.shapes is not None:
            try:
                shapes = self.planner.expression(statement.shapes, policy).fn
            except PlanError as error:
                self.problems.append(error.diagnostic)
                return None
        return CompiledDevice(statement.mode, shapes, statement)

    def _select(self, policy: n.Policy) -> CompiledSelect | None:
        statements = policy.selects
        if not statements or statements[0].key is None or statements[0].mode == "random":
            return None
        statement = statements[0]
        assert statement.key is not None
        try:
            plan = self.planner.expression(statement.key, policy)
        except PlanError as error:
            self.problems.append(error.diagnostic)
            return None
        key = statement.key
        by_name = (
            isinstance(key, n.Attribute)
            and key.name == "name"
            and isinstance(key.obj, n.Name)
            and key.obj.id == "node"
        )
        return CompiledSelect(statement.mode, plan.fn, statement, batch_form(plan), by_name)

    def _gang(self, linked: LinkedPolicy) -> CompiledGang | None:
        blocks = linked.policy.gangs
        if not blocks:
            return None
        within = blocks[0].within
        rules = []
        for linked_rule in linked.gang_rules:
            try:
                rules.append(self._rule(linked_rule))
            except PlanError as error:
                self.problems.append(error.diagnostic)
        return CompiledGang(
            levels=within.levels if within is not None else (),
            required=within.required if within is not None else False,
            filters=tuple(r for r in rules if r.kind == "filter"),
            scores=tuple(r for r in rules if r.kind == "score"),
            span=blocks[0].span,
        )

    def _rule(self, linked: LinkedRule) -> CompiledRule:
        rule = linked.rule
        key = (id(rule), linked.qualified_name)
        found = self._evaluators.get(key)
        if found is None:
            found = self._evaluators[key] = self._evaluate(linked)
        normalize = getattr(rule, "normalize", None) or DEFAULT_NORMALIZE
        return CompiledRule(
            kind=linked.kind,
            name=rule.name,
            qualified_name=linked.qualified_name,
            library=linked.library,
            weight=linked.weight,
            normalize=normalize,
            span=rule.span,
            cost=self._cost(linked),
            per_node=found.per_node,
            filter=found.filter,
            score=found.score,
            source=rule,
            owner=linked.owner,
            checked=self.checked,
            sources=self.sources,
            filter_many=found.filter_many,
            score_many=found.score_many,
            idle=found.idle,
            score_numbers=found.score_numbers,
            guard=found.guard,
            lets=self._pod_lets(linked.owner),
        )

    def _pod_lets(self, owner: n.Policy | None) -> Mapping[str, Closure]:
        """``CompiledRule.lets`` of the rules of ``owner``, made once per owner."""
        if owner is None:
            return MappingProxyType({})
        found = self._lets.get(id(owner))
        if found is None:
            lets: dict[str, Closure] = {}
            for decl in owner.lets:
                try:
                    plan = self.planner.let_plan(owner, decl.name)
                except PlanError:
                    continue  # reported where a rule reads it
                if plan is not None and not plan.per_node and not plan.const:
                    lets.setdefault(decl.name, plan.fn)
            found = self._lets[id(owner)] = MappingProxyType(lets)
        return found

    def _evaluate(self, linked: LinkedRule) -> _Evaluators:
        rule, owner, name = linked.rule, linked.owner, linked.qualified_name
        planner = self.planner
        guard = planner.expression(rule.guard, owner) if rule.guard is not None else None
        body = planner.expression(rule.body, owner)
        body_span = getattr(rule.body, "span", rule.span)
        guard_fn = _guard_fn(guard)
        off = _guard_off(planner, rule.guard, guard, owner)
        if isinstance(rule, n.Filter):
            reason = planner.template(rule.reason, owner) if rule.reason is not None else None
            if reason is None:
                constant_reason: str | None = f"rejected by {name}"
            else:
                constant_reason = reason.value if reason.const else None
            filter_fn = filter_evaluator(
                name,
                body_span,
                guard_fn,
                body.fn,
                _body_kind(body),
                reason.fn if reason is not None and not reason.const else None,
                constant_reason,
            )
            per_node = any(p.per_node for p in (guard, body, reason) if p is not None)
            filter_many = filter_batch_evaluator(
                name,
                body_span,
                filter_fn,
                per_node,
                guard_fn,
                guard is not None and guard.per_node,
                batch_form(body),
                reason.fn if reason is not None and not reason.const else None,
                constant_reason,
                guard_body=batch_form(guard) if guard is not None and guard.per_node else None,
                reason_body=batch_form(reason) if reason is not None and not reason.const else None,
            )
            # A filter's body passes a node with an empty list, never with a null.
            empty = body.idle if isinstance(non_null(body.type), ListType) else None
            idle = _idle_rule(guard, off, empty)
            return _Evaluators(
                filter_fn, _not_a(name, "score"), per_node, filter_many, None, idle, None, guard_fn
            )
        score_fn = score_evaluator(name, body_span, guard_fn, body.fn)
        per_node = any(p.per_node for p in (guard, body) if p is not None)
        guard_per_node = guard is not None and guard.per_node
        body_form = batch_form(body)
        guard_form = batch_form(guard) if guard is not None and guard.per_node else None
        score_many = score_batch_evaluator(
            name,
            body_span,
            score_fn,
            per_node,
            guard_fn,
            guard_per_node,
            body_form,
            guard_body=guard_form,
        )
        empty = body.idle if not isinstance(non_null(body.type), ListType) else None
        idle = _idle_rule(guard, off, empty)
        numbers = score_numbers_evaluator(
            per_node, guard_fn, guard_per_node, body_form, guard_body=guard_form
        )
        return _Evaluators(
            _not_a(name, "filter"), score_fn, per_node, None, score_many, idle, numbers, guard_fn
        )

    def _cost(self, linked: LinkedRule) -> int | None:
        cost = self.costs.get(id(linked.rule))
        return cost.total if cost is not None else None

    def _preempts(self, policy: n.Policy) -> tuple[CompiledPreempt, ...]:
        owners: list[n.Policy] = [policy]
        for use in policy.uses:
            library = self.linked.libraries.get(use.library)
            if library is not None:
                owners.append(library)
        planner = None
        compiled: list[CompiledPreempt] = []
        for owner in owners:
            for rule in owner.preempts:
                if planner is None:
                    roots = {**self.schema.roots, **self.schema.preempt_roots}
                    checked = self.checked
                    planner = Planner(
                        replace(self.schema, roots=roots),
                        checked.types if checked is not None else None,
                        checked.patterns if checked is not None else None,
                    )
                try:
                    guard = planner.expression(rule.guard, owner) if rule.guard else None
                    body = planner.expression(rule.body, owner)
                except PlanError as error:
                    self.problems.append(error.diagnostic)
                    continue
                source_library = owner.name if isinstance(owner, n.Library) else None
                compiled.append(
                    CompiledPreempt(
                        rule.span,
                        match_evaluator(guard.fn if guard is not None else None),
                        match_evaluator(body.fn),
                        rule,
                        source_library,
                    )
                )
        return tuple(compiled)

    def _overcommit(self, policy: n.Policy) -> dict[str, float]:
        # Libraries a policy uses contribute their ratios; the policy's own statements win.
        ratios: dict[str, float] = {}
        for use in policy.uses:
            library = self.linked.libraries.get(use.library)
            if library is not None:
                for statement in library.overcommits:
                    ratios[statement.resource] = float(statement.ratio)
        for statement in policy.overcommits:
            ratios[statement.resource] = float(statement.ratio)
        return ratios

    def _overcommit_max_load(self, policy: n.Policy) -> dict[str, float]:
        # The statement that sets a resource's ratio (see ``_overcommit``) also sets its bound.
        bounds: dict[str, float] = {}
        owners = [self.linked.libraries.get(use.library) for use in policy.uses]
        for owner in (*owners, policy):
            for statement in owner.overcommits if owner is not None else ():
                bounds.pop(statement.resource, None)
                if statement.max_load is not None:
                    bounds[statement.resource] = float(statement.max_load)
        return bounds

    def _profiles(self) -> dict[str, tuple[str, ...]]:
        declared = self.unit.profiles
        if not declared:
            return {DEFAULT_PROFILE: tuple(p.name for p in self.unit.policies)}
        known = {p.name for p in self.unit.policies}
        profiles: dict[str, tuple[str, ...]] = {}
        for profile in declared:
            for index, name in enumerate(profile.policies):
                if name not in known:
                    span = (
                        profile.policy_spans[index]
                        if index < len(profile.policy_spans)
                        else profile.span
                    )
                    self.problems.append(
                        _plan_error(
                            span,
                            f'profile "{profile.scheduler_name}" names unknown policy "{name}"',
                        )
                    )
            profiles.setdefault(profile.scheduler_name, profile.policies)
        return profiles


def _guard_fn(guard: Plan | None) -> Closure | None:
    if guard is None or (guard.const and guard.value is True):
        return None
    return guard.fn


def _guard_off(
    planner: Planner, expr: n.Expr | None, guard: Plan | None, owner: n.Policy | None
) -> Callable[[Env], bool] | None:
    """A test true when the guard is false at every node for the env's pod: the guard itself
    when it reads nothing per node, else the leftmost operand of its ``and`` chain that reads
    nothing per node (evaluated first, it decides alone when false)."""
    if guard is None or expr is None:
        return None
    found = None if guard.per_node else guard
    while found is None and isinstance(expr, n.Binary) and expr.op == "and":
        left = planner.expression(expr.left, owner)
        if not left.per_node:
            found = left
        expr = expr.left
    if found is None:
        return None
    fn = found.fn

    def off(env: Env) -> bool:
        return not fn(env)

    return off


def _idle_rule(
    guard: Plan | None, off: Callable[[Env], bool] | None, empty: Callable[[Env], bool] | None
) -> Callable[[Env], bool] | None:
    """``CompiledRule.idle``: the guard is off, or the body gives its empty value where the
    guard cannot fail at a node (there is none, or it reads nothing per node and ``off``
    has just read it whole)."""
    if empty is not None and guard is not None and guard.per_node:
        empty = None
    if off is None or empty is None:
        return off or empty
    whole_off, body_empty = off, empty

    def idle(env: Env) -> bool:
        return whole_off(env) or body_empty(env)

    return idle


def _body_kind(body: Plan) -> str:
    body_type = non_null(body.type)
    if body_type == BOOL:
        return "bool"
    if isinstance(body_type, ListType):
        return "list"
    return "dyn"


def _not_a(rule: str, kind: str) -> Callable[[Env], Any]:
    def wrong_kind(env: Env) -> Any:
        raise TypeError(f"rule {rule} is not a {kind} rule")

    return wrong_kind
