"""The ``select`` statement: parsed, formatted back unchanged, checked (a known mode, a key
exactly when the mode orders by one, a key that can be ordered, one per policy, none in a
library) and compiled into the key the engine orders tied nodes by."""

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
from policyengine.schedlib import default_schema

PATH = "t.sched"

FORMATTED = [
    'policy "p" {\n  select random\n}\n',
    'policy "p" {\n  select lowest { node.name }\n}\n',
    'policy "p" {\n  select highest { int(node.labels["rack"] ?? "0") ?? 0 }\n}\n',
]


@pytest.mark.parametrize("source", FORMATTED, ids=lambda source: source.splitlines()[1].strip())
def test_formatted_source_round_trips(source: str) -> None:
    result = format_source(source, PATH)
    assert result.diagnostics == ()
    assert result.text == source


def test_parses_to_a_select_statement() -> None:
    parsed = parse('policy "p" { select lowest { node.name } }', PATH)
    assert parsed.ok and parsed.file is not None
    (policy,) = parsed.file.policies
    (select,) = policy.selects
    assert select.mode == "lowest"
    assert isinstance(select.key, n.Attribute) and select.key.name == "name"


def rendered(source: str) -> str:
    result = check(load_texts({PATH: source}), default_schema())
    return "\n\n".join(render(d, source) for d in result.diagnostics)


CHECKS = [
    (
        "unknown mode",
        'policy "p" {\n  select middle\n}\n',
        """\
        t.sched:2:10: error PE230: unknown select mode middle
              select middle
                     ^^^^^^
            hint: select random, select lowest { KEY } or select highest { KEY }""",
    ),
    (
        "key missing",
        'policy "p" {\n  select highest\n}\n',
        """\
        t.sched:2:3: error PE230: select highest needs a key
              select highest
              ^^^^^^^^^^^^^^
            hint: select highest { node.name }: the tied node with the highest key wins""",
    ),
    (
        "random with a key",
        'policy "p" {\n  select random { node.name }\n}\n',
        """\
        t.sched:2:19: error PE230: select random takes no key
              select random { node.name }
                              ^^^^^^^^^
            hint: to order tied nodes by a key, write select lowest { KEY } or select highest { KEY }""",
    ),
    (
        "key cannot be ordered",
        'policy "p" {\n  select lowest { node.labels }\n}\n',
        """\
        t.sched:2:19: error PE230: the key of select lowest must be int, float, quantity or string, not map<string, string>
              select lowest { node.labels }
                              ^^^^^^^^^^^
            hint: tied nodes are ordered by the key""",
    ),
    (
        "key may be null",
        'policy "p" {\n  select lowest { node.labels["rack"] }\n}\n',
        """\
        t.sched:2:19: error PE209: this value may be null (string?); a select key needs a value
              select lowest { node.labels["rack"] }
                              ^^^^^^^^^^^^^^^^^^^
            hint: give it a default with '??': (node.labels["rack"] ?? "")""",
    ),
    (
        "second select",
        'policy "p" {\n  select random\n  select lowest { node.name }\n}\n',
        """\
        t.sched:3:3: error PE230: policy "p" has a second select
              select lowest { node.name }
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^
            hint: keep one select""",
    ),
    (
        "in a library",
        "library l {\n  select random\n}\n",
        """\
        t.sched:2:3: error PE230: library l has a select
              select random
              ^^^^^^^^^^^^^
            hint: a select belongs in the policy that governs the pods""",
    ),
    ("clean", 'policy "p" {\n  let k = node.pod_count\n  select lowest { k }\n}\n', ""),
]


@pytest.mark.parametrize("source,expected", [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_checker(source: str, expected: str) -> None:
    assert rendered(source) == textwrap.dedent(expected)


@pytest.mark.parametrize(
    ("statement", "mode"),
    [("", None), ("select random", None), ("select lowest { node.name }", "lowest")],
    ids=["none", "random", "lowest"],
)
def test_compiled_select(statement: str, mode: str | None) -> None:
    result = compile_texts({PATH: f'policy "p" {{\n  {statement}\n}}\n'}, default_schema())
    assert result.program is not None, result.diagnostics
    (policy,) = result.program.policies
    assert (policy.select.mode if policy.select is not None else None) == mode


@pytest.mark.parametrize(
    ("statement", "by_name"),
    [
        ("select lowest { node.name }", True),
        ("select highest { node.name }", True),
        ('select lowest { node.labels["name"] ?? "" }', False),
        ("select lowest { pod.name }", False),
        ('select lowest { node.name + "" }', False),
    ],
    ids=["lowest name", "highest name", "a label", "the pod's name", "an expression of it"],
)
def test_a_key_that_is_the_node_name_orders_by_name_alone(statement: str, by_name: bool) -> None:
    result = compile_texts({PATH: f'policy "p" {{\n  {statement}\n}}\n'}, default_schema())
    assert result.program is not None, result.diagnostics
    (policy,) = result.program.policies
    assert policy.select is not None and policy.select.by_name is by_name
