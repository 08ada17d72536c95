"""``deploy/``: valid Kubernetes objects, complete kustomizations, and the settings we promise.

Every object is validated offline against the Kubernetes OpenAPI schemas of v1.28 in strict
mode (unknown fields are errors) with ``kubernetes-validate``, which bundles the schemas. The
kustomizations are rendered here by a small reader of the parts we use (resources, directories,
``namespace``, ``configMapGenerator``) so the test needs no binary; where ``kubectl`` is
installed, ``kubectl kustomize`` renders them too and its output is validated the same way.
Objects of types the cluster does not serve by default (ServiceMonitor, the scheduler's
KubeSchedulerConfiguration) are checked for what this repository relies on.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from policyengine.cli.main import build_parser
from policyengine.controller.health import parse_address

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
EXTENDER = DEPLOY / "examples" / "extender"
KUBE_VERSION = "1.28"
NAMESPACE = "policyengine-system"
POLICY_DIR = "/etc/policyengine/policies"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
# KubeSchedulerConfiguration v1 Extender fields (k8s.io/kube-scheduler/config/v1).
EXTENDER_FIELDS = {
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}


# ------------------------------------------------------------------ rendering


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def kustomization(directory: Path) -> dict[str, Any]:
    return yaml.safe_load((directory / "kustomization.yaml").read_text())


def render(directory: Path) -> list[dict[str, Any]]:
    """What ``kustomize build`` makes of the features our kustomizations use."""
    spec = kustomization(directory)
    unknown = set(spec) - {
        "apiVersion",
        "kind",
        "namespace",
        "labels",
        "resources",
        "configMapGenerator",
    }
    assert not unknown, f"{directory}: this reader does not know {unknown}"
    docs: list[dict[str, Any]] = []
    for entry in spec.get("resources") or ():
        path = (directory / entry).resolve()
        assert path.exists(), f"{directory / 'kustomization.yaml'}: {entry} does not exist"
        docs.extend(render(path) if path.is_dir() else load_yaml(path))
    for generator in spec.get("configMapGenerator") or ():
        options = generator.get("options") or {}
        data = {}
        for entry in generator["files"]:
            key, _, name = entry.rpartition("=") if "=" in entry else ("", "", entry)
            path = directory / name
            assert path.is_file(), f"{directory}: configMapGenerator file {name} does not exist"
            data[key or path.name] = path.read_text()
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": generator["name"], "labels": options.get("labels", {})},
                "data": data,
            }
        )
    for doc in docs:
        for pairs in spec.get("labels") or ():
            doc["metadata"].setdefault("labels", {}).update(pairs["pairs"])
        if spec.get("namespace") and doc["kind"] not in CLUSTER_SCOPED:
            doc["metadata"]["namespace"] = spec["namespace"]
    return docs


@pytest.fixture(scope="module")
def scheduler() -> list[dict[str, Any]]:
    return render(DEPLOY)


@pytest.fixture(scope="module")
def extender() -> list[dict[str, Any]]:
    return render(EXTENDER)


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def all_manifests() -> Iterator[Path]:
    yield from sorted(DEPLOY.rglob("*.yaml"))


# ------------------------------------------------------------------ validity


def validate(doc: dict[str, Any]) -> None:
    try:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = "/".join(str(p) for p in error.path)
        name = f"{doc['kind']}/{doc['metadata'].get('name')}"
        raise AssertionError(f"{name}: {where}: {error.message}") from None


def test_the_validator_rejects_what_kubernetes_would() -> None:
    # A canary: a typo in a field and a wrong type are both caught offline.
    bad_field = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"prots": []},
    }
    bad_type = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replicas": "2"},
    }
    for doc in (bad_field, bad_type):
        with pytest.raises(AssertionError):
            validate(doc)


@pytest.mark.parametrize("directory", [DEPLOY, EXTENDER], ids=["scheduler", "extender"])
def test_every_rendered_object_is_valid(directory: Path) -> None:
    docs = render(directory)
    assert docs
    for doc in docs:
        validate(doc)


def test_every_standalone_manifest_is_valid() -> None:
    for path in all_manifests():
        if path.name in ("kustomization.yaml", "kube-scheduler-config.yaml"):
            continue  # not cluster objects
        for doc in load_yaml(path):
            if doc["kind"] != "ServiceMonitor":  # a CRD's type: checked below
                validate(doc)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("directory", [DEPLOY, EXTENDER], ids=["scheduler", "extender"])
def test_kubectl_kustomize_renders_valid_objects(directory: Path) -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
    ours = render(directory)
    assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered) == sorted(
        (d["kind"], d["metadata"]["name"]) for d in ours
    )
    for doc in rendered:
        validate(doc)
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"]["namespace"] == NAMESPACE


# ------------------------------------------------------------------ the policies ConfigMap


def test_the_config_map_ships_every_policy_unchanged(scheduler: list[dict[str, Any]]) -> None:
    shipped = {p.name: p.read_text() for p in (ROOT / "policies").glob("*.sched")}
    config_map = one(scheduler, "ConfigMap", "policyengine-policies")
    assert config_map["data"] == shipped, (
        "policies/kustomization.yaml must list every .sched file of policies/ under `files`"
    )
    generator = kustomization(ROOT / "policies")["configMapGenerator"][0]
    # A stable name: edits update the ConfigMap in place and the mounted directory reloads.
    assert generator["options"]["disableNameSuffixHash"] is True


def test_deploy_holds_no_copy_of_the_policies() -> None:
    assert not list(DEPLOY.rglob("*.sched")), "deploy/ reads policies/ itself: remove the copies"


# ------------------------------------------------------------------ the Deployments


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def check_hardened(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    c = container(deployment)
    security = c["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsNonRoot"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    assert "add" not in security["capabilities"]
    for kind in ("requests", "limits"):
        assert set(c["resources"][kind]) == {"cpu", "memory"}
    # Read-only root: /tmp (lark's cache, via XDG_CACHE_HOME) is the one writable place.
    assert {"name": "XDG_CACHE_HOME", "value": "/tmp"} in c["env"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    policies = mounts[POLICY_DIR]
    assert "subPath" not in policies and "subPathExpr" not in policies
    assert volumes[policies["name"]]["configMap"]["name"] == "policyengine-policies"


def parsed_args(deployment: dict[str, Any]) -> Any:
    """The container's arguments, through the real command line parser."""
    return build_parser().parse_args(container(deployment)["args"])


