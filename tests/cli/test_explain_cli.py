"""``policyengine explain``: the verdict, the policy, filter counts, the nearest node, ``--node``.

Outputs are for people, so the tests compare whole texts where they are stable and read the
policy version from the output (it is a digest of the fixture sources).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.cli.main import main
from tests.cli.snapshots import with_pod_spec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLUSTER = str(FIXTURES / "snapshots" / "gpu-cluster.yaml")
GPU_POLICY = str(FIXTURES / "policies" / "gpu")
BROKEN_POLICY = str(FIXTURES / "policies" / "broken")
KUBECTL = str(ROOT / "tests" / "data" / "k8s-wire" / "kubectl-get-nodes-pods.yaml")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def explain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    """The output and the policy version it names."""
    code, out, err = run(capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, *args)
    assert (code, err) == (0, "")
    return out, out.split("version ", 1)[1].split("\n", 1)[0]


def test_unschedulable_pod_gets_the_nearest_node_and_its_shortage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, version = explain(capsys, "--pod", "ml/train-huge")
    assert out == (
        "Pod ml/train-huge: unschedulable\n"
        "  0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient nvidia.com/gpu.\n"
        f"Governed by policy gpu-jobs (profile policyengine), version {version}\n"
        "\n"
        "Filters (0 nodes of 4 pass all):\n"
        "  RULE                     REJECTED\n"
        "  base.taint_toleration    1 of 4\n"
        "  base.node_resources_fit  4 of 4\n"
        "  gpu_model                0 of 4\n"
        "\n"
        "What would make it fit: the nearest node is gpu-a100-1 (rejected by 1 rule):\n"
        "  base.node_resources_fit: Insufficient nvidia.com/gpu\n"
        "    nvidia.com/gpu: requests 16, free 2 of 8 allocatable (short by 14)\n"
        "  Equally near: gpu-h100-1\n"
        "\n"
        "Preemption:\n"
        "  none: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
        "3 No preemption victims found for incoming pod.\n"
    )


def test_schedulable_pod_shows_the_ranking_and_the_selected_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, version = explain(capsys, "--pod", "web-1")
    assert out == (
        "Pod default/web-1: schedulable: would be placed on gpu-a100-1 (score 300)\n"
        f"Governed by policy everything-else (profile policyengine), version {version}\n"
        "\n"
        "Filters (3 nodes of 4 pass all):\n"
        "  RULE                     REJECTED\n"
        "  base.taint_toleration    1 of 4\n"
        "  base.node_resources_fit  0 of 4\n"
        "\n"
        "Ranking (3 feasible nodes):\n"
        "  RANK  NODE        TOTAL\n"  # a tie is one rank, the seed's choice first in it
        "  1     gpu-a100-1  300    selected (2 nodes tie at 300: the seed chose)\n"
        "  1     cpu-1       300\n"
        "  3     gpu-h100-1  100\n"
    )


def test_a_gated_pod_is_explained_as_it_would_be_decided_once_ungated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gates = [{"name": "example.com/a"}, {"name": "example.com/b"}]
    snapshot = with_pod_spec(tmp_path, "web-1", schedulingGates=gates)
    code, out, _ = run(capsys, "--policy", GPU_POLICY, "--cluster", snapshot, "--pod", "web-1")
    assert code == 0
    assert out.splitlines()[:2] == [
        "Pod default/web-1: schedulable: would be placed on gpu-a100-1 (score 300)",
        "  waiting for scheduling gates: [example.com/a example.com/b]: kube-scheduler does "
        "not try it before they are removed; what follows is what it would decide then",
    ]


def test_a_pod_with_resource_claims_is_explained_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No node is looked at: no filter table, no preemption, only why."""
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    snapshot = with_pod_spec(tmp_path, "web-1", resourceClaims=claims)
    code, out, _ = run(capsys, "--policy", GPU_POLICY, "--cluster", snapshot, "--pod", "web-1")
    assert code == 0
    version = out.split("version ", 1)[1].split("\n", 1)[0]
    assert out == (
        "Pod default/web-1: unschedulable\n"
        "  pod default/web-1 uses dynamic resource allocation (spec.resourceClaims: gpu), which "
        "policyengine does not allocate: schedule it with kube-scheduler (schedulerName: "
        "default-scheduler)\n"
        f"Governed by policy everything-else (profile policyengine), version {version}\n"
    )


