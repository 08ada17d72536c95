"""Very long and very deep expressions: accepted and evaluated, or refused with PE109 — never a
RecursionError in the parser, checker, planner, evaluators, lint or fmt.

Runs of ``and``/``or`` are balanced by the parser, so their length costs nothing in depth; any
other nesting is bounded by ``MAX_NESTING``. Each construct is taken to exactly the limit (and
must then pass every stage) and one past it (and must then be refused, verbatim).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from policyengine.cli.main import main
from policyengine.diagnostics import SHOWN_COLUMNS, Diagnostic, Severity, Span, render
from policyengine.lang import nodes as n
from policyengine.lang.parser import MAX_NESTING, parse, parse_expression

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "cli" / "fixtures" / "snapshots" / "gpu-cluster.yaml")
POD = "default/web-1"  # a pending pod of the fixture


def _policy(rule: str) -> str:
    return f'policy "deep" {{\n  match true\n  {rule}\n}}\n'


def _plus(depth: int) -> str:
    return "filter f { " + " + ".join(["1"] * depth) + " > 0 }"


def _negations(depth: int) -> str:
    return "filter f { " + "not " * (depth - 1) + "true }"


def _else_ifs(depth: int) -> str:
    branches = "".join(f'if node.name == "n{i}" then true else ' for i in range(depth))
    return "filter f { " + branches + "true }"


def _coalesce(depth: int) -> str:
    labels = " ?? ".join(f'node.labels["l{i}"]' for i in range(depth))
    return "filter f { " + labels + ' ?? "x" != "" }'


def _methods(depth: int) -> str:
    return "filter f { node.name" + ".lower()" * depth + ' != "" }'


def _lists(depth: int) -> str:
    return "filter f { len(" + "[" * depth + "1" + "]" * depth + ") > 0 }"


def _comprehensions(depth: int) -> str:
    inner = "[1]"
    for i in range(depth):
        inner = f"[x{i} for x{i} in {inner}]"
    return "filter f { len(" + inner + ") > 0 }"


CONSTRUCTS: list[tuple[str, Callable[[int], str]]] = [
    ("plus", _plus),
    ("not", _negations),
    ("else-if", _else_ifs),
    ("coalesce", _coalesce),
    ("method", _methods),
    ("list", _lists),
    ("comprehension", _comprehensions),
]


def _depth_of(rule: str) -> int:
    """The rule body's nesting depth, read from the tree or from the parser's refusal."""
    result = parse(_policy(rule), "deep.sched")
    if result.file is None:
        (refused,) = result.diagnostics
        assert refused.code == "PE109", refused
        return int(refused.message.split(" nests ")[1].split()[0])
    return n.nesting_depth(result.file.policies[0].rules[0].body)


def _largest(make: Callable[[int], str]) -> int:
    """The largest size of the construct that nests at most ``MAX_NESTING`` deep."""
    size = 1
    while _depth_of(make(size + 1)) <= MAX_NESTING:
        size += 1
    return size


def _at_limit(make: Callable[[int], str]) -> str:
    """The construct grown to the limit (within the one or two levels a step adds)."""
    grown = make(_largest(make))
    assert _depth_of(grown) >= MAX_NESTING - 1
    return grown


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("kind", "make"), CONSTRUCTS, ids=[k for k, _ in CONSTRUCTS])
def test_nesting_at_the_limit_passes_every_stage(
    kind: str, make: Callable[[int], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.sched"
    path.write_text(_policy(_at_limit(make)))
    commands = [
        ["lint", str(path)],
        ["simulate", "--policy", str(path), "--cluster", CLUSTER],
        ["explain", "--policy", str(path), "--cluster", CLUSTER, "--pod", POD],
        ["filter", "--policy", str(path), "--cluster", CLUSTER, "--pod", POD],
    ]
    for args in commands:
        code, _out, err = _run(args, capsys)
        assert "internal error" not in err and "Recursion" not in err, (args, err)
        assert code in (0, 1), (args, code, err)
    code, _out, err = _run(["fmt", str(path)], capsys)
    assert code == 0, err
    assert _run(["fmt", "--check", str(path)], capsys)[0] == 0


@pytest.mark.parametrize(("kind", "make"), CONSTRUCTS, ids=[k for k, _ in CONSTRUCTS])
def test_nesting_past_the_limit_is_refused(kind: str, make: Callable[[int], str]) -> None:
    source = _policy(make(_largest(make) + 1))
    result = parse(source, "deep.sched")
    assert result.file is None
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "PE109"
    depth = _depth_of(make(_largest(make) + 1))
    assert depth in (MAX_NESTING + 1, MAX_NESTING + 2)
    assert diagnostic.message == (
        f"this expression nests {depth} levels deep; at most {MAX_NESTING} are allowed"
    )
    assert (diagnostic.span.line, diagnostic.span.column) == (
        3,
        source.split("\n")[2].index("{") + 3,
    )


def test_ten_thousand_nested_levels_are_one_diagnostic() -> None:
    source = _policy("score s { " + " + ".join(["1"] * 10_000) + " }")
    result = parse(source, "deep.sched")
    assert [d.code for d in result.diagnostics] == ["PE109"]
    line = source.split("\n")[2]
    assert (
        render(result.diagnostics[0], source)
        == (
            "deep.sched:3:13: error PE109: this expression nests 10000 levels deep; at most "
            f"{MAX_NESTING} are allowed\n"
            f"    {line[:SHOWN_COLUMNS]}…\n"  # the line is cut: its first 120 columns are shown
            "                " + "^" * (SHOWN_COLUMNS - 12) + "\n"
            "    hint: split it with let bindings, or use a list, set or map with 'in' or an "
            "aggregate (any, all, sum, …) instead of a long chain"
        )
    )


@pytest.mark.parametrize("op", ["and", "or"])
def test_a_run_of_ten_thousand_clauses_is_balanced(op: str) -> None:
    operands = [f'node.name != "n{i}"' for i in range(10_000)]
    tree = parse_expression(f" {op} ".join(operands))
    # 14 levels of the run (log2 of 10,000, rounded up), then `node.name != "n…"`: 3 more.
    assert n.nesting_depth(tree) == 17


@pytest.mark.parametrize(
    ("grouped", "flat"),
    [
        ("a or (b or c)", "a or b or c"),
        ("(a or b) or (c or d)", "a or b or c or d"),
        ("a and (b and (c and d)) and e", "a and b and c and d and e"),
    ],
)
def test_parentheses_around_a_run_of_the_same_operator_join_it(grouped: str, flat: str) -> None:
    assert parse_expression(grouped) == parse_expression(flat)


def test_a_run_of_three_stays_left_nested() -> None:
    a, b, c = n.Name("a"), n.Name("b"), n.Name("c")
    assert parse_expression("a or b or c") == n.Binary("or", n.Binary("or", a, b), c)


@pytest.mark.parametrize(("op", "pick", "expected"), [("or", "n9999", 0), ("and", "none", 0)])
def test_ten_thousand_clauses_pass_every_command(
    op: str,
    pick: str,
    expected: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    compare = "==" if op == "or" else "!="
    clauses = f" {op} ".join(f'node.name {compare} "n{i}"' for i in range(10_000))
    path = tmp_path / "long.sched"
    path.write_text(_policy(f"filter f {{ {clauses} }}"))
    for args in (
        ["lint", str(path)],
        ["fmt", "--check", str(path)],
        ["simulate", "--policy", str(path), "--cluster", CLUSTER],
        ["explain", "--policy", str(path), "--cluster", CLUSTER, "--pod", POD],
    ):
        code, _out, err = _run(args, capsys)
        assert "internal error" not in err, (args, err)
        assert code in (0, 1), (args, code, err)
    code, out, _err = _run(
        ["filter", "--policy", str(path), "--cluster", CLUSTER, "--pod", POD, "--format", "json"],
        capsys,
    )
    assert code == expected
    decided = json.loads(out)
    if op == "or":  # no node is named n0..n9999: every node fails the run of equalities
        assert decided["feasible"] == []
    else:  # every node differs from all of them
        assert decided["infeasible"] == {}


def test_a_megabyte_string_is_read_and_shown_cut() -> None:
    source = _policy('filter f { node.name == "' + "x" * 1_000_000 + '" or 1 }')
    assert parse(source, "big.sched").file is not None
    line = source.split("\n")[2]
    column = line.index("1 }") + 1
    at = Span("big.sched", 3, column, 3, column + 1)
    _, text, caret = render(Diagnostic("PE204", Severity.ERROR, "m", at), source).split("\n")
    assert len(text) == 4 + 1 + SHOWN_COLUMNS  # the indent, an ellipsis, the window
    assert text.endswith('x" or 1 }')
    assert text[caret.index("^")] == "1" and caret.count("^") == 1
