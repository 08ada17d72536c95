"""Lint: findings beyond types, each with a stable code, a default severity and one message.

The checker proves a policy *can* run; lint points at what is probably not what its author
meant: dead bindings, conditions that cannot vary, policies that can never govern a pod,
weights and costs out of bounds, overcommit of resources that cannot be overcommitted, and
resource names one letter away from a known one. Every message is written once, in
``_MESSAGES`` below, so that tests can hold each one verbatim.

======  ========  ==========================================================================
Code    Severity  Finding
======  ========  ==========================================================================
PE301   warning   a ``let`` that nothing uses (or only lets that are themselves unused)
PE302   warning   a filter body, a guard or a match that is constant true or false
PE303   warning   a policy that can never govern a pod: an earlier policy (profile order,
                  else file order) has no match, a constant-true match, or an equal match
PE304   warning   a score weight outside 0–100, or weight 0 (``disable`` says it better)
PE305   warning   a rule whose static cost bound exceeds the budget (``cost-budget``)
PE306   error     ``overcommit`` of a resource the schema does not call compressible
PE307   warning   an unknown resource name indexing a resource map, close to a known one
PE308   warning   a policy or library with no rules
PE309   warning   a library used twice by one policy (unless the checker reported it as
                  PE211), or a rule disabled (or reweighted) twice in one ``use`` block
PE310   info      a ``# lint: ignore`` that silenced nothing, or that cannot be read
======  ========  ==========================================================================

Entry points: ``lint(unit, check_result, schema, config)`` returns the raw findings;
``finish(diagnostics, unit, config)`` applies inline suppressions (reporting unused ones),
the configured disables and severities, and sorts by position.

Suppression: ``# lint: ignore[PE301, PE302]`` at the end of a line silences those codes on
that line; on a line of its own it applies to the next line holding code; ``# lint: ignore``
without codes silences every finding there. It works for every code (checker findings
included) except syntax (PE1xx) and input/output (PE0xx) errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Protocol

from policyengine.diagnostics import NO_SPAN, Diagnostic, Severity, Span, sorted_diagnostics
from policyengine.lang import nodes as n
from policyengine.lang.lint_config import LintConfig
from policyengine.lang.loader import Unit
from policyengine.lang.schema import Schema
from policyengine.lang.suppress import apply_suppressions
from policyengine.lang.types import QUANTITY, MapType, Type, non_null
from policyengine.lang.values import Value

# --- the code table ------------------------------------------------------------------------


@dataclass(frozen=True)
class LintRule:
    code: str
    name: str  # a short kebab-case name (SARIF's ``rules[].name``)
    severity: Severity
    summary: str  # one line, for SARIF's ``shortDescription``


RULES: Mapping[str, LintRule] = {
    rule.code: rule
    for rule in (
        LintRule("PE301", "unused-let", Severity.WARNING, "A let binding is never used."),
        LintRule(
            "PE302",
            "constant-condition",
            Severity.WARNING,
            "A filter body, guard or match is always true or always false.",
        ),
        LintRule(
            "PE303",
            "unreachable-policy",
            Severity.WARNING,
            "A policy can never govern a pod: an earlier one matches every pod it would.",
        ),
        LintRule(
            "PE304", "weight-range", Severity.WARNING, "A score weight is 0 or outside 0–100."
        ),
        LintRule(
            "PE305",
            "cost-budget",
            Severity.WARNING,
            "A rule's static cost bound exceeds the configured budget.",
        ),
        LintRule(
            "PE306",
            "incompressible-overcommit",
            Severity.ERROR,
            "Overcommit is declared on a resource that is not compressible.",
        ),
        LintRule(
            "PE307",
            "unknown-resource",
            Severity.WARNING,
            "A resource name is unknown but close to a known one.",
        ),
        LintRule("PE308", "empty-policy", Severity.WARNING, "A policy or library has no rules."),
        LintRule(
            "PE309",
            "duplicate-use",
            Severity.WARNING,
            "A library is used twice, or one of its rules is disabled or reweighted twice.",
        ),
        LintRule(
            "PE310",
            "unused-suppression",
            Severity.INFO,
            "A '# lint: ignore' comment suppresses nothing.",
        ),
        LintRule(
            "PE311",
            "missing-essential-check",
            Severity.WARNING,
            "A policy has no filter for resource fit, taints or node selection.",
        ),
    )
}

# message id -> (code, message, hint); ``{...}`` fields are filled by ``_finding``.
_MESSAGES: Mapping[str, tuple[str, str, str | None]] = {
    "unused_let": ("PE301", "let {name} is never used", "remove it, or use it in a rule"),
    "missing_checks": (
        "PE311",
        "policy {policy} has no filter for {missing}: the pods it governs may be placed on a "
        "node that cannot hold them or must not run them",
        'use kube (import "kube-default.sched") for kube-scheduler\'s filters, or write '
        "your own; '# lint: ignore[PE311]' on this line accepts it",
    ),
    "unused_let_chain": (
        "PE301",
        "let {name} is never used",
        "only lets that are themselves unused refer to it; remove them together",
    ),
    "filter_always_true": (
        "PE302",
        "filter {name} is always true, so it never rejects a node",
        "remove the rule, or check its condition",
    ),
    "filter_always_false": (
        "PE302",
        "filter {name} is always false, so it rejects every node",
        "remove the rule, or check its condition",
    ),
    "guard_always_true": (
        "PE302",
        "the guard of {kind} {name} is always true",
        "remove 'when …': the rule runs for every pod anyway",
    ),
    "guard_always_false": (
        "PE302",
        "the guard of {kind} {name} is always false, so the rule never runs",
        "remove the rule, or 'disable' it where its library is used",
    ),
    "match_always_true": (
        "PE302",
        "the match of policy {policy} is always true",
        "remove it: a policy without 'match' governs every pod",
    ),
    "match_always_false": (
        "PE302",
        "the match of policy {policy} is always false, so it never governs a pod",
        "remove the policy, or check its match",
    ),
    "unreachable_catch_all": (
        "PE303",
        "policy {policy} is unreachable{where}: {earlier} comes first and governs every pod",
        "move it before {earlier}, or give {earlier} a narrower match",
    ),
    "unreachable_same_match": (
        "PE303",
        "policy {policy} is unreachable{where}: {earlier} comes first with the same match",
        "merge the two policies, or change one of the matches",
    ),
    "weight_out_of_range": (
        "PE304",
        "weight {weight} of score {name} is outside the range 0–100",
        "score weights run from 0 to 100",
    ),
    "weight_zero_rule": (
        "PE304",
        "score {name} has weight 0, so it never counts",
        "remove the rule, or give it a weight from 1 to 100",
    ),
    "weight_zero_reweight": (
        "PE304",
        "score {name} has weight 0, so it never counts",
        "write 'disable {rule}' instead",
    ),
    "over_budget": (
        "PE305",
        "{kind} {name} has a static cost bound of {cost}, over the budget of {budget}",
        "iterate over smaller collections, or raise cost-budget in [tool.policyengine.lint]",
    ),
    "incompressible_overcommit": (
        "PE306",
        "{resource} is not compressible and cannot be overcommitted",
        "{advice}",
    ),
    "unknown_resource": (
        "PE307",
        'unknown resource "{resource}"; did you mean "{suggestion}"?',
        "if it is an extended resource, write '# lint: ignore[PE307]' at the end of the line",
    ),
    "empty_policy": (
        "PE308",
        "policy {policy} has no rules",
        "it accepts every node and ranks them all equal: add a filter or score, or use a library",
    ),
    "empty_library": (
        "PE308",
        "library {name} has no rules",
        "add a filter or score rule, or remove the library",
    ),
    "used_twice": (
        "PE309",
        "library {library} is used twice in policy {policy}",
        "merge the two use statements into one",
    ),
    "disabled_twice": (
        "PE309",
        "rule {rule} of library {library} is disabled twice",
        "remove the repeated line",
    ),
    "reweighted_twice": (
        "PE309",
        "rule {rule} of library {library} is reweighted twice; the last weight wins",
        "keep one weight line",
    ),
    "unused_suppression": (
        "PE310",
        "unused suppression of {code}: it is not reported on line {line}",
        "remove {code} from the comment",
    ),
    "unused_suppression_all": (
        "PE310",
        "unused suppression: nothing is reported on line {line}",
        "remove the comment",
    ),
    "unused_suppression_eof": (
        "PE310",
        "unused suppression: no line follows it",
        "remove the comment",
    ),
    "malformed_suppression": (
        "PE310",
        "cannot read the codes in this lint comment: [{text}]",
        "write '# lint: ignore' or '# lint: ignore[PE301, PE302]'",
    ),
}

# difflib's ratio for "did you mean": high enough that amd.com/gpu is not taken for
# nvidia.com/gpu (0.64), low enough for a plural or a swapped pair of letters (cpus, memroy).
CLOSE_MATCH_CUTOFF = 0.8
WEIGHT_MAX = 100


def message(key: str, **values: Any) -> tuple[str, str, str | None]:
    """The code, message and hint of a message id with its fields filled."""
    code, text, hint = _MESSAGES[key]
    return code, text.format(**values), hint.format(**values) if hint is not None else None


def _finding(
    key: str, span: Span, related: tuple[tuple[str, Span], ...] = (), **values: Any
) -> Diagnostic:
    code, text, hint = message(key, **values)
    return Diagnostic(code, RULES[code].severity, text, span, hint, related)


class CheckResultLike(Protocol):
    """What lint reads of the checker's result; any object with these attributes will do."""

    @property
    def types(self) -> Mapping[int, Type]: ...

    @property
    def costs(self) -> Mapping[tuple[str, str], int]: ...

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]: ...


