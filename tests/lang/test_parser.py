"""The grammar and the parser, table-driven: every construct, and every syntax diagnostic.

Constructs are checked by the tree they produce (spans aside); syntax errors by their rendered
text, caret and hint included, exactly as ``policyengine lint`` prints them.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from policyengine.diagnostics import render
from policyengine.lang import nodes as n
from policyengine.lang.parser import parse, parse_expression


def lit(kind: str, value: object, text: str | None = None) -> n.Literal:
    return n.Literal(kind, value, text if text is not None else str(value))


def name(identifier: str) -> n.Name:
    return n.Name(identifier)


def attr(obj: n.Expr, field: str) -> n.Attribute:
    return n.Attribute(obj, field)


def binary(op: str, left: n.Expr, right: n.Expr) -> n.Binary:
    return n.Binary(op, left, right)


POD_LABELS = attr(name("pod"), "labels")

EXPRESSIONS: list[tuple[str, n.Expr]] = [
    ("42", lit("int", 42)),
    ("0.75", lit("float", 0.75)),
    ("500m", lit("quantity", Fraction(1, 2), "500m")),
    ("16Gi", lit("quantity", Fraction(16 * 1024**3), "16Gi")),
    ("2e3", lit("quantity", Fraction(2000), "2e3")),
    ('"a\\"b\\n"', lit("string", 'a"b\n', '"a\\"b\\n"')),
    ("true", lit("bool", True, "true")),
    ("false", lit("bool", False, "false")),
    ("null", lit("null", None, "null")),
    ("pod", name("pod")),
    ("node.gpu.product", attr(attr(name("node"), "gpu"), "product")),
    ('pod.labels["app"]', n.Index(POD_LABELS, lit("string", "app", '"app"'))),
    (
        'pod.labels["a"] ?? "b" ?? "c"',  # ?? associates to the right
        binary(
            "??",
            n.Index(POD_LABELS, lit("string", "a", '"a"')),
            binary("??", lit("string", "b", '"b"'), lit("string", "c", '"c"')),
        ),
    ),
    ("1 + 2 * 3", binary("+", lit("int", 1), binary("*", lit("int", 2), lit("int", 3)))),
    ("(1 + 2) * 3", binary("*", binary("+", lit("int", 1), lit("int", 2)), lit("int", 3))),
    ("1 - 2 - 3", binary("-", binary("-", lit("int", 1), lit("int", 2)), lit("int", 3))),
    ("-x % 2", binary("%", n.Unary("-", name("x")), lit("int", 2))),
    ("a / b", binary("/", name("a"), name("b"))),
    ("a < b", binary("<", name("a"), name("b"))),
    ("a >= b", binary(">=", name("a"), name("b"))),
    ("a != b", binary("!=", name("a"), name("b"))),
    ("x in xs", binary("in", name("x"), name("xs"))),
    ("x not in xs", binary("not in", name("x"), name("xs"))),
    (
        "not a and b or c",
        binary("or", binary("and", n.Unary("not", name("a")), name("b")), name("c")),
    ),
    ("not x in xs", n.Unary("not", binary("in", name("x"), name("xs")))),
    ("a ?? 0 > 1", binary(">", binary("??", name("a"), lit("int", 0)), lit("int", 1))),
    ("if a then 1 else 2", n.Conditional(name("a"), lit("int", 1), lit("int", 2))),
    ("[1, 2,]", n.ListLit((lit("int", 1), lit("int", 2)))),
    ("[]", n.ListLit(())),
    ('{"a", "b"}', n.SetLit((lit("string", "a", '"a"'), lit("string", "b", '"b"')))),
    ('{"k": 1}', n.MapLit(((lit("string", "k", '"k"'), lit("int", 1)),))),
    ("{}", n.MapLit(())),
    ("len(xs)", n.Call("len", (name("xs"),))),
    ("f()", n.Call("f", ())),
    ('s.startswith("a")', n.MethodCall(name("s"), "startswith", (lit("string", "a", '"a"'),))),
    ("m.keys()", n.MethodCall(name("m"), "keys", ())),
    (
        "any(t.x for t in ts if t.y)",
        n.Call(
            "any",
            (
                n.Comprehension(
                    "generator", attr(name("t"), "x"), ("t",), name("ts"), attr(name("t"), "y")
                ),
            ),
        ),
    ),
    ("[k for k, v in m]", n.Comprehension("list", name("k"), ("k", "v"), name("m"), None)),
]


@pytest.mark.parametrize(("source", "tree"), EXPRESSIONS, ids=[s for s, _ in EXPRESSIONS])
def test_expression(source: str, tree: n.Expr) -> None:
    assert parse_expression(source) == tree


def test_every_statement_kind() -> None:
    source = """
