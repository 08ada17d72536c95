"""Linking: each policy's effective rule list after ``use``, ``disable`` and ``weight``.

A policy's rules are its own plus those of the libraries it uses, spliced in where the
``use`` stands, minus the disabled ones, with weights changed where it says so. Library rules
keep their library's name as a prefix (``kube.node_affinity``) so that outputs and events say
where a rule came from. The checker reports what linking finds wrong; the compiler builds on
what it produces, so both read the same rule list.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyengine.diagnostics import Diagnostic, Severity, Span
from policyengine.lang import nodes as n
from policyengine.lang.loader import Unit

DEFAULT_WEIGHT = 1


@dataclass(frozen=True)
class LinkedRule:
    rule: n.Filter | n.Score
    owner: n.Policy  # the policy or library whose text defines the rule (its lets are in scope)
    qualified_name: str
    weight: int  # 0 for filters

    @property
    def library(self) -> str | None:
        return self.owner.name if isinstance(self.owner, n.Library) else None

    @property
    def kind(self) -> str:
        return "filter" if isinstance(self.rule, n.Filter) else "score"


@dataclass(frozen=True)
class LinkedPolicy:
    policy: n.Policy
    rules: tuple[LinkedRule, ...]
    gang_rules: tuple[LinkedRule, ...] = ()  # the rules of the policy's gang block

    @property
    def name(self) -> str:
        return self.policy.name

    @property
    def filters(self) -> tuple[LinkedRule, ...]:
        return tuple(r for r in self.rules if r.kind == "filter")

    @property
    def scores(self) -> tuple[LinkedRule, ...]:
        return tuple(r for r in self.rules if r.kind == "score")


@dataclass(frozen=True)
class Linked:
    policies: tuple[LinkedPolicy, ...]
    libraries: dict[str, n.Library]
    diagnostics: tuple[Diagnostic, ...]


def _error(code: str, message: str, span: Span, hint: str | None = None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint)


def _weight_of(rule: n.Filter | n.Score) -> int:
    if isinstance(rule, n.Filter):
        return 0
    return rule.weight if rule.weight is not None else DEFAULT_WEIGHT


def link(unit: Unit) -> Linked:
    diagnostics: list[Diagnostic] = []
    libraries: dict[str, n.Library] = {}
    for library in unit.libraries:
        if library.name in libraries:
            first = libraries[library.name]
            diagnostics.append(
                _error(
                    "PE212",
                    f"library {library.name} is defined twice",
                    library.name_span,
                    f"the first definition is at {first.name_span}",
                )
            )
            continue
        libraries[library.name] = library
    linked = []
    for policy in unit.policies:
        rules: list[LinkedRule] = []
        gang_rules: list[LinkedRule] = []
        for statement in policy.body:
            if isinstance(statement, n.Filter | n.Score):
                rules.append(LinkedRule(statement, policy, statement.name, _weight_of(statement)))
            elif isinstance(statement, n.Use):
                rules.extend(_use(statement, libraries, diagnostics))
            elif isinstance(statement, n.GangBlock) and not gang_rules:
                gang_rules.extend(
                    LinkedRule(rule, policy, rule.name, _weight_of(rule))
                    for rule in statement.rules
                )
        linked.append(LinkedPolicy(policy, tuple(rules), tuple(gang_rules)))
    return Linked(tuple(linked), libraries, tuple(diagnostics))


def _use(
    use: n.Use, libraries: dict[str, n.Library], diagnostics: list[Diagnostic]
) -> list[LinkedRule]:
    library = libraries.get(use.library)
    if library is None:
        known = ", ".join(sorted(libraries)) or "none loaded"
        diagnostics.append(
            _error(
                "PE213",
                f"unknown library {use.library}",
                use.name_span,
                f"import the file that defines it; libraries known here: {known}",
            )
        )
        return []
    # A filter and a score may share a name (kube.taint_toleration is both), so rules are
    # looked up by name and, where the adjustment says one, by kind.
    by_name: dict[str, list[n.Filter | n.Score]] = {}
    for rule in library.rules:
        by_name.setdefault(rule.name, []).append(rule)
    disabled: set[int] = set()
    weights: dict[int, int] = {}
    for adjustment in use.adjustments:
        rules = by_name.get(adjustment.rule, [])
        kind = adjustment.kind if isinstance(adjustment, n.Disable) else "score"
        chosen = [r for r in rules if kind is None or _kind(r) == kind]
        if not chosen:
            if rules and isinstance(adjustment, n.Reweight):
                diagnostics.append(
                    _error(
                        "PE214",
                        f"{library.name}.{adjustment.rule} is a filter and has no weight",
                        adjustment.span,
                        "only score rules have weights; use 'disable' to turn a filter off",
                    )
                )
                continue
            what = f"{kind} rule" if kind else "rule"
            names = ", ".join(dict.fromkeys(r.name for r in library.rules)) or "none"
            diagnostics.append(
                _error(
                    "PE214",
                    f"library {library.name} has no {what} {adjustment.rule}",
                    adjustment.span,
                    f"its rules are: {names}",
                )
            )
            continue
        for rule in chosen:
            if isinstance(adjustment, n.Disable):
                disabled.add(id(rule))
            else:
                weights[id(rule)] = adjustment.weight
    return [
        LinkedRule(
            rule, library, f"{library.name}.{rule.name}", weights.get(id(rule), _weight_of(rule))
        )
        for rule in library.rules
        if id(rule) not in disabled
    ]


def _kind(rule: n.Filter | n.Score) -> str:
    return "filter" if isinstance(rule, n.Filter) else "score"
