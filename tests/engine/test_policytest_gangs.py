"""Policy tests of gangs: the ``gang`` expectation passing and failing, its validation, and
inline ``pod_groups`` in a test cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.engine import policytest as pt

POLICY = """policy "g" {
  gang {
    within rack required
  }
  filter fits {
    node.free["nvidia.com/gpu"] >= pod.requests["nvidia.com/gpu"]
  } reason "Insufficient nvidia.com/gpu"
}
"""


def node(name: str, rack: str) -> dict[str, Any]:
    labels = {"topology.kubernetes.io/rack": rack}
    alloc = {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


def member(name: str, group: str) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": "8"}}
    return {
        "metadata": {"name": name, "labels": {"scheduling.x-k8s.io/pod-group": group}},
        "spec": {"containers": [{"name": "w", "image": "x", "resources": resources}]},
    }


CLUSTER = {
    "nodes": [node("a1", "r1"), node("a2", "r1"), node("b1", "r2")],
    "pod_groups": [
        {"metadata": {"name": "two", "namespace": "default"}, "spec": {"minMember": 2}},
        {"metadata": {"name": "three", "namespace": "default"}, "spec": {"minMember": 3}},
    ],
    "pods": [
        member("two-0", "two"),
        member("two-1", "two"),
        *(member(f"three-{i}", "three") for i in range(3)),
    ],
}
THREE = (
    "gang default/three cannot be placed: 3 members must fit together in one rack: "
    "2 rack domain(s) too small."
)


def run(tmp_path: Path, pod: str, gang: Any) -> pt.CaseResult:
    (tmp_path / "g.sched").write_text(POLICY, encoding="utf-8")
    document = {
        "policy": "g.sched",
        "cluster": CLUSTER,
        "cases": [{"name": "c", "pod": pod, "gang": gang}],
    }
    path = tmp_path / "g.test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    report = pt.run_paths([path])
    assert report.errors == ()
    (case,) = report.cases
    return case


@pytest.mark.parametrize(
    ("pod", "gang", "failures"),
    [
        ("two-0", {"placed": True, "domain": "rack/r1"}, []),
        ("three-1", {"placed": False, "message": "2 rack domain(s) too small"}, []),
        (
            "two-0",
            {"domain": "rack/r2"},
            [
                "gang: want domain rack/r2, got placed true, domain rack/r1: "
                "gang default/two: 2 of 2 members placed in rack r1 by policy g"
            ],
        ),
        (
            "three-0",
            {"placed": True},
            [f"gang: want placed True, got placed false, domain None: {THREE}"],
        ),
    ],
    ids=["placed-as-expected", "not-placed-as-expected", "wrong-domain", "wrongly-placed"],
)
def test_the_gang_expectation(
    tmp_path: Path, pod: str, gang: dict[str, Any], failures: list[str]
) -> None:
    case = run(tmp_path, pod, gang)
    assert [check.message for check in case.failures] == failures


@pytest.mark.parametrize(
    ("gang", "message"),
    [
        ("yes", "gang: expected a mapping of placed, domain, message, got a string"),
        ({"placed": "yes"}, "gang.placed: expected true or false, got a string"),
        ({"domain": "r1"}, "gang.domain: expected LEVEL/VALUE or null, got a string"),
        ({"message": ""}, "gang.message: expected a non-empty part of the message, got a string"),
    ],
    ids=["yes", "placed=yes", "domain=r1", "message=''"],
)
def test_bad_gang_expectations_are_refused(tmp_path: Path, gang: Any, message: str) -> None:
    (tmp_path / "g.sched").write_text(POLICY, encoding="utf-8")
    document = {
        "policy": "g.sched",
        "cluster": CLUSTER,
        "cases": [{"name": "c", "pod": "two-0", "gang": gang}],
    }
    path = tmp_path / "g.test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    # A bad case is that case's error; the file itself loads (its other cases would run).
    (error,) = pt.load_test_file(path).errors
    assert error.endswith(f"case 'c': {message}")