import "kube-default.sched"
profile "sched" { policies "p", "q" }
library lib {
  let l = 1
  filter lf { true }
}
policy "p" {
  match pod.priority > 0
  use lib { disable filter lf  weight ls 3 }
  let x = 1
  overcommit cpu 1.5
  overcommit "nvidia.com/gpu" 2
  overcommit cpu 2 max_load 0.8
  filter f when x > 0 { true } reason "x is {x}, {{literal}}"
  score s weight 4 normalize max when true { x }
}
"""
    result = parse(source, "t.sched")
    assert result.diagnostics == ()
    file = result.file
    assert file is not None
    assert file.imports == (n.Import("kube-default.sched"),)
    assert file.profiles == (n.Profile("sched", ("p", "q")),)
    (library,) = file.libraries
    assert library.name == "lib" and [s.name for s in library.rules] == ["lf"]
    (policy,) = file.policies
    assert policy.match == n.Match(binary(">", attr(name("pod"), "priority"), lit("int", 0)))
    assert policy.uses == (n.Use("lib", (n.Disable("lf", kind="filter"), n.Reweight("ls", 3))),)
    assert policy.lets == (n.Let("x", lit("int", 1)),)
    assert policy.overcommits == (
        n.Overcommit("cpu", 1.5),
        n.Overcommit("nvidia.com/gpu", 2),
        n.Overcommit("cpu", 2, max_load=0.8),
    )
    f, s = policy.rules
    assert f == n.Filter(
        "f",
        binary(">", name("x"), lit("int", 0)),
        lit("bool", True, "true"),
        n.Template(("x is ", name("x"), ", {literal}")),
    )
    assert s == n.Score("s", 4, "max", lit("bool", True, "true"), name("x"))


def test_spans_are_one_based_and_end_exclusive() -> None:
    result = parse('policy "p" {\n  filter f { node.ready }\n}\n', "t.sched")
    (rule,) = result.file.policies[0].rules  # type: ignore[union-attr]
    assert (rule.span.line, rule.span.column, rule.span.end_line, rule.span.end_column) == (
        2,
        3,
        2,
        26,
    )
    assert (rule.body.span.column, rule.body.span.end_column) == (14, 24)
    assert (rule.name_span.column, rule.name_span.end_column) == (10, 11)


def test_reason_holes_have_positions_in_the_file() -> None:
    result = parse('policy "p" {\n  filter f { true } reason "a {node.name} b"\n}\n', "t.sched")
    template = result.file.policies[0].rules[0].reason  # type: ignore[union-attr]
    hole = template.parts[1]
    assert (hole.span.line, hole.span.column, hole.span.end_column) == (2, 32, 41)


@pytest.mark.parametrize(
    ("reason", "holes"),
    [
        # A brace inside a hole's string literal does not close the hole.
        (r'"key {pod.labels[\"a}b\"] ?? \"-\"} left"', [("a}b", "-")]),
        (r'"{pod.labels[\"{\"] ?? \"}}\"}"', [("{", "}}")]),
    ],
    ids=['"key {pod.labels[\\"a}b\\"] ?? \\"-\\"} left"', '"{pod.labels[\\"{\\"] ?? \\"}}\\"}"'],
)
def test_reason_holes_close_outside_their_string_literals(
    reason: str, holes: list[tuple[str, str]]
) -> None:
    result = parse(f'policy "p" {{\n  filter f {{ true }} reason {reason}\n}}\n', "t.sched")
    assert not result.diagnostics
    template = result.file.policies[0].rules[0].reason  # type: ignore[union-attr]
    found = [
        (part.left.index.value, part.right.value)
        for part in template.parts
        if not isinstance(part, str)
    ]
    assert found == holes


def test_comments_are_collected_with_their_placement() -> None:
    result = parse('# head\npolicy "p" { # after brace\n}\n', "t.sched")
    assert [(c.text, c.span.line, c.own_line) for c in result.file.comments] == [  # type: ignore[union-attr]
        ("# head", 1, True),
        ("# after brace", 2, False),
    ]


SYNTAX_ERRORS = [
    (
        'policy "p" {\n  filter f { a = b }\n}\n',
        """\
