"""``policyengine simulate`` with GPU sharing: the ``gpu`` summary, ``--gpu-shapes`` and the
arrival replay (``--arrivals``), as a table and as JSON.

The cluster: one node with two 40 GiB GPUs. Arrivals, in order: a whole GPU, a 60% share, a
second 60% share (no device has 60% left: dropped), a 40% share (fills the first share's
device). Placed demand 2.0 of 2.6 GPUs; at the drop 1.6 of 2 GPUs were allocated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "policies" / "gpu-share-binpack.sched")

NODE = {
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "labels": {
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
            "nvidia.com/gpu.count": "2",
            "nvidia.com/gpu.memory": "40960",
        },
    },
    "status": {
        "allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def pod(name: str, share: str | None = None, gpus: int = 0) -> dict[str, object]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    annotations = {"policyengine.io/gpu-share": share} if share else {}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]},
    }


ARRIVALS = [pod("z", gpus=1), pod("y", "cores=60"), pod("x", "cores=60"), pod("w", "cores=40")]


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(NODE))
    arrivals = tmp_path / "arrivals.yaml"
    arrivals.write_text(yaml.safe_dump_all(ARRIVALS))
    return str(cluster), str(arrivals)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_arrivals_json(capsys: pytest.CaptureFixture[str], files: tuple[str, str]) -> None:
    cluster, arrivals = files
    code, out, _ = run(
        capsys, "--policy", POLICY, "--cluster", cluster, "--arrivals", arrivals,
        "--gpu-shapes", "cores=50", "--format", "json",
    )  # fmt: skip
    assert code == 0
    document = json.loads(out)
    assert [(p["pod"], p["node"]) for p in document["placements"]] == [
        ("ml/z", "n1"),
        ("ml/y", "n1"),
        ("ml/x", None),
        ("ml/w", "n1"),
    ]
    assert document["summary"]["arrivals"] == {
        "arrived": 4,
        "placed": 3,
        "dropped": 1,
        "arrived_gpus": 2.6,
        "placed_gpus": 2.0,
        "allocation_ratio": 0.7692,
        "first_drop": 3,
        "allocation_at_first_drop": 0.8,
    }
    assert document["summary"]["gpu"] == {
        "total_gpus": 2,
        "allocated_gpus": 2.0,
        "allocation_ratio": 1.0,
        "free_gpus": 0.0,
        "fragmented_gpus": 0.0,
        "fragmentation_ratio": 0.0,
        "shapes": [{"cores": 50, "memory_percent": 50, "weight": 1.0}],
    }


def test_arrivals_table(capsys: pytest.CaptureFixture[str], files: tuple[str, str]) -> None:
    cluster, arrivals = files
    code, out, _ = run(capsys, "--policy", POLICY, "--cluster", cluster, "--arrivals", arrivals)
    assert code == 0
    assert out.rstrip().splitlines()[-2:] == [
        "GPU devices: 2.00 of 2 GPUs allocated (100.0%); fragmentation (FGD, against 6 pod "
        "shape(s)): 0.00 of 0.00 free GPUs (0.0%) no typical pod can use",
        "Arrivals: 3 of 4 placed, 1 dropped; 2.00 of 2.60 GPUs of demand placed (76.9%); first "
        "GPU pod dropped at arrival 3, with 80.0% of the GPUs allocated",
    ]


def test_pending_pods_report_gpu_use_with_the_pods_shapes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([NODE, pod("a", "cores=30"), pod("b", "cores=90")]))
    code, out, _ = run(capsys, "--policy", POLICY, "--cluster", str(cluster), "--format", "json")
    assert code == 0
    gpu = json.loads(out)["summary"]["gpu"]
    # the policy declares shapes; they are used
    assert len(gpu["shapes"]) == 6
    assert gpu["allocated_gpus"] == 1.2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--gpu-shapes", "cores=x"],
            "policyengine simulate: --gpu-shapes: shape 1: cores 'x': not a number\n",
        ),
        (
            ["--gpu-shapes", "size=2"],
            "policyengine simulate: --gpu-shapes: shape 1: unknown shape key 'size' (expected one of gpus, cores, memory, memory_percent, cpu, host_memory, weight)\n",
        ),
    ],
    ids=["--gpu-shapes,cores=x", "--gpu-shapes,size=2"],
)
def test_bad_shapes(
    capsys: pytest.CaptureFixture[str], files: tuple[str, str], args: list[str], message: str
) -> None:
    cluster, _ = files
    code, _, err = run(capsys, "--policy", POLICY, "--cluster", cluster, *args)
    assert code == 2
    assert err == message


def test_unreadable_share_annotation_is_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([NODE, pod("odd", "cores=150")]))
    code, _, err = run(capsys, "--policy", POLICY, "--cluster", str(cluster))
    assert code == 0
    assert err == (
        "policyengine simulate: warning: Pod ml/odd: metadata.annotations[policyengine.io/gpu-share]: "
        "cores '150': expected a percentage from 1 to 100; the annotation is ignored\n"
    )
