"""The checker, one table per concern: every diagnostic pinned verbatim, as a user sees it.

Each diagnostic row is a small source over the made-up schema in ``fake_schema`` and the
whole rendered finding (header, source line, caret, hint) it must produce, nothing more: a
row that reports a second error would show a cascade. Clean rows give an expression and the
type the checker must prove for it. The side tables the compiler and lint read (bindings,
calls, patterns, per-node flags, costs) have tests of their own at the end.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from policyengine.diagnostics import render
from policyengine.lang import nodes as n
from policyengine.lang.checker import CheckResult, check, check_expression
from policyengine.lang.cost import children
from policyengine.lang.link import link
from policyengine.lang.loader import Unit, load_texts
from policyengine.lang.schema import Root, Schema
from policyengine.lang.types import QUANTITY, STRING, MapType
from tests.lang.fake_schema import SCHEMA

PATH = "t.sched"


def in_policy(*lines: str) -> str:
    """A policy "p" holding ``lines``, one statement a line from line 2."""
    return 'policy "p" {\n' + "".join(f"  {line}\n" for line in lines) + "}\n"


def load(source: str) -> Unit:
    unit = load_texts({PATH: source})
    assert unit.ok, [render(d, source) for d in unit.diagnostics]
    return unit


def run(source: str, schema: Schema = SCHEMA) -> CheckResult:
    return check(load(source), schema)


def rendered(source: str, schema: Schema = SCHEMA) -> str:
    result = run(source, schema)
    return "\n\n".join(render(d, source) for d in result.diagnostics)


# --- diagnostics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    source: list[str] | str  # statements of policy "p", or a whole file
    expected: str

    def text(self) -> str:
        return in_policy(*self.source) if isinstance(self.source, list) else self.source


DIAGNOSTICS = [
    Case(
        "PE201 unknown name",
        ["filter f { widgt.count > 1 }"],
        """
        t.sched:2:14: error PE201: unknown name 'widgt'
              filter f { widgt.count > 1 }
                         ^^^^^
            hint: did you mean widget?
        """,
    ),
    Case(
        "PE201 unknown name, no close match",
        ["filter f { zzz }"],
        """
        t.sched:2:14: error PE201: unknown name 'zzz'
              filter f { zzz }
                         ^^^
            hint: names in scope here: order, widget
        """,
    ),
    Case(
        "PE201 function used as a value",
        ["filter f { fits > 1 }"],
        """
        t.sched:2:14: error PE201: 'fits' is a function, not a value
              filter f { fits > 1 }
                         ^^^^
            hint: call it with its arguments: fits(…)
        """,
    ),
    Case(
        "PE201 library rules see only their library's lets",
        ('library lib {\n  filter f { x > 1 }\n}\npolicy "p" {\n  let x = 1\n  use lib\n}\n'),
        """
        t.sched:2:14: error PE201: unknown name 'x'
              filter f { x > 1 }
                         ^
            hint: names in scope here: order, widget
        """,
    ),
    Case(
        "PE201 comprehension variable is not seen outside",
        ["filter f { any(p.spare for p in widget.parts) and p.spare }"],
        """
        t.sched:2:53: error PE201: unknown name 'p'
              filter f { any(p.spare for p in widget.parts) and p.spare }
                                                                ^
            hint: names in scope here: order, widget
        """,
    ),
    Case(
        "PE202 unknown attribute",
        ['filter f { widget.lables["a"] == "x" }'],
        """
        t.sched:2:21: error PE202: Widget has no attribute 'lables'
              filter f { widget.lables["a"] == "x" }
                                ^^^^^^
            hint: did you mean widget.labels?
        """,
    ),
    Case(
        "PE202 unknown attribute, no close match",
        ['filter f { widget.zzzz == "x" }'],
        """
        t.sched:2:21: error PE202: Widget has no attribute 'zzzz'
              filter f { widget.zzzz == "x" }
                                ^^^^
            hint: attributes of Widget: name, labels, capacity, parts, weight, count, colour
        """,
    ),
    Case(
        "PE202 attribute of a map",
        ['filter f { widget.labels.zone == "x" }'],
        """
        t.sched:2:28: error PE202: map<string, string> has no attributes (asked for 'zone')
              filter f { widget.labels.zone == "x" }
                                       ^^^^
            hint: index a map with brackets: widget.labels["zone"]
        """,
    ),
    Case(
        "PE202 attribute of an int",
        ["filter f { widget.count.value == 1 }"],
        """
        t.sched:2:27: error PE202: int has no attributes (asked for 'value')
              filter f { widget.count.value == 1 }
                                      ^^^^^
        """,
    ),
    Case(
        "PE203 unknown function",
        ["filter f { fitz(order, widget) }"],
        """
        t.sched:2:14: error PE203: unknown function 'fitz'
              filter f { fitz(order, widget) }
                         ^^^^
            hint: did you mean fits?
        """,
    ),
    Case(
        "PE203 unknown method",
        ['filter f { widget.name.strip() == "" }'],
        """
        t.sched:2:26: error PE203: string has no method 'strip'
              filter f { widget.name.strip() == "" }
                                     ^^^^^
            hint: did you mean trim()?
        """,
    ),
    Case(
        "PE203 method misspelt",
        ['filter f { widget.name.startwith("a") }'],
        """
        t.sched:2:26: error PE203: string has no method 'startwith'
              filter f { widget.name.startwith("a") }
                                     ^^^^^^^^^
            hint: did you mean startswith()?
        """,
    ),
    Case(
        "PE203 contains on a list",
        ['filter f { order.tags.contains("a") }'],
        """
        t.sched:2:25: error PE203: list<string> has no method 'contains'
              filter f { order.tags.contains("a") }
                                    ^^^^^^^^
            hint: test membership with 'in': x in xs
        """,
    ),
    Case(
        "PE204 quantity times quantity",
        ['score s { (widget.capacity["cpu"] ?? 0) * 2Gi }'],
        """
        t.sched:2:13: error PE204: cannot apply '*' to quantity and quantity
              score s { (widget.capacity["cpu"] ?? 0) * 2Gi }
                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: multiply a quantity by a number; divide two quantities for a ratio
        """,
    ),
    Case(
        "PE204 string compared with quantity",
        ["filter f { widget.name == 2Gi }"],
        """
        t.sched:2:14: error PE204: cannot compare string with quantity using '=='
              filter f { widget.name == 2Gi }
                         ^^^^^^^^^^^^^^^^^^
            hint: convert the string first: quantity(text) ?? 0
        """,
    ),
    Case(
        "PE204 ordering string and int",
        ["filter f { widget.name < 3 }"],
        """
        t.sched:2:14: error PE204: cannot compare string with int using '<'
              filter f { widget.name < 3 }
                         ^^^^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE204 remainder of a float",
        ["filter f { widget.weight % 2 == 0 }"],
        """
        t.sched:2:14: error PE204: cannot apply '%' to float and int
              filter f { widget.weight % 2 == 0 }
                         ^^^^^^^^^^^^^^^^^
            hint: '%' takes two ints
        """,
    ),
    Case(
        "PE204 string plus int",
        ['filter f { widget.name + 1 == "" }'],
        """
        t.sched:2:14: error PE204: cannot apply '+' to string and int
              filter f { widget.name + 1 == "" }
                         ^^^^^^^^^^^^^^^
            hint: convert the other side first: string(value)
        """,
    ),
    Case(
        "PE204 records are not comparable",
        ["filter f { widget.parts == [] or (widget.parts[0] ?? null) == widget.parts[1] }"],
        """
        t.sched:2:36: error PE204: cannot compare Part? with Part? using '=='
              filter f { widget.parts == [] or (widget.parts[0] ?? null) == widget.parts[1] }
                                               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE204 in with the wrong element type",
        ["filter f { 1 in order.tags }"],
        """
        t.sched:2:14: error PE204: cannot test int 'in' list<string>
              filter f { 1 in order.tags }
                         ^
            hint: the right of 'in' is a list, set or map (its keys) of the left's type, or a string
        """,
    ),
    Case(
        "PE204 in over an int",
        ["filter f { 1 in widget.count }"],
        """
        t.sched:2:14: error PE204: cannot test int 'in' int
              filter f { 1 in widget.count }
                         ^^^^^^^^^^^^^^^^^
            hint: the right of 'in' is a list, set or map (its keys) of the left's type, or a string
        """,
    ),
    Case(
        "PE204 and of an int",
        ["filter f { widget.count and true }"],
        """
        t.sched:2:14: error PE204: 'and' needs bool, not int
              filter f { widget.count and true }
                         ^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE204 not of an int",
        ["filter f { not widget.count }"],
        """
        t.sched:2:18: error PE204: 'not' needs bool, not int
              filter f { not widget.count }
                             ^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE204 if condition not bool",
        ["score s { if widget.count then 1 else 2 }"],
        """
        t.sched:2:16: error PE204: the condition of 'if' must be bool, not int
              score s { if widget.count then 1 else 2 }
                           ^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE204 if branches differ",
        ['score s { if widget.count > 1 then 1 else "a" }'],
        """
        t.sched:2:13: error PE204: the branches of 'if' have different types: int and string
              score s { if widget.count > 1 then 1 else "a" }
                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: make both branches the same type
        """,
    ),
    Case(
        "PE204 default of the wrong type",
        ["filter f { (widget.colour ?? 3) == 3 }"],
        """
        t.sched:2:32: error PE204: the default after '??' must fit string, not int
              filter f { (widget.colour ?? 3) == 3 }
                                           ^
            hint: give a default of the same type as the value
        """,
    ),
    Case(
        "PE204 list items differ",
        ['filter f { len([1, "a"]) > 0 }'],
        """
        t.sched:2:22: error PE204: list items have different types: int and string
              filter f { len([1, "a"]) > 0 }
                                 ^^^
        """,
    ),
    Case(
        "PE204 map indexed by the wrong type",
        ['filter f { (order.labels[1] ?? "") == "" }'],
        """
        t.sched:2:28: error PE204: map<string, string> is indexed by string, not int
              filter f { (order.labels[1] ?? "") == "" }
                                       ^
        """,
    ),
    Case(
        "PE204 string indexed",
        ['filter f { widget.name[0] == "" }'],
        """
        t.sched:2:14: error PE204: string cannot be indexed
              filter f { widget.name[0] == "" }
                         ^^^^^^^^^^^
            hint: only maps and lists can be indexed
        """,
    ),
    Case(
        "PE204 comprehension condition not bool",
        ["filter f { any(p.spare for p in widget.parts if p.size) }"],
        """
        t.sched:2:51: error PE204: the condition of a comprehension must be bool, not quantity
              filter f { any(p.spare for p in widget.parts if p.size) }
                                                              ^^^^^^
        """,
    ),
    Case(
        "PE205 domain function arity",
        ["filter f { fits(order) }"],
        """
        t.sched:2:14: error PE205: fits() takes 2 arguments, got 1
              filter f { fits(order) }
                         ^^^^^^^^^^^
        """,
    ),
    Case(
        "PE205 builtin arity",
        ["filter f { len(order.tags, 1) > 0 }"],
        """
        t.sched:2:14: error PE205: len() takes 1 argument, got 2
              filter f { len(order.tags, 1) > 0 }
                         ^^^^^^^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE205 method arity",
        ['filter f { widget.name.lower("x") == "" }'],
        """
        t.sched:2:14: error PE205: lower() takes 0 arguments, got 1
              filter f { widget.name.lower("x") == "" }
                         ^^^^^^^^^^^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE205 min of nothing",
        ["score s { min() }"],
        """
        t.sched:2:13: error PE205: min() takes a list, set or generator, or at least 2 arguments, got 0
              score s { min() }
                        ^^^^^
        """,
    ),
    Case(
        "PE206 domain function argument",
        ["filter f { fits(widget, widget) }"],
        """
        t.sched:2:19: error PE206: argument 1 of fits() must be Order, not Widget
              filter f { fits(widget, widget) }
                              ^^^^^^
        """,
    ),
    Case(
        "PE206 method argument",
        ["filter f { widget.name.startswith(1) }"],
        """
        t.sched:2:37: error PE206: argument 1 of startswith() must be string, not int
              filter f { widget.name.startswith(1) }
                                                ^
        """,
    ),
    Case(
        "PE206 any of non-bool",
        ["filter f { any(p.size for p in widget.parts) }"],
        """
        t.sched:2:18: error PE206: any() needs bool elements, not quantity
              filter f { any(p.size for p in widget.parts) }
                             ^^^^^^
            hint: each element of any() is a condition: any(x > 0 for x in xs)
        """,
    ),
    Case(
        "PE206 sum of strings",
        ["score s { sum(order.tags) }"],
        """
        t.sched:2:17: error PE206: sum() needs numeric elements, not string
              score s { sum(order.tags) }
                            ^^^^^^^^^^
        """,
    ),
    Case(
        "PE206 sum of an int",
        ["score s { sum(widget.count) }"],
        """
        t.sched:2:17: error PE206: argument 1 of sum() must be a list, set or generator, not int
              score s { sum(widget.count) }
                            ^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE206 len of an int",
        ["filter f { len(widget.count) > 0 }"],
        """
        t.sched:2:18: error PE206: argument 1 of len() must be a string, list, set or map, not int
              filter f { len(widget.count) > 0 }
                             ^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE206 max of a string",
        ['score s { max(1, "a") }'],
        """
        t.sched:2:20: error PE206: argument 2 of max() must be a number, not string
              score s { max(1, "a") }
                               ^^^
        """,
    ),
    Case(
        "PE206 int of a bool",
        ["score s { int(true) ?? 0 }"],
        """
        t.sched:2:17: error PE206: argument 1 of int() must be a string or a number, not bool
              score s { int(true) ?? 0 }
                            ^^^^
        """,
    ),
    Case(
        "PE207 filter body int",
        ["filter f { widget.count }"],
        """
        t.sched:2:14: error PE207: the body of filter f must be bool or list<string>, not int
              filter f { widget.count }
                         ^^^^^^^^^^^^
            hint: a filter keeps a node when its body is true or its list of reasons is empty
        """,
    ),
    Case(
        "PE207 filter body nullable string",
        ["filter f { widget.colour }"],
        """
        t.sched:2:14: error PE207: the body of filter f must be bool or list<string>, not string?
              filter f { widget.colour }
                         ^^^^^^^^^^^^^
            hint: a filter keeps a node when its body is true or its list of reasons is empty
        """,
    ),
    Case(
        "PE207 score body string",
        ["score s { widget.name }"],
        """
        t.sched:2:13: error PE207: the body of score s must be a number (int, float or quantity), not string
              score s { widget.name }
                        ^^^^^^^^^^^
        """,
    ),
    Case(
        "PE207 guard not bool",
        ["filter f when widget.name { true }"],
        """
        t.sched:2:17: error PE207: the guard of filter f must be bool, not string
              filter f when widget.name { true }
                            ^^^^^^^^^^^
        """,
    ),
    Case(
        "PE207 match not bool",
        ["match order.name"],
        """
        t.sched:2:9: error PE207: a match must be bool, not string
              match order.name
                    ^^^^^^^^^^
        """,
    ),
    Case(
        "PE208 two variables over a list",
        ["filter f { any(k for k, v in order.tags) }"],
        """
        t.sched:2:27: error PE208: list<string> is iterated with one variable
              filter f { any(k for k, v in order.tags) }
                                      ^
            hint: two variables (k, v) iterate a map's keys and values
        """,
    ),
    Case(
        "PE208 iterating a string",
        ['filter f { any(c == "a" for c in widget.name) }'],
        """
        t.sched:2:36: error PE208: cannot iterate over string
              filter f { any(c == "a" for c in widget.name) }
                                               ^^^^^^^^^^^
            hint: iterate over a list, set or map
        """,
    ),
    Case(
        "PE209 method on a nullable",
        ['filter f { widget.colour.lower() == "red" }'],
        """
        t.sched:2:14: error PE209: this value may be null (string?); lower() needs a value
              filter f { widget.colour.lower() == "red" }
                         ^^^^^^^^^^^^^
            hint: give it a default with '??': (widget.colour ?? "")
        """,
    ),
    Case(
        "PE209 arithmetic on a map lookup",
        ['score s { order.wants["cpu"] + 1 }'],
        """
        t.sched:2:13: error PE209: this value may be null (quantity?); '+' needs a value
              score s { order.wants["cpu"] + 1 }
                        ^^^^^^^^^^^^^^^^^^
            hint: give it a default with '??': (order.wants["cpu"] ?? 0)
        """,
    ),
    Case(
        "PE209 ordering of a nullable",
        ['filter f when widget.colour < "m" { true }'],
        """
        t.sched:2:17: error PE209: this value may be null (string?); '<' needs a value
              filter f when widget.colour < "m" { true }
                            ^^^^^^^^^^^^^
            hint: give it a default with '??': (widget.colour ?? "")
        """,
    ),
    Case(
        "PE209 attribute of a nullable record",
        ["filter f { widget.parts[0].spare }"],
        """
        t.sched:2:14: error PE209: this value may be null (Part?); '.spare' needs a value
              filter f { widget.parts[0].spare }
                         ^^^^^^^^^^^^^^^
        """,
    ),
    Case(
        "PE209 arithmetic on a nullable score value",
        ['score s { widget.capacity["gpu"] * 2 }'],
        """
        t.sched:2:13: error PE209: this value may be null (quantity?); '*' needs a value
              score s { widget.capacity["gpu"] * 2 }
                        ^^^^^^^^^^^^^^^^^^^^^^
            hint: give it a default with '??': (widget.capacity["gpu"] ?? 0)
        """,
    ),
    Case(
        "PE209 nullable filter body",
        ["filter f { if widget.count > 1 then true else null }"],
        """
        t.sched:2:14: error PE209: this value may be null (bool?); a filter needs a value
              filter f { if widget.count > 1 then true else null }
                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: give it a default with '??': ((if widget.count > 1 then true else null) ?? false)
        """,
    ),
    Case(
        "PE209 nullable on the left of in",
        ['filter f { order.labels["x"] in ["a"] }'],
        """
        t.sched:2:14: error PE209: this value may be null (string?); 'in' needs a value
              filter f { order.labels["x"] in ["a"] }
                         ^^^^^^^^^^^^^^^^^
            hint: give it a default with '??': (order.labels["x"] ?? "")
        """,
    ),
    Case(
        "PE209 nullable function argument",
        ["filter f { score_of(widget.colour) > 0 }"],
        """
        t.sched:2:23: error PE209: this value may be null (string?); score_of() needs a value
              filter f { score_of(widget.colour) > 0 }
                                  ^^^^^^^^^^^^^
            hint: give it a default with '??': (widget.colour ?? "")
        """,
    ),
    Case(
        "PE211 duplicate filter",
        ["filter f { true }", "filter f { false }"],
        """
        t.sched:3:10: error PE211: filter f is defined twice in policy "p"
              filter f { false }
                     ^
            hint: the first definition is at t.sched:2:10
        """,
    ),
    Case(
        "PE211 library used twice",
        ('library lib { filter f { true } }\npolicy "p" {\n  use lib\n  use lib\n}\n'),
        """
        t.sched:4:7: error PE211: library lib is used twice in policy "p"
              use lib
                  ^^^
            hint: the first use is at t.sched:3:7; merge the two uses
        """,
    ),
    Case(
        "PE211 duplicate rule in a library",
        ("library lib {\n  score s { 1 }\n  score s { 2 }\n}\n"),
        """
        t.sched:3:9: error PE211: score s is defined twice in library lib
              score s { 2 }
                    ^
            hint: the first definition is at t.sched:2:9
        """,
    ),
    Case(
        "PE212 library defined twice (from link)",
        ("library lib {}\nlibrary lib {}\n"),
        """
        t.sched:2:9: error PE212: library lib is defined twice
            library lib {}
                    ^^^
            hint: the first definition is at t.sched:1:9
        """,
    ),
    Case(
        "PE213 unknown library (from link)",
        ["use nope"],
        """
        t.sched:2:7: error PE213: unknown library nope
              use nope
                  ^^^^
            hint: import the file that defines it; libraries known here: none loaded
        """,
    ),
    Case(
        "PE214 unknown rule in use (from link)",
        ('library lib { filter f { true } }\npolicy "p" { use lib { disable g } }\n'),
        """
        t.sched:2:24: error PE214: library lib has no rule g
            policy "p" { use lib { disable g } }
                                   ^^^^^^^^^
            hint: its rules are: f
        """,
    ),
    Case(
        "PE215 unknown normalisation",
        ["score s normalize maxx { 1 }"],
        """
        t.sched:2:21: error PE215: unknown normalisation 'maxx'
              score s normalize maxx { 1 }
                                ^^^^
            hint: did you mean max?
        """,
    ),
    Case(
        "PE216 profile names an unknown policy",
        ('policy "p" {}\nprofile "s" { policies "p", "pp", "zzz" }\n'),
        """
        t.sched:2:29: error PE216: profile "s" names unknown policy "pp"
            profile "s" { policies "p", "pp", "zzz" }
                                        ^^^^
            hint: did you mean "p"?

        t.sched:2:35: error PE216: profile "s" names unknown policy "zzz"
            profile "s" { policies "p", "pp", "zzz" }
                                              ^^^^^
            hint: policies defined here: p
        """,
    ),
    Case(
        "PE217 invalid regex",
        ['filter f { widget.name.matches("[a") }'],
        """
        t.sched:2:34: error PE217: invalid regular expression: unterminated character set at position 0
              filter f { widget.name.matches("[a") }
                                             ^^^^
            hint: the pattern is a Python regular expression (module re)
        """,
    ),
    Case(
        "PE217 regex not a literal",
        ["filter f { widget.name.matches(order.name) }"],
        """
        t.sched:2:34: error PE217: the pattern of matches() must be a string literal
              filter f { widget.name.matches(order.name) }
                                             ^^^^^^^^^^
            hint: patterns are compiled once, when the policy is loaded
        """,
    ),
    Case(
        "PE218 generator outside an aggregate",
        ["filter f { len(p for p in widget.parts) > 0 }"],
        """
        t.sched:2:18: error PE218: a generator can only be the argument of any, all, count, sum, min or max
              filter f { len(p for p in widget.parts) > 0 }
                             ^^^^^^^^^^^^^^^^^^^^^^^
            hint: to build a list, put it in brackets: [x for x in xs]
        """,
    ),
    Case(
        "PE218 generator as a domain function argument",
        ["filter f { score_of(p.name for p in widget.parts) > 0 }"],
        """
        t.sched:2:23: error PE218: a generator can only be the argument of any, all, count, sum, min or max
              filter f { score_of(p.name for p in widget.parts) > 0 }
                                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: to build a list, put it in brackets: [x for x in xs]
        """,
    ),
    Case(
        "PE219 let defined twice",
        ["let x = 1", "let x = 2"],
        """
        t.sched:3:7: error PE219: let x is defined twice
              let x = 2
                  ^
            hint: the first definition is at t.sched:2:7
        """,
    ),
    Case(
        "PE219 let shadows a root",
        ["let order = 1"],
        """
        t.sched:2:7: error PE219: let order shadows the root order
              let order = 1
                  ^^^^^
            hint: give the let another name
        """,
    ),
    Case(
        "PE219 loop variable bound twice",
        ["filter f { any(true for k, k in order.labels) }"],
        """
        t.sched:2:30: error PE219: loop variable 'k' is bound twice
              filter f { any(true for k, k in order.labels) }
                                         ^
        """,
    ),
    Case(
        "PE220 match in a library",
        ("library lib {\n  match order.priority > 1\n}\n"),
        """
        t.sched:2:3: error PE220: library lib cannot have a match
              match order.priority > 1
              ^^^^^^^^^^^^^^^^^^^^^^^^
            hint: put the match in the policies that use this library
        """,
    ),
    Case(
        "PE220 two matches",
        ["match order.priority > 1", "match order.priority < 9"],
        """
        t.sched:3:3: error PE220: policy "p" has two matches
              match order.priority < 9
              ^^^^^^^^^^^^^^^^^^^^^^^^
            hint: combine them into one with 'and'
        """,
    ),
    Case(
        "PE221 forward reference",
        ["let a = b + 1", "let b = 2"],
        """
        t.sched:2:11: error PE221: let b is used before it is defined
              let a = b + 1
                      ^
            hint: move 'let b' above the let that uses it
        """,
    ),
    Case(
        "PE221 self reference",
        ["let a = a + 1"],
        """
        t.sched:2:11: error PE221: let a refers to itself
              let a = a + 1
                      ^
            hint: a let cannot use its own value
        """,
    ),
    Case(
        "PE222 match reads a per-node root",
        ["match widget.count > 1"],
        """
        t.sched:2:9: error PE222: a match cannot read widget, which varies from node to node
              match widget.count > 1
                    ^^^^^^
            hint: a match is decided once, before any node is considered; move this into a filter
        """,
    ),
    Case(
        "PE222 match reads a per-node let",
        ["let w = widget.name", 'match w == "a"'],
        """
        t.sched:3:9: error PE222: a match cannot read let w, which varies from node to node
              match w == "a"
                    ^
            hint: a match is decided once, before any node is considered; move this into a filter
        """,
    ),
    Case(
        "PE222 match calls a per-node function",
        ['match score_of("x") > 1'],
        """
        t.sched:2:9: error PE222: a match cannot read score_of(), which varies from node to node
              match score_of("x") > 1
                    ^^^^^^^^
            hint: a match is decided once, before any node is considered; move this into a filter
        """,
    ),
    Case(
        "PE223 policy defined twice",
        ('policy "p" {}\npolicy "p" {}\n'),
        """
        t.sched:2:8: error PE223: policy "p" is defined twice
            policy "p" {}
                   ^^^
            hint: the first definition is at t.sched:1:8
        """,
    ),
    Case(
        "PE223 profile defined twice",
        ('policy "p" {}\nprofile "s" { policies "p" }\nprofile "s" { policies "p" }\n'),
        """
        t.sched:3:9: error PE223: profile "s" is defined twice
            profile "s" { policies "p" }
                    ^^^
            hint: the first definition is at t.sched:2:9
        """,
    ),
    Case(
        "PE224 overcommit below 1",
        ["overcommit cpu 0.5"],
        """
        t.sched:2:18: error PE224: overcommit ratio 0.5 for cpu is below 1
              overcommit cpu 0.5
                             ^^^
            hint: a ratio of 1 means no overcommit; ratios below 1 would shrink the node
        """,
    ),
    Case(
        "PE227 overcommit of an incompressible resource",
        ["overcommit memory 1.5"],
        """
        t.sched:2:14: error PE227: memory is not compressible and cannot be overcommitted
              overcommit memory 1.5
                         ^^^^^^
            hint: only cpu can be overcommitted
        """,
    ),
    Case(
        "PE227 overcommit of a GPU, quoted",
        ['overcommit "nvidia.com/gpu" 2 max_load 0.5'],
        """
        t.sched:2:14: error PE227: nvidia.com/gpu is not compressible and cannot be overcommitted
              overcommit "nvidia.com/gpu" 2 max_load 0.5
                         ^^^^^^^^^^^^^^^^
            hint: only cpu can be overcommitted
        """,
    ),
    Case(
        "PE227 max_load above 1",
        ["overcommit cpu 2.0 max_load 1.2"],
        """
        t.sched:2:3: error PE227: max_load 1.2 for cpu is not between 0 and 1
              overcommit cpu 2.0 max_load 1.2
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: max_load is a fraction of the node's allocatable, e.g. 0.8
        """,
    ),
]


