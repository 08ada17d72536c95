"""``node.load`` as policies read it: fractions and age, null (not 0) when missing or stale."""

from __future__ import annotations

import random

import pytest

from policyengine.engine.cycle import schedule
from policyengine.lang.compiler import compile_texts
from policyengine.model.load import NodeLoad
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod

POLICY = """
policy "p" {
  score value { %s }
}
"""


@pytest.mark.parametrize(
    ("expression", "load", "expected"),
    [
        ("100 * (node.load.cpu ?? -1.0)", NodeLoad(cpu=0.25, age=3), 25),
        ("100 * (node.load.memory ?? -1.0)", NodeLoad(memory=0.5, age=3), 50),
        ("100 * (node.load.gpu ?? -1.0)", NodeLoad(gpu=0.75, age=3), 75),
        ("node.load.age ?? -1", NodeLoad(gpu=0.75, age=42), 42),
        ("100 * (node.load.cpu ?? -1.0)", None, -100),  # missing: null, never 0
        ("node.load.age ?? -1", None, -1),
        ("if node.load.gpu == null then 7 else 0", NodeLoad(cpu=0.1, age=1), 7),
    ],
    ids=[
        "100 * (node.load.cpu ?? -1.0)-NodeLoad(cpu=0.25,age=3)",
        "100 * (node.load.memory ?? -1.0)-NodeLoad(memory=0.5,age=3)",
        "100 * (node.load.gpu ?? -1.0)-NodeLoad(gpu=0.75,age=3)",
        "node.load.age ?? -1-NodeLoad(gpu=0.75,age=42)",
        "100 * (node.load.cpu ?? -1.0)-None",
        "node.load.age ?? -1-None",
        "if node.load.gpu == null then 7 else 0-NodeLoad(cpu=0.1,age=1)",
    ],
)
def test_node_load(expression: str, load: NodeLoad | None, expected: float) -> None:
    result = compile_texts({"p.sched": POLICY % expression}, default_schema())
    assert result.program is not None, result.diagnostics
    snap = ClusterSnapshot.build([make_node("n1")])
    if load is not None:
        snap = snap.with_loads({"n1": load})
    decision = schedule(result.program, make_pod("p"), snap, random.Random(0))
    assert decision.scores["n1"].raw["value"] == expected
