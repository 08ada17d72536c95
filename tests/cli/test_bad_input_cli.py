"""Malformed gang, budget, load and GPU input never gives a traceback.

Each row adds one bad object (or bad annotation, or bad option) to the GPU fixture cluster and
runs ``simulate``, ``filter`` and ``explain`` on it: an error is one message naming the file,
the object and the field, with exit status 2; an unreadable annotation the engine can do
without is a warning naming the object and annotation, and the command still answers.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
POLICY = str(ROOT.parent / "policies")
FIXTURE = ROOT / "cli" / "fixtures" / "snapshots" / "gpu-cluster.yaml"
POD = "default/web-1"  # a pending pod of the fixture

QUANTITY = (
    "expected a number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, "
    "Ei) or exponent (e3)"
)


def _base() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(FIXTURE.read_text())
    return loaded


def _named(cluster: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        item
        for item in cluster["items"]
        if item["kind"] == kind and item["metadata"]["name"] == name
    )
    return found


def _annotate(kind: str, name: str, key: str, value: object) -> Any:
    def change(cluster: dict[str, Any]) -> None:
        meta = _named(cluster, kind, name)["metadata"]
        meta.setdefault("annotations", {})[key] = value

    return change


def _extra(obj: dict[str, Any]) -> Any:
    def change(cluster: dict[str, Any]) -> None:
        cluster["items"].append(copy.deepcopy(obj))

    return change


def _pod_group(metadata: dict[str, Any], spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def _pdb(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b1", "namespace": "default"},
        "spec": spec,
    }


def _metrics(usage: Any, timestamp: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": "gpu-a100-1"},
        "timestamp": timestamp,
        "window": "30s",
        "usage": usage,
    }


APP = {"matchLabels": {"app": "x"}}


def _pod_change(name: str, change: Any) -> Any:
    def apply(cluster: dict[str, Any]) -> None:
        change(_named(cluster, "Pod", name))

    return apply


# (id, change to the fixture, error message after "<file>: " or None, warning or None)
CASES: list[tuple[str, Any, str | None, str | None]] = [
    (
        "pod-without-spec",
        _pod_change("web-1", lambda pod: pod.pop("spec")),
        "Pod default/web-1: spec: is required (a Pod's spec holds its containers)",
        None,
    ),
    (
        "pod-containers-not-a-list",
        _pod_change("web-1", lambda pod: pod["spec"].update(containers={"name": "c"})),
        "Pod default/web-1: spec.containers: expected a list, got mapping",
        None,
    ),
    (
        "pod-label-a-number",
        _pod_change("web-1", lambda pod: pod["metadata"].update(labels={"tier": 2})),
        "Pod default/web-1: metadata.labels.tier: expected a string, got number 2 (quote it)",
        None,
    ),
    (
        "podgroup-min-member-not-int",
        _extra(_pod_group({"name": "g1", "namespace": "default"}, {"minMember": "x"})),
        "PodGroup default/g1: spec.minMember: expected an integer, got string 'x'",
        None,
    ),
    (
        "podgroup-without-name",
        _extra(_pod_group({"namespace": "default"}, {"minMember": 2})),
        "PodGroup default/<unnamed>: metadata.name: is required",
        None,
    ),
    (
        "podgroup-spec-not-a-map",
        _extra(_pod_group({"name": "g1"}, [1])),
        "PodGroup g1: spec: expected a mapping, got list",
        None,
    ),
    (
        "pdb-bad-selector-operator",
        _extra(
            _pdb(
                {
                    "minAvailable": 1,
                    "selector": {"matchExpressions": [{"key": "app", "operator": "Foo"}]},
                }
            )
        ),
        "PodDisruptionBudget default/b1: spec.selector: 'Foo' is not a valid label selector "
        "operator",
        None,
    ),
    (
        "pdb-selector-not-a-map",
        _extra(_pdb({"minAvailable": 1, "selector": "app=x"})),
        "PodDisruptionBudget default/b1: spec.selector: expected a mapping, got string",
        None,
    ),
    (
        "pdb-both-bounds",
        _extra(_pdb({"minAvailable": 1, "maxUnavailable": 1, "selector": APP})),
        "PodDisruptionBudget default/b1: spec: minAvailable and maxUnavailable cannot both be set",
        None,
    ),
    (
        "pdb-bad-percentage",
        _extra(_pdb({"minAvailable": "abc%", "selector": APP})),
        "PodDisruptionBudget default/b1: spec.minAvailable: expected an integer or a percentage "
        "such as \"50%\", got 'abc%'",
        None,
    ),
    (
        "node-metrics-bad-quantity",
        _extra(_metrics({"cpu": "lots", "memory": "1Gi"})),
        f"NodeMetrics gpu-a100-1: usage.cpu: quantity 'lots' is not valid: {QUANTITY}",
        None,
    ),
    (
        "node-metrics-bad-timestamp",
        _extra(_metrics({"cpu": "1"}, timestamp="yesterday")),
        "NodeMetrics gpu-a100-1: timestamp: 'yesterday' is not an RFC 3339 time",
        None,
    ),
    (
        "hami-register-garbage",
        _annotate("Node", "gpu-a100-1", "hami.io/node-nvidia-register", "garbage{{"),
        None,
        "Node gpu-a100-1: metadata.annotations[hami.io/node-nvidia-register]: expected devices "
        "separated by ':' or a JSON list; devices are taken from the node's labels",
    ),
    (
        "hami-register-json-without-id",
        _annotate("Node", "gpu-a100-1", "hami.io/node-nvidia-register", '[{"id": 3}]'),
        None,
        "Node gpu-a100-1: metadata.annotations[hami.io/node-nvidia-register]: device 0: no id; "
        "devices are taken from the node's labels",
    ),
    (
        "gpu-share-garbage",
        _annotate("Pod", "web-1", "policyengine.io/gpu-share", "cores=abc,memory=zz"),
        None,
        "Pod default/web-1: metadata.annotations[policyengine.io/gpu-share]: cores 'abc': "
        "expected a percentage from 1 to 100; the annotation is ignored",
    ),
    (
        "hami-assignment-garbage",
        _annotate("Pod", "train-a-0", "hami.io/vgpu-devices-allocated", "GPU-x,NVIDIA,abc:;"),
        None,
        "Pod ml/train-a-0: metadata.annotations[hami.io/vgpu-devices-allocated]: container 0, "
        "device 0: expected uuid,type,memory,cores; the annotation is ignored",
    ),
    (
        "hami-to-allocate-bad-numbers",
        _annotate("Pod", "train-a-0", "hami.io/vgpu-devices-to-allocate", ",,,:"),
        None,
        "Pod ml/train-a-0: metadata.annotations[hami.io/vgpu-devices-to-allocate]: container 0, "
        "device 0: memory and cores must be non-negative integers; the annotation is ignored",
    ),
]

COMMANDS = [
    ["simulate"],
    ["filter", "--pod", POD],
    ["explain", "--pod", POD],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("change", "error", "warning"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_snapshot_input_is_one_message(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    change: Any,
    error: str | None,
    warning: str | None,
) -> None:
    cluster = _base()
    change(cluster)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    code = main([command[0], "--policy", POLICY, "--cluster", str(path), *command[1:]])
    err = capsys.readouterr().err
    name = command[0]
    if error is not None:
        assert code == 2
        assert err == f"policyengine {name}: {path}: {error}\n"
    else:
        assert code == 0
        assert f"policyengine {name}: warning: {warning}\n" in err.splitlines(keepends=True)
    assert "Traceback" not in err


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}
BAD_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "zz"}}}]},
}

# (id, file text or None for a missing file, message after "--arrivals: ")
ARRIVALS: list[tuple[str, str | None, str]] = [
    ("missing", None, "{path}: no such snapshot file or directory"),
    (
        "bad-yaml",
        ": bad: [\n",
        "{path}:1:1: not valid YAML or JSON: expected <block end>, but found ':'",
    ),
    ("a-node", yaml.safe_dump(NODE), "{path}: Node n9: an arrival list holds only Pods"),
    (
        "a-config-map",
        yaml.safe_dump(CONFIG_MAP),
        "{path}: ConfigMap x/c: an arrival list holds only Pods",
    ),
    ("a-scalar", "42\n", "{path}: expected Kubernetes objects (mappings with a kind), got int"),
    ("empty", "", "{path}: no pods in the arrival list"),
    (
        "bad-pod",
        yaml.safe_dump(BAD_POD),
        f"{{path}}: Pod default/p: spec.containers[0].resources.requests.cpu: quantity 'zz' is "
        f"not valid: {QUANTITY}",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [a[1:] for a in ARRIVALS], ids=[a[0] for a in ARRIVALS]
)
def test_bad_arrival_list_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, message: str
) -> None:
    path = tmp_path / "arrivals.yaml"
    if text is not None:
        path.write_text(text)
    argv = ["simulate", "--policy", POLICY, "--cluster", str(FIXTURE), "--arrivals", str(path)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"policyengine simulate: --arrivals: {message.format(path=path)}\n"


# (spec, message after "--gpu-shapes: ")
SHAPES = [
    ("garbage", "shape 1: 'garbage': expected key=value"),
    ("cores=abc", "shape 1: cores 'abc': not a number"),
    ("gpus=1;cores=25,memory=zz", "shape 2: memory 'zz': not a number"),
    (";;", "no shapes given"),
    ("cores=-5", "shape 1: shape key 'cores' must not be negative"),
    (
        "gpus=1;memory_percent=120",
        "shape 2: shape key 'memory_percent' must be at most 100 (a share of one device)",
    ),
    ("weight=3", "shape 1: a shape needs gpus, cores, memory or memory_percent"),
    (
        "foo=1",
        "shape 1: unknown shape key 'foo' (expected one of gpus, cores, memory, memory_percent, "
        "cpu, host_memory, weight)",
    ),
]


@pytest.mark.parametrize(("spec", "message"), SHAPES, ids=[s[0] for s in SHAPES])
def test_bad_gpu_shapes_are_one_message(
    capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    argv = ["simulate", "--policy", POLICY, "--cluster", str(FIXTURE), "--gpu-shapes", spec]
    code = main(argv)
    assert code == 2
    assert capsys.readouterr().err == f"policyengine simulate: --gpu-shapes: {message}\n"