@pytest.mark.parametrize("case", DIAGNOSTICS, ids=[c.name for c in DIAGNOSTICS])
def test_diagnostic(case: Case) -> None:
    assert rendered(case.text()) == textwrap.dedent(case.expected).strip("\n")


def test_every_checker_code_has_a_row() -> None:
    codes = {c.name.split()[0] for c in DIAGNOSTICS}
    checker_codes = {f"PE2{i:02d}" for i in range(1, 25)} - {"PE210"}  # PE210 is the loader's
    assert checker_codes <= codes


# --- well-typed expressions --------------------------------------------------------------

# (expression, the type the checker proves), each checked as ``let v = <expression>``.
TYPES = [
    ("1 + 2", "int"),
    ("1 + 2.5", "float"),
    ("2Gi + 1", "quantity"),
    ("1 - 500m", "quantity"),
    ("2Gi - 1Gi", "quantity"),
    ("2Gi + 0.5", "float"),
    ("2Gi * 2", "quantity"),
    ("2 * 2Gi", "quantity"),
    ("2Gi * 1.5", "float"),
    ("2Gi / 2", "quantity"),
    ("2Gi / 1Gi", "float"),
    ("7 / 2", "float"),
    ("7 % 2", "int"),
    ("-widget.weight", "float"),
    ('"a" + widget.name', "string"),
    ("[1] + [2.5]", "list<float>"),
    ('widget.labels["zone"]', "string?"),
    ('widget.labels["zone"] ?? "none"', "string"),
    ('order.labels["a"] ?? widget.colour', "string?"),
    ('order.labels["a"] ?? widget.colour ?? "x"', "string"),
    ("order.tags[0]", "string?"),
    ("widget.parts[0]", "Part?"),
    ("if widget.count > 1 then 1 else null", "int?"),
    ("if widget.count > 1 then 1 else 2.5", "float"),
    ("if widget.count > 1 then 1 else 2Gi", "quantity"),
    ("len(order.tags) + len(widget.name) + len(widget.labels)", "int"),
    ("any(p.spare for p in widget.parts)", "bool"),
    ('all(t.startswith("x") for t in order.tags)', "bool"),
    ("count(p.spare for p in widget.parts if p.size > 1Gi)", "int"),
    ("count([true, false])", "int"),
    ("sum(p.size for p in widget.parts)", "quantity"),
    ("sum([1, 2])", "int"),
    ("sum([])", "int"),
    ("min(p.size for p in widget.parts)", "quantity?"),
    ("max([1, 2.5])", "float?"),
    ("max(1, 2.5)", "float"),
    ("min(widget.count, 2Gi)", "quantity"),
    ('int("3")', "int?"),
    ("float(widget.count)", "float?"),
    ('quantity("16Gi")', "quantity?"),
    ("string(widget.parts)", "string"),
    ("abs(-2Gi)", "quantity"),
    ('widget.name.split(",")', "list<string>"),
    ("widget.name.lower().upper().trim()", "string"),
    ('widget.name.matches("^w[0-9]+$")', "bool"),
    ("widget.labels.keys()", "list<string>"),
    ("widget.capacity.values()", "list<quantity>"),
    ("[p.name for p in widget.parts if p.spare]", "list<string>"),
    ("[k + v for k, v in widget.labels]", "list<string>"),
    ("[k for k in widget.capacity]", "list<string>"),
    ("{1, 2}", "set<int>"),
    ('{"a": 1, "b": 2.5}', "map<string, float>"),
    ("shortfall(order, widget)", "list<string>"),
    ('"cpu" in widget.capacity', "bool"),
    ('"x" in order.tags', "bool"),
    ('"ab" not in widget.name', "bool"),
    ("widget.colour == null", "bool"),
    ('widget.colour != "red"', "bool"),
    ("widget.count == 2.5", "bool"),
    ("order.labels == widget.labels", "bool"),
    ("widget.count >= 2Gi", "bool"),
    ('widget.name < "m"', "bool"),
    ("not fits(order, widget) or widget.count > 0", "bool"),
]