def test_node_with_resource_shortage(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = explain(capsys, "--pod", "ml/train-huge", "--node", "cpu-1")
    node_section = out.split("\n\n")[-1]
    assert node_section == (
        "Node cpu-1: rejected by 1 filter\n"
        "  RULE                     KIND    VERDICT         DETAIL\n"
        "  base.taint_toleration    filter  passed\n"
        "                                                   taint_toleration_reasons(pod, node) = []\n"
        "  base.node_resources_fit  filter  rejected        "
        "Insufficient cpu; Insufficient memory; Insufficient nvidia.com/gpu\n"
        "                                                   resources_fit_reasons(pod, node) = "
        "[Insufficient cpu, Insufficient memory, Insufficient nvidia.com/gpu]\n"
        "  gpu_model                filter  not applicable\n"
        "                                                   model = any\n"
        "  It lacks:\n"
        "    cpu: requests 32, free 6 of 8 allocatable (short by 26)\n"
        "    memory: requests 256Gi, free 28Gi of 32Gi allocatable (short by 228Gi)\n"
        "    nvidia.com/gpu: requests 16, free 0 of 0 allocatable (short by 16)\n"
    )


def test_feasible_node_shows_its_score_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = explain(capsys, "--pod", "ml/train-b-0", "--node", "gpu-h100-1")
    node_section = out.split("\n\n")[-1]
    assert node_section == (
        "Node gpu-h100-1: feasible, rank 1, total 100\n"
        "  RULE                     KIND    VERDICT  DETAIL\n"
        "  base.taint_toleration    filter  passed\n"
        "                                            taint_toleration_reasons(pod, node) = []\n"
        "  base.node_resources_fit  filter  passed\n"
        "                                            resources_fit_reasons(pod, node) = []\n"
        "  gpu_model                filter  passed\n"
        "                                            node.gpu.product = NVIDIA-H100-80GB-HBM3\n"
        "                                            model = NVIDIA-H100-80GB-HBM3\n"
        "  gpu_packing              score   scored   50 × 2 = 100 (raw 50)\n"
        "                                            100 * (node.gpu.allocated + pod.gpu_count) "
        "/ node.gpu.count = 50\n"
        "                                            100 * (node.gpu.allocated + pod.gpu_count) = 400\n"
        "                                            node.gpu.count = 8\n"
    )


def test_rejected_node_shows_every_rejecting_rule_with_its_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _ = explain(capsys, "--pod", "ml/train-b-0", "--node", "gpu-a100-1")
    assert out.split("\n\n")[-1] == (
        "Node gpu-a100-1: rejected by 2 filters\n"
        "  RULE                     KIND    VERDICT   DETAIL\n"
        "  base.taint_toleration    filter  passed\n"
        "                                             taint_toleration_reasons(pod, node) = []\n"
        "  base.node_resources_fit  filter  rejected  Insufficient nvidia.com/gpu\n"
        "                                             resources_fit_reasons(pod, node) = "
        "[Insufficient nvidia.com/gpu]\n"
        "  gpu_model                filter  rejected  "
        "node has NVIDIA-A100-SXM4-80GB, pod needs NVIDIA-H100-80GB-HBM3\n"
        "                                             node.gpu.product = NVIDIA-A100-SXM4-80GB\n"
        "                                             model = NVIDIA-H100-80GB-HBM3\n"
        "  It lacks:\n"
        "    nvidia.com/gpu: requests 4, free 2 of 8 allocatable (short by 2)\n"
    )


def test_no_policy_matches(capsys: pytest.CaptureFixture[str]) -> None:
    out, version = explain(capsys, "--pod", "web-1", "--scheduler-name", "gpu-only")
    assert out == (
        "Pod default/web-1: unschedulable\n"
        "  no policy of profile gpu-only matches the pod (its policies: gpu-jobs)\n"
        f"Policy version {version}\n"
    )


def test_shipped_policies_on_real_kubectl_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--cluster", KUBECTL, "--pod", "team-a/huge-0")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:3] == [
        "Pod team-a/huge-0: unschedulable",
        "  0/3 nodes are available: 3 Insufficient cpu.",
        lines[2],
    ]
    assert lines[2].startswith("Governed by policy cpu-pods (profile policyengine), version ")
    assert "  kube.node_resources_fit   3 of 3" in lines
    assert out.endswith(
        "What would make it fit: the nearest node is node-1 (rejected by 1 rule):\n"
        "  kube.node_resources_fit: Insufficient cpu\n"
        "    cpu: requests 16, free 4 of 4 allocatable (short by 12)\n"
        "  Equally near: node-2, node-3\n"
        "\n"
        "Preemption:\n"
        "  none: 0/3 nodes are available: 3 No preemption victims found for incoming pod.\n"
    )


