"""Lint rules, suppression and config, one table per concern.

Each rule has cases that fire — the finding rendered with its caret and compared whole, so
every message and span is pinned verbatim — and cases that do not. The checker's result is
built here (types of resource maps, static costs), so the rules are tested on their own.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from policyengine.diagnostics import Diagnostic, Severity, Span, render
from policyengine.lang import nodes as n
from policyengine.lang.lint import RULES, UNKNOWN, finish, fold, lint, walk
from policyengine.lang.lint_config import (
    DEFAULT_COST_BUDGET,
    ConfigError,
    LintConfig,
    find_config,
    load_config,
)
from policyengine.lang.loader import Unit, load_texts
from policyengine.lang.parser import parse_expression
from policyengine.lang.schema import EssentialCheck
from policyengine.lang.types import Type
from tests.lang.fake_schema import SCHEMA, WIDGET

RESOURCE_MAP = WIDGET.fields["capacity"].type


@dataclass
class FakeCheck:
    types: dict[int, Type] = field(default_factory=dict)
    costs: dict[tuple[str, str], int] = field(default_factory=dict)
    diagnostics: tuple[Diagnostic, ...] = ()


def resource_types(unit: Unit) -> dict[int, Type]:
    """What the checker would say of ``widget.capacity`` and ``order.wants``: resource maps."""
    types: dict[int, Type] = {}
    for file in unit.files:
        for item in file.items:
            if not isinstance(item, n.Policy):
                continue
            for statement in item.body:
                exprs = [getattr(statement, a, None) for a in ("expr", "guard", "body")]
                for expr in (e for e in exprs if isinstance(e, n.Expr)):
                    for sub in walk(expr):
                        if isinstance(sub, n.Attribute) and sub.name in ("capacity", "wants"):
                            types[id(sub)] = RESOURCE_MAP
    return types


def run(
    source: str,
    *,
    costs: dict[tuple[str, str], int] | None = None,
    config: LintConfig | None = None,
    extra: list[Diagnostic] | None = None,
) -> tuple[list[Diagnostic], str]:
    text = textwrap.dedent(source)
    unit = load_texts({"p.sched": text})
    assert unit.ok, unit.diagnostics
    check = FakeCheck(resource_types(unit), costs or {})
    found = lint(unit, check, SCHEMA, config) + list(extra or [])
    return finish(found, unit, config), text


def rendered(diagnostics: list[Diagnostic], source: str, code: str) -> str:
    return "\n".join(render(d, source) for d in diagnostics if d.code == code)


def expect(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# --- every rule: cases that fire -----------------------------------------------------------

FIRES = [
    pytest.param(
        "PE301",
        """
        policy "p" {
          let unused = 1
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:7: warning PE301: let unused is never used
              let unused = 1
                  ^^^^^^
            hint: remove it, or use it in a rule
        """,
        id="PE301-unused",
    ),
    pytest.param(
        "PE301",
        """
        policy "p" {
          let base = 1
          let twice = base * 2
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:7: warning PE301: let base is never used
              let base = 1
                  ^^^^
            hint: only lets that are themselves unused refer to it; remove them together
        p.sched:4:7: warning PE301: let twice is never used
              let twice = base * 2
                  ^^^^^
            hint: remove it, or use it in a rule
        """,
        id="PE301-only-used-by-unused-let",
    ),
    pytest.param(
        "PE301",
        """
        policy "p" {
          let x = 1
          filter f { any(x > 0 for x in [widget.count]) }
        }
        """,
        """
        p.sched:3:7: warning PE301: let x is never used
              let x = 1
                  ^
            hint: remove it, or use it in a rule
        """,
        id="PE301-shadowed-by-loop-variable",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          filter f { true }
        }
        """,
        """
        p.sched:3:14: warning PE302: filter f is always true, so it never rejects a node
              filter f { true }
                         ^^^^
            hint: remove the rule, or check its condition
        """,
        id="PE302-filter-true",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          filter f { 1 > 2 or "a" == "b" }
        }
        """,
        """
        p.sched:3:14: warning PE302: filter f is always false, so it rejects every node
              filter f { 1 > 2 or "a" == "b" }
                         ^^^^^^^^^^^^^^^^^^^
            hint: remove the rule, or check its condition
        """,
        id="PE302-filter-false-comparisons",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          filter f { if not false then false else widget.count > 0 }
        }
        """,
        """
        p.sched:3:14: warning PE302: filter f is always false, so it rejects every node
              filter f { if not false then false else widget.count > 0 }
                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: remove the rule, or check its condition
        """,
        id="PE302-if-constant-condition",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          score s when widget.count > 0 or true { 1 }
        }
        """,
        """
        p.sched:3:16: warning PE302: the guard of score s is always true
              score s when widget.count > 0 or true { 1 }
                           ^^^^^^^^^^^^^^^^^^^^^^^^
            hint: remove 'when …': the rule runs for every pod anyway
        """,
        id="PE302-guard-true-absorbing-or",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          filter f when widget.count > 0 and "gpu" in ["cpu", "memory"] { widget.count > 1 }
        }
        """,
        """
        p.sched:3:17: warning PE302: the guard of filter f is always false, so the rule never runs
              filter f when widget.count > 0 and "gpu" in ["cpu", "memory"] { widget.count > 1 }
                            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: remove the rule, or 'disable' it where its library is used
        """,
        id="PE302-guard-false-absorbing-and",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          match true
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:9: warning PE302: the match of policy "p" is always true
              match true
                    ^^^^
            hint: remove it: a policy without 'match' governs every pod
        """,
        id="PE302-match-true",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          match null ?? 2 + 2 == 5
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:9: warning PE302: the match of policy "p" is always false, so it never governs a pod
              match null ?? 2 + 2 == 5
                    ^^^^^^^^^^^^^^^^^^
            hint: remove the policy, or check its match
        """,
        id="PE302-match-false",
    ),
    pytest.param(
        "PE303",
        """
        policy "all" {
          filter f { widget.count > 0 }
        }
        policy "gpu" {
          match order.priority > 5
          filter g { widget.count > 1 }
        }
        """,
        """
        p.sched:5:8: warning PE303: policy "gpu" is unreachable: "all" comes first and governs every pod
            policy "gpu" {
                   ^^^^^
            hint: move it before "all", or give "all" a narrower match
            note: p.sched:2:8: "all" is here
        """,
        id="PE303-after-policy-without-match",
    ),
    pytest.param(
        "PE303",
        """
        policy "all" {
          match true # lint: ignore[PE302]
          filter f { widget.count > 0 }
        }
        policy "gpu" {
          match order.priority > 5
          filter g { widget.count > 1 }
        }
        """,
        """
        p.sched:6:8: warning PE303: policy "gpu" is unreachable: "all" comes first and governs every pod
            policy "gpu" {
                   ^^^^^
            hint: move it before "all", or give "all" a narrower match
            note: p.sched:2:8: "all" is here
        """,
        id="PE303-after-match-true",
    ),
    pytest.param(
        "PE303",
        """
        policy "a" {
          match order.labels["team"] == "ml"
          filter f { widget.count > 0 }
        }
        policy "b" {
          match order.labels[ "team" ]=="ml"
          filter g { widget.count > 1 }
        }
        """,
        """
        p.sched:6:8: warning PE303: policy "b" is unreachable: "a" comes first with the same match
            policy "b" {
                   ^^^
            hint: merge the two policies, or change one of the matches
            note: p.sched:2:8: "a" is here
        """,
        id="PE303-equal-match-ignores-spacing",
    ),
    pytest.param(
        "PE303",
        """
        profile "batch" {
          policies "any", "ml"
        }
        policy "ml" {
          match order.priority > 5
          filter g { widget.count > 1 }
        }
        policy "any" {
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:19: warning PE303: policy "ml" is unreachable in profile "batch": "any" comes first and governs every pod
              policies "any", "ml"
                              ^^^^
            hint: move it before "any", or give "any" a narrower match
            note: p.sched:3:12: "any" is here
        """,
        id="PE303-profile-order",
    ),
    pytest.param(
        "PE304",
        """
        policy "p" {
          score s weight 150 { 1 }
        }
        """,
        """
        p.sched:3:18: warning PE304: weight 150 of score s is outside the range 0–100
              score s weight 150 { 1 }
                             ^^^
            hint: score weights run from 0 to 100
        """,
        id="PE304-above-range",
    ),
    pytest.param(
        "PE304",
        """
        policy "p" {
          score s weight 0 { 1 }
        }
        """,
        """
        p.sched:3:18: warning PE304: score s has weight 0, so it never counts
              score s weight 0 { 1 }
                             ^
            hint: remove the rule, or give it a weight from 1 to 100
        """,
        id="PE304-zero",
    ),
    pytest.param(
        "PE304",
        """
        library lib {
          score s { 1 }
          score t { 2 }
        }
        policy "p" {
          use lib {
            weight s 0
            weight t 101
          }
        }
        """,
        """
        p.sched:8:5: warning PE304: score lib.s has weight 0, so it never counts
                weight s 0
                ^^^^^^^^^^
            hint: write 'disable s' instead
        p.sched:9:5: warning PE304: weight 101 of score lib.t is outside the range 0–100
                weight t 101
                ^^^^^^^^^^^^
            hint: score weights run from 0 to 100
        """,
        id="PE304-reweights",
    ),
    pytest.param(
        "PE305",
        """
        policy "p" {
          filter dear { all(p.spare for p in widget.parts) }
        }
        """,
        """
        p.sched:3:10: warning PE305: filter dear has a static cost bound of 20000, over the budget of 10000
              filter dear { all(p.spare for p in widget.parts) }
                     ^^^^
            hint: iterate over smaller collections, or raise cost-budget in [tool.policyengine.lint]
        """,
        id="PE305-over-default-budget",
    ),
    pytest.param(
        "PE306",
        """
        policy "p" {
          overcommit memory 1.5
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:14: error PE306: memory is not compressible and cannot be overcommitted
              overcommit memory 1.5
                         ^^^^^^
            hint: only cpu can be overcommitted
        """,
        id="PE306-memory",
    ),
    pytest.param(
        "PE306",
        """
        policy "p" {
          overcommit "cpus" 2
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:14: error PE306: cpus is not compressible and cannot be overcommitted
              overcommit "cpus" 2
                         ^^^^^^
            hint: did you mean cpu? only cpu can be overcommitted
        """,
        id="PE306-misspelt",
    ),
    pytest.param(
        "PE307",
        """
        policy "p" {
          filter f { widget.capacity["gpus"] ?? 0 > 1 }
        }
        """,
        """
        p.sched:3:30: warning PE307: unknown resource "gpus"; did you mean "gpu"?
              filter f { widget.capacity["gpus"] ?? 0 > 1 }
                                         ^^^^^^
            hint: if it is an extended resource, write '# lint: ignore[PE307]' at the end of the line
        """,
        id="PE307-index",
    ),
    pytest.param(
        "PE307",
        """
        policy "p" {
          filter f when "memroy" in order.wants { widget.count > 1 }
        }
        """,
        """
        p.sched:3:17: warning PE307: unknown resource "memroy"; did you mean "memory"?
              filter f when "memroy" in order.wants { widget.count > 1 }
                            ^^^^^^^^
            hint: if it is an extended resource, write '# lint: ignore[PE307]' at the end of the line
        """,
        id="PE307-membership",
    ),
    pytest.param(
        "PE308",
        """
        policy "p" {
          match order.priority > 1
        }
        """,
        """
        p.sched:2:8: warning PE308: policy "p" has no rules
            policy "p" {
                   ^^^
            hint: it accepts every node and ranks them all equal: add a filter or score, or use a library
        """,
        id="PE308-policy",
    ),
    pytest.param(
        "PE308",
        """
        library lib {
          filter f { widget.count > 0 }
        }
        policy "p" {
          use lib { disable f }
        }
        """,
        """
        p.sched:5:8: warning PE308: policy "p" has no rules
            policy "p" {
                   ^^^
            hint: it accepts every node and ranks them all equal: add a filter or score, or use a library
        """,
        id="PE308-everything-disabled",
    ),
    pytest.param(
        "PE308",
        """
        library nothing {
          let x = 1  # lint: ignore[PE301]
        }
        """,
        """
        p.sched:2:9: warning PE308: library nothing has no rules
            library nothing {
                    ^^^^^^^
            hint: add a filter or score rule, or remove the library
        """,
        id="PE308-library",
    ),
    pytest.param(
        "PE309",
        """
        library lib {
          filter f { widget.count > 0 }
          score s { 1 }
        }
        policy "p" {
          use lib
          use lib
        }
        """,
        """
        p.sched:8:7: warning PE309: library lib is used twice in policy "p"
              use lib
                  ^^^
            hint: merge the two use statements into one
            note: p.sched:7:7: the first use is here
        """,
        id="PE309-used-twice",
    ),
    pytest.param(
        "PE309",
        """
        library lib {
          filter f { widget.count > 0 }
          score s { 1 }
        }
        policy "p" {
          use lib {
            disable f
            disable f
            weight s 3
            weight s 4
          }
        }
        """,
        """
        p.sched:9:5: warning PE309: rule f of library lib is disabled twice
                disable f
                ^^^^^^^^^
            hint: remove the repeated line
            note: p.sched:8:5: the first is here
        p.sched:11:5: warning PE309: rule s of library lib is reweighted twice; the last weight wins
                weight s 4
                ^^^^^^^^^^
            hint: keep one weight line
            note: p.sched:10:5: the first is here
        """,
        id="PE309-adjusted-twice",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          filter f { widget.count > 0 }  # lint: ignore[PE302]
        }
        """,
        """
        p.sched:3:34: info PE310: unused suppression of PE302: it is not reported on line 3
              filter f { widget.count > 0 }  # lint: ignore[PE302]
                                             ^^^^^^^^^^^^^^^^^^^^^
            hint: remove PE302 from the comment
        """,
        id="PE310-unused-code",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          # lint: ignore
          filter f { widget.count > 0 }
        }
        """,
        """
        p.sched:3:3: info PE310: unused suppression: nothing is reported on line 4
              # lint: ignore
              ^^^^^^^^^^^^^^
            hint: remove the comment
        """,
        id="PE310-unused-bare-own-line",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          filter f { widget.count > 0 }
        }
        # lint: ignore[PE301]
        """,
        """
        p.sched:5:1: info PE310: unused suppression: no line follows it
            # lint: ignore[PE301]
            ^^^^^^^^^^^^^^^^^^^^^
            hint: remove the comment
        """,
        id="PE310-at-end-of-file",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          filter f { widget.count > 0 }  # lint: ignore[unused-let]
        }
        """,
        """
        p.sched:3:34: info PE310: cannot read the codes in this lint comment: [unused-let]
              filter f { widget.count > 0 }  # lint: ignore[unused-let]
                                             ^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: write '# lint: ignore' or '# lint: ignore[PE301, PE302]'
        """,
        id="PE310-malformed",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          filter f { true }  # lint: ignore PE302
        }
        """,
        """
        p.sched:3:22: info PE310: cannot read the codes in this lint comment: [PE302]
              filter f { true }  # lint: ignore PE302
                                 ^^^^^^^^^^^^^^^^^^^^
            hint: write '# lint: ignore' or '# lint: ignore[PE301, PE302]'
        """,
        id="PE310-codes-without-brackets-suppress-nothing",
    ),
]

COSTS = {("p", "dear"): 20_000}


@pytest.mark.parametrize(("code", "source", "expected"), FIRES)
def test_rule_fires(code: str, source: str, expected: str) -> None:
    diagnostics, text = run(source, costs=COSTS)
    assert rendered(diagnostics, text, code) == expect(expected)


# --- every rule: cases that do not fire ----------------------------------------------------

QUIET = [
    pytest.param(
        "PE301",
        """
        policy "p" {
          let team = order.labels["team"] ?? "none"
          let limit = 3
          let size = widget.count
          match team != "none"
          filter f when size > 0 { size < limit }
        }
        """,
        id="PE301-used-by-match-guard-body-and-let",
    ),
    pytest.param(
        "PE301",
        """
        policy "p" {
          let wanted = "gpu"
          filter f { widget.count > 0 } reason "needs {wanted}"
        }
        """,
        id="PE301-used-in-reason",
    ),
    pytest.param(
        "PE301",
        """
        policy "p" {
          let xs = [1, 2]
          filter f { any(x > widget.count for x in xs) }
        }
        """,
        id="PE301-used-as-iterable",
    ),
    pytest.param(
        "PE302",
        """
        policy "p" {
          let canary = false
          match order.priority > 2
          filter f when canary { widget.count > 0 and true }
          score s when widget.count > 0 { 1 }
        }
        """,
        id="PE302-variable-conditions-and-let-switches",
    ),
    pytest.param(
        "PE303",
        """
        policy "gpu" {
          match order.priority > 5
          filter g { widget.count > 1 }
        }
        policy "ml" {
          match order.priority > 6
          filter h { widget.count > 2 }
        }
        policy "all" {
          filter f { widget.count > 0 }
        }
        """,
        id="PE303-specific-first-then-catch-all-last",
    ),
    pytest.param(
        "PE303",
        """
        profile "batch" {
          policies "ml", "any"
        }
        policy "any" {
          filter f { widget.count > 0 }
        }
        policy "ml" {
          match order.priority > 5
          filter g { widget.count > 1 }
        }
        """,
        id="PE303-profile-order-wins-over-file-order",
    ),
    pytest.param(
        "PE304",
        """
        library lib {
          score t { 2 }
        }
        policy "p" {
          use lib { weight t 100 }
          score s weight 1 { 1 }
          score u { 1 }
        }
        """,
        id="PE304-in-range-and-default",
    ),
    pytest.param(
        "PE305",
        """
        policy "p" {
          filter cheap { widget.count > 0 }
          filter dear { widget.count > 1 }
        }
        """,
        id="PE305-unknown-cost-is-not-a-finding",
    ),
    pytest.param(
        "PE306",
        """
        policy "p" {
          overcommit cpu 1.5
          filter f { widget.count > 0 }
        }
        """,
        id="PE306-compressible",
    ),
    pytest.param(
        "PE307",
        """
        policy "p" {
          filter f { widget.capacity["gpu"] ?? 0 > 1 }
          filter g { widget.capacity["example.com/fpga"] ?? 0 > 1 }
          filter h { widget.labels["gpus"] ?? "" == "a" }
          filter i { "gpus" in order.tags }
        }
        """,
        id="PE307-known-far-or-not-a-resource-map",
    ),
    pytest.param(
        "PE308",
        """
        library lib {
          filter f { widget.count > 0 }
        }
        policy "p" {
          use lib
        }
        policy "q" {
          match order.priority > 1
          use missing
        }
        """,
        id="PE308-rules-from-a-library-or-unknown-library",
    ),
    pytest.param(
        "PE309",
        """
        library lib {
          filter f { widget.count > 0 }
          filter g { widget.count > 1 }
        }
        policy "p" {
          match order.priority > 1
          use lib { disable f  disable g }
        }
        policy "q" {
          use lib
        }
        """,
        id="PE309-different-rules-and-policies",
    ),
    pytest.param(
        "PE310",
        """
        policy "p" {
          let unused = 1  # lint: ignore[PE301]
          # a comment that mentions lint: ignore in passing is not a directive
          filter f { widget.count > 0 }
        }
        """,
        id="PE310-used-suppression-and-prose",
    ),
]


@pytest.mark.parametrize(("code", "source"), QUIET)
def test_rule_stays_quiet(code: str, source: str) -> None:
    diagnostics, text = run(source, costs={("p", "cheap"): 10, ("p", "dear"): DEFAULT_COST_BUDGET})
    assert rendered(diagnostics, text, code) == ""


def test_a_second_use_the_checker_reported_is_not_repeated() -> None:
    source = 'library lib { score s { 1 } }\npolicy "p" {\n  use lib\n  use lib\n}\n'
    unit = load_texts({"p.sched": source})
    span = Span("p.sched", 4, 7, 4, 10)
    reported = Diagnostic("PE211", Severity.ERROR, "library lib is used twice", span)
    assert codes(lint(unit, FakeCheck(diagnostics=(reported,)), SCHEMA)) == []
    assert codes(lint(unit, FakeCheck(), SCHEMA)) == [(4, "PE309")]


def test_every_code_has_a_firing_case() -> None:
    fired = {case.values[0] for case in FIRES} | {"PE311"}  # PE311: ESSENTIAL below
    assert fired == set(RULES)


# PE311 needs a schema that declares essential checks; the fake one's: a fit and a capacity.
ESSENTIAL_SCHEMA = replace(
    SCHEMA,
    essential_checks=(
        EssentialCheck("fit", functions=frozenset({"fits"})),
        EssentialCheck("capacity", reads=frozenset({("widget", "capacity")})),
    ),
)
ESSENTIAL = [
    pytest.param(
        'policy "p" {\n  filter f { widget.count > 0 }\n}\n', ["fit or capacity"], id="none"
    ),
    pytest.param(
        'policy "p" {\n  filter f { fits(order, widget) }\n}\n', ["capacity"], id="one of two"
    ),
    pytest.param(
        'policy "p" {\n  let big = widget.capacity["cpu"] ?? 0\n  filter f { fits(order, widget) and big > 1 }\n}\n',
        [],
        id="through a let",
    ),
    pytest.param(
        "library lib {\n  filter f { fits(order, widget) }\n  filter g { widget.capacity != {} }\n}\n"
        'policy "p" {\n  use lib\n}\n',
        [],
        id="from a library",
    ),
    pytest.param(
        "library lib {\n  filter f { fits(order, widget) }\n  filter g { widget.capacity != {} }\n}\n"
        'policy "p" {\n  use lib { disable f }\n}\n',
        ["fit"],
        id="disabled in the use",
    ),
    pytest.param(
        "library lib {\n  filter f { fits(order, widget) }\n  score f { 1 }\n  filter g { widget.capacity != {} }\n}\n"
        'policy "p" {\n  use lib { disable score f }\n}\n',
        [],
        id="only its score disabled",
    ),
    pytest.param(
        'policy "p" {\n  score s { if fits(order, widget) then widget.capacity["cpu"] ?? 0 else 0 }\n}\n',
        ["fit or capacity"],
        id="a score checks nothing",
    ),
    pytest.param(
        'policy "p" {  # lint: ignore[PE311]\n  filter f { widget.count > 0 }\n}\n',
        [],
        id="ignored inline",
    ),
    pytest.param("library lib {\n  filter f { widget.count > 0 }\n}\n", [], id="a library is not"),
]


@pytest.mark.parametrize(("source", "missing"), ESSENTIAL)
def test_a_policy_without_an_essential_check_is_warned(source: str, missing: list[str]) -> None:
    unit = load_texts({"p.sched": source})
    found = finish(lint(unit, FakeCheck(), ESSENTIAL_SCHEMA), unit)
    assert [d.message for d in found if d.code == "PE311"] == [
        f'policy "p" has no filter for {m}: the pods it governs may be placed on a node that '
        "cannot hold them or must not run them"
        for m in missing
    ]


def test_cost_budget_comes_from_config() -> None:
    source = 'policy "p" {\n  filter dear { all(p.spare for p in widget.parts) }\n}\n'
    assert codes(run(source, costs=COSTS)[0]) == [(2, "PE305")]
    quiet, _ = run(source, costs=COSTS, config=LintConfig(cost_budget=20_000))
    assert quiet == []


def test_lint_without_a_check_result_skips_types_and_costs() -> None:
    unit = load_texts({"p.sched": 'policy "p" { filter f { widget.capacity["gpus"] ?? 0 > 1 } }'})
    assert lint(unit, None, SCHEMA) == []


def test_imported_files_are_linted_too() -> None:
    unit = load_texts(
        {
            "main.sched": 'import "lib.sched"\npolicy "p" { use lib }\n',
            "lib.sched": "library lib {\n  let x = 1\n  filter f { widget.count > 0 }\n}\n",
        }
    )
    found = finish(lint(unit, None, SCHEMA), unit)
    assert [(d.span.file, d.code) for d in found] == [("lib.sched", "PE301")]


# --- constant folding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("not true", False),
        ("1 < 2", True),
        ('"a" >= "b"', False),
        ("2Gi > 1Gi", True),
        ("1 == 1.0", True),
        ("null == null", True),
        ("null != 1", True),
        ("1 + 2 * 3 == 7", True),
        ('"a" + "b" == "ab"', True),
        ("-1 < 0", True),
        ('"b" in ["a", "b"]', True),
        ('"c" not in {"a", "b"}', True),
        ("if 1 > 2 then 3 else 4", 4),
        ("null ?? 5", 5),
        ("x and false", False),
        ("x or true", True),
        ("true and x", UNKNOWN),
        ("x ?? 1", UNKNOWN),
        ("widget.count > 1", UNKNOWN),
        ('1 == "1"', UNKNOWN),
        ("true < false", UNKNOWN),
        ("6 / 4", UNKNOWN),
        ("if x then true else true", UNKNOWN),
    ],
    ids=[
        "true",
        "not true",
        "1 < 2",
        '"a" >= "b"',
        "2Gi > 1Gi",
        "1 == 1.0",
        "null == null",
        "null != 1",
        "1 + 2 * 3 == 7",
        '"a" + "b" == "ab"',
        "-1 < 0",
        '"b" in ["a", "b"]',
        '"c" not in {"a", "b"}',
        "if 1 > 2 then 3 else 4",
        "null ?? 5",
        "x and false",
        "x or true",
        "true and x",
        "x ?? 1",
        "widget.count > 1",
        '1 == "1"',
        "true < false",
        "6 / 4",
        "if x then true else true",
    ],
)
def test_fold(text: str, value: object) -> None:
    folded = fold(parse_expression(text))
    if value is UNKNOWN:
        assert folded is UNKNOWN
    else:
        assert folded == value and type(folded) is type(value)


# --- suppression ---------------------------------------------------------------------------


def codes(diagnostics: list[Diagnostic]) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in diagnostics]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param(
            """
            policy "p" {
              let a = 1  # lint: ignore[PE301]
              filter f { true }  # lint: ignore[PE301, PE302]
            }
            """,
            [(4, "PE310")],  # PE301 is not on line 4: only that code is unused
            id="same-line",
        ),
        pytest.param(
            """
            policy "p" {
              # lint: ignore[PE301]
              let a = 1
              # lint: ignore[PE302]

              # lint: ignore[PE304]
              score s weight 0 when false { 1 }
            }
            """,
            [],
            id="own-line-applies-to-next-code-line-and-stacks",
        ),
        pytest.param(
            """
            policy "p" {
              score s weight 0 when false { 1 }  # lint: ignore
            }
            """,
            [],
            id="bare-suppresses-every-code",
        ),
        pytest.param(
            """
            policy "p" {
              let a = 1  # lint:ignore[PE302]
              let b = 2
              filter f { widget.count > 0 }
            }
            """,
            [(3, "PE301"), (3, "PE310"), (4, "PE301")],
            id="other-codes-and-lines-stay",
        ),
    ],
)
def test_suppression(source: str, found: list[tuple[int, str]]) -> None:
    diagnostics, _ = run(source)
    assert codes(diagnostics) == found


def test_type_findings_are_suppressible_but_syntax_and_io_are_not() -> None:
    source = """
        policy "p" {
          filter f { widget.count > "x" }  # lint: ignore[PE204, PE101, PE001]
        }
        """
    extra = [
        Diagnostic(code, Severity.ERROR, "synthetic", Span("p.sched", 3, 14, 3, 33))
        for code in ("PE204", "PE101", "PE001")
    ]
    diagnostics, _ = run(source, extra=extra)
    assert codes(diagnostics) == [(3, "PE001"), (3, "PE101"), (3, "PE310"), (3, "PE310")]


def test_findings_are_deduplicated_and_sorted() -> None:
    twice = Diagnostic("PE213", Severity.ERROR, "unknown library x", Span("p.sched", 2, 1, 2, 2))
    diagnostics, _ = run('policy "p" {\n  filter f { true }\n}\n', extra=[twice, twice])
    assert codes(diagnostics) == [(2, "PE213"), (2, "PE302")]


def test_config_disables_and_regrades_after_suppression() -> None:
    source = """
        policy "p" {
          let a = 1  # lint: ignore[PE301]
          filter f { true }
          score s weight 0 { 1 }
        }
        """
    config = LintConfig(disable=frozenset({"PE302"}), severity={"PE304": Severity.ERROR})
    diagnostics, _ = run(source, config=config)
    assert [(d.code, d.severity) for d in diagnostics] == [("PE304", Severity.ERROR)]


# --- config --------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_config_is_read_from_the_nearest_pyproject_with_a_lint_table(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
        [tool.policyengine.lint]
        cost-budget = 500
        strict = true
        disable = ["PE301"]
        severity = { PE304 = "error", PE310 = "warning" }
        """,
    )
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    start = tmp_path / "sub" / "deeper"
    start.mkdir()
    assert find_config(start) == tmp_path / "pyproject.toml"
    config = load_config(start=start)
    assert config == LintConfig(
        cost_budget=500,
        strict=True,
        disable=frozenset({"PE301"}),
        severity={"PE304": Severity.ERROR, "PE310": Severity.WARNING},
        source=tmp_path / "pyproject.toml",
    )