@pytest.mark.parametrize(("expression", "expected"), TYPES, ids=[e for e, _ in TYPES])
def test_type(expression: str, expected: str) -> None:
    result = run(in_policy(f"let v = {expression}"))
    assert result.diagnostics == ()
    assert str(result.let_types[("p", "v")]) == expected
    checked = check_expression(expression, SCHEMA)
    assert checked.diagnostics == ()
    assert str(checked.type) == expected


# (rule, the type of its body): the bodies rules accept.
BODIES = [
    ("filter f { fits(order, widget) }", "bool"),
    ("filter f { shortfall(order, widget) }", "list<string>"),
    ("filter f { [p.name for p in widget.parts if not p.spare] }", "list<string>"),
    ("score s { widget.count }", "int"),
    ("score s { widget.weight * 2 }", "float"),
    ('score s { widget.capacity["cpu"] ?? 0 }', "quantity"),
    ("score s weight 3 normalize max when widget.count > 0 { 100 * widget.count }", "int"),
    (
        'filter f when order.labels["a"] == "b" { true } reason "{widget.parts} {widget.colour}"',
        "bool",
    ),
]


@pytest.mark.parametrize(("rule", "expected"), BODIES, ids=[r for r, _ in BODIES])
def test_rule_body(rule: str, expected: str) -> None:
    unit = load(in_policy(rule))
    result = check(unit, SCHEMA)
    assert result.diagnostics == ()
    (body_rule,) = unit.policies[0].rules
    assert str(result.type_of(body_rule.body)) == expected