# --- walking expressions -------------------------------------------------------------------


def walk(expr: n.Expr) -> Iterator[n.Expr]:
    """``expr`` and every expression below it, parents first, in source order."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(n.children(node)))


def free_names(expr: n.Expr, bound: frozenset[str] = frozenset()) -> Iterator[str]:
    """Names read by ``expr`` that no enclosing comprehension binds."""
    if isinstance(expr, n.Name):
        if expr.id not in bound:
            yield expr.id
        return
    if isinstance(expr, n.Comprehension):
        # The iterable is evaluated outside the comprehension's own targets.
        yield from free_names(expr.iterable, bound)
        inner = bound | frozenset(expr.targets)
        yield from free_names(expr.element, inner)
        if expr.condition is not None:
            yield from free_names(expr.condition, inner)
        return
    for child in n.children(expr):
        yield from free_names(child, bound)


def statement_exprs(statement: n.Statement) -> Iterator[n.Expr]:
    if isinstance(statement, n.Match | n.Let):
        yield statement.expr
    elif isinstance(statement, n.Filter):
        if statement.guard is not None:
            yield statement.guard
        yield statement.body
        if statement.reason is not None:
            yield statement.reason
    elif isinstance(statement, n.Score | n.Preempt):
        if statement.guard is not None:
            yield statement.guard
        yield statement.body
    elif isinstance(statement, n.Device):
        if statement.shapes is not None:
            yield statement.shapes
    elif isinstance(statement, n.Select):
        if statement.key is not None:
            yield statement.key
    elif isinstance(statement, n.GangBlock):
        for rule in statement.rules:
            yield from statement_exprs(rule)


# --- constant folding ----------------------------------------------------------------------


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Fraction) and not isinstance(value, bool)


def _comparable(a: object, b: object) -> bool:
    return (
        (_is_number(a) and _is_number(b))
        or (isinstance(a, str) and isinstance(b, str))
        or (isinstance(a, bool) and isinstance(b, bool))
    )


_ORDERING = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def fold(expr: n.Expr) -> Value:
    """The value of ``expr`` when it is a constant, else ``UNKNOWN``.

    Only literals and what is built from them fold: ``let`` names do not, since a named
    constant (``let canary = false``) is a deliberate switch, not a mistake.
    """
    if isinstance(expr, n.Literal):
        return expr.value
    if isinstance(expr, n.Unary):
        value = fold(expr.operand)
        if expr.op == "not":
            return (not value) if isinstance(value, bool) else UNKNOWN
        return -value if _is_number(value) else UNKNOWN
    if isinstance(expr, n.Conditional):
        cond = fold(expr.cond)
        if not isinstance(cond, bool):
            return UNKNOWN
        return fold(expr.then if cond else expr.otherwise)
    if isinstance(expr, n.ListLit | n.SetLit):
        items = [fold(item) for item in expr.items]
        if any(item is UNKNOWN for item in items):
            return UNKNOWN
        return tuple(items)
    if isinstance(expr, n.Binary):
        return _fold_binary(expr)
    return UNKNOWN


def _fold_binary(expr: n.Binary) -> Value:
    left, right = fold(expr.left), fold(expr.right)
    op = expr.op
    if op in ("and", "or"):
        # The language is total, so ``x and false`` is false whatever x is, on either side.
        absorbing = op == "or"
        if left is absorbing or right is absorbing:
            return absorbing
        if isinstance(left, bool) and isinstance(right, bool):
            return left and right if op == "and" else left or right
        return UNKNOWN
    if op == "??":
        if left is None:
            return right
        return left if left is not UNKNOWN else UNKNOWN
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    if op in ("==", "!="):
        if left is None or right is None or _comparable(left, right):
            return (left == right) == (op == "==")
        return UNKNOWN
    if op in _ORDERING:
        if _comparable(left, right) and not isinstance(left, bool):
            return _ORDERING[op](left, right)
        return UNKNOWN
    if op in ("in", "not in") and isinstance(right, tuple):
        if all(_comparable(left, item) or item is None for item in right):
            return (left in right) == (op == "in")
        return UNKNOWN
    if op in ("+", "-", "*") and _is_number(left) and _is_number(right):
        return {"+": left + right, "-": left - right, "*": left * right}[op]
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    return UNKNOWN


# --- the rules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    unit: Unit
    types: Mapping[int, Type]
    costs: Mapping[tuple[str, str], int]
    schema: Schema
    config: LintConfig
    # Spans the checker already reported a library used twice at (its PE211, an error).
    used_twice_reported: frozenset[Span] = frozenset()
    # Overcommit statements the checker already rejected (its PE227, an error).
    overcommit_reported: frozenset[Span] = frozenset()
    # Each rule's exact static cost by ``id(rule)`` (gang rules have no entry in ``costs``).
    rule_costs: Mapping[int, Any] = field(default_factory=dict)

    def source(self, path: str) -> str:
        return self.unit.sources.get(path, "")


def _owners(unit: Unit) -> Iterator[n.Policy]:
    """Every policy and library in every file read, imported ones included."""
    for file in unit.files:
        for item in file.items:
            if isinstance(item, n.Policy):
                yield item


def _display(owner: n.Policy) -> str:
    return owner.name if isinstance(owner, n.Library) else f'"{owner.name}"'


def _span(expr: n.Expr) -> Span:
    # Every concrete expression has a span; the base class declares none.
    span: Span = getattr(expr, "span", NO_SPAN)
    return span


def _rule_kind(rule: n.Rule) -> str:
    return "filter" if isinstance(rule, n.Filter) else "score"


def unused_lets(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE301: lets that no rule, match or used let reads (comprehension targets shadow)."""
    lets = {let.name: let for let in owner.lets}
    if not lets:
        return
    roots: set[str] = set()
    reads: dict[str, set[str]] = {}
    for statement in owner.body:
        names = {name for expr in statement_exprs(statement) for name in free_names(expr)}
        if isinstance(statement, n.Let):
            reads.setdefault(statement.name, set()).update(names)
        else:
            roots.update(names)
    used: set[str] = set()
    pending = [name for name in roots if name in lets]
    while pending:
        name = pending.pop()
        if name in used:
            continue
        used.add(name)
        pending.extend(other for other in reads.get(name, ()) if other in lets)
    mentioned = {name for names in reads.values() for name in names}
    for let in owner.lets:
        if let.name in used:
            continue
        key = "unused_let_chain" if let.name in mentioned else "unused_let"
        yield _finding(key, let.name_span, name=let.name)


