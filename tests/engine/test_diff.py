"""``engine.diff``: which pending pods a policy change moves, strands, frees or re-filters.

Old and new are variants of ``tests/cli/fixtures/policytest/basic/policy.sched`` on its
cluster (n1: gpu, empty, 4 CPUs; n2: cpu, 2 of 8 CPUs used; n3: cpu, full). Pending pods:
``small`` (1 CPU, wants a cpu node: only n2 passes) and ``huge`` (16 CPUs: fits nowhere).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policyengine.engine.diff import (
    FEASIBILITY,
    PLACEMENT,
    POLICY,
    SCHEDULABILITY,
    PodOutcome,
    compare,
    diff_policies,
)
from policyengine.lang.cache import shared_cache
from policyengine.lang.compiler import Program
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import load_snapshot
from policyengine.schedlib import default_schema

BASIC = Path(__file__).resolve().parents[1] / "cli" / "fixtures" / "policytest" / "basic"
OLD_TEXT = (BASIC / "policy.sched").read_text(encoding="utf-8")


def program(text: str) -> Program:
    result = shared_cache.compile_texts({"policy.sched": text}, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def run(new_text: str, old_text: str = OLD_TEXT, seed: int = 0):  # type: ignore[no-untyped-def]
    loaded = load_snapshot(BASIC / "cluster.yaml")
    snapshot, pending, _ = snapshot_from_objects(loaded.nodes, loaded.pods)
    return diff_policies(program(old_text), program(new_text), snapshot, pending, seed)


def test_no_change() -> None:
    result = run(OLD_TEXT + "\n# only a comment changed\n")
    assert (result.pods, result.changes) == (2, ())
    assert result.old_version != result.new_version


def test_a_filter_turned_off_moves_a_pod_and_widens_its_feasible_nodes() -> None:
    result = run(OLD_TEXT.replace('when wants != "any"', "when false"))
    (change,) = result.changes
    assert change.pod == "default/small"
    assert change.kinds == (PLACEMENT, FEASIBILITY)
    assert (change.old.node, change.new.node) == ("n2", "n1")
    assert (change.old.feasible, change.new.feasible) == (("n2",), ("n1", "n2"))
    assert change.reasons == (
        "moved from n2 to n1",
        "old scores: n2 150",
        "new scores: n2 150, n1 200",
        "feasible nodes: 1 → 2",
        "n1 now feasible (was labelled: node is gpu, pod wants cpu)",
    )
    assert (result.count(PLACEMENT), result.count(FEASIBILITY), result.count(SCHEDULABILITY)) == (
        1,
        1,
        0,
    )


def test_a_stricter_filter_strands_a_pod() -> None:
    stricter = OLD_TEXT.replace(
        "filter roomy {",
        'filter zoned { node.labels["zone"] != null } reason "no zone"\n  filter roomy {',
    )
    result = run(stricter)
    (change,) = result.changes
    assert change.pod == "default/small"
    assert change.kinds == (SCHEDULABILITY, FEASIBILITY)
    assert change.new.node is None
    assert change.reasons == (
        # The simulation stops at a node's first rejection, as kube-scheduler does.
        # A reason holding ", " is quoted in the line, so entries stay apart.
        'no longer schedulable (was on n2): 0/3 nodes are available: 1 "node is gpu, pod wants '
        'cpu", 2 no zone.',
        "feasible nodes: 1 → 0",
        "n2 no longer feasible: zoned: no zone",
    )


def test_a_looser_filter_frees_a_pod() -> None:
    result = run(OLD_TEXT, old_text=OLD_TEXT.replace(">=", ">= 8 *"))
    by_pod = {change.pod: change for change in result.changes}
    small = by_pod["default/small"]
    assert small.kinds == (SCHEDULABILITY, FEASIBILITY)
    assert small.reasons[0].startswith(
        "now scheduled on n2 (was unschedulable: 0/3 nodes are available:"
    )
    assert "default/huge" not in by_pod  # unschedulable under both


def test_a_renamed_policy_is_reported_even_when_nothing_else_changes() -> None:
    result = run(OLD_TEXT.replace('policy "basic"', 'policy "basic-v2"'))
    assert [(c.pod, c.kinds, c.reasons) for c in result.changes] == [
        ("default/huge", (POLICY,), ("governed by basic → basic-v2",)),
        ("default/small", (POLICY,), ("governed by basic → basic-v2",)),
    ]


@pytest.mark.parametrize(
    ("old", "new", "kinds"),
    [
        (("a", ("a", "b")), ("a", ("a", "b")), None),
        (("a", ("a", "b")), ("b", ("a", "b")), (PLACEMENT,)),
        (("a", ("a", "b")), ("a", ("b", "a")), None),  # the same set, in another order
        (("a", ("a", "b")), ("a", ("a",)), (FEASIBILITY,)),
        ((None, ()), ("a", ("a",)), (SCHEDULABILITY, FEASIBILITY)),
    ],
    ids=["a,a,b-a,a,b", "a,a,b-b,a,b", "a,a,b-a,b,a", "a,a,b-a,a", "None,empty-a,a"],
)
def test_compare(
    old: tuple[str | None, tuple[str, ...]],
    new: tuple[str | None, tuple[str, ...]],
    kinds: tuple[str, ...] | None,
) -> None:
    def outcome(node: str | None, feasible: tuple[str, ...]) -> PodOutcome:
        return PodOutcome(node, "", "p", feasible)

    change = compare("ns/pod", outcome(*old), outcome(*new))
    assert (change.kinds if change else None) == kinds