def test_a_total_map_needs_no_default() -> None:
    stock = MapType(STRING, QUANTITY, bound=8, default=Fraction(0))
    schema = Schema(
        roots={**SCHEMA.roots, "stock": Root("stock", stock, "free stock, 0 when missing")},
        functions=SCHEMA.functions,
    )
    result = run(in_policy('score s { stock["cpu"] * 2 }'), schema)
    assert result.diagnostics == ()
    assert result.costs[("p", "s")] == 5


def test_a_filter_and_a_score_may_share_a_name() -> None:
    # kube-scheduler plugins such as TaintToleration are both, and keep one name.
    result = run(in_policy("filter f { true }", "score f { 1 }"))
    assert result.diagnostics == ()


# --- scopes ------------------------------------------------------------------------------


def test_scopes_clean() -> None:
    source = in_policy(
        'let kind = order.labels["kind"] ?? ""',
        'let vip = kind == "vip"',
        "match vip or order.priority > 5",  # a match may read lets that do not vary
        "filter f { total > 0 }",  # rules see every let of their policy, even later ones
        "let total = sum(p.size for p in widget.parts)",
        "filter shadow { any(kind > 0 for kind in [1, 2]) }",  # a loop variable shadows a let
        "filter widget_loop { all(widget.spare for widget in widget.parts) }",
    )
    result = run(source)
    assert result.diagnostics == ()
    assert {k: str(t) for k, t in result.let_types.items()} == {
        ("p", "kind"): "string",
        ("p", "vip"): "bool",
        ("p", "total"): "quantity",
    }


