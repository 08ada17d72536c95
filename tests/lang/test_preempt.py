"""The ``preempt`` rule: parsed, formatted back unchanged, checked (``victim`` only in its
body, a guard about the pod alone) and compiled into evaluators the engine calls."""

from __future__ import annotations

import textwrap

import pytest

from policyengine.diagnostics import render
from policyengine.lang import nodes as n
from policyengine.lang.checker import check
from policyengine.lang.compiler import compile_texts
from policyengine.lang.fmt import format_source
from policyengine.lang.loader import load_texts
from policyengine.lang.parser import parse
from policyengine.lang.runtime import Env
from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Pod
from policyengine.schedlib import default_schema
from policyengine.schedlib.views import PodView

PATH = "t.sched"

FORMATTED = [
    'policy "p" {\n  preempt { victim.priority < 10 }\n}\n',
    'policy "p" {\n  preempt when pod.priority >= 1000 { victim.labels["spot"] ?? "" == "true" }\n}\n',
    textwrap.dedent(
        """\
        policy "p" {
          let big = pod.priority >= 1000
          # only spot pods, and never on the system nodes
          preempt when big {
            victim.labels["preemptible"] ?? "false" == "true" and not node.name.startswith("sys-")
          }
          preempt { false }
        }
        """
    ),
]


@pytest.mark.parametrize(
    "source", FORMATTED, ids=["one-preempt", "guarded", "let-comment-and-two-preempts"]
)
def test_formatted_source_round_trips(source: str) -> None:
    result = format_source(source, PATH)
    assert result.diagnostics == ()
    assert result.text == source


def test_parses_to_a_preempt_statement() -> None:
    parsed = parse('policy "p" { preempt when pod.priority > 1 { true } }', PATH)
    assert parsed.ok
    assert parsed.file is not None
    (policy,) = parsed.file.policies
    (rule,) = policy.preempts
    assert isinstance(rule, n.Preempt)
    assert rule.guard is not None and rule.body == n.Literal("bool", True, "true")


def test_fmt_puts_a_one_line_rule_on_one_line() -> None:
    source = 'policy "p" {\n  preempt   when pod.priority>1\n  {\n    true\n  }\n}\n'
    assert (
        format_source(source, PATH).text
        == 'policy "p" {\n  preempt when pod.priority > 1 { true }\n}\n'
    )


def rendered(source: str) -> str:
    result = check(load_texts({PATH: source}), default_schema())
    return "\n\n".join(render(d, source) for d in result.diagnostics)


CHECKS = [
    (
        "guard reads the node",
        'policy "p" {\n  preempt when node.name == "a" { true }\n}\n',
        """\
        t.sched:2:16: error PE228: a preempt guard cannot read node, which varies from node to node
              preempt when node.name == "a" { true }
                           ^^^^
            hint: the guard decides whether the rule applies to the pod; judge nodes and victims in the body""",
    ),
    (
        "body is not bool",
        'policy "p" {\n  preempt { victim.priority }\n}\n',
        """\
        t.sched:2:13: error PE207: the body of a preempt rule must be bool, not int
              preempt { victim.priority }
                        ^^^^^^^^^^^^^^^
            hint: a preempt rule is true for each running pod (victim) the pod may evict""",
    ),
    (
        "guard is not bool",
        'policy "p" {\n  preempt when pod.priority { true }\n}\n',
        """\
        t.sched:2:16: error PE207: the guard of a preempt rule must be bool, not int
              preempt when pod.priority { true }
                           ^^^^^^^^^^^^""",
    ),
    ("clean", 'policy "p" {\n  preempt when pod.priority > 5 { victim.priority < 3 }\n}\n', ""),
]


@pytest.mark.parametrize("source,expected", [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_checker(source: str, expected: str) -> None:
    assert rendered(source) == textwrap.dedent(expected)


@pytest.mark.parametrize(
    "statement",
    ["filter f { victim.priority > 0 }", "let v = victim.priority", "match victim.priority > 0"],
)
def test_victim_is_unknown_outside_a_preempt_body(statement: str) -> None:
    source = f'policy "p" {{\n  {statement}\n}}\n'
    result = check(load_texts({PATH: source}), default_schema())
    assert [(d.code, d.message) for d in result.errors] == [("PE201", "unknown name 'victim'")]


def compiled(source: str):  # type: ignore[no-untyped-def]
    result = compile_texts({PATH: source}, default_schema())
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program.policies[0]


def spot(priority: int, value: str | None) -> PodView:
    labels = FrozenDict({"spot": value}) if value is not None else FrozenDict()
    return PodView(Pod("v", priority=priority, labels=labels))


def test_compiled_rules_apply_by_guard_and_judge_victims() -> None:
    policy = compiled(
        'policy "p" {\n  preempt when pod.priority >= 1000 { victim.labels["spot"] ?? "" == "true" }\n}\n'
    )
    (rule,) = policy.preempt
    high, low = PodView(Pod("a", priority=2000)), PodView(Pod("a", priority=10))
    assert rule.applies(Env({"pod": high})) is True
    assert rule.applies(Env({"pod": low})) is False
    assert rule.allows(Env({"pod": high, "victim": spot(1, "true")})) is True
    assert rule.allows(Env({"pod": high, "victim": spot(1, None)})) is False


def test_a_runtime_error_never_allows_an_eviction() -> None:
    policy = compiled('policy "p" {\n  preempt { victim.labels["spot"] == "true" }\n}\n')
    (rule,) = policy.preempt
    assert rule.allows(Env({"pod": PodView(Pod("a")), "victim": spot(1, None)})) is False


def test_library_rules_follow_the_policys_own() -> None:
    source = (
        "library lib {\n  preempt { victim.priority < 5 }\n}\n"
        'policy "p" {\n  use lib\n  preempt when pod.priority > 100 { true }\n}\n'
    )
    policy = compiled(source)
    assert [r.library for r in policy.preempt] == [None, "lib"]


def test_a_policy_without_preempt_rules_has_none() -> None:
    assert compiled('policy "p" {\n  filter f { true }\n}\n').preempt == ()
