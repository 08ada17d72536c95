"""Linking ``use``, ``disable [filter|score]`` and ``weight`` into each policy's rule list."""

from __future__ import annotations

import pytest

from policyengine.lang.link import link
from policyengine.lang.loader import load_texts

LIBRARY = """
library lib {
  filter fit { true }
  score fit weight 1 { 1 }
  score spread weight 2 { 2 }
  filter ready { true }
}
"""

CASES = [
    # use statement, resulting (qualified name, kind, weight), diagnostics
    (
        "use lib",
        [
            ("lib.fit", "filter", 0),
            ("lib.fit", "score", 1),
            ("lib.spread", "score", 2),
            ("lib.ready", "filter", 0),
        ],
        [],
    ),
    ("use lib { disable fit }", [("lib.spread", "score", 2), ("lib.ready", "filter", 0)], []),
    (
        "use lib { disable score fit }",
        [("lib.fit", "filter", 0), ("lib.spread", "score", 2), ("lib.ready", "filter", 0)],
        [],
    ),
    (
        "use lib { disable filter fit  weight spread 7 }",
        [("lib.fit", "score", 1), ("lib.spread", "score", 7), ("lib.ready", "filter", 0)],
        [],
    ),
    (
        "use lib { weight fit 5 }",
        [
            ("lib.fit", "filter", 0),
            ("lib.fit", "score", 5),
            ("lib.spread", "score", 2),
            ("lib.ready", "filter", 0),
        ],
        [],
    ),
    ("use lib { weight ready 5 }", None, ["PE214 lib.ready is a filter and has no weight"]),
    ("use lib { disable score ready }", None, ["PE214 library lib has no score rule ready"]),
    ("use lib { disable nope }", None, ["PE214 library lib has no rule nope"]),
    ("use other", [], ["PE213 unknown library other"]),
]


@pytest.mark.parametrize(("use", "rules", "diagnostics"), CASES, ids=[c[0] for c in CASES])
def test_link(use: str, rules: list[tuple[str, str, int]] | None, diagnostics: list[str]) -> None:
    unit = load_texts({"p.sched": LIBRARY + f'policy "p" {{ {use} }}\n'})
    linked = link(unit)
    assert [f"{d.code} {d.message}" for d in linked.diagnostics] == diagnostics
    if rules is not None:
        (policy,) = linked.policies
        assert [(r.qualified_name, r.kind, r.weight) for r in policy.rules] == rules