def test_library_lets_are_its_own() -> None:
    source = (
        "library lib {\n"
        "  let big = widget.count > 10\n"
        "  filter large { big }\n"
        "}\n" + in_policy("use lib", "filter f { big }")
    )
    assert rendered(source) == textwrap.dedent(
        """
        t.sched:7:14: error PE201: unknown name 'big'
              filter f { big }
                         ^^^
            hint: names in scope here: order, widget
        """
    ).strip("\n")


# --- every error, no cascades ------------------------------------------------------------


def test_an_error_does_not_cascade() -> None:
    # widgt is unknown; the '+', the '>' and the filter body then say nothing more.
    result = run(
        in_policy('filter f { widgt.count + 1 > "a" }', "let x = nope", "score s { x * 2 }")
    )
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PE201", 2), ("PE201", 3)]


def test_every_error_is_reported_in_order() -> None:
    source = in_policy(
        "score b { widget.name }",
        "filter a { nope }",
        "overcommit cpu 0.5",
        "score c normalize wat { 1 }",
    )
    result = run(source)
    assert [(d.code, d.span.line) for d in result.diagnostics] == [
        ("PE207", 2),
        ("PE201", 3),
        ("PE224", 4),
        ("PE215", 5),
    ]
    assert not result.ok
    assert result.errors == result.diagnostics


