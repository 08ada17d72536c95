"""``--topology LEVEL=LABEL``: which node labels name a rack, an NVLink domain, a block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.cli.main import main

CLUSTER = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {example.com/rack: r1}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: {topology.kubernetes.io/rack: r2}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default}
  spec: {containers: [{name: c, image: x}]}
"""
POLICY = 'policy "racked" {\n  filter racked { node.topology.rack != null } reason "no rack"\n}\n'


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "p.sched").write_text(POLICY)
    return str(tmp_path / "cluster.yaml"), str(tmp_path / "p.sched")


@pytest.mark.parametrize(
    ("options", "feasible"),
    [
        ([], ["n2"]),  # the default rack label
        (["--topology", "rack=example.com/rack"], ["n1"]),
        (
            [
                "--topology",
                "rack=example.com/rack",
                "--topology",
                "rack=topology.kubernetes.io/rack",
            ],
            ["n1", "n2"],
        ),
    ],
    ids=["n2", "n1", "n1,n2"],
)
def test_rack_label(files, capsys, options: list[str], feasible: list[str]) -> None:
    cluster, policy = files
    assert (
        main(
            [
                "filter",
                "--cluster",
                cluster,
                "--policy",
                policy,
                "--pod",
                "p",
                "--format",
                "json",
                *options,
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["feasible"] == feasible


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "rack",
            "policyengine filter: --topology 'rack': expected LEVEL=LABEL, e.g. rack=example.com/rack\n",
        ),
        (
            "shelf=x",
            "policyengine filter: --topology 'shelf=x': unknown level 'shelf'; levels are hostname, rack, nvlink_domain, block, zone, region\n",
        ),
    ],
    ids=["rack", "shelf=x"],
)
def test_bad_topology_option(files, capsys, spec: str, message: str) -> None:
    cluster, policy = files
    assert (
        main(["filter", "--cluster", cluster, "--policy", policy, "--pod", "p", "--topology", spec])
        == 2
    )
    assert capsys.readouterr().err == message
