"""The ``gang`` block: parsing, scoping of its roots, its diagnostics, fmt, and compiling.

The language knows nothing of Kubernetes: the schema here names made-up gang roots (``crew``
for the group, ``bay`` for the domain) and levels, as a scheduling layer would.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from fractions import Fraction

import pytest

from policyengine.diagnostics import render
from policyengine.lang import nodes as n
from policyengine.lang.checker import check
from policyengine.lang.compiler import compile_texts
from policyengine.lang.fmt import format_source
from policyengine.lang.lint import lint
from policyengine.lang.loader import load_texts
from policyengine.lang.parser import parse
from policyengine.lang.runtime import Env
from policyengine.lang.schema import Root
from policyengine.lang.types import INT, QUANTITY, STRING, MapType
from tests.lang.fake_schema import SCHEMA, record

ZERO_DEFAULT = MapType(STRING, QUANTITY, bound=8, default=Fraction(0))
CREW = record("Crew", size=INT, wants=ZERO_DEFAULT)
BAY = record("Bay", name=STRING, free=ZERO_DEFAULT)
GANG_SCHEMA = replace(
    SCHEMA,
    roots={
        **SCHEMA.roots,
        "crew": Root("crew", CREW, "the gang", varies_per_node=False),
        "bay": Root("bay", BAY, "the domain"),
    },
    gang_roots=frozenset({"crew", "bay"}),
    topology_levels=("shelf", "aisle", "hall"),
)
PATH = "t.sched"

GOOD = """\
policy "p" {
  let tier = order.labels["tier"] ?? "any"

  gang {
    within shelf, aisle required

    filter room { bay.free["gpu"] >= crew.wants["gpu"] } reason "{bay.name} is short for {tier}"

    score fit weight 2 normalize max { crew.size }
  }

  filter fits { fits(order, widget) }
}
"""


def rendered(source: str) -> str:
    unit = load_texts({PATH: source})
    assert unit.ok, unit.diagnostics
    result = check(unit, GANG_SCHEMA)
    return "\n\n".join(render(d, source) for d in result.diagnostics)


def test_a_gang_block_parses_to_its_levels_and_rules() -> None:
    result = parse(GOOD, PATH)
    assert result.ok
    assert result.file is not None
    (policy,) = result.file.policies
    (block,) = policy.gangs
    assert block.within == n.Within(("shelf", "aisle"), True)
    assert [(type(r).__name__, r.name) for r in block.rules] == [
        ("Filter", "room"),
        ("Score", "fit"),
    ]
    assert [r.name for r in policy.rules] == ["fits"]  # gang rules are not node rules


def test_gang_keywords_stay_usable_as_names() -> None:
    source = (
        'policy "p" {\n  let within = 1\n  let required = within + 1\n  let gang = required\n}\n'
    )
    assert parse(source, PATH).ok


def test_a_well_formed_gang_block_checks_clean() -> None:
    assert rendered(GOOD) == ""


DIAGNOSTICS = [
    (
        "a gang root outside a gang block",
        'policy "p" {\n  filter f { bay.name == "x" }\n}\n',
        """
        t.sched:2:14: error PE225: 'bay' is only visible inside a gang block
              filter f { bay.name == "x" }
                         ^^^
            hint: gang rules judge a whole gang against a topology domain: gang { filter ... }
        """,
    ),
    (
        "a per-node root inside a gang block",
        'policy "p" {\n  gang {\n    filter f { widget.count > 1 }\n  }\n}\n',
        """
        t.sched:3:16: error PE225: 'widget' is not visible inside a gang block
                filter f { widget.count > 1 }
                           ^^^^^^
            hint: gang rules see pod (the gang's first pending member), gang and domain; per-node rules belong outside the gang block
        """,
    ),
    (
        "a let reading a per-node root inside a gang block",
        'policy "p" {\n  let big = widget.count > 1\n  gang {\n    filter f { big }\n  }\n}\n',
        """
        t.sched:4:16: error PE225: let 'big' reads a value per node; it is not visible inside a gang block
                filter f { big }
                           ^^^
            hint: gang rules see pod (the gang's first pending member), gang and domain; per-node rules belong outside the gang block
        """,
    ),
    (
        "an unknown level",
        'policy "p" {\n  gang {\n    within shelve\n  }\n}\n',
        """
        t.sched:3:12: error PE226: unknown topology level 'shelve'
                within shelve
                       ^^^^^^
            hint: did you mean shelf?
        """,
    ),
    (
        "two within",
        'policy "p" {\n  gang {\n    within shelf\n    within aisle\n  }\n}\n',
        """
        t.sched:4:5: error PE226: a gang block has a second within
                within aisle
                ^^^^^^^^^^^^
            hint: list every level in one within, lowest first: within nvlink_domain, rack
        """,
    ),
    (
        "two gang blocks",
        'policy "p" {\n  gang {}\n  gang {}\n}\n',
        """
        t.sched:3:3: error PE226: policy "p" has a second gang block
              gang {}
              ^^^^^^^
            hint: merge them into one gang block
        """,
    ),
    (
        "a gang block in a library",
        "library lib {\n  gang {}\n}\n",
        """
        t.sched:2:3: error PE226: library lib has a gang block
              gang {}
              ^^^^^^^
            hint: a gang block belongs in the policy that governs the gang's pods
        """,
    ),
]


@pytest.mark.parametrize(
    ("name", "source", "expected"), DIAGNOSTICS, ids=[d[0] for d in DIAGNOSTICS]
)
def test_diagnostic(name: str, source: str, expected: str) -> None:
    assert rendered(source) == textwrap.dedent(expected).strip("\n")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            'policy "p" {\n  gang {   within   shelf ,aisle   required\n'
            "  filter f {crew.size>1}\n}\n}\n",
            'policy "p" {\n  gang {\n    within shelf, aisle required\n'
            "    filter f { crew.size > 1 }\n  }\n}\n",
        ),
        ('policy "p" {\n  gang {\n  }\n}\n', 'policy "p" {\n  gang {}\n}\n'),
        (
            'policy "p" {\n  gang { # tiers\n    within hall  # last\n  }\n}\n',
            'policy "p" {\n  gang {  # tiers\n    within hall  # last\n  }\n}\n',
        ),
    ],
    ids=["spacing", "empty-block", "comments"],
)
def test_fmt_prints_gang_blocks(source: str, expected: str) -> None:
    assert format_source(source, PATH).text == expected
    assert format_source(expected, PATH).text == expected


def test_the_good_example_is_fmt_clean() -> None:
    assert format_source(GOOD, PATH).text == GOOD


def test_compiling_keeps_the_levels_and_plans_the_gang_rules() -> None:
    result = compile_texts({PATH: GOOD}, GANG_SCHEMA)
    assert result.ok, result.diagnostics
    assert result.program is not None
    (policy,) = result.program.policies
    gang = policy.gang
    assert gang is not None
    assert (gang.levels, gang.required) == (("shelf", "aisle"), True)
    assert [r.name for r in policy.filters] == ["fits"]
    (room,) = gang.filters
    (fit,) = gang.scores
    assert fit.weight == 2 and fit.normalize == "max"
    order = {"labels": {"tier": "gold"}}
    crew = {"size": 3, "wants": {"gpu": 8}}
    env = Env({"order": order, "crew": crew, "bay": {"name": "b1", "free": {"gpu": 4}}})
    verdict = room.filter(env)
    assert (verdict.passed, verdict.reasons) == (False, ("b1 is short for gold",))
    assert room.filter(env.derive(bay={"name": "b2", "free": {"gpu": 8}})).passed
    assert fit.score(env).value == 3


def test_a_policy_without_a_gang_block_has_no_gang() -> None:
    result = compile_texts({PATH: 'policy "p" {\n  filter f { true }\n}\n'}, GANG_SCHEMA)
    assert result.program is not None
    assert result.program.policies[0].gang is None


def test_lint_counts_gang_rules_as_rules_and_their_reads_as_uses() -> None:
    source = (
        'policy "p" {\n  let want = order.wants["gpu"]\n  gang {\n'
        '    filter f { bay.free["gpu"] >= want }\n  }\n}\n'
    )
    unit = load_texts({PATH: source})
    findings = lint(unit, check(unit, GANG_SCHEMA), GANG_SCHEMA)
    assert [d.code for d in findings] == []
    unused = 'policy "p" {\n  let want = 1\n  gang {}\n}\n'
    unit = load_texts({PATH: unused})
    assert [d.code for d in lint(unit, check(unit, GANG_SCHEMA), GANG_SCHEMA)] == ["PE301"]
