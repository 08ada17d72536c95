"""Preemption in ``simulate`` and ``explain``: who is evicted, where the preemptor goes, and why
a pod cannot preempt. The fixture cluster's comment says which node must be chosen and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(
    Path(__file__).resolve().parent / "fixtures" / "snapshots" / "preemption-cluster.yaml"
)
KUBE_DEFAULT = str(ROOT / "policies" / "kube-default.sched")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main([*args, "--policy", KUBE_DEFAULT, "--cluster", CLUSTER])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    return captured.out


def test_simulate_json_reports_the_preemption_in_the_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = json.loads(run(capsys, "simulate", "--format", "json"))
    version = document["summary"]["policy_version"]
    assert document["placements"] == [
        {
            "pod": "default/polite",
            "node": None,
            "reason": "0/2 nodes are available: 2 Insufficient cpu.",
            "policy": "kube-default",
            "version": version,
            "score": None,
        },
        {
            "pod": "default/trainer",
            "node": "n1",
            "reason": "scheduled on n1 by policy kube-default after preempting default/batch-1",
            "policy": "kube-default",
            "version": version,
            "score": None,  # placed by preemption, not by score: its victims say why
            "preempted": ["default/batch-1"],
        },
    ]
    summary = document["summary"]
    assert summary["preemptions"] == {
        "total": 1,
        "evicted": 1,
        "outcomes": [
            {
                "pod": "default/trainer",
                "node": "n1",
                "victims": ["default/batch-1"],
                "pdb_violations": 0,
            }
        ],
    }
    # batch-1 (3 cpu) left, trainer (2 cpu) came: 6 -> 5 cpu, still 2 pods.
    assert summary["resources"]["cpu"]["allocated_after"] == 5
    assert summary["resources"]["pods"] == {
        "allocatable": 220,
        "allocated_before": 2,
        "allocated_after": 2,
    }


def test_simulate_table_lists_victims(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "simulate")
    assert out.endswith(
        "Preemptions (1):\nPOD              NODE  VICTIMS\ndefault/trainer  n1    default/batch-1\n"
    )


def test_explain_shows_the_node_and_victims(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "explain", "--pod", "trainer")
    assert out.endswith(
        "Preemption:\n"
        "  would evict 1 pod on n1 (0 PodDisruptionBudget violations):\n"
        "    default/batch-1 (priority 1)\n"
        "  other candidates: n2 (1 victim)\n"
        "  chosen by: fewest budget violations, lowest highest-victim priority, smallest "
        "priority sum, fewest victims, latest start\n"
    )


def test_explain_says_why_a_pod_cannot_preempt(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "explain", "--pod", "polite")
    assert out.endswith("Preemption:\n  none: not eligible due to preemptionPolicy=Never.\n")


GANG_CLUSTER = str(
    Path(__file__).resolve().parent / "fixtures" / "snapshots" / "gang-preemption-cluster.yaml"
)
GANG_POLICY = """\
import "kube-default.sched"
policy "train" {
  use kube
  gang { within nvlink_domain required }
}
"""


def test_simulate_json_reports_a_gang_preemption(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "kube-default.sched").write_text(Path(KUBE_DEFAULT).read_text())
    policy = tmp_path / "train.sched"
    policy.write_text(GANG_POLICY)
    code = main(
        ["simulate", "--policy", str(policy), "--cluster", GANG_CLUSTER, "--format", "json"]
    )
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    document = json.loads(captured.out)
    assert document["summary"]["preemptions"] == {
        "total": 1,
        "evicted": 2,
        "outcomes": [
            {
                "pod": "default/train",
                "node": "nvlink_domain/c2",
                "victims": ["default/batch-0", "default/batch-1"],
                "pdb_violations": 0,
                "gang": True,
            }
        ],
    }
    placed = {p["pod"]: p["node"] for p in document["placements"]}
    assert placed == {"default/train-0": "c2-0", "default/train-1": "c2-1"}


def test_explain_shows_the_domain_a_gang_would_free(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "kube-default.sched").write_text(Path(KUBE_DEFAULT).read_text())
    policy = tmp_path / "train.sched"
    policy.write_text(GANG_POLICY)
    code = main(["explain", "--policy", str(policy), "--cluster", GANG_CLUSTER, "--pod", "train-1"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    assert captured.out.endswith(
        "Preemption:\n"
        "  would evict 2 pods in nvlink_domain/c2 (0 PodDisruptionBudget violations):\n"
        "    default/batch-0 (priority 1)\n"
        "    default/batch-1 (priority 1)\n"
        "  chosen by: fewest budget violations, lowest highest-victim priority, smallest "
        "priority sum, fewest victims, latest start\n"
    )
