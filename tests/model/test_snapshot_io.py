from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot_io import load_snapshot, parse_snapshot_text
from tests.model.builders import node_dict, pod_dict

KUBECTL = (
    Path(__file__).resolve().parent.parent / "data" / "k8s-wire" / "kubectl-get-nodes-pods.yaml"
)


@pytest.mark.skipif(not KUBECTL.exists(), reason="wire sample not available")
def test_reads_kubectl_output_as_is() -> None:
    loaded = load_snapshot(KUBECTL)
    assert [n.name for n in loaded.nodes] == ["node-1", "node-2", "node-3"]
    assert {p.key for p in loaded.running_pods} == {
        "default/web-0",
        "default/web-1",
        "team-a/batch-0",
    }
    assert [p.key for p in loaded.pending_pods] == ["team-a/huge-0"]
    assert loaded.warnings == ()


def test_multi_document_yaml_json_and_unknown_kinds() -> None:
    text = "\n---\n".join(
        [
            json.dumps(node_dict("a")),
            "kind: Service\nmetadata: {name: svc, namespace: default}\n",
            "kind: ConfigMap\nmetadata: {name: cm, namespace: default}\n",
            json.dumps({"kind": "PodList", "items": [pod_dict("p", node_name="a"), pod_dict("q")]}),
        ]
    )
    loaded = parse_snapshot_text(text, "snap.yaml")
    assert [n.name for n in loaded.nodes] == ["a"]
    assert [p.key for p in loaded.pods] == ["default/p", "default/q"]
    assert [w.key for w in loaded.workloads] == [("Service", "default", "svc")]
    assert loaded.warnings == (
        "snap.yaml: ConfigMap default/cm: kind ConfigMap is not used by the engine; ignored",
    )
    as_json = parse_snapshot_text(json.dumps({"kind": "List", "items": [node_dict("b")]}), "s.json")
    assert [n.name for n in as_json.nodes] == ["b"]


def test_terminal_pods_are_dropped_with_a_warning() -> None:
    done = pod_dict("done", node_name="a")
    done["status"] = {"phase": "Succeeded"}
    failed = pod_dict("failed", node_name="a")
    failed["status"] = {"phase": "Failed"}
    loaded = parse_snapshot_text(json.dumps([node_dict("a"), *[done] * 200, failed]), "s")
    assert loaded.pods == ()
    assert loaded.warnings == (
        "s: 201 finished pods (phase Succeeded or Failed) ignored: they hold no resources",
    )
    assert loaded.finished == ("default/done (Succeeded)",) * 200 + ("default/failed (Failed)",)
    one = parse_snapshot_text(json.dumps([node_dict("a"), done]), "s")
    assert one.warnings == (
        "s: 1 finished pod (phase Succeeded or Failed) ignored: it holds no resources",
    )


