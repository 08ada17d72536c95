"""``explain`` names the claim and the volume behind a storage reason, with the values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "data" / "kube-scheduler-volume-cases"
POLICY = str(ROOT / "policies" / "kube-default.sched")


def _case(tmp_path: Path, name: str) -> tuple[str, str]:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    cluster, pod = tmp_path / "cluster.yaml", tmp_path / "pod.yaml"
    cluster.write_text(yaml.safe_dump(case["cluster"]))
    pod.write_text(yaml.safe_dump(case["pod"]))
    return str(cluster), str(pod)


def _explain(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["explain", "--policy", POLICY, *args]) == 0
    return capsys.readouterr().out


def test_the_nearest_node_names_the_claim_no_volume_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, pod = _case(tmp_path, "c0370")
    out = _explain(capsys, "--cluster", cluster, "--pod", pod)
    assert (
        "    claim c0370-p-v0 (50Gi of class c0370-disk): no available volume fits (none exist), "
        "and the class provisions only where topology.kubernetes.io/zone in [zone-b]\n"
    ) in out


def test_a_node_report_names_the_volume_whose_zone_excludes_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # v1.28 does not read the volume's beta zone label against the node's GA one.
    cluster, pod = _case(tmp_path, "c0444")
    v128 = ("--kube-version", "1.28")
    out = _explain(capsys, "--cluster", cluster, "--pod", pod, "--node", "c0444-n1", *v128)
    assert (
        "  Its volumes:\n    volume c0444-pv0 is in failure-domain.beta.kubernetes.io/zone "
        "[zone-b zone-c]; node c0444-n1 has no failure-domain.beta.kubernetes.io/zone\n"
    ) in out
    out = _explain(
        capsys, "--cluster", cluster, "--pod", pod, "--node", "c0444-n1", "--format", "json", *v128
    )
    assert json.loads(out)["node_report"]["volumes"] == [
        "volume c0444-pv0 is in failure-domain.beta.kubernetes.io/zone [zone-b zone-c]; "
        "node c0444-n1 has no failure-domain.beta.kubernetes.io/zone"
    ]
    # Later releases do (the node's topology.kubernetes.io/zone is zone-c); where the node's
    # GA label holds another zone, the report names that label.
    out = _explain(capsys, "--cluster", cluster, "--pod", pod, "--node", "c0444-n1")
    assert "c0444-pv0" not in out


def test_storage_capacity_and_local_volumes_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, pod = _case(tmp_path, "c0254")
    out = _explain(capsys, "--cluster", cluster, "--pod", pod)
    assert "no storage capacity of driver cap-c0254.csi.example.com reaching node" in out
    cluster, pod = _case(tmp_path, "c0233")
    out = _explain(capsys, "--cluster", cluster, "--pod", pod)
    assert "    bound local volumes pin the pod to c0233-n6\n" in out
