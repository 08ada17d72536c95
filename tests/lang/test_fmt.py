"""Table-driven tests of ``fmt``: each case is an input and the exact text it formats to.

Every case is also checked for the two promises the formatter makes whatever its layout: the
output parses to a tree equal to the input's with the same comments in the same order, and
formatting the output again changes nothing.
"""

from __future__ import annotations

import textwrap

import pytest

from policyengine.diagnostics import render
from policyengine.lang import fmt
from policyengine.lang import nodes as n
from policyengine.lang.fmt import format_file, format_source, print_expr
from policyengine.lang.parser import parse


def _text(block: str) -> str:
    return textwrap.dedent(block).lstrip("\n")


def _comments(source: str) -> list[str]:
    result = parse(source, "<test>")
    assert result.file is not None, result.diagnostics
    return [c.text for c in result.file.comments]


# (id, input, expected output); dedented, first newline dropped.
CASES: list[tuple[str, str, str]] = [
    # --- files and items -------------------------------------------------------------------
    ("empty file", "", ""),
    ("blank file", "\n\n   \n", ""),
    ("only a comment", "\n\n# hello   \n\n", "# hello\n"),
    (
        "disable may name the kind of rule",
        'policy "p" {\n  use kube {  disable   score   fit }\n}\n',
        'policy "p" {\n  use kube { disable score fit }\n}\n',
    ),
    (
        "a string inside a reason hole keeps its escaped quotes",
        """
        policy "p" {
          filter f { true } reason "x {pod.labels[\\"k\\"]  ??  \\"none\\"} y"
        }
        """,
        """
        policy "p" {
          filter f { true } reason "x {pod.labels[\\"k\\"] ?? \\"none\\"} y"
        }
        """,
    ),
    (
        "a quote inside a reason hole's string literal is written as an escape code",
        """
        policy "p" {
          filter f { true } reason "x {pod.labels[\\"a\\u0022b\\"] ?? \\"c\\\\d\\"} y"
        }
        """,
        """
        policy "p" {
          filter f { true } reason "x {pod.labels[\\"a\\u0022b\\"] ?? \\"c\\\\d\\"} y"
        }
        """,
    ),
    (
        "imports stay together, items one blank line apart",
        """
        import   "a.sched"
        import "b.sched"


        import "c.sched"
        policy "p" { }
        library lib {
        }
        profile "s" {}
        """,
        """
        import "a.sched"
        import "b.sched"

        import "c.sched"

        policy "p" {}

        library lib {}

        profile "s" {}
        """,
    ),
    (
        "items on one line",
        'policy "a" {} policy "b" { match true }',
        """
        policy "a" {}

        policy "b" {
          match true
        }
        """,
    ),
    (
        "strings the tree keeps as values are re-escaped canonically",
        r"""
        import "\u0061\{b\}.sched"
        policy "tab\there \"q\" back\\slash	raw tab\u2028" {}
        """,
        r"""
        import "a{b}.sched"

        policy "tab\there \"q\" back\\slash\traw tab\u2028" {}
        """,
    ),
    (
        "crlf line endings become lf",
        'policy "a" {\r\n  match true\r\n}\r\n',
        """
        policy "a" {
          match true
        }
        """,
    ),
    # --- statements ------------------------------------------------------------------------
    (
        "one statement per line, two-space indentation",
        "library lib { match a let b = 1    filter f { true } score s { 1 } }",
        """
        library lib {
          match a
          let b = 1
          filter f { true }
          score s { 1 }
        }
        """,
    ),
    (
        "blank lines in a block: at most one, none at its edges",
        """
        policy "p" {

          let a = 1


          let b = 2
          let c = 3

        }
        """,
        """
        policy "p" {
          let a = 1

          let b = 2
          let c = 3
        }
        """,
    ),
    (
        "use in its canonical forms: one adjustment inline, more one a line",
        """
        policy "p" {
          use kube
          use kube {}
          use kube { disable x  weight y 2 }
          use
            other { weight z 007 }
        }
        """,
        """
        policy "p" {
          use kube
          use kube
          use kube {
            disable x
            weight y 2
          }
          use other { weight z 7 }
        }
        """,
    ),
    (
        "overcommit: a name when it can be one, else a string; ratio as written",
        """
        policy "p" {
          overcommit "cpu" 1.50
          overcommit "nvidia.com/gpu" 2
          overcommit "if" 3
          overcommit memory 01
          overcommit "cpu"   2.0   max_load   0.80
        }
        """,
        """
        policy "p" {
          overcommit cpu 1.50
          overcommit "nvidia.com/gpu" 2
          overcommit "if" 3
          overcommit memory 01
          overcommit cpu 2.0 max_load 0.80
        }
        """,
    ),
    (
        "literals keep their spelling",
        r"""
        policy "p" {
          let a = [16Gi, 500m, 2e3, 1.5E-3, 007, 1.50, 0.5, true, false, null]
          let b = ["\u0041", "\{x\}", "tab	", "q\"", "#not a comment"]
        }
        """,
        r"""
        policy "p" {
          let a = [16Gi, 500m, 2e3, 1.5E-3, 007, 1.50, 0.5, true, false, null]
          let b = ["\u0041", "\{x\}", "tab	", "q\"", "#not a comment"]
        }
        """,
    ),
    (
        "profiles: one policies line, merged",
        """
        profile "gpu" { policies "a", "b"
          policies "c" }
        profile "none" {
        }
        """,
        """
        profile "gpu" {
          policies "a", "b", "c"
        }

        profile "none" {}
        """,
    ),
    (
        "profiles: one policy a line when the list is long",
        """
        profile "gpu" { policies "training-policy-number-one", "training-policy-number-two",
          "training-policy-number-three" }
        """,
        """
        profile "gpu" {
          policies "training-policy-number-one"
          policies "training-policy-number-two"
          policies "training-policy-number-three"
        }
        """,
    ),
    # --- rules -----------------------------------------------------------------------------
    (
        "a rule that fits stays on (or comes to) one line",
        """
        policy "p" {
          filter gpu_model when model != "any" {
            node.gpu.product == model
          } reason "has {node.gpu}"
          score s weight 3 normalize max when x { 1 }
        }
        """,
        """
        policy "p" {
          filter gpu_model when model != "any" { node.gpu.product == model } reason "has {node.gpu}"
          score s weight 3 normalize max when x { 1 }
        }
        """,
    ),
    (
        "a rule that does not fit puts its body on its own line",
        """
        policy "llm-training" {
          filter gpu_model when model != "any" { node.gpu.product == model } reason "node has {node.gpu.product}, pod needs {model}"
          score gpu_binpack weight 3 { 100 * node.allocated["nvidia.com/gpu"] / node.allocatable["nvidia.com/gpu"] }
        }
        """,
        """
        policy "llm-training" {
          filter gpu_model when model != "any" {
            node.gpu.product == model
          } reason "node has {node.gpu.product}, pod needs {model}"
          score gpu_binpack weight 3 {
            100 * node.allocated["nvidia.com/gpu"] / node.allocatable["nvidia.com/gpu"]
          }
        }
        """,
    ),
    (
        "a long and-chain: one operand a line, operator first",
        """
        policy "p" {
          filter fits { node.free["cpu"] >= pod.requests["cpu"] and node.free["memory"] >= pod.requests["memory"] and node.gpu.count >= 1 }
        }
        """,
        """
        policy "p" {
          filter fits {
            node.free["cpu"] >= pod.requests["cpu"]
            and node.free["memory"] >= pod.requests["memory"]
            and node.gpu.count >= 1
          }
        }
        """,
    ),
    (
        "nested chains: a long operand breaks again, parentheses on their own lines",
        """
        policy "p" {
          filter f { node.labels["topology.kubernetes.io/zone"] == "eu-west-1a" and node.labels["rack"] == "r1" or pod.labels["anywhere"] == "true" and (node.labels["zone-override-number-one"] == "yes" or node.labels["zone-override-number-two"] == "yes") }
        }
        """,
        """
        policy "p" {
          filter f {
            node.labels["topology.kubernetes.io/zone"] == "eu-west-1a" and node.labels["rack"] == "r1"
            or pod.labels["anywhere"] == "true"
              and (
                node.labels["zone-override-number-one"] == "yes"
                or node.labels["zone-override-number-two"] == "yes"
              )
          }
        }
        """,
    ),
    (
        "any operator chain breaks in a rule body: arithmetic, coalescing, comparison",
        """
        policy "p" {
          score near weight 2 { domain_pod_count(pod, node, "nvidia.com/gpu.clique", {"job": job}) * 2 + domain_pod_count(pod, node, "topology.kubernetes.io/rack", {"job": job}) - 1 }
          score c { pod.annotations["gpu.ai/model-override"] ?? pod.node_selector["nvidia.com/gpu.product"] ?? "any-model" }
          filter d { node.allocatable["example.com/a-very-long-extended-resource-name"] >= pod.requests["example.com/a-very-long-extended-resource-name"] }
        }
        """,
        """
        policy "p" {
          score near weight 2 {
            domain_pod_count(pod, node, "nvidia.com/gpu.clique", {"job": job}) * 2
            + domain_pod_count(pod, node, "topology.kubernetes.io/rack", {"job": job})
            - 1
          }
          score c {
            pod.annotations["gpu.ai/model-override"]
            ?? pod.node_selector["nvidia.com/gpu.product"]
            ?? "any-model"
          }
          filter d {
            node.allocatable["example.com/a-very-long-extended-resource-name"]
            >= pod.requests["example.com/a-very-long-extended-resource-name"]
          }
        }
        """,
    ),
    (
        "a long let or match breaks after its first operand",
        """
        policy "p" {
          match pod.labels["workload.ai/kind"] == "training" and pod.namespace in ["ml-research", "ml-production"]
          let wanted_model = pod.annotations["gpu.ai/model"] ?? pod.node_selector["nvidia.com/gpu.product"] ?? "any"
        }
        """,
        """
        policy "p" {
          match pod.labels["workload.ai/kind"] == "training"
            and pod.namespace in ["ml-research", "ml-production"]
          let wanted_model = pod.annotations["gpu.ai/model"]
            ?? pod.node_selector["nvidia.com/gpu.product"]
            ?? "any"
        }
        """,
    ),
    (
        "a long expression that is not a chain stays on one line",
        """
        policy "p" {
          score s { sum(node.allocatable[resource_name_here] * weights_by_resource[resource_name_here] for resource_name_here in tracked_resources) }
        }
        """,
        """
        policy "p" {
          score s {
            sum(node.allocatable[resource_name_here] * weights_by_resource[resource_name_here] for resource_name_here in tracked_resources)
          }
        }
        """,
    ),
    # --- expressions -----------------------------------------------------------------------
    (
        "every expression form, spaced canonically",
        """
        policy "p" {
          let a = f( x,y ) + x.m( 1 ) + x[ "k" ] + x.y.z
          let b = [ 1, 2, ] + [ ]
          let c = { "k" : 1, "j": 2, } ?? { }
          let d = { 1, 2, }
          let e = [ t.key for t in node.taints if t.effect == "NoSchedule" ]
          let f = any( v > 1 for k , v in m )
          let g = a not in b and not c in d or -x < 2
          let h = if a then b else c
        }
        """,
        """
        policy "p" {
          let a = f(x, y) + x.m(1) + x["k"] + x.y.z
          let b = [1, 2] + []
          let c = {"k": 1, "j": 2} ?? {}
          let d = {1, 2}
          let e = [t.key for t in node.taints if t.effect == "NoSchedule"]
          let f = any(v > 1 for k, v in m)
          let g = a not in b and not c in d or -x < 2
          let h = if a then b else c
        }
        """,
    ),
    (
        "minimal parentheses, association kept",
        """
        policy "p" {
          let a = (a - b) - c
          let b = a - (b - c)
          let c = (a * b) + (c / d) % e
          let d = a * (b + c)
          let e = ((x))
          let f = (a ?? b) ?? c
          let g = a ?? (b ?? c)
          let h = (a or b) and c
          let i = a or (b and c)
          let j = (a or b) or (c or d)
          let k = not (a and b)
          let l = (not a) == b
          let m = (a == b) == (c < d)
          let n = -(a + b) * -(-c)
          let o = (-a).b + (a + b)[0] + (f(x)).y
          let p = (if a then b else c) + 1
          let q = if (if a then b else c) then (if d then e else f) else (if g then h else i)
          let r = [x for x in (if a then b else c) if (if d then e else f)]
          let s = (a in b) in c
          let t = -(not a)
        }
        """,
        """
        policy "p" {
          let a = a - b - c
          let b = a - (b - c)
          let c = a * b + c / d % e
          let d = a * (b + c)
          let e = x
          let f = (a ?? b) ?? c
          let g = a ?? b ?? c
          let h = (a or b) and c
          let i = a or b and c
          let j = a or b or c or d
          let k = not (a and b)
          let l = (not a) == b
          let m = (a == b) == (c < d)
          let n = -(a + b) * - -c
          let o = (-a).b + (a + b)[0] + f(x).y
          let p = (if a then b else c) + 1
          let q = if (if a then b else c) then (if d then e else f) else if g then h else i
          let r = [x for x in (if a then b else c) if (if d then e else f)]
          let s = (a in b) in c
          let t = -(not a)
        }
        """,
    ),
    (
        "reason templates are re-printed from their parts",
        r"""
        policy "p" {
          filter a { x } reason "has { node.gpu }, needs {a+b}; {{literal}} \{too\} \"q\" \u0041\ttab"
          filter b { x } reason ""
          filter c { x } reason "{x}{y}"
        }
        """,
        r"""
        policy "p" {
          filter a { x } reason "has {node.gpu}, needs {a + b}; {{literal}} {{too}} \"q\" A\ttab"
          filter b { x } reason ""
          filter c { x } reason "{x}{y}"
        }
        """,
    ),
    # --- comments --------------------------------------------------------------------------
    (
        "comments at the top level",
        """
        # file header

        # about the imports
        import "a.sched"   # trailing
        import "b.sched"
        # about p
        policy "p" {}  # after p


        # end of file
        """,
        """
        # file header

        # about the imports
        import "a.sched"  # trailing
        import "b.sched"

        # about p
        policy "p" {}  # after p

        # end of file
        """,
    ),
    (
        "comments in a block: header, before, after, end, closing",
        """
        policy "p" {   # header
            # before match

          match true   # after match
          # between


          let a = 1
          # end of block
        }   # closing
        policy "q" {
          # only a comment
        }
        """,
        """
        policy "p" {  # header
          # before match

          match true  # after match
          # between

          let a = 1
          # end of block
        }  # closing

        policy "q" {
          # only a comment
        }
        """,
    ),
    (
        "a comment inside a multi-line statement moves above it",
        """
        policy "p" {
          let a = f(1,   # one
                    2)   # two
          filter f when x { # header of f
            # inside f
            a and b
          }  # after the brace
          reason "r"  # after f
        }
        """,
        """
        policy "p" {
          # one
          let a = f(1, 2)  # two
          # header of f
          # inside f
          # after the brace
          filter f when x { a and b } reason "r"  # after f
        }
        """,
    ),
    (
        "a trailing comment follows the last statement on its line",
        """
        policy "p" {
          let a = 1 let b = 2  # about b
        }
        """,
        """
        policy "p" {
          let a = 1
          let b = 2  # about b
        }
        """,
    ),
    (
        "a trailing comment stays after a broken rule's closing line",
        """
        policy "p" {
          filter fits { node.free["cpu"] >= pod.requests["cpu"] and node.free["memory"] >= pod.requests["memory"] }  # fits
        }
        """,
        """
        policy "p" {
          filter fits {
            node.free["cpu"] >= pod.requests["cpu"] and node.free["memory"] >= pod.requests["memory"]
          }  # fits
        }
        """,
    ),
    (
        "comments in a use body",
        """
        policy "p" {
          use kube {  # header
            # why x
            disable x  # x
            weight y 2
            # end
          }  # closing
          use other {
            # nothing to adjust
          }
        }
        """,
        """
        policy "p" {
          use kube {  # header
            # why x
            disable x  # x
            weight y 2
            # end
          }  # closing
          # nothing to adjust
          use other
        }
        """,
    ),
    (
        "comments in a profile put one policy on each line",
        """
        profile "gpu" {
          # training first
          policies "training", "batch"  # then batch
        }  # closing
        profile "short" { policies "a" }  # only closing
        """,
        """
        profile "gpu" {
          # training first
          policies "training"
          policies "batch"  # then batch
        }  # closing

        profile "short" {
          policies "a"
        }  # only closing
        """,
    ),
    (
        "a hash inside a string is not a comment",
        """
        policy "p#1" {
          let a = "#x"  # real
        }
        """,
        """
        policy "p#1" {
          let a = "#x"  # real
        }
        """,
    ),
]


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(_text(s), _text(e), id=name) for name, s, e in CASES],
)
def test_formats_to_expected_text(source: str, expected: str) -> None:
    result = format_source(source, "case.sched")
    assert result.diagnostics == ()
    assert result.text == expected
    assert format_source(expected, "case.sched").text == expected
    assert parse(expected).file == parse(source).file
    assert _comments(expected) == _comments(source)