def test_link_diagnostics_only_when_check_links() -> None:
    unit = load(in_policy("use nope"))
    assert [d.code for d in check(unit, SCHEMA).diagnostics] == ["PE213"]
    linked = link(unit)
    result = check(unit, SCHEMA, linked)
    assert result.diagnostics == ()
    assert result.linked is linked


# --- side tables -------------------------------------------------------------------------


def _walk(expr: n.Expr) -> list[n.Expr]:
    found = [expr]
    for child in children(expr):
        found.extend(_walk(child))
    return found


def test_every_expression_has_a_type() -> None:
    unit = load(
        in_policy(
            'let m = order.labels["m"] ?? "x"',
            'filter f when m != "y" { any(p.spare for p in widget.parts) } reason "{m}"',
            "score s { sum([x * 2 for x in [1, 2, 3] if x > 1]) }",
        )
    )
    result = check(unit, SCHEMA)
    assert result.ok
    policy = unit.policies[0]
    roots = [let.expr for let in policy.lets]
    for rule in policy.rules:
        roots.extend(e for e in (rule.guard, rule.body) if e is not None)
        if isinstance(rule, n.Filter) and rule.reason is not None:
            roots.append(rule.reason)
    for root in roots:
        for expr in _walk(root):
            assert id(expr) in result.types, expr
            assert id(expr) in result.per_node, expr


