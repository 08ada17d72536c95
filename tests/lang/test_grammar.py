"""The grammar builds from scratch in strict LALR mode: no conflicts, no regex collisions.

Other tests may load the parse table from the private cache; this one never does, so a
grammar change that introduces an ambiguity (or a missing strict-mode dependency) fails here.
"""

from __future__ import annotations

from lark import Lark

from policyengine.lang.grammar import grammar_path


def test_grammar_builds_strictly_without_the_cache() -> None:
    parser = Lark(
        grammar_path().read_text(encoding="utf-8"),
        parser="lalr",
        strict=True,
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "expr"],
    )
    assert parser.parse('policy "p" { filter f { true } }', start="start") is not None
