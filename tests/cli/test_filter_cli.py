"""``policyengine filter``: the JSON contract, the table, and every kind of bad input.

Runs in-process on the snapshots under ``fixtures/snapshots`` with the small policy under
``fixtures/policies/gpu`` (its filters: kube's taint and resource builtins, and a GPU model
filter), so each expected document can be checked by reading the fixtures.
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
SPLIT = str(FIXTURES / "snapshots" / "split")
POD_FILE = str(FIXTURES / "snapshots" / "pod-files" / "gpu-pod.yaml")
GPU_POLICY = str(FIXTURES / "policies" / "gpu")
BROKEN_POLICY = str(FIXTURES / "policies" / "broken")
KUBECTL = str(ROOT / "tests" / "data" / "k8s-wire" / "kubectl-get-nodes-pods.yaml")

TAINT = {
    "rule": "base.taint_toleration",
    "reason": "node(s) had untolerated taint {dedicated: infra}",
}


def fit(reason: str) -> dict[str, str]:
    return {"rule": "base.node_resources_fit", "reason": f"Insufficient {reason}"}


def model(has: str, needs: str) -> dict[str, str]:
    return {"rule": "gpu_model", "reason": f"node has {has}, pod needs {needs}"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["filter", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-80GB"

JSON_CASES = {
    "plain pod: only the tainted node is out": (
        ["--pod", "web-1"],
        {
            "pod": "default/web-1",
            "feasible": ["gpu-a100-1", "gpu-h100-1", "cpu-1"],
            "infeasible": {"cpu-tainted": [TAINT]},
        },
    ),
    "a toleration lets the pod onto the tainted node": (
        ["--pod", "kube-system/infra-agent"],
        {
            "pod": "kube-system/infra-agent",
            "feasible": ["gpu-a100-1", "gpu-h100-1", "cpu-1", "cpu-tainted"],
            "infeasible": {},
        },
    ),
    "every rule and every reason of every node": (
        ["--pod", "ml/train-b-0"],
        {
            "pod": "ml/train-b-0",
            "feasible": ["gpu-h100-1"],
            "infeasible": {
                "gpu-a100-1": [fit("nvidia.com/gpu"), model(A100, H100)],
                "cpu-1": [fit("cpu"), fit("memory"), fit("nvidia.com/gpu"), model("", H100)],
                "cpu-tainted": [
                    TAINT,
                    fit("cpu"),
                    fit("memory"),
                    fit("nvidia.com/gpu"),
                    model("", H100),
                ],
            },
        },
    ),
    "no feasible node is still an answer": (
        ["--pod", "ml/train-huge"],
        {
            "pod": "ml/train-huge",
            "feasible": [],
            "infeasible": {
                "gpu-a100-1": [fit("nvidia.com/gpu")],
                "gpu-h100-1": [fit("nvidia.com/gpu")],
                "cpu-1": [fit("cpu"), fit("memory"), fit("nvidia.com/gpu")],
                "cpu-tainted": [TAINT, fit("cpu"), fit("memory"), fit("nvidia.com/gpu")],
            },
        },
    ),
    "a running pod is decided as if pending, off its own node": (
        ["--pod", "ml/train-a-0"],
        {
            "pod": "ml/train-a-0",
            "feasible": ["gpu-a100-1", "gpu-h100-1"],
            "infeasible": {
                "cpu-1": [fit("cpu"), fit("memory"), fit("nvidia.com/gpu")],
                "cpu-tainted": [TAINT, fit("memory"), fit("nvidia.com/gpu")],
            },
        },
    ),
    "a pod from a file": (
        ["--pod", POD_FILE],
        {
            "pod": "ml/finetune-0",
            "feasible": ["gpu-a100-1"],
            "infeasible": {
                "gpu-h100-1": [model(H100, A100)],
                "cpu-1": [fit("memory"), fit("nvidia.com/gpu"), model("", A100)],
                "cpu-tainted": [TAINT, fit("nvidia.com/gpu"), model("", A100)],
            },
        },
    ),
}


@pytest.mark.parametrize("args, expected", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json(capsys: pytest.CaptureFixture[str], args: list[str], expected: dict) -> None:
    code, out, err = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, *args, "--format", "json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == expected


def test_directory_snapshot_with_json_and_an_ignored_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys,
        "--policy",
        GPU_POLICY,
        "--cluster",
        SPLIT,
        "--pod",
        "shop/api-0",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out) == {
        "pod": "shop/api-0",
        "feasible": ["large"],
        "infeasible": {"small": [fit("cpu"), fit("memory")]},
    }
    assert err == (
        f"policyengine filter: warning: {SPLIT}/nodes.yaml: ConfigMap default/unrelated: "
        "kind ConfigMap is not used by the engine; ignored\n"
    )


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "ml/train-huge"
    )
    assert code == 0
    version = out.split("version ", 1)[1].split("\n", 1)[0]
    assert out == (
        f"Pod ml/train-huge: policy gpu-jobs, version {version}\n"
        "NODE         RESULT    RULE                     REASON\n"
        "gpu-a100-1   rejected  base.node_resources_fit  Insufficient nvidia.com/gpu\n"
        "gpu-h100-1   rejected  base.node_resources_fit  Insufficient nvidia.com/gpu\n"
        "cpu-1        rejected  base.node_resources_fit  Insufficient cpu\n"
        "                       base.node_resources_fit  Insufficient memory\n"
        "                       base.node_resources_fit  Insufficient nvidia.com/gpu\n"
        "cpu-tainted  rejected  base.taint_toleration    node(s) had untolerated taint {dedicated: infra}\n"
        "                       base.node_resources_fit  Insufficient cpu\n"
        "                       base.node_resources_fit  Insufficient memory\n"
        "                       base.node_resources_fit  Insufficient nvidia.com/gpu\n"
        "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient nvidia.com/gpu.\n"
    )


def test_profile_that_governs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", "web-1",
        "--scheduler-name", "gpu-only", "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out) == {"pod": "default/web-1", "feasible": [], "infeasible": {}}
    assert err == "policyengine filter: no policy of profile gpu-only matches the pod\n"


def test_real_kubectl_output_with_the_shipped_policies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--cluster", KUBECTL, "--pod", "team-a/huge-0", "--format", "json")
    assert (code, err) == (0, "")
    cpu = [{"rule": "kube.node_resources_fit", "reason": "Insufficient cpu"}]
    assert json.loads(out) == {
        "pod": "team-a/huge-0",
        "feasible": [],
        "infeasible": {"node-1": cpu, "node-2": cpu, "node-3": cpu},
    }


ERROR_CASES = {
    "pod not found, close names": (
        ["--cluster", CLUSTER, "--pod", "web-9"],
        "policyengine filter: pod default/web-9 not found in the snapshot; "
        "close names: default/web-1, default/web-0\n",
    ),
    "pod in another namespace": (
        ["--cluster", CLUSTER, "--pod", "ml/web-1"],
        "policyengine filter: pod ml/web-1 not found in the snapshot; "
        "close names: default/web-1, default/web-0\n",
    ),
    "pod not found, nothing close": (
        ["--cluster", CLUSTER, "--pod", "zzzzzz"],
        "policyengine filter: pod default/zzzzzz not found in the snapshot; "
        "pods in the snapshot include: default/web-0, default/web-1, kube-system/infra-agent\n",
    ),
    "missing pod file": (
        ["--cluster", CLUSTER, "--pod", "nope.yaml"],
        "policyengine filter: nope.yaml: no such pod file\n",
    ),
    "missing snapshot": (
        ["--cluster", "no-such-snapshot.yaml", "--pod", "web-1"],
        "policyengine filter: no-such-snapshot.yaml: no such snapshot file or directory\n",
    ),
    "empty snapshot": (
        ["--cluster", str(FIXTURES / "snapshots" / "bad" / "empty.yaml"), "--pod", "web-1"],
        f"policyengine filter: {FIXTURES}/snapshots/bad/empty.yaml: "
        "the snapshot holds no objects (an empty file or List); expected Nodes and Pods, as "
        "`kubectl get nodes,pods -A -o yaml` writes them\n",
    ),
    "malformed object names kind, namespace/name and field": (
        ["--cluster", str(FIXTURES / "snapshots" / "bad" / "bad-quantity.yaml"), "--pod", "x"],
        f"policyengine filter: {FIXTURES}/snapshots/bad/bad-quantity.yaml: Pod default/broken: "
        "spec.containers[0].resources.requests.cpu: quantity 'lots' is not valid: expected a "
        "number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or "
        "exponent (e3)\n",
    ),
    "unknown profile": (
        ["--cluster", CLUSTER, "--pod", "web-1", "--scheduler-name", "nope"],
        "policyengine filter: no profile named 'nope' in the policy "
        "(profiles: policyengine, gpu-only)\n",
    ),
}


@pytest.mark.parametrize("args, message", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run(capsys, "--policy", GPU_POLICY, *args)
    assert (code, out, err) == (2, "", message)


def test_broken_policy_prints_every_diagnostic(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--policy", BROKEN_POLICY, "--cluster", CLUSTER, "--pod", "web-1")
    path = f"{BROKEN_POLICY}/broken.sched"
    assert (code, out) == (2, "")
    assert err == (
        f"{path}:3:19: error PE202: Topology has no attribute 'zonee'\n"
        "        node.topology.zonee != null\n"
        "                      ^^^^^\n"
        "    hint: did you mean node.topology.zone?\n"
        "\n"
        f"{path}:6:27: error PE207: the body of score spread must be a number "
        "(int, float or quantity), not string\n"
        '      score spread weight 2 { "high" }\n'
        "                              ^^^^^^\n"
        "\n"
        "policyengine filter: the policy has 2 errors; nothing was evaluated\n"
    )


def test_policy_directory_without_policies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--policy", str(tmp_path), "--cluster", CLUSTER, "--pod", "web-1")
    assert (code, err) == (2, f"policyengine filter: no .sched files found in {tmp_path}\n")


def test_missing_policy_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--policy", "nope.sched", "--cluster", CLUSTER, "--pod", "web-1")
    assert code == 2
    assert err == (
        "nope.sched:1:1: error PE001: cannot read nope.sched: no such file or directory\n"
        "    hint: pass a .sched file or a directory of them\n"
        "\n"
        "policyengine filter: the policy has 1 error; nothing was evaluated\n"
    )


def test_pod_file_with_two_pods(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = Path(POD_FILE).read_text(encoding="utf-8")
    two = tmp_path / "two.yaml"
    two.write_text(text + "---\n" + text.replace("finetune-0", "finetune-1"), encoding="utf-8")
    code, _, err = run(capsys, "--policy", GPU_POLICY, "--cluster", CLUSTER, "--pod", str(two))
    assert (code, err) == (2, f"policyengine filter: {two}: expected one Pod, found 2\n")


def test_cluster_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["filter", "--pod", "web-1"])
    assert exit_info.value.code == 2
    assert "the following arguments are required: --cluster" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["filter", "score"])
def test_a_pod_with_resource_claims_shows_the_rules_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    """``run`` and ``simulate`` do not place it (kube-scheduler allocates claims); ``filter``
    and ``score`` still show what the rules say, and say so on stderr."""
    claimed = with_pod_spec(tmp_path, "web-1", resourceClaims=[{"name": "gpu"}])
    args = ("--policy", GPU_POLICY, "--pod", "web-1", "--format", "json")
    code, out, err = (main([command, "--cluster", claimed, *args]), *capsys.readouterr())
    assert code == 0
    assert err == (
        f"policyengine {command}: warning: pod default/web-1 uses dynamic resource allocation "
        "(spec.resourceClaims: gpu), which policyengine does not allocate: schedule it with "
        "kube-scheduler (schedulerName: default-scheduler); the policy's rules would say:\n"
    )
    main([command, "--cluster", CLUSTER, *args])
    assert json.loads(out) == json.loads(capsys.readouterr().out)
