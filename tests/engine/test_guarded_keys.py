"""A guarded score's column across a move of its cluster key: the rows its guard excluded stay.

``RulePlan.guard_keeps``: a score rule whose guard reads no function of the cycle's context and
whose body never gives null leaves unscored exactly the nodes its guard excluded, so when its
key moves (the learned GPU shapes, with each GPU pod placed) a pod class keeps those rows and
evaluates again only the rows the rule scored. Every decision stays the reference's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import pytest

from policyengine.engine.fastpath import fullpass, incremental, rules
from policyengine.lang.compiler import compile_texts
from policyengine.schedlib import default_schema, gpu
from tests.engine.agreement import decide_as_the_reference
from tests.engine.agreement import incremental as incremental_options
from tests.model.builders import make_node, make_pod, snapshot

POLICY = """
policy "p" {
  let gpu_node = node.gpu.count > 0
  let shapes = learned_gpu_shapes(1.0)
  filter placed { (pod.gpu_request.devices > 0) == gpu_node }
  score off weight 5 { if gpu_node then 0 else 100 }
  score frag weight 1 normalize none when gpu_node {
    gpu_placement_score(pod, node, shapes, []) ?? 0
  }
}
"""


@pytest.fixture(autouse=True)
def _fresh_workload() -> Iterator[None]:
    gpu.clear()
    yield
    gpu.clear()


def _cluster() -> Any:
    cpu = [make_node(f"cpu-{i}", cpu="8") for i in range(6)]
    gpus = [make_node(f"gpu-{i}", cpu="64", extra={"nvidia.com/gpu": "8"}) for i in range(4)]
    return snapshot([*cpu, *gpus])


def _gpu_pod(name: str, count: int) -> Any:
    return make_pod(name, requests={"cpu": "4", "nvidia.com/gpu": str(count)})


def _frag_rows(rekey: bool) -> list[int]:
    """The rows the ``frag`` rule is evaluated at in a CPU pod's cycle after a GPU pod of a new
    shape was placed (the learned shapes, and so the rule's key, moved since the class's last
    cycle); ``rekey`` False: a move of the key drops every row, as it did before rules could
    keep rows."""
    result = compile_texts({"p.sched": POLICY}, default_schema())
    assert result.program is not None, result.diagnostics
    program = result.program
    options = incremental_options()
    rng = random.Random(0)
    snap = _cluster()
    stored: list[int] = []
    store_at = rules.store_at

    def recording(plan: Any, column: Any, rows: np.ndarray, *args: Any) -> None:
        if plan.rule.name == "frag":
            stored.extend(rows.tolist())
        store_at(plan, column, rows, *args)

    def placed(pod: Any) -> Any:
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        assert decision.node is not None
        return snap.with_pod(pod, decision.node)

    keep = rules.rekeyed if rekey else (lambda *_: False)
    with (
        mock.patch.object(incremental, "store_at", recording),
        mock.patch.object(fullpass, "store_at", recording),
        mock.patch.object(incremental, "rekeyed", keep),
        mock.patch.object(rules, "rekeyed", keep),
    ):
        for pod in (
            make_pod("c0", requests={"cpu": "1"}),
            _gpu_pod("g0", 1),
            make_pod("c1", requests={"cpu": "1"}),
            _gpu_pod("g1", 2),
        ):
            snap = placed(pod)
        stored.clear()
        placed(make_pod("c2", requests={"cpu": "1"}))
    return stored


def test_a_move_of_the_learned_shapes_leaves_a_cpu_pod_s_rows_where_the_guard_left_them() -> None:
    # Without keeping, the CPU pod's class evaluates the rule again on every CPU row once the
    # shapes moved (the test would say nothing if they had not) ...
    assert sorted(_frag_rows(rekey=False)) == list(range(6))
    # ... with it, only on the row its last placement changed (c1's node): the others are
    # rows the guard excluded, whatever the shapes.
    assert len(_frag_rows(rekey=True)) == 1