def test_a_file_with_syntax_errors_is_not_formatted() -> None:
    source = 'policy "p" {\n  match a = b\n  let = 2\n}\n'
    result = format_source(source, "bad.sched")
    assert result.text is None
    assert result.diagnostics == parse(source, "bad.sched").diagnostics
    assert [render(d, source) for d in result.diagnostics] == [
        "bad.sched:2:11: error PE103: '=' is not a comparison\n"
        "      match a = b\n"
        "              ^\n"
        "    hint: write '==' to compare values",
        "bad.sched:3:7: error PE101: unexpected '='; expected a name\n      let = 2\n          ^",
    ]


def test_comment_holding_a_unicode_line_separator_is_kept_whole() -> None:
    # U+2028 is a line break to str.splitlines but not to the lexer: a regression test for the
    # parser, which once counted comment lines with splitlines.
    source = 'policy "p" {\n  let a = "\u2028"  # one\n  let b = 1  # two\u2028three\n}\n'
    result = format_source(source, "p.sched")
    assert result.text == source
    assert _comments(source) == ["# one", "# two\u2028three"]


def test_hand_built_tree_without_source_is_printed() -> None:
    tree = n.SourceFile(
        "<built>",
        (
            n.Profile("s", ("a", "b")),
            n.Policy("p", (n.Let("x", n.Binary("-", n.Name("a"), n.Unary("-", n.Name("b")))),)),
        ),
    )
    assert format_file(tree) == (
        'profile "s" {\n  policies "a", "b"\n}\n\npolicy "p" {\n  let x = a - -b\n}\n'
    )


