"""``policyengine simulate``: placements in queue order, the summary, formats, the demo, progress.

The expected document for the fixture cluster is worked out by hand: the running pods hold
10 CPUs, 68Gi and 6 GPUs; the three pods that fit add 18.5 CPUs, 132.25Gi and 4 GPUs; the
16-GPU pod fits nowhere, which leaves the 6 free GPUs (2 + 4) all stranded.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from policyengine.cli import simulate as simulate_command
from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLUSTER = str(FIXTURES / "snapshots" / "gpu-cluster.yaml")
GPU_POLICY = str(FIXTURES / "policies" / "gpu")
BROKEN_POLICY = str(FIXTURES / "policies" / "broken")
KUBECTL = str(ROOT / "tests" / "data" / "k8s-wire" / "kubectl-get-nodes-pods.yaml")
GI = 2**30
HUGE_REASON = (
    "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
    "1 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient nvidia.com/gpu."
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


H100 = {"model": "NVIDIA-H100-80GB-HBM3", "cores": 100, "memory_mib": 81559}


def expected_document(version: str) -> dict:
    return {
        "placements": [
            {
                "pod": "default/web-1",
                "node": "gpu-a100-1",
                "reason": "scheduled on gpu-a100-1 by policy everything-else (score 300)",
                "policy": "everything-else",
                "version": version,
                "score": 300,
            },
            {
                "pod": "kube-system/infra-agent",
                "node": "cpu-1",
                "reason": "scheduled on cpu-1 by policy everything-else (score 350)",
                "policy": "everything-else",
                "version": version,
                "score": 350,
            },
            {
                "pod": "ml/train-b-0",
                "node": "gpu-h100-1",
                "reason": "scheduled on gpu-h100-1 by policy gpu-jobs (score 100)",
                "policy": "gpu-jobs",
                "version": version,
                "score": 100,
                "gpu": [{"uuid": f"gpu-h100-1-gpu{i}", **H100} for i in range(4)],
            },
            {
                "pod": "ml/train-huge",
                "node": None,
                "reason": HUGE_REASON,
                "policy": "gpu-jobs",
                "version": version,
                "score": None,
            },
        ],
        "summary": {
            "pods": 4,
            "scheduled": 3,
            "unschedulable": 1,
            "nodes": 4,
            "policy_version": version,
            "seed": 0,
            "resources": {
                "cpu": {"allocatable": 176, "allocated_before": 10, "allocated_after": 28.5},
                "memory": {
                    "allocatable": 1600 * GI,
                    "allocated_before": 68 * GI,
                    "allocated_after": 200 * GI + GI // 4,
                },
                "nvidia.com/gpu": {"allocatable": 16, "allocated_before": 6, "allocated_after": 10},
                "pods": {"allocatable": 440, "allocated_before": 2, "allocated_after": 5},
            },
            "gpu_fragmentation": {
                "largest_pending_request": 16,
                "free_gpus": 6,
                "fragmented_gpus": 6,
            },
            # device by device: the free 2 (A100) and 4 (H100) GPUs against the pending pods'
            # shapes, 4 and 16 whole GPUs: (2 + 6) / 2 lost on average
            "gpu": {
                "total_gpus": 16,
                "allocated_gpus": 10.0,
                "allocation_ratio": 0.625,
                "free_gpus": 6.0,
                "fragmented_gpus": 4.0,
                "fragmentation_ratio": 0.6667,
                "shapes": [{"gpus": 4, "weight": 1.0}, {"gpus": 16, "weight": 1.0}],
            },
            "preemptions": {"total": 0, "evicted": 0, "outcomes": []},
        },
    }


@pytest.mark.parametrize("format", ["json", "yaml"])
def test_document(capsys: pytest.CaptureFixture[str], format: str) -> None:
    code, out, err = run(capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--format", format)
    assert (code, err) == (0, "")
    document = json.loads(out) if format == "json" else yaml.safe_load(out)
    assert document == expected_document(document["summary"]["policy_version"])


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER)
    assert code == 0
    version = out.split("policy version ", 1)[1].split(",", 1)[0]
    assert out == (
        "Placed (3):\n"
        "POD                      NODE        POLICY           SCORE\n"
        "default/web-1            gpu-a100-1  everything-else  300\n"
        "kube-system/infra-agent  cpu-1       everything-else  350\n"
        "ml/train-b-0             gpu-h100-1  gpu-jobs         100\n"
        "\n"
        "Unschedulable (1):\n"
        "POD            POLICY    REASON\n"
        f"ml/train-huge  gpu-jobs  {HUGE_REASON}\n"
        "\n"
        "Summary: 4 pending pods, 3 scheduled, 1 unschedulable, on 4 nodes; "
        f"policy version {version}, seed 0\n"
        "RESOURCE        ALLOCATABLE  ALLOCATED BEFORE  ALLOCATED AFTER\n"
        "cpu             176          10 (6%)           28.5 (16%)\n"
        "memory          1.56Ti       68Gi (4%)         200.25Gi (13%)\n"
        "nvidia.com/gpu  16           6 (38%)           10 (62%)\n"
        "pods            440          2 (0%)            5 (1%)\n"
        "GPUs stranded for the largest pending request (16 GPUs): 6 of 6 free GPUs are on "
        "nodes with fewer free\n"
        "GPU devices: 10.00 of 16 GPUs allocated (62.5%); fragmentation (FGD, against 2 pod "
        "shape(s)): 4.00 of 6.00 free GPUs (66.7%) no typical pod can use\n"
    )


def test_seed_is_reported_and_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--policy", GPU_POLICY, "--cluster", CLUSTER, "--seed", "7", "--format", "json"]
    first = run(capsys, *args)[1]
    assert run(capsys, *args)[1] == first
    assert json.loads(first)["summary"]["seed"] == 7


def test_kube_version_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--policy",
        GPU_POLICY,
        "--cluster",
        CLUSTER,
        "--kube-version",
        "1.28",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out)["summary"]["scheduled"] == 3


def test_no_arguments_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 0
    # Rule errors, if any, follow as warnings; the note about the demo comes first.
    assert err.startswith(
        "policyengine simulate: using the demo cluster (pass --cluster SNAP for yours)\n"
    )
    assert out.startswith("Placed (")
    assert "\nUnschedulable (" in out
    summary = out.split("\n\nSummary: ", 1)[1]
    pods, scheduled, unschedulable = (int(part.split()[0]) for part in summary.split(", ")[:3])
    assert scheduled > 0 and unschedulable > 0 and scheduled + unschedulable == pods
    assert "\nGPUs stranded for the largest pending request " in summary


def test_real_kubectl_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--cluster", KUBECTL, "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["placements"] == [
        {
            "pod": "team-a/huge-0",
            "node": None,
            "reason": "0/3 nodes are available: 3 Insufficient cpu.",
            "policy": "cpu-pods",
            "version": document["summary"]["policy_version"],
            "score": None,
        }
    ]
    summary = document["summary"]
    assert (summary["pods"], summary["scheduled"], summary["unschedulable"]) == (1, 0, 1)
    assert summary["resources"]["cpu"] == {
        "allocatable": 14,
        "allocated_before": 3.5,
        "allocated_after": 3.5,
    }
    assert summary["resources"]["pods"] == {
        "allocatable": 330,
        "allocated_before": 3,
        "allocated_after": 3,
    }


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_stderr_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["simulate", "--policy", GPU_POLICY, "--cluster", CLUSTER, "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    assert "\r" not in out
    json.loads(out)
    progress = terminal.getvalue()
    assert "\rscheduling pod 4/4" in progress
    assert progress.endswith("\r" + " " * len("scheduling pod 4/4") + "\r")


def test_no_progress_when_stderr_is_not_a_terminal() -> None:
    report, finish = simulate_command.progress_reporter()
    assert report is None
    finish()


ERROR_CASES = {
    "missing snapshot": (
        ["--policy", GPU_POLICY, "--cluster", "missing-dir"],
        "policyengine simulate: missing-dir: no such snapshot file or directory\n",
    ),
    "empty snapshot": (
        ["--policy", GPU_POLICY, "--cluster", str(FIXTURES / "snapshots" / "bad" / "empty.yaml")],
        f"policyengine simulate: {FIXTURES}/snapshots/bad/empty.yaml: "
        "the snapshot holds no objects (an empty file or List); expected Nodes and Pods, as "
        "`kubectl get nodes,pods -A -o yaml` writes them\n",
    ),
    "unknown profile": (
        ["--policy", GPU_POLICY, "--cluster", CLUSTER, "--scheduler-name", "batch"],
        "policyengine simulate: no profile named 'batch' in the policy "
        "(profiles: policyengine, gpu-only)\n",
    ),
}


@pytest.mark.parametrize("args, message", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run(capsys, *args)
    assert (code, out, err) == (2, "", message)


def test_broken_policy(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--policy", BROKEN_POLICY, "--cluster", CLUSTER)
    assert (code, out) == (2, "")
    assert err.count("error PE2") == 2
    assert err.endswith("policyengine simulate: the policy has 2 errors; nothing was evaluated\n")


def test_a_gated_pod_is_listed_apart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """kube-scheduler never tries a pod with scheduling gates: it is neither placed nor
    unschedulable, and takes no room from the others."""
    cluster = yaml.safe_load(Path(CLUSTER).read_text())
    cluster["items"].append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "queued", "namespace": "default"},
            "spec": {
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                ],
            },
        }
    )
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump(cluster))
    code, out, _ = run(
        capsys, "--policy", GPU_POLICY, "--cluster", str(snapshot), "--format", "json"
    )
    document = json.loads(out)
    assert code == 0
    assert document["placements"][-1] == {
        "pod": "default/queued",
        "node": None,
        "reason": "waiting for scheduling gates: [kueue.x-k8s.io/admission]",
        "policy": None,  # never tried: no policy was asked
        "version": document["summary"]["policy_version"],
        "score": None,
    }
    expected = expected_document(document["summary"]["policy_version"])
    assert document["placements"][:-1] == expected["placements"]
    summary = document["summary"]
    assert (summary["pods"], summary["scheduled"], summary["unschedulable"], summary["gated"]) == (
        5,
        3,
        1,
        1,
    )
    assert summary["resources"] == expected["summary"]["resources"]
    code, out, _ = run(capsys, "--policy", GPU_POLICY, "--cluster", str(snapshot))
    assert (
        "Gated, not tried (1):\n"
        "POD             REASON\n"
        "default/queued  waiting for scheduling gates: [kueue.x-k8s.io/admission]\n"
    ) in out
    assert "Summary: 5 pending pods, 3 scheduled, 1 unschedulable, 1 gated, on 4 nodes;" in out


def test_finished_pods_are_one_warning_and_listed_with_verbose(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = yaml.safe_load(Path(CLUSTER).read_text())
    for index in range(201):
        cluster["items"].append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"job-{index}", "namespace": "batch"},
                "spec": {"nodeName": "cpu-1", "containers": [{"name": "c", "image": "x"}]},
                "status": {"phase": "Succeeded"},
            }
        )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    code, _out, err = run(capsys, "--policy", GPU_POLICY, "--cluster", str(path))
    assert code == 0
    finished = [line for line in err.splitlines() if "finished" in line]
    assert finished == [
        f"policyengine simulate: warning: {path}: 201 finished pods (phase Succeeded or Failed) "
        "ignored: they hold no resources"
    ]
    _code, _out, err = run(capsys, "--policy", GPU_POLICY, "--cluster", str(path), "--verbose")
    listed = [line for line in err.splitlines() if "finished pod ignored" in line]
    assert len(listed) == 201
    assert (
        listed[0] == "policyengine simulate: warning: finished pod ignored: batch/job-0 (Succeeded)"
    )
