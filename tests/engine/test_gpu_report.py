from __future__ import annotations

import pytest

from policyengine.engine.gpu_report import (
    declared_shapes,
    describe,
    gpu_report,
    parse_shapes,
    shapes_of,
)
from policyengine.lang.compiler import compile_texts
from policyengine.model.gpu_devices import share, whole
from policyengine.model.hami import ALLOCATED
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from tests.model.gpu_builders import gpu_node, gpu_pod


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cores=25,memory=10Gi,weight=3;gpus=1", ((share(25, 10240), 3.0), (whole(1), 1.0))),
        ("cores=50", ((share(50, 0, 50), 1.0),)),
        ("gpus=2; ", ((whole(2), 1.0),)),
        (
            "cores=25;size=3",
            "shape 2: unknown shape key 'size' (expected one of gpus, cores, memory, memory_percent, cpu, host_memory, weight)",
        ),
        ("cores", "shape 1: 'cores': expected key=value"),
        ("cores=abc", "shape 1: cores 'abc': not a number"),
        ("", "no shapes given"),
    ],
    ids=[
        "cores=25,memory=10Gi,weight=3;gpus=1",
        "cores=50",
        "gpus=2; ",
        "cores=25;size=3",
        "cores",
        "cores=abc",
        "''",
    ],
)
def test_parse_shapes(text: str, expected: object) -> None:
    assert parse_shapes(text) == expected


def test_shapes_of_pods_weights_each_distinct_demand() -> None:
    pods = [
        gpu_pod("a", gpus=1),
        gpu_pod("b", share="cores=25"),
        gpu_pod("c", gpus=1),
        gpu_pod("d"),
    ]
    assert shapes_of(pods) == ((share(25, 0, 25), 1.0), (whole(1), 2.0))
    assert describe(shapes_of(pods)) == [
        {"cores": 25, "memory_percent": 25, "weight": 1.0},
        {"gpus": 1, "weight": 2.0},
    ]


def test_report_allocation_and_fragmentation() -> None:
    running = [
        gpu_pod(
            "a",
            share="cores=90,memory=10%",
            node="n1",
            annotations={ALLOCATED: "n1-gpu0,NVIDIA,4096,90:;"},
        ),
        gpu_pod("b", gpus=1, node="n2"),
    ]
    snap = ClusterSnapshot.build([gpu_node("n1", count=2), gpu_node("n2", count=2)], running)
    report = gpu_report(snap, ((share(25, 0, 25), 1.0),))
    assert report.total_gpus == 4
    assert report.allocated_gpus == pytest.approx(1.9)
    assert report.allocation_ratio == pytest.approx(0.475)
    # only n1-gpu0's 10% is too small for a 25% shape
    assert report.fragmented_gpus == pytest.approx(0.1)
    assert report.fragmentation_ratio == pytest.approx(0.1 / 2.1)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            'policy "p" { let gpu_shapes = [{"cores": 25}, {"gpus": 2, "weight": 3}] }',
            ((share(25, 0, 25), 1.0), (whole(2), 3.0)),
        ),
        ('policy "p" { let shapes = [{"memory": 1Gi}] }', ((share(0, 1024, 0), 1.0),)),
        ('policy "p" { let other = [{"cores": 25}] }', None),
        (
            'policy "p" { let shapes = [{"cores": 1 + 2}] }',
            None,
        ),  # not a literal: not a declaration
        ('policy "p" { let shapes = [{"size": 2}] }', None),  # not a valid shape
    ],
    ids=["gpu_shapes", "shapes-by-memory", "other-let", "not-a-literal", "invalid-shape"],
)
def test_declared_shapes(source: str, expected: object) -> None:
    result = compile_texts({"p.sched": source}, default_schema())
    assert result.program is not None, result.diagnostics
    assert declared_shapes(result.program) == expected