ERROR_CASES = {
    "unknown node, close names": (
        ["--policy", GPU_POLICY, "--pod", "web-1", "--node", "cpu-2"],
        "policyengine explain: node cpu-2 not found in the snapshot; "
        "close names: cpu-1, cpu-tainted\n",
    ),
    "unknown node, nothing close": (
        ["--policy", GPU_POLICY, "--pod", "web-1", "--node", "zzzzzzzz"],
        "policyengine explain: node zzzzzzzz not found in the snapshot; "
        "nodes in the snapshot include: gpu-a100-1, gpu-h100-1, cpu-1\n",
    ),
    "unknown pod": (
        ["--policy", GPU_POLICY, "--pod", "kube-system/infra"],
        "policyengine explain: pod kube-system/infra not found in the snapshot; "
        "close names: kube-system/infra-agent\n",
    ),
}


@pytest.mark.parametrize("args, message", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run(capsys, "--cluster", CLUSTER, *args)
    assert (code, out, err) == (2, "", message)


def test_broken_policy_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--policy", BROKEN_POLICY, "--cluster", CLUSTER, "--pod", "web-1")
    assert (code, out) == (2, "")
    assert err.count("error PE2") == 2
    assert err.endswith("policyengine explain: the policy has 2 errors; nothing was evaluated\n")


def test_json_of_an_unschedulable_pod(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "--policy",
        GPU_POLICY,
        "--cluster",
        CLUSTER,
        "--pod",
        "ml/train-huge",
        "--format",
        "json",
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    version = document["version"]
    preemption = document.pop("preemption")
    assert document == {
        "pod": "ml/train-huge",
        "schedulable": False,
        "node": None,
        "score": None,
        "message": "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient nvidia.com/gpu.",
        "profile": "policyengine",
        "policy": "gpu-jobs",
        "version": version,
        "gated": None,
        "nodes": 4,
        "feasible": 0,
        "histogram": {
            "Insufficient cpu": 1,
            "Insufficient memory": 1,
            "Insufficient nvidia.com/gpu": 3,
            "node(s) had untolerated taint {dedicated: infra}": 1,
        },
        "filters": [
            {"rule": "base.taint_toleration", "rejected": 1},
            {"rule": "base.node_resources_fit", "rejected": 4},
            {"rule": "gpu_model", "rejected": 0},
        ],
        "ranking": [],
        "nearest": {
            "node": "gpu-a100-1",
            "rejections": [
                {"rule": "base.node_resources_fit", "reasons": ["Insufficient nvidia.com/gpu"]}
            ],
            "lacks": [
                {
                    "resource": "nvidia.com/gpu",
                    "requested": 16,
                    "free": 2,
                    "allocatable": 8,
                    "short_by": 14,
                }
            ],
            "equally_near": ["gpu-h100-1"],
        },
        "node_report": None,
        "gang": None,
    }
    assert preemption["possible"] is False and preemption["victims"] == []
    assert preemption["message"].startswith("0/4 nodes are available: ")


def test_json_of_a_schedulable_pod_and_one_node(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--policy",
        GPU_POLICY,
        "--cluster",
        CLUSTER,
        "--pod",
        "web-1",
        "--node",
        "cpu-1",
        "--format",
        "json",
    )
    assert code == 0
    document = json.loads(out)
    assert (document["schedulable"], document["node"], document["score"]) == (
        True,
        "gpu-a100-1",
        300,
    )
    assert document["ranking"] == [
        {"rank": 1, "node": "gpu-a100-1", "total": 300, "selected": True},
        {"rank": 1, "node": "cpu-1", "total": 300, "selected": False},
        {"rank": 3, "node": "gpu-h100-1", "total": 100, "selected": False},
    ]
    report = document["node_report"]
    assert (report["node"], report["feasible"], report["total"]) == ("cpu-1", True, 300)
    assert report["scores"] == {"zone_a": 100, "few_pods": 0}
    assert report["weights"] == {"zone_a": 3, "few_pods": 1}
    zone = next(r for r in report["rules"] if r["rule"] == "zone_a")
    assert zone["values"]['node.topology.zone == "zone-a"'] == "true"
    assert document["preemption"] is None


def test_a_bad_option_shows_explains_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["explain", "--cluster", CLUSTER, "--pod", "web-1", "--bogus"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: policyengine explain ")
    assert "[--format {text,json}]" in err
    assert err.rstrip().endswith("policyengine explain: error: unrecognized arguments: --bogus")
