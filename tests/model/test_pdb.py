"""PodDisruptionBudgets: parsed from snapshots with errors naming the object and field, matched
to pods as preemption matches them, and their allowance with or without a status."""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.pdb import parse_pdb
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_snapshot_text
from tests.model.builders import make_node, make_pod


def pdb_obj(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "ns"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


ERRORS = [
    (
        {"minAvailable": "abc"},
        None,
        "f.yaml: PodDisruptionBudget ns/b: spec.minAvailable: expected an integer or a "
        "percentage such as \"50%\", got 'abc'",
    ),
    (
        {"minAvailable": 1, "maxUnavailable": 1},
        None,
        "f.yaml: PodDisruptionBudget ns/b: spec: minAvailable and maxUnavailable cannot both be set",
    ),
    (
        {"maxUnavailable": -1},
        None,
        "f.yaml: PodDisruptionBudget ns/b: spec.maxUnavailable: must not be negative, got -1",
    ),
    (
        {"selector": "x"},
        None,
        "f.yaml: PodDisruptionBudget ns/b: spec.selector: expected a mapping, got string",
    ),
    (
        {"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
        None,
        "f.yaml: PodDisruptionBudget ns/b: spec.selector: for 'in', 'notin' operators, values "
        "set can't be empty (key 'app')",
    ),
    (
        {},
        {"disruptionsAllowed": "x"},
        "f.yaml: PodDisruptionBudget ns/b: status.disruptionsAllowed: expected an integer, "
        "got string 'x'",
    ),
]


@pytest.mark.parametrize(
    "spec,status,message",
    ERRORS,
    ids=[
        "minAvailable=abc",
        "minAvailable=1 maxUnavailable=1",
        "maxUnavailable=-1",
        "selector=x",
        "selector=matchExpressions=key=app operator=In",
        "empty",
    ],
)
def test_bad_budgets_are_reported_by_object_and_field(
    spec: dict[str, Any], status: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ModelError) as error:
        parse_pdb(pdb_obj(spec, status), "f.yaml")
    assert str(error.value) == message


def test_status_is_read() -> None:
    budget = parse_pdb(
        pdb_obj(
            {"minAvailable": "50%", "selector": {"matchLabels": {"app": "db"}}},
            {"disruptionsAllowed": 1, "disruptedPods": {"db-0": "2026-01-01T00:00:00Z"}},
        )
    )
    assert (budget.key, budget.min_available, budget.disruptions_allowed) == ("ns/b", "50%", 1)
    assert budget.disrupted_pods == frozenset({"db-0"})
    assert budget.allowed([]) == 1  # the status wins over any computation


SELECTS = [
    ({"matchLabels": {"app": "db"}}, "ns", {"app": "db"}, True),
    ({"matchLabels": {"app": "db"}}, "other", {"app": "db"}, False),
    ({"matchLabels": {"app": "db"}}, "ns", {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "ns", {"app": "x"}, True),
    ({}, "ns", {"app": "db"}, False),  # empty: nothing, as preemption reads it
    (None, "ns", {"app": "db"}, False),
]


@pytest.mark.parametrize(
    "selector,namespace,labels,expected",
    SELECTS,
    ids=[
        "matchLabels=app=db-ns-app=db",
        "matchLabels=app=db-other-app=db",
        "matchLabels=app=db-ns-app=web",
        "matchExpressions=key=app operator=Exists-ns-app=x",
        "empty-ns-app=db",
        "None-ns-app=db",
    ],
)
def test_selects(
    selector: dict[str, Any] | None, namespace: str, labels: dict[str, str], expected: bool
) -> None:
    spec: dict[str, Any] = {"maxUnavailable": 1}
    if selector is not None:
        spec["selector"] = selector
    budget = parse_pdb(pdb_obj(spec))
    assert budget.selects(make_pod("p", namespace=namespace, labels=labels)) is expected


def test_terminating_pods_are_not_healthy() -> None:
    from dataclasses import replace

    budget = parse_pdb(pdb_obj({"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}))
    pods = [make_pod(f"db-{i}", namespace="ns", labels={"app": "db"}) for i in range(3)]
    assert budget.allowed(pods) == 2
    pods[0] = replace(pods[0], deletion_timestamp="2026-01-01T00:00:00Z")
    assert budget.allowed(pods) == 1


SNAPSHOT = """
apiVersion: policy/v1
kind: PodDisruptionBudgetList
items:
- metadata: {name: db, namespace: prod}
  spec: {maxUnavailable: 1, selector: {matchLabels: {app: db}}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
"""


def test_snapshots_carry_budgets() -> None:
    loaded = parse_snapshot_text(SNAPSHOT, "snap.yaml")
    assert [b.key for b in loaded.pdbs] == ["prod/db"]
    assert loaded.warnings == ()
    snapshot, _, _ = snapshot_from_objects(loaded.nodes, loaded.pods, pdbs=loaded.pdbs)
    assert list(snapshot.pdbs) == ["prod/db"]
    # Budgets survive derivations and can be replaced or dropped like other objects.
    derived = snapshot.with_node(make_node("n2")).with_pod(make_pod("p", node_name="n2"))
    assert list(derived.pdbs) == ["prod/db"]
    assert list(derived.without_pdb("prod/db").pdbs) == []
    other = parse_pdb(pdb_obj({"maxUnavailable": 0}))
    assert sorted(derived.with_pdb(other).pdbs) == ["ns/b", "prod/db"]