def test_print_expr_parenthesises_to_the_requested_level() -> None:
    expr = n.Binary("+", n.Name("a"), n.Name("b"))
    assert print_expr(expr) == "a + b"
    assert print_expr(expr, fmt.POSTFIX) == "(a + b)"


@pytest.mark.parametrize(
    ("spelled", "value", "printed"),
    [
        ('"\\""', '"', '"\\u0022"'),  # a quote escaped the usual way would end the reason
        ('"a\\\\"', "a\\", '"a\\\\"'),  # an escaped backslash before the closing quote stays
        ('"\\u0022}"', '"}', '"\\u0022}"'),
    ],
    ids=["escaped-quote", "trailing-backslash", "unicode-quote-before-brace"],
)
def test_a_reason_hole_prints_its_string_literals_so_they_read_back(
    spelled: str, value: str, printed: str
) -> None:
    template = n.Template(("x ", n.Literal("string", value, spelled)))
    source = f'policy "p" {{\n  filter f {{ true }} reason {fmt._quote_template(template)}\n}}\n'
    result = parse(source, "<test>")
    assert result.ok, render(result.diagnostics, {"<test>": source})
    hole = result.file.items[0].body[0].reason.parts[1]  # type: ignore[union-attr]
    assert (hole.value, hole.text) == (value, printed)