def test_bindings_calls_and_patterns() -> None:
    unit = load(
        in_policy(
            "let m = order.name",
            'filter f { fits(order, widget) and m.matches("^o") and any(p.spare for p in widget.parts) }',
        )
    )
    result = check(unit, SCHEMA)
    assert result.ok
    body = unit.policies[0].rules[0].body
    assert isinstance(body, n.Binary) and isinstance(body.left, n.Binary)
    fits_call, matches_call = body.left.left, body.left.right
    any_call = body.right
    assert isinstance(fits_call, n.Call) and isinstance(matches_call, n.MethodCall)
    assert result.calls[id(fits_call)] is SCHEMA.functions["fits"]
    assert result.patterns[id(matches_call)].pattern == "^o"
    m_name = matches_call.obj
    assert result.bindings[id(m_name)].kind == "let"
    assert result.bindings[id(m_name)].let is unit.policies[0].lets[0]
    assert isinstance(any_call, n.Call)
    generator = any_call.args[0]
    assert isinstance(generator, n.Comprehension)
    p_name = generator.element.obj  # type: ignore[attr-defined]
    assert result.bindings[id(p_name)].kind == "target"
    assert result.bindings[id(p_name)].comprehension is generator
    assert result.bindings[id(fits_call.args[0])].kind == "root"


