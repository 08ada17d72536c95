"""The planner's tables of expressions and their values, written against the sample order and
widget of ``widget_schema`` (``env_for``): every construct's value, and the short circuits that
must never evaluate their other side (``explode()`` raises if it is ever called).

The planner is tested against these tables, and the reference evaluator is held to the same
ones, so the two evaluators are checked case for case.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

VALUES: list[tuple[str, Any]] = [
    # literals
    ("42", 42),
    ("2.5", 2.5),
    ("500m", Fraction(1, 2)),
    ("16Gi", Fraction(16 * 2**30)),
    ('"text"', "text"),
    ("true", True),
    ("null", None),
    ("[1, 2, 3]", [1, 2, 3]),
    ("{1, 2, 2}", frozenset({1, 2})),
    ('{"a": 1, "b": 2}', {"a": 1, "b": 2}),
    ("[]", []),
    # arithmetic
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 / 2", 3.5),
    ("6 / 3", 2.0),
    ("7 % 3", 1),
    ("-widget.count", -3),
    ("10 - 2.5", 7.5),
    ('"ab" + "cd"', "abcd"),
    ("100m + 200m", Fraction(3, 10)),
    ("3 * 500m", Fraction(3, 2)),
    ("1Gi / 4", Fraction(2**28)),
    ('widget.capacity["cpu"] / 3', Fraction(4, 3)),
    ("1Gi / 2Gi", 0.5),
    ("500m * 1.5", 0.75),
    ("2 / 500m", 4.0),
    # comparison
    ("1 < 2", True),
    ("2 <= 1", False),
    ("1 == 1.0", True),
    ("500m == 0.5", True),
    ("100m < 1", True),
    ("16Gi > 1G", True),
    ('"a" != "b"', True),
    ("widget.count >= 3", True),
    # membership
    ('"gpu" in order.tags', True),
    ('"cpu" not in order.tags', True),
    ('"zone" in widget.labels', True),
    ('"eu" in widget.labels["zone"] ?? ""', True),
    ("widget.count in [1, 2, 3]", True),
    ("widget.count in {4, 5}", False),
    ("widget.count not in [1, 2, 3]", False),
    # logic
    ("true and false", False),
    ("widget.count > 1 and widget.weight > 1", True),
    ("widget.count > 5 or widget.weight > 1", True),
    ("not (widget.count > 1)", False),
    # null safety
    ('widget.labels["zone"] ?? "none"', "eu-1"),
    ('widget.labels["missing"] ?? "none"', "none"),
    ('widget.labels["missing"]', None),
    ('widget.colour ?? "grey"', "grey"),
    ("order.tags[0]", "fast"),
    ("order.tags[2]", None),
    ("order.tags[-1]", None),
    ('order.tags[9] ?? "none"', "none"),
    ("null ?? 1", 1),
    # conditional
    ('if widget.count > 2 then "big" else "small"', "big"),
    ('if widget.count > 5 then "big" else "small"', "small"),
    # attributes
    ("widget.name", "w-7"),
    ("widget.parts[1].size", Fraction(2)),
    ("widget.parts[7] == null", True),
    # comprehensions
    ("[p.name for p in widget.parts]", ["a", "b", "c"]),
    ("[p.name for p in widget.parts if p.spare]", ["a", "c"]),
    ("[k for k in widget.labels]", ["zone", "rack"]),
    ('[k + "=" + v for k, v in widget.labels]', ["zone=eu-1", "rack=r2"]),
    ("[x * 2 for x in [1, 2, 3] if x != 2]", [2, 6]),
    ("[x for x in []]", []),
    ("[p.name for p in widget.parts if any(q.size > p.size for q in widget.parts)]", ["a", "c"]),
    # aggregates
    ("len(widget.parts)", 3),
    ("len(widget.labels)", 2),
    ('len("abc")', 3),
    ("any(p.spare for p in widget.parts)", True),
    ("all(p.spare for p in widget.parts)", False),
    ("all(p.size > 0 for p in widget.parts)", True),
    ("count(p.spare for p in widget.parts)", 2),
    ("count([true, false, true])", 2),
    ("any([false, false])", False),
    ("all([])", True),
    ("any([])", False),
    ("count([])", 0),
    ("sum(p.size for p in widget.parts)", Fraction(11, 4)),
    ("sum(p.size for p in widget.parts if p.spare)", Fraction(3, 4)),
    ("sum([1, 2, 3])", 6),
    ("sum([])", 0),
    ("sum(p.size for p in widget.parts if p.size > 10)", 0),
    ("min(p.size for p in widget.parts)", Fraction(1, 4)),
    ("max(p.size for p in widget.parts)", Fraction(2)),
    ("min([])", None),
    ("max(p.size for p in widget.parts if p.size > 10)", None),
    ("max([]) ?? 7", 7),
    ("min(3, 1, 2)", 1),
    ("max(1, 2.5)", 2.5),
    ("max(widget.count, 10)", 10),
    # conversions
    ('int("42")', 42),
    ('int(" -7 ")', -7),
    ('int("4.2")', None),
    ('int("x")', None),
    ("int(2.9)", 2),
    ("int(1500m)", 1),
    ('float("2.5")', 2.5),
    ('float("nope")', None),
    ("float(3)", 3.0),
    ('quantity("16Gi")', Fraction(16 * 2**30)),
    ('quantity("250m")', Fraction(1, 4)),
    ('quantity("lots")', None),
    ("quantity(2)", Fraction(2)),
    ("string(1500m)", "1500m"),
    ("string(0.5)", "0.5"),
    ("string(null)", "null"),
    ('string(["a", 1])', "[a, 1]"),
    ("abs(-3)", 3),
    ("abs(-250m)", Fraction(1, 4)),
    # string helpers
    ('widget.name.startswith("w-")', True),
    ('widget.name.endswith("-7")', True),
    ('widget.name.contains("-")', True),
    ('"a,b,c".split(",")', ["a", "b", "c"]),
    ('"MiXed".lower()', "mixed"),
    ('"MiXed".upper()', "MIXED"),
    ('"  x  ".trim()', "x"),
    ('widget.name.matches("^w-[0-9]+$")', True),
    ('widget.name.matches("[0-9]{2}")', False),
    ('widget.labels["zone"].matches("eu")', True),
    ("widget.labels.keys()", ["zone", "rack"]),
    ("widget.labels.values()", ["eu-1", "r2"]),
    ("widget.capacity.keys()", ["cpu", "memory"]),
    # domain functions
    ("fits(order, widget)", True),
    ("shortfall(order, widget)", []),
    ("probe(3) + 1", 4),
]


# explode() raises: each of these would fail if the side it stands on were evaluated.
SHORT_CIRCUITS = [
    ("widget.count > 100 and explode()", False),
    ("widget.count > 1 or explode()", True),
    ("widget.name ?? explode()", "w-7"),
    ("if widget.count > 1 then 1 else explode()", 1),
    ("if widget.count < 1 then explode() else 2", 2),
    ("any(p.spare or explode() for p in widget.parts)", True),
    ("any(p.spare for p in widget.parts) or explode()", True),
    ("all(p.size > 1 and explode() for p in widget.parts)", False),
    ("[explode() for p in widget.parts if p.size > 10]", []),
    ("false and explode()", False),
]