def constant_conditions(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE302: filter bodies, guards and matches that fold to a constant."""
    for statement in owner.body:
        if isinstance(statement, n.Match):
            value = fold(statement.expr)
            if isinstance(value, bool):
                key = "match_always_true" if value else "match_always_false"
                yield _finding(key, _span(statement.expr), policy=_display(owner))
        elif isinstance(statement, n.Filter | n.Score):
            if statement.guard is not None:
                value = fold(statement.guard)
                if isinstance(value, bool):
                    key = "guard_always_true" if value else "guard_always_false"
                    yield _finding(
                        key, _span(statement.guard), kind=_rule_kind(statement), name=statement.name
                    )
            if isinstance(statement, n.Filter):
                value = fold(statement.body)
                if isinstance(value, bool):
                    key = "filter_always_true" if value else "filter_always_false"
                    yield _finding(key, _span(statement.body), name=statement.name)


def _covers(earlier: n.Policy, later: n.Policy) -> str | None:
    """The message id saying why ``earlier`` takes every pod ``later`` could, or None."""
    first = earlier.match
    if first is None or fold(first.expr) is True:
        return "unreachable_catch_all"
    second = later.match
    if second is not None and second.expr == first.expr:  # node equality ignores spans
        return "unreachable_same_match"
    return None


def _unreachable_in(sequence: list[tuple[n.Policy, Span]], where: str) -> Iterator[Diagnostic]:
    for index, (policy, span) in enumerate(sequence):
        for earlier, earlier_span in sequence[:index]:
            if earlier is policy:
                continue
            key = _covers(earlier, policy)
            if key is not None:
                note = (f"{_display(earlier)} is here", earlier_span)
                yield _finding(
                    key,
                    span,
                    (note,),
                    policy=_display(policy),
                    earlier=_display(earlier),
                    where=where,
                )
                break


def unreachable_policies(context: _Context) -> Iterator[Diagnostic]:
    """PE303, in each profile's order; in file order when the unit declares no profiles."""
    unit = context.unit
    if not unit.profiles:
        sequence = [(policy, policy.name_span) for policy in unit.policies]
        yield from _unreachable_in(sequence, "")
        return
    by_name: dict[str, n.Policy] = {}
    for policy in unit.policies:
        by_name.setdefault(policy.name, policy)
    for profile in unit.profiles:
        spans = profile.policy_spans or (profile.span,) * len(profile.policies)
        sequence = [
            (by_name[name], span)
            for name, span in zip(profile.policies, spans, strict=False)
            if name in by_name  # unknown names are the checker's to report
        ]
        where = f' in profile "{profile.scheduler_name}"'
        yield from _unreachable_in(sequence, where)


def weights(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE304: local score weights and ``use`` reweights outside 1–100."""
    for statement in owner.body:
        if isinstance(statement, n.Score) and statement.weight is not None:
            span = statement.weight_span or statement.name_span
            if statement.weight > WEIGHT_MAX:
                yield _finding(
                    "weight_out_of_range", span, weight=statement.weight, name=statement.name
                )
            elif statement.weight == 0:
                yield _finding("weight_zero_rule", span, name=statement.name)
        elif isinstance(statement, n.Use):
            for adjustment in statement.adjustments:
                if not isinstance(adjustment, n.Reweight):
                    continue
                name = f"{statement.library}.{adjustment.rule}"
                if adjustment.weight > WEIGHT_MAX:
                    yield _finding(
                        "weight_out_of_range", adjustment.span, weight=adjustment.weight, name=name
                    )
                elif adjustment.weight == 0:
                    yield _finding(
                        "weight_zero_reweight", adjustment.span, name=name, rule=adjustment.rule
                    )


def costs(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE305: rules whose static cost bound (from the checker) exceeds the budget."""
    budget = context.config.cost_budget
    found: list[tuple[n.Filter | n.Score, str, int | None]] = [
        (rule, _rule_kind(rule), context.costs.get((owner.name, rule.name))) for rule in owner.rules
    ]
    for block in owner.gangs:
        for rule in block.rules:
            exact = context.rule_costs.get(id(rule))
            found.append((rule, f"gang {_rule_kind(rule)}", exact and exact.total))
    for rule, kind, cost in found:
        if cost is not None and cost > budget:
            yield _finding(
                "over_budget",
                rule.name_span,
                kind=kind,
                name=rule.name,
                cost=cost,
                budget=budget,
            )


def _did_you_mean(name: str, known: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=CLOSE_MATCH_CUTOFF)
    return close[0] if close else None


def overcommits(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE306: overcommit of anything the schema does not list as compressible (when the
    checker ran, its PE227 error already says so and this stays silent)."""
    compressible = context.schema.compressible_resources
    for statement in owner.overcommits:
        span = statement.resource_span
        if statement.resource in compressible or span in context.overcommit_reported:
            continue
        if not compressible:
            advice = "this schema declares no compressible resources"
        else:
            advice = "only " + ", ".join(sorted(compressible)) + " can be overcommitted"
            suggestion = _did_you_mean(statement.resource, compressible)
            if suggestion is not None:
                advice = f"did you mean {suggestion}? " + advice
        yield _finding(
            "incompressible_overcommit",
            span,
            resource=statement.resource,
            advice=advice,
        )


def _is_resource_map(type_: Type | None) -> bool:
    if type_ is None:
        return False
    type_ = non_null(type_)
    return isinstance(type_, MapType) and non_null(type_.value) == QUANTITY


def _resource_literals(expr: n.Expr, types: Mapping[int, Type]) -> Iterator[n.Literal]:
    """String literals naming a key of a resource map: ``m["x"]`` and ``"x" in m``."""
    for sub in walk(expr):
        if isinstance(sub, n.Index):
            obj, key = sub.obj, sub.index
        elif isinstance(sub, n.Binary) and sub.op in ("in", "not in"):
            obj, key = sub.right, sub.left
        else:
            continue
        if (
            isinstance(key, n.Literal)
            and key.kind == "string"
            and _is_resource_map(types.get(id(obj)))
        ):
            yield key


def resource_names(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE307: a resource name the schema does not know but nearly does."""
    known = context.schema.known_resources
    if not known or not context.types:
        return
    for statement in owner.body:
        for expr in statement_exprs(statement):
            for literal in _resource_literals(expr, context.types):
                name = str(literal.value)
                if name in known:
                    continue
                suggestion = _did_you_mean(name, known)
                if suggestion is not None:
                    yield _finding(
                        "unknown_resource", literal.span, resource=name, suggestion=suggestion
                    )


def empty(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE308: no rules of its own and none brought in by a ``use`` (after its disables)."""
    if owner.rules or owner.gangs:
        return
    libraries = {library.name: library for library in context.unit.libraries}
    for use in owner.uses:
        library = libraries.get(use.library)
        if library is None:
            return  # an unknown library is the linker's error; do not pile on
        disabled = {(a.rule, a.kind) for a in use.adjustments if isinstance(a, n.Disable)}
        kind_of = {n.Filter: "filter", n.Score: "score"}
        if any(
            (rule.name, None) not in disabled and (rule.name, kind_of[type(rule)]) not in disabled
            for rule in library.rules
        ):
            return
    if isinstance(owner, n.Library):
        yield _finding("empty_library", owner.name_span, name=owner.name)
    else:
        yield _finding("empty_policy", owner.name_span, policy=_display(owner))


def duplicate_uses(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE309: the same library used twice; a rule disabled or reweighted twice in one use.

    A second use is skipped where the checker already reported it (PE211, an error), so that
    one mistake makes one finding.
    """
    seen_uses: dict[str, n.Use] = {}
    for use in owner.uses:
        first_use = seen_uses.setdefault(use.library, use)
        if first_use is not use and use.name_span not in context.used_twice_reported:
            yield _finding(
                "used_twice",
                use.name_span,
                (("the first use is here", first_use.name_span),),
                library=use.library,
                policy=_display(owner),
            )
        seen: dict[tuple[type, str, str | None], n.Disable | n.Reweight] = {}
        for adjustment in use.adjustments:
            kind = adjustment.kind if isinstance(adjustment, n.Disable) else None
            first = seen.setdefault((type(adjustment), adjustment.rule, kind), adjustment)
            if first is adjustment:
                continue
            key = "disabled_twice" if isinstance(adjustment, n.Disable) else "reweighted_twice"
            yield _finding(
                key,
                adjustment.span,
                (("the first is here", first.span),),
                rule=adjustment.rule,
                library=use.library,
            )


def missing_checks(owner: n.Policy, context: _Context) -> Iterator[Diagnostic]:
    """PE311: a policy (not a library) none of whose filters, its own or its libraries', makes
    one of the schema's essential checks (resource fit, taints, node selection)."""
    if isinstance(owner, n.Library) or not context.schema.essential_checks:
        return
    libraries = {library.name: library for library in context.unit.libraries}
    exprs: list[n.Expr] = [let.expr for let in owner.lets]
    owners: list[tuple[n.Policy, set[str]]] = [(owner, set())]
    for use in owner.uses:
        library = libraries.get(use.library)
        if library is None:
            return  # the linker reports an unknown library
        # ``disable score x`` leaves the filter x in place.
        disabled = {
            a.rule for a in use.adjustments if isinstance(a, n.Disable) and a.kind != "score"
        }
        owners.append((library, disabled))
        exprs.extend(let.expr for let in library.lets)
    for holder, disabled in owners:
        for rule in holder.rules:
            if isinstance(rule, n.Filter) and rule.name not in disabled:
                exprs.extend(e for e in (rule.guard, rule.body) if e is not None)
    calls: set[str] = set()
    reads: set[tuple[str, str]] = set()
    for expr in exprs:
        for sub in walk(expr):
            if isinstance(sub, n.Call):
                calls.add(sub.func)
            elif isinstance(sub, n.Attribute) and isinstance(sub.obj, n.Name):
                reads.add((sub.obj.id, sub.name))
    missing = [
        check.name
        for check in context.schema.essential_checks
        if not (check.functions & calls or check.reads & reads)
    ]
    if missing:
        shown = ", ".join(missing[:-1]) + (" or " if len(missing) > 1 else "") + missing[-1]
        yield _finding("missing_checks", owner.name_span, policy=_display(owner), missing=shown)


_PER_OWNER = (
    unused_lets,
    constant_conditions,
    weights,
    costs,
    overcommits,
    resource_names,
    empty,
    duplicate_uses,
    missing_checks,
)


def lint(
    unit: Unit,
    check_result: CheckResultLike | None,
    schema: Schema,
    config: LintConfig | None = None,
) -> list[Diagnostic]:
    """Every lint finding (PE301–PE311) in the unit's files, unsuppressed and unsorted.

    ``check_result`` supplies expression types (for PE307) and static costs (for PE305); with
    None those two rules find nothing.
    """
    context = _Context(
        unit=unit,
        types=getattr(check_result, "types", None) or {},
        costs=getattr(check_result, "costs", None) or {},
        rule_costs=getattr(check_result, "rule_costs", None) or {},
        schema=schema,
        config=config or LintConfig(),
        used_twice_reported=frozenset(
            d.span for d in getattr(check_result, "diagnostics", ()) if d.code == "PE211"
        ),
        overcommit_reported=frozenset(
            d.span for d in getattr(check_result, "diagnostics", ()) if d.code == "PE227"
        ),
    )
    found: list[Diagnostic] = []
    for owner in _owners(unit):
        for rule in _PER_OWNER:
            found.extend(rule(owner, context))
    found.extend(unreachable_policies(context))
    return found


# --- suppression, config and order -----------------------------------------------------------


def finish(
    diagnostics: Iterable[Diagnostic], unit: Unit, config: LintConfig | None = None
) -> list[Diagnostic]:
    """Suppress, report unused suppressions (PE310), apply the config, dedupe and sort.

    Duplicates are dropped because the checker may repeat what linking reported.
    """
    config = config or LintConfig()
    unique: dict[tuple[str, Span, str], Diagnostic] = {}
    for diagnostic in diagnostics:
        unique.setdefault((diagnostic.code, diagnostic.span, diagnostic.message), diagnostic)
    kept, suppressions, malformed = apply_suppressions(unique.values(), unit.files)
    for suppression in suppressions:
        if suppression.line == 0:
            kept.append(_finding("unused_suppression_eof", suppression.span))
            continue
        for code in suppression.unused_codes():
            if code == "*":
                kept.append(
                    _finding("unused_suppression_all", suppression.span, line=suppression.line)
                )
            else:
                kept.append(
                    _finding(
                        "unused_suppression", suppression.span, code=code, line=suppression.line
                    )
                )
    for bad in malformed:
        kept.append(_finding("malformed_suppression", bad.comment.span, text=bad.text))
    result = []
    for diagnostic in kept:
        if diagnostic.code in config.disable:
            continue
        severity = config.severity.get(diagnostic.code)
        if severity is not None and severity is not diagnostic.severity:
            diagnostic = replace(diagnostic, severity=severity)
        result.append(diagnostic)
    return sorted_diagnostics(result)
