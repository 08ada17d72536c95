"""The preemption benchmark keeps working at a tiny size: both rows, and the bounded search
chooses a node whose victims make room (nothing here is about speed)."""

from __future__ import annotations

from benchmarks import preemption
from benchmarks.__main__ import SCENARIOS
from policyengine.model.plugins.config import DEFAULT_CONFIG


def test_the_scenario_is_registered_and_reports_both_searches() -> None:
    assert SCENARIOS["preemption"] == "benchmarks.preemption"
    rows = preemption.run(runs=1, scale=0.02)
    assert [r.metric for r in rows] == [
        "20 nodes x 8 lower-priority pods: bounded search (kube's 10%/100), per preemption",
        "20 nodes x 8 lower-priority pods: every node, per preemption",
    ]
    assert all(r.unit == "ms" and r.median > 0 for r in rows)


def test_every_preemptor_preempts_on_the_built_cluster() -> None:
    program, snapshot, pods = preemption.build(20)
    assert len(snapshot.node_names) == 20
    assert len(preemption.preempt_all(program, snapshot, pods, DEFAULT_CONFIG)) == len(pods)
