"""kube-scheduler's FailedScheduling line: first rejection per node, counted, sorted as strings."""

from __future__ import annotations

import pytest

from policyengine.engine.decision import Rejection
from policyengine.engine.histogram import histogram_line

R = Rejection

CASES = [
    (3, {}, "0/3 nodes are available."),
    (
        5,
        {
            "a": (R("kube.node_resources_fit", ("Insufficient nvidia.com/gpu",)),),
            "b": (R("kube.node_resources_fit", ("Insufficient nvidia.com/gpu",)),),
            "c": (R("kube.node_resources_fit", ("Insufficient nvidia.com/gpu",)),),
            "d": (
                R("kube.taint_toleration", ("node(s) had untolerated taint {gpu: maintenance}",)),
            ),
            "e": (
                R("kube.taint_toleration", ("node(s) had untolerated taint {gpu: maintenance}",)),
            ),
        },
        "0/5 nodes are available: 2 node(s) had untolerated taint {gpu: maintenance}, "
        "3 Insufficient nvidia.com/gpu.",
    ),
    (
        # only the first rejecting rule of a node counts; a resource rule may give several reasons
        2,
        {
            "a": (R("fit", ("Insufficient cpu", "Insufficient memory")), R("later", ("ignored",))),
            "b": (R("fit", ("Insufficient cpu",)),),
        },
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
    ),
    (
        # sorted as strings, as kube-scheduler does: "10 …" sorts before "9 …"
        19,
        {
            **{f"a{i}": (R("x", ("reason A",)),) for i in range(10)},
            **{f"b{i}": (R("y", ("reason B",)),) for i in range(9)},
        },
        "0/19 nodes are available: 10 reason A, 9 reason B.",
    ),
    (
        # a policy's own reason holding ", " is quoted, or the entries would run together
        3,
        {
            "a": (R("gpu_model", ('node has A100, pod needs "H100"',)),),
            "b": (R("gpu_model", ('node has A100, pod needs "H100"',)),),
            "c": (R("fit", ("Insufficient cpu",)),),
        },
        '0/3 nodes are available: 1 Insufficient cpu, 2 "node has A100, pod needs \\"H100\\"".',
    ),
]


@pytest.mark.parametrize(
    ("nodes", "infeasible", "expected"),
    CASES,
    ids=[
        "no-reasons",
        "counted-by-reason",
        "first-rule-counts",
        "sorted-as-strings",
        "quoted-reason",
    ],
)
def test_histogram_line(nodes: int, infeasible: dict, expected: str) -> None:
    assert histogram_line(nodes, infeasible) == expected