t.sched:2:16: error PE103: '=' is not a comparison
      filter f { a = b }
                   ^
    hint: write '==' to compare values""",
    ),
    (
        'policy "p" {\n  filter f { a && b }\n}\n',
        """\
t.sched:2:16: error PE104: '&&' is not an operator here
      filter f { a && b }
                   ^^
    hint: write 'and'""",
    ),
    (
        'policy "p" {\n  filter f { !a }\n}\n',
        """\
t.sched:2:14: error PE104: '!' is not an operator here
      filter f { !a }
                 ^
    hint: write 'not', or '!=' to compare""",
    ),
    (
        "policy \"p\" {\n  let x = 'a'\n}\n",
        """\
t.sched:2:11: error PE105: strings are written in double quotes
      let x = 'a'
              ^
    hint: write "text" instead of 'text'""",
    ),
    (
        "policy p {\n}\n",
        """\
t.sched:1:8: error PE106: a policy name is a string
    policy p {
           ^
    hint: write policy "p\"""",
    ),
    (
        'policy "p" {\n  let x = "abc\n}\n',
        """\
t.sched:2:11: error PE107: this string is not closed on its line
      let x = "abc
              ^
    hint: close it with a double quote; write \\" for a quote inside a string""",
    ),
    (
        'policy "p" {\n  let x = "a\\qb"\n}\n',
        """\
t.sched:2:13: error PE107: unknown escape '\\q' in string
      let x = "a\\qb"
                ^^
    hint: valid escapes are \\" \\\\ \\n \\t \\r \\{ \\} and \\uXXXX""",
    ),
    (
        'policy "p" {\n  filter f { true } reason "a {x +} b"\n}\n',
        """\
t.sched:2:34: error PE107: the expression {x +} in this reason is not valid
      filter f { true } reason "a {x +} b"
                                     ^
    hint: a reason hole holds one expression, such as {node.name}""",
    ),
    (
        'policy "p" {\n  filter f { true } reason "a {x b"\n}\n',
        """\
t.sched:2:31: error PE107: '{' in reason is not closed
      filter f { true } reason "a {x b"
                                  ^
    hint: close the hole with '}', or write '{{' for a literal brace""",
    ),
    (
        'policy "p" {\n  score s weight 1.5 { 1 }\n}\n',
        """\
t.sched:2:18: error PE108: a weight is a whole number, not '1.5'
      score s weight 1.5 { 1 }
                     ^^^
    hint: weights are integers from 0 to 100""",
    ),
    (
        'policy "p" {\n  filter f { 1 + }\n}\n',
        """\
t.sched:2:18: error PE101: unexpected '}'; expected a name, a number, a quantity, a string, an integer, '(', '-', '[', …
      filter f { 1 + }
                     ^""",
    ),
    (
        'policy "p" {\n  filter f { true }\n',
        """\
t.sched:2:20: error PE102: unexpected end of file; expected 'device', 'filter', 'gang', 'let', 'match', 'overcommit', 'preempt', 'reason', …
      filter f { true }
                       ^
    hint: a block may be missing its closing '}'""",
    ),
    (
        'policy "p" {\n  filter f { true } $\n}\n',
        """\
t.sched:2:21: error PE100: unexpected character '$'
      filter f { true } $
                        ^
    hint: remove it, or see the documentation for the language's operators""",
    ),
]


@pytest.mark.parametrize(
    ("source", "expected"),
    SYNTAX_ERRORS,
    ids=[e.split(": ")[2][:5] + str(i) for i, (_, e) in enumerate(SYNTAX_ERRORS)],
)
def test_syntax_error_rendering(source: str, expected: str) -> None:
    result = parse(source, "t.sched")
    assert result.file is None
    assert "\n".join(render(d, source) for d in result.diagnostics) == expected


def test_every_syntax_error_in_a_file_is_reported() -> None:
    source = "policy \"p\" {\n  filter a { x = 1 }\n  filter b { y && z }\n  let c = 'q'\n}\n"
    result = parse(source, "t.sched")
    assert [(d.code, d.span.line) for d in result.diagnostics] == [
        ("PE103", 2),
        ("PE104", 3),
        ("PE105", 4),
    ]