def probe_port(deployment: dict[str, Any], probe: str) -> int:
    c = container(deployment)
    port = c[probe]["httpGet"]["port"]
    by_name = {p["name"]: p["containerPort"] for p in c["ports"]}
    return by_name.get(port, port)


def test_the_scheduler_deployment(scheduler: list[dict[str, Any]]) -> None:
    deployment = one(scheduler, "Deployment", "policyengine")
    check_hardened(deployment)
    assert deployment["spec"]["replicas"] == 2
    args = parsed_args(deployment)
    assert args.command == "run"
    assert args.leader_elect is True
    assert args.lease_namespace == NAMESPACE
    assert args.policy == [POLICY_DIR]
    _, metrics_port = parse_address(args.metrics_addr)
    c = container(deployment)
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert probe_port(deployment, "livenessProbe") == metrics_port
    assert probe_port(deployment, "readinessProbe") == metrics_port
    # Binds in flight finish (30 s at most) before the kubelet kills the leader.
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > 30
    service = one(scheduler, "Service", "policyengine-metrics")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {"metrics": metrics_port}
    pdb = one(scheduler, "PodDisruptionBudget", "policyengine")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_the_service_monitor_scrapes_the_metrics_service(scheduler: list[dict[str, Any]]) -> None:
    (monitor,) = load_yaml(DEPLOY / "examples" / "servicemonitor.yaml")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["kind"] == "ServiceMonitor"
    service = one(scheduler, "Service", "policyengine-metrics")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert all(e["port"] in ports and e["path"] == "/metrics" for e in monitor["spec"]["endpoints"])


# ------------------------------------------------------------------ the extender


def test_the_extender_deployment_and_scheduler_configuration(
    extender: list[dict[str, Any]],
) -> None:
    deployment = one(extender, "Deployment", "policyengine-extender")
    check_hardened(deployment)
    assert deployment["spec"]["replicas"] >= 2
    args = parsed_args(deployment)
    assert args.command == "extender"
    assert args.policy == [POLICY_DIR]
    _, port = parse_address(args.listen)
    assert probe_port(deployment, "livenessProbe") == port
    assert probe_port(deployment, "readinessProbe") == port

    service = one(extender, "Service", "policyengine-extender")
    (service_port,) = service["spec"]["ports"]
    assert service["spec"]["sessionAffinity"] == "ClientIP"  # binds go to one replica

    config = yaml.safe_load((EXTENDER / "kube-scheduler-config.yaml").read_text())
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    (entry,) = config["extenders"]
    assert set(entry) <= EXTENDER_FIELDS, set(entry) - EXTENDER_FIELDS
    assert entry["filterVerb"] == "filter"
    assert entry["prioritizeVerb"] == "prioritize"
    assert entry["preemptVerb"] == "preempt"
    assert entry["ignorable"] is False
    assert entry["weight"] >= 1
    host = f"{service['metadata']['name']}.{NAMESPACE}.svc:{service_port['port']}"
    assert entry["urlPrefix"].startswith(f"http://{host}/")
    assert entry["nodeCacheCapable"] is args.node_cache
    assert entry["bindVerb"] == "bind"
    assert args.node_cache  # the preempt and bind verbs need it