def test_per_node() -> None:
    unit = load(
        in_policy(
            "let o = order.priority",
            "let w = widget.count + o",
            "filter f { o > 1 and w > 1 and score_of(order.name) > 0 }",
        )
    )
    result = check(unit, SCHEMA)
    assert result.ok
    o_let, w_let = unit.policies[0].lets
    assert result.per_node[id(o_let.expr)] is False
    assert result.per_node[id(w_let.expr)] is True
    body = unit.policies[0].rules[0].body
    assert isinstance(body, n.Binary) and isinstance(body.left, n.Binary)
    assert result.per_node[id(body.left.left)] is False  # o > 1: once per order
    assert result.per_node[id(body.left.right)] is True  # w reads widget
    assert result.per_node[id(body.right)] is True  # score_of reads the context per widget


def test_check_expression_reports_with_its_source() -> None:
    checked = check_expression('widget.colour + "x"', SCHEMA)
    assert [render(d, 'widget.colour + "x"') for d in checked.diagnostics] == [
        textwrap.dedent(
            """
            <expr>:1:1: error PE209: this value may be null (string?); '+' needs a value
                widget.colour + "x"
                ^^^^^^^^^^^^^
                hint: give it a default with '??': (widget.colour ?? "")
            """
        ).strip("\n")
    ]
    assert str(checked.type) == "dyn"


# --- robustness --------------------------------------------------------------------------

_ATOMS = st.sampled_from(
    [
        "1", "2.5", "2Gi", '"a"', "true", "null", "widget", "order", "widget.parts",
        "widget.labels", "widget.colour", "order.tags", "widget.count", "widget.capacity",
        "[]", "{}", "[1, 2]", '{"k": 1}', "nope",
    ]
)  # fmt: skip


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.sampled_from(["+", "-", "*", "/", "%", "==", "<", "in", "and", "or", "??"])
    return st.one_of(
        st.builds(lambda a, op, b: f"({a} {op} {b})", inner, binary, inner),
        st.builds(lambda a: f"(not {a})", inner),
        st.builds(lambda a, b: f"{a}[{b}]", inner, inner),
        st.builds(lambda a, b: f"{a}.{b}", inner, st.sampled_from(["name", "size", "keys()"])),
        st.builds(lambda c, a, b: f"(if {c} then {a} else {b})", inner, inner, inner),
        st.builds(
            lambda f, a: f"{f}({a})",
            st.sampled_from(["len", "any", "sum", "min", "int", "string", "abs", "fits"]),
            inner,
        ),
        st.builds(lambda e, xs: f"[{e} for x in {xs}]", inner, inner),
        st.builds(lambda e, xs: f"count({e} for x in {xs} if x)", inner, inner),
    )


@given(st.recursive(_ATOMS, _grow, max_leaves=5))
@settings(max_examples=300, deadline=None)
def test_the_checker_never_raises(source: str) -> None:
    try:
        checked = check_expression(source, SCHEMA)
    except ValueError:  # a syntax error: the generator is looser than the grammar
        assume(False)
        return
    assert all(d.code.startswith("PE2") for d in checked.diagnostics)
    # One diagnostic per node at most: a cascade would report the same place twice.
    places = [(d.span.line, d.span.column, d.span.end_column) for d in checked.diagnostics]
    assert len(places) == len(set(places))
    assert checked.cost >= 1
