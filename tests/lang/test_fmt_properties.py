"""Property tests of ``fmt``: for any tree, printing then parsing gives the tree back.

Hypothesis builds random syntax trees (every expression and statement kind), prints them with
the formatter, then roughens the text — lines broken at random token gaps, blank lines, comments
on their own lines and after code, including inside multi-line expressions — and checks that the
roughened text still means the same tree, that formatting it keeps the tree and every comment in
order, and that formatting the result again changes nothing.
"""

from __future__ import annotations

import re
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from policyengine.lang import fmt
from policyengine.lang import nodes as n
from policyengine.lang.fmt import format_file, format_source
from policyengine.lang.parser import parse
from tests.lang.strategies import EXPR, SETTINGS, STRING_LITERAL, files, roughened


def _comments(source: str) -> list[str]:
    result = parse(source, "<gen>")
    assert result.file is not None, result.diagnostics
    return [c.text for c in result.file.comments]


@SETTINGS
@given(files)
def test_printed_tree_parses_back_to_itself(tree: n.SourceFile) -> None:
    text = format_file(tree)
    result = parse(text, "<gen>")
    assert result.ok, (text, result.diagnostics)
    assert result.file == tree
    assert format_source(text, "<gen>").text == text


@SETTINGS
@given(st.data())
def test_formatting_keeps_tree_and_comments_and_is_idempotent(data: st.DataObject) -> None:
    tree = data.draw(files)
    rough, comments = data.draw(roughened(format_file(tree)))
    original = parse(rough, "<gen>")
    assert original.ok, (rough, original.diagnostics)
    assert original.file == tree
    assert _comments(rough) == comments

    formatted = format_source(rough, "<gen>")
    assert formatted.text is not None, (rough, formatted.diagnostics)
    again = parse(formatted.text, "<gen>")
    assert again.ok and again.file == tree
    assert _comments(formatted.text) == comments
    assert format_source(formatted.text, "<gen>").text == formatted.text, rough


@SETTINGS
@given(st.data())
def test_narrow_width_breaks_chains_and_keeps_meaning(data: st.DataObject) -> None:
    """At 30 columns nearly every rule is broken, nested chains included."""
    tree = data.draw(files)
    with patch.object(fmt, "WIDTH", 30):
        rough, comments = data.draw(roughened(format_file(tree)))
        formatted = format_source(rough, "<gen>")
        assert formatted.text is not None, (rough, formatted.diagnostics)
        assert format_source(formatted.text, "<gen>").text == formatted.text
    again = parse(formatted.text, "<gen>")
    assert again.ok and again.file == tree
    assert _comments(formatted.text) == comments


@SETTINGS
@given(EXPR)
def test_parentheses_are_minimal(expr: n.Expr) -> None:
    """Dropping any one pair of parentheses the printer wrote changes the tree (or the parse)."""
    text = format_file(n.SourceFile("<gen>", (n.Policy("p", (n.Let("x", expr),)),)))
    for open_at, close_at in _paren_pairs(text):
        inner = text[open_at + 1 : close_at]
        if inner.startswith("if ") and re.search(r"\b(if|then)\s*$", text[:open_at]):
            continue  # the one rule kept for readability, not precedence
        stripped = text[:open_at] + " " + text[open_at + 1 : close_at] + " " + text[close_at + 1 :]
        result = parse(stripped, "<gen>")
        assert not result.ok or result.file != parse(text, "<gen>").file, stripped


def _paren_pairs(text: str) -> list[tuple[int, int]]:
    """Grouping parentheses (not a call's), outside strings."""
    masked = STRING_LITERAL.sub(lambda m: "_" * len(m.group()), text)
    pairs, stack = [], []
    for index, char in enumerate(masked):
        if char == "(":
            before = masked[:index].rstrip()
            is_call = bool(before) and (before[-1].isalnum() or before[-1] == "_")
            is_call = is_call and not re.search(r"\b(and|or|not|in|if|then|else|for)$", before)
            stack.append((index, is_call))
        elif char == ")":
            start, is_call = stack.pop()
            if not is_call:
                pairs.append((start, index))
    return pairs