def test_no_config_means_defaults(tmp_path: Path) -> None:
    assert load_config(start=tmp_path) == LintConfig()
    explicit = write(tmp_path / "other.toml", "[tool.black]\nline-length = 1\n")
    assert load_config(explicit) == LintConfig(source=explicit)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "cost-budget = -1",
            "[tool.policyengine.lint] cost-budget: must be a whole number >= 0, not -1",
        ),
        (
            "cost-budget = true",
            "[tool.policyengine.lint] cost-budget: must be a whole number >= 0, not True",
        ),
        ('strict = "yes"', "[tool.policyengine.lint] strict: must be true or false, not 'yes'"),
        (
            'disable = "PE301"',
            "[tool.policyengine.lint] disable: must be a list of codes, not 'PE301'",
        ),
        (
            'disable = ["unused-let"]',
            "[tool.policyengine.lint] disable: 'unused-let' is not a code such as PE301",
        ),
        (
            'disable = ["PE101"]',
            "[tool.policyengine.lint] disable: PE101 is a syntax or input/output error and is always reported",
        ),
        (
            'severity = "error"',
            "[tool.policyengine.lint] severity: must be a table of code = severity",
        ),
        (
            'severity = { PE304 = "fatal" }',
            "[tool.policyengine.lint] severity.PE304: must be error, warning or info, not 'fatal'",
        ),
        (
            "cost_budget = 5",
            "[tool.policyengine.lint] cost_budget: unknown key; the keys are cost-budget, strict, disable, severity",
        ),
    ],
    ids=[
        "cost-budget = -1",
        "cost-budget = true",
        'strict = "yes"',
        'disable = "PE301"',
        'disable = ["unused-let"]',
        'disable = ["PE101"]',
        'severity = "error"',
        'severity = { PE304 = "fatal" }',
        "cost_budget = 5",
    ],
)
def test_malformed_config_names_file_and_key(tmp_path: Path, body: str, problem: str) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.policyengine.lint]\n" + body + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(start=tmp_path)
    assert str(caught.value) == f"{path}: {problem}"


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.policyengine.lint\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: [tool.policyengine.lint]: not valid TOML: ")
