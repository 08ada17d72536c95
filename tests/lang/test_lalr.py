"""The LALR driver against the reference: lark's own tree with positions, then the same builder.

The driver builds nodes while parsing; ``build_from_tree`` runs the same builder over the tree
lark makes with ``propagate_positions``. The two must agree on everything, spans included
(node equality ignores spans, so the comparison here walks every field), on every construct,
on every shipped policy, and on random files printed by ``fmt`` and roughened with comments
and line breaks. On bad input the driver must raise exactly lark's error.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lark.exceptions import UnexpectedInput

from policyengine.lang import nodes as n
from policyengine.lang import parser as p
from policyengine.lang.fmt import format_file
from policyengine.lang.grammar import parser as lark_parser
from policyengine.lang.lalr import Driver, TreeDriver
from tests.lang.strategies import SETTINGS, expressions, files, roughened

ROOT = Path(__file__).resolve().parents[2]


def same(fast: Any, reference: Any, where: str = "") -> None:
    """Equal in every field, spans too, and of the same types all the way down."""
    assert type(fast) is type(reference), (where, fast, reference)
    if dataclasses.is_dataclass(fast):
        for f in dataclasses.fields(fast):
            same(getattr(fast, f.name), getattr(reference, f.name), f"{where}.{f.name}")
    elif isinstance(fast, (list, tuple)):
        assert len(fast) == len(reference), (where, fast, reference)
        for index, (a, b) in enumerate(zip(fast, reference, strict=True)):
            same(a, b, f"{where}[{index}]")
    else:
        assert fast == reference, (where, fast, reference)


def check(source: str, start: str = "start") -> None:
    fast_builder, reference_builder = p._Builder("f.sched"), p._Builder("f.sched")
    fast = p._driver().parse(source, start, fast_builder)
    reference = TreeDriver(lark_parser()).parse(source, start, reference_builder)
    same(fast, reference)
    same(fast_builder.problems, reference_builder.problems)


FILES = [
    "",
    "# only a comment\n",
    'import "lib.sched"\n',
    'profile "gpu" {\n  policies "a", "b"\n  policies "c"\n}\n',
    "library lib {\n  let x = 1\n}\n",
    'policy "p" {}\n',
    'policy "p" {\n  use lib\n  use lib {}\n'
    "  use lib { disable filter a disable score b disable c weight d 5 weight e 2.5 }\n}\n",
    'policy "p" {\n  match pod.namespace == "ml"\n  let a = (1)\n  let b = ((1 + 2)) * 3\n}\n',
    'policy "p" {\n  filter f { true }\n  filter g when x { y } reason "r {x}"\n'
    '  filter h when a { b }\n  filter i { c } reason "plain {{braces}} \\u00e9"\n}\n',
    'policy "p" {\n  score a { 1 }\n  score b weight 3 { 1 }\n  score c normalize max { 1 }\n'
    "  score d weight 2 normalize reverse when x { 1 }\n  score e weight 1.5 when x { 1 }\n}\n",
    'policy "p" {\n  preempt { true }\n  preempt when pod.priority > 5 { node.name != "a" }\n}\n',
    'policy "p" {\n  overcommit cpu 1.5\n  overcommit "nvidia.com/gpu" 2 max_load 0.9\n'
    "  overcommit memory 1 max_load 2\n}\n",
    'policy "p" {\n  gang {\n    within zone, rack required\n    within host\n'
    "    filter f { true }\n    score s weight 2 { 1 }\n  }\n  gang {}\n}\n",
    'policy "p" {\n  filter f {\n    if a then b else (c or d)\n  }\n  filter g { not not x }\n'
    "  filter h { a not in b and c in d or -x < 3 }\n}\n",
    'policy "p" {\n  let a = [1, 2,]\n  let b = []\n  let c = {}\n  let d = {"a": 1, "b": 2,}\n'
    "  let e = {1, 2}\n  let f = {1,}\n  let g = [x * 2 for x in xs if x > 1]\n"
    "  let h = [k for k, v in m]\n  let i = any(t.effect == 1 for t in node.taints)\n}\n",
    'policy "p" {\n  let a = x.y.z()\n  let b = x.y(1, 2)\n  let c = f()\n  let d = f(a, (b))\n'
    '  let e = m["k"]["j"] ?? "d" ?? null\n  let f = 500m + 16Gi - 2e3 + 0.5 % 3 / 2\n'
    "  let g = (a)[0].b\n  let h = -(-(x))\n  let i = (true == false) != null\n}\n",
    # Multi-line rules, comments inside expressions, and a reason with holes and escapes.
    'policy "p" {\n  filter f when\n      a   # why\n    {\n    (\n      b\n      + c\n    )\n'
    '  }\n  reason "n {node.name} has {node.labels[\\"k\\"] ?? \\"none\\"}; \\"q\\" {{x}}"\n}\n',
    # Builder problems (bad escapes, a bad hole, a fractional weight) are reported the same.
    'policy "p" {\n  filter f { "a\\q" == x } reason "bad {x +} and {y"\n'
    '  score s weight 2.5 { 1 }\n  filter g { 1 } reason "}"\n}\n',
]

EXPRESSIONS = ["1", "(1)", "((a.b))", "a ?? (b ?? c)", "[x for x, y in m if (y)]", "f(\n 1\n)"]

BAD = [
    'policy "p" {\n  filter a { 1 = 2 }\n}\n',
    'policy "p" {\n  filter a { x && y }\n}\n',
    'policy "p" {\n  filter a { x }\n',
    "policy p {}\n",
    "policy 'p' {}\n",
    'policy "p" {\n  let = 3\n}\n',
    'policy "p" {\n  filter a { "open }\n}\n',
    'policy "p" {\n  filter a { 1 }}}\n',
]


def test_the_parser_runs_the_driver() -> None:
    assert type(p._driver()) is Driver


@pytest.mark.parametrize(
    "source",
    FILES,
    ids=[
        "empty",
        "comment",
        "import",
        "profile",
        "library",
        "empty-policy",
        "use",
        "match-and-lets",
        "filters",
        "scores",
        "preempt",
        "overcommit",
        "gang",
        "logic",
        "collections",
        "calls-and-arithmetic",
        "multi-line",
        "builder-problems",
    ],
)
def test_files_match_the_reference(source: str) -> None:
    check(source)


@pytest.mark.parametrize("source", EXPRESSIONS, ids=[e.replace("\n", " ") for e in EXPRESSIONS])
def test_expressions_match_the_reference(source: str) -> None:
    check(source, "expr")


@pytest.mark.parametrize(
    "path", sorted((ROOT / "policies").glob("*.sched")), ids=lambda path: path.name
)
def test_shipped_policies_match_the_reference(path: Path) -> None:
    check(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "source",
    BAD,
    ids=[
        "assign-for-compare",
        "double-ampersand",
        "unclosed-policy",
        "unquoted-name",
        "single-quoted-name",
        "let-without-name",
        "unclosed-string",
        "extra-braces",
    ],
)
def test_errors_are_larks_own(source: str) -> None:
    with pytest.raises(UnexpectedInput) as expected:
        lark_parser().parse(source, start="start")
    with pytest.raises(UnexpectedInput) as raised:
        p._driver().parse(source, "start", p._Builder("f.sched"))
    assert type(raised.value) is type(expected.value)
    assert str(raised.value) == str(expected.value)
    assert raised.value.pos_in_stream == expected.value.pos_in_stream


@SETTINGS
@given(st.data())
def test_random_files_match_the_reference(data: st.DataObject) -> None:
    rough, _ = data.draw(roughened(format_file(data.draw(files))))
    check(rough)


@SETTINGS
@given(expressions(3))
def test_random_expressions_match_the_reference(expr: n.Expr) -> None:
    text = format_file(n.SourceFile("<gen>", (n.Policy("p", (n.Let("x", expr),)),)))
    check(text)
