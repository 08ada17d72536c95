"""``policyengine score``: the JSON contract, the table, ties and seeds, bad input.

The fixture policy's scores are worked out by hand from ``fixtures/snapshots/gpu-cluster.yaml``:
``zone_a`` (weight 3) is 100 in zone-a; ``few_pods`` (weight 1, reverse) is 100 on the nodes
with the fewest pods; ``gpu_packing`` (weight 2) is the GPU share in use once the pod lands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLUSTER = str(FIXTURES / "snapshots" / "gpu-cluster.yaml")
POD_FILE = FIXTURES / "snapshots" / "pod-files" / "gpu-pod.yaml"
GPU_POLICY = str(FIXTURES / "policies" / "gpu")
KUBECTL = str(ROOT / "tests" / "data" / "k8s-wire" / "kubectl-get-nodes-pods.yaml")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["score", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def plain(total: int, zone_a: int, few_pods: int) -> dict:
    return {"total": total, "rules": {"zone_a": zone_a, "few_pods": few_pods}}


def packing(total: float, score: float) -> dict:
    return {"total": total, "rules": {"gpu_packing": score}}


JSON_CASES = {
    "weighted sum, best first, ties by name": (
        ["--pod", "web-1"],
        {
            "pod": "default/web-1",
            "scores": {
                "cpu-1": plain(300, 100, 0),
                "gpu-a100-1": plain(300, 100, 0),
                "gpu-h100-1": plain(100, 0, 100),
            },
            "ranking": ["cpu-1", "gpu-a100-1", "gpu-h100-1"],
            "selected": "gpu-a100-1",  # seed 0 broke the tie
        },
    ),
    "feasible nodes only": (
        ["--pod", "ml/train-b-0"],
        {
            "pod": "ml/train-b-0",
            "scores": {"gpu-h100-1": packing(100, 50)},
            "ranking": ["gpu-h100-1"],
            "selected": "gpu-h100-1",
        },
    ),
    "a running pod does not count against itself": (
        ["--pod", "ml/train-a-0"],
        {
            "pod": "ml/train-a-0",
            "scores": {"gpu-a100-1": packing(150, 75), "gpu-h100-1": packing(150, 75)},
            "ranking": ["gpu-a100-1", "gpu-h100-1"],
            "selected": "gpu-h100-1",  # seed 0 broke the tie
        },
    ),
    "a pod from a file": (
        ["--pod", str(POD_FILE)],
        {
            "pod": "ml/finetune-0",
            "scores": {"gpu-a100-1": packing(200, 100)},
            "ranking": ["gpu-a100-1"],
            "selected": "gpu-a100-1",
        },
    ),
    "no feasible node": (
        ["--pod", "ml/train-huge"],
        {"pod": "ml/train-huge", "scores": {}, "ranking": [], "selected": None},
    ),
}


@pytest.mark.parametrize("args, expected", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json(capsys: pytest.CaptureFixture[str], args: list[str], expected: dict) -> None:
    code, out, err = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, *args, "--format", "json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == expected


def test_fractional_scores_are_json_floats(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pod = tmp_path / "three-gpus.yaml"
    text = POD_FILE.read_text(encoding="utf-8").replace('"2"', '"3"')
    pod.write_text(text.replace("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"), encoding="utf-8")
    code, out, _ = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", str(pod), "--format", "json"
    )
    assert code == 0
    assert '"total": 75,' in out and '"gpu_packing": 37.5' in out
    assert json.loads(out)["scores"] == {"gpu-h100-1": packing(75, 37.5)}


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "kube-system/infra-agent"
    )
    assert code == 0
    version = out.split("version ", 1)[1].split("\n", 1)[0]
    assert out == (
        f"Pod kube-system/infra-agent: policy everything-else, version {version}\n"
        "RANK  NODE         TOTAL  zone_a  few_pods\n"  # ties share a rank; the chosen first
        "1     gpu-a100-1   300    100     0\n"
        "1     cpu-1        300    100     0\n"
        "3     cpu-tainted  100    0       100\n"
        "3     gpu-h100-1   100    0       100\n"
        "total = sum of weight × score; weights: zone_a 3, few_pods 1\n"
        "selected: gpu-a100-1 (2 nodes tie at 300: the seed chose)\n"
    )


def test_table_without_feasible_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "ml/train-huge"
    )
    assert code == 0
    assert out.splitlines()[1] == (
        "no feasible node to score: 0/4 nodes are available: 1 Insufficient cpu, "
        "1 Insufficient memory, 1 node(s) had untolerated taint {dedicated: infra}, "
        "3 Insufficient nvidia.com/gpu."
    )


def test_seed_breaks_ties_reproducibly(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = set()
    for seed in range(8):
        args = ["--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "web-1", "--seed", str(seed)]
        first = run(capsys, *args)[1]
        assert run(capsys, *args)[1] == first
        chosen.add(first.splitlines()[-1])
    tie = " (2 nodes tie at 300: the seed chose)"
    assert chosen == {f"selected: cpu-1{tie}", f"selected: gpu-a100-1{tie}"}


@pytest.mark.parametrize("version", ["1.28", "current"])
def test_shipped_policies_on_real_kubectl_output(
    capsys: pytest.CaptureFixture[str], version: str
) -> None:
    code, out, err = run(
        capsys,
        "--cluster",
        KUBECTL,
        "--pod",
        "default/web-0",
        "--kube-version",
        version,
        "--format",
        "json",
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["pod"] == "default/web-0"
    assert document["ranking"] == ["node-1", "node-3", "node-2"]
    assert set(document["scores"]["node-1"]["rules"]) == {
        "kube.taint_toleration",
        "kube.node_affinity",
        "kube.pod_topology_spread",
        "kube.inter_pod_affinity",
        "kube.image_locality",
        # cpu-pods governs pods asking no GPU: kube's resource scores on nodes without GPUs,
        # its other rules score GPU nodes (none here)
        "node_resources_fit",
        "balanced_allocation",
        "off_gpu_nodes",
        "gpu_fragmentation",
    }


def test_unknown_pod(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "ml/train-c"
    )
    assert (code, out) == (2, "")
    assert err == (
        "policyengine score: pod ml/train-c not found in the snapshot; "
        "close names: ml/train-b-0, ml/train-a-0, ml/train-huge\n"
    )


def test_bad_kube_version_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["score", "--cluster", CLUSTER, "--pod", "web-1", "--kube-version", "1.20"])
    assert exit_info.value.code == 2
    assert "invalid choice: '1.20'" in capsys.readouterr().err