def test_directory_of_files(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(json.dumps(node_dict("a")))
    (tmp_path / "pods.json").write_text(json.dumps(pod_dict("p")))
    (tmp_path / "README.md").write_text("not a snapshot")
    loaded = load_snapshot(tmp_path)
    assert len(loaded.nodes) == 1 and len(loaded.pods) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the snapshot holds no objects"),
        ("kind: List\nitems: []\n", "the snapshot holds no objects"),
        ("kind: List\nitems: null\n", "the snapshot holds no objects"),
        (
            "metadata: {name: x}\n",
            "the snapshot holds no Nodes and no Pods to schedule, only 1 object without a kind; "
            "expected Nodes and Pods, as `kubectl get nodes,pods -A -o yaml` writes them",
        ),
        (
            "kind: List\nitems: [{metadata: {name: a}}, {metadata: {name: b}}]\n",
            "only 2 objects without a kind;",
        ),
        (
            "kind: ConfigMap\nmetadata: {name: c}\n",
            "the snapshot holds no Nodes and no Pods to schedule, only 1 ConfigMap;",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus: {phase: Succeeded}\n",
            "only 1 finished Pod;",
        ),
        ("a: [b\n", "not valid YAML or JSON"),
        ("- 1\n- 2\n", "expected Kubernetes objects"),
        ("kind: {a: 1}\nmetadata: {name: x}\n", r"object x: kind: expected a string, got mapping"),
        (
            "kind: List\nitems:\n- kind: [Pod]\n",
            r"object <unnamed>: kind: expected a string, got list",
        ),
    ],
    ids=[
        "empty",
        "empty-list",
        "null-items",
        "no-kind",
        "two-without-kind",
        "configmap-only",
        "finished-pod-only",
        "not-yaml",
        "not-objects",
        "kind-a-mapping",
        "kind-a-list",
    ],
)
def test_bad_snapshots(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(ModelError, match=message):
        load_snapshot(f)


def test_missing_snapshot(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no such snapshot file or directory"):
        load_snapshot(tmp_path / "nope.yaml")
    with pytest.raises(ModelError, match=r"holds no \.yaml"):
        load_snapshot(tmp_path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda p: p["spec"]["containers"][0].update(resources={"requests": {"cpu": "abc"}}),
            "Pod default/web-1: spec.containers[0].resources.requests.cpu: quantity 'abc' is not valid",
        ),
        (
            lambda p: p["spec"].update(tolerations=[{"key": "a", "operator": "Maybe"}]),
            "Pod default/web-1: spec.tolerations[0].operator: unsupported toleration operator 'Maybe'",
        ),
        (
            lambda p: p["spec"].update(
                topologySpreadConstraints=[
                    {"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            ),
            "Pod default/web-1: spec.topologySpreadConstraints[0].maxSkew: must be an integer greater than zero",
        ),
        (
            lambda p: p["spec"].update(containers="nope"),
            "Pod default/web-1: spec.containers: expected a list, got string",
        ),
        (lambda p: p["metadata"].pop("name"), "Pod default/<unnamed>: metadata.name: is required"),
        (
            lambda p: p["spec"].update(schedulingGates=[{"name": 7}]),
            "Pod default/web-1: spec.schedulingGates[0].name: expected a string, got number 7",
        ),
        (
            lambda p: p["spec"].update(resourceClaims=[{"name": 3}]),
            "Pod default/web-1: spec.resourceClaims[0].name: expected a string, got number 3",
        ),
        (
            lambda p: p["spec"].update(schedulingGates="x"),
            "Pod default/web-1: spec.schedulingGates: expected a list, got string",
        ),
        (
            lambda p: p.pop("spec"),
            "Pod default/web-1: spec: is required (a Pod's spec holds its containers)",
        ),
        (lambda p: p.update(spec=None), "Pod default/web-1: spec: is required"),
        (
            lambda p: p["spec"].update(containers=[]),
            "Pod default/web-1: spec.containers: a Pod needs at least one container",
        ),
        (
            lambda p: p["metadata"].update(labels={"version": 1.1}),
            "Pod default/web-1: metadata.labels.version: expected a string, got number 1.1 "
            "(quote it)",
        ),
        (
            lambda p: p["spec"].update(nodeSelector={"gpus": 8}),
            "Pod default/web-1: spec.nodeSelector.gpus: expected a string, got number 8 (quote it)",
        ),
        (
            lambda p: p["spec"].update(priority="++1000"),
            "Pod default/web-1: spec.priority: expected an integer, got string '++1000'",
        ),
        (
            lambda p: p["spec"].update(priority="\u00b2"),  # a digit to str.isdigit, not to int
            "Pod default/web-1: spec.priority: expected an integer, got string '²'",
        ),
        (
            lambda p: p["metadata"].update(annotations={"on": True}),
            "Pod default/web-1: metadata.annotations.on: expected a string, got boolean True "
            "(quote it)",
        ),
    ],
    ids=[
        "bad-quantity",
        "bad-toleration-operator",
        "zero-max-skew",
        "containers-not-a-list",
        "no-name",
        "gate-name-a-number",
        "claim-name-a-number",
        "gates-not-a-list",
        "no-spec",
        "null-spec",
        "no-containers",
        "label-a-number",
        "node-selector-a-number",
        "priority-not-an-integer",
        "priority-superscript-digit",
        "annotation-a-boolean",
    ],
)
def test_malformed_pods_name_the_field(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    raw = pod_dict("web-1")
    mutate(raw)
    with pytest.raises(ModelError) as info:
        parse_pod(raw)
    assert str(info.value).startswith(message)


def test_malformed_node_names_the_field() -> None:
    raw = node_dict("n1", taints=[("k", "v", "Sometimes")])
    with pytest.raises(
        ModelError, match=r"^Node n1: spec.taints\[0\].effect: unsupported taint effect 'Sometimes'"
    ):
        parse_node(raw)


def test_api_server_defaults() -> None:
    pod = parse_pod(
        pod_dict(
            "p",
            containers=[
                {
                    "name": "c",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"cpu": "1"}},
                }
            ],
            hostNetwork=True,
        )
    )
    port = pod.containers[0].ports[0]
    assert (port.host_port, port.protocol) == (80, "TCP")
    assert pod.containers[0].requests == {"cpu": 1}
    node = parse_node(
        {"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}}
    )
    assert node.allocatable == {"cpu": 2}
