"""The RBAC in ``deploy/`` grants every API call the code makes, and nothing it does not.

The calls are derived from the code, not from a list kept by hand: every module of
``policyengine/controller`` is parsed, each ``kubernetes.client`` API object it creates
(``k8s.CoreV1Api(...)`` assigned to a name) is tracked, and every method of it the module
mentions is a call. ``RawAPI(...)`` (``controller/rawapi.py``, the loop's calls on the raw
wire) counts as the generated classes whose methods it mirrors (``RawAPI.MIRRORS``). A method that is called is one request; a ``list_*`` method that is
passed on instead (to an ``Informer``, through ``functools.partial``) is list *and* watch.
Each method's HTTP verb and path are read from the installed client's own source, and turned
into (apiGroup, resource, subresource, verb) as the API server's authorizer sees them.

Then, per ServiceAccount: the scheduler's ClusterRole and Role must grant what every module
but ``extender.py`` calls; the extender's ClusterRole what ``extender.py`` calls. And back:
each grant is used by the code, or is one listed below as needed by planned work
(``PLANNED``), each with its reason.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from policyengine.controller.rawapi import RawAPI

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "policyengine" / "controller"
DEPLOY = ROOT / "deploy"
NAMESPACE = "policyengine-system"
EXTENDER_MODULE = "extender.py"

# Resources the scheduler only touches in its own namespace (the Lease, the policies
# ConfigMap): granted by the Role there, never cluster-wide.
OWN_NAMESPACE = {("coordination.k8s.io", "leases"), ("", "configmaps")}


@dataclass(frozen=True, order=True)
class Call:
    group: str
    resource: str  # with its subresource: "pods/binding"
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


# Grants given ahead of the code that will use them.
PLANNED = {
    Call("", "pods", "get"): "planned: reading one pod (preemption, gangs)",
    Call("", "pods", "delete"): "preemption evicts victims",
    Call("", "nodes", "get"): "planned: reading one node",
    Call("events.k8s.io", "events", "patch"): "event series (repeated events update a count)",
    Call("", "configmaps", "get"): "policy reload reads the ConfigMap",
    Call("", "configmaps", "list"): "policy reload watches the ConfigMap",
    Call("", "configmaps", "watch"): "policy reload watches the ConfigMap",
    Call("scheduling.x-k8s.io", "podgroups", "get"): "gangs",
    Call("scheduling.x-k8s.io", "podgroups", "list"): "gangs",
    Call("scheduling.x-k8s.io", "podgroups", "watch"): "gangs",
    Call("policy", "poddisruptionbudgets", "get"): "preemption honours PDBs",
    Call("policy", "poddisruptionbudgets", "list"): "preemption honours PDBs",
    Call("policy", "poddisruptionbudgets", "watch"): "preemption honours PDBs",
    Call("metrics.k8s.io", "nodes", "get"): "load-aware policies (examples/load-aware-rbac.yaml)",
    Call("metrics.k8s.io", "nodes", "list"): "load-aware policies",
    Call("metrics.k8s.io", "pods", "get"): "load-aware policies",
    Call("metrics.k8s.io", "pods", "list"): "load-aware policies",
}

# ------------------------------------------------------------------ deriving calls from code

_HTTP_VERB = {"POST": "create", "PUT": "update", "PATCH": "patch"}
# Paths every authenticated client may read (system:public-info-viewer, system:discovery).
_NON_RESOURCE = {"/version/"}


def _api_classes() -> dict[str, type]:
    # dir() and getattr(): recent clients load their API classes lazily.
    found = {
        name: getattr(k8s, name)
        for name in dir(k8s)
        if name.endswith("Api") and isinstance(getattr(k8s, name, None), type)
    }
    found["RawAPI"] = RawAPI
    return found


def _endpoint(cls: type, method: str) -> tuple[str, str]:
    """(HTTP method, path template) of a generated client method, from the client's source."""
    for name in (f"_{method}_serialize", f"{method}_with_http_info", method):
        func = getattr(cls, name, None)
        if func is None:
            continue
        source = inspect.getsource(func)
        new = re.search(r"method='(\w+)',\s*resource_path='([^']+)'", source)
        if new:
            return new.group(1), new.group(2)
        old = re.search(r"call_api\(\s*'([^']+)',\s*'(\w+)'", source)
        if old:
            return old.group(2), old.group(1)
    raise AssertionError(f"cannot find the endpoint of {cls.__name__}.{method}")


def _calls_for(
    cls: type, method: str, passed_on: bool, arguments: dict[str, str] | None = None
) -> set[Call]:
    http, path = _endpoint(cls, method)
    if path in _NON_RESOURCE:
        return set()
    for param in ("group", "version", "plural"):
        # Custom resources: the literal arguments of the call name the resource.
        if f"{{{param}}}" in path and arguments and param in arguments:
            path = path.replace(f"{{{param}}}", arguments[param])
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        raise AssertionError(f"{cls.__name__}.{method}: unexpected path {path}")
    if "{group}" in path or "{plural}" in path:
        raise AssertionError(
            f"{cls.__name__}.{method}: the resource is an argument ({path}); "
            "pass group, version and plural as string literals at the call"
        )
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0]
    named = len(rest) > 1 and rest[1] == "{name}"
    sub = rest[2] if named and len(rest) > 2 else None
    full = f"{resource}/{sub}" if sub else resource
    if http == "GET":
        if named:
            verbs = {"get"}
        else:
            # An informer gets the list method itself and calls it for the list and the watch.
            verbs = {"list", "watch"} if passed_on or method.startswith("watch") else {"list"}
    elif http == "DELETE":
        verbs = {"delete" if named else "deletecollection"}
    else:
        verbs = {_HTTP_VERB[http]}
    return {Call(group, full, verb) for verb in verbs}


def _endpoint_methods(cls: type) -> set[str]:
    """The methods of an API class that are requests (each has a ``…_with_http_info`` twin)."""
    if cls is RawAPI:
        return set(RawAPI.MIRRORS)
    names = set(dir(cls))
    return {
        name for name in names if not name.startswith("_") and f"{name}_with_http_info" in names
    }


def _receiver_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _api_objects(tree: ast.AST, classes: dict[str, type]) -> dict[str, type]:
    """Names (variables or attributes) bound to ``SomethingApi(...)`` in a module."""
    bound: dict[str, type] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not isinstance(value, ast.Call):
            continue
        called = _receiver_name(value.func)
        if called in classes:
            for target in targets:
                name = _receiver_name(target)
                if name:
                    bound[name] = classes[called]
    return bound


def _literal_arguments(
    cls: type, method: str, node: ast.Attribute, parents: dict[int, ast.AST]
) -> dict[str, str]:
    """The string-literal arguments of the call that uses ``node``, by parameter name: the
    call itself, or ``functools.partial(node, ...)`` that passes it on."""
    call = parents.get(id(node))
    if not isinstance(call, ast.Call):
        return {}
    if call.func is node:
        args = list(call.args)
    elif node in call.args:
        args = list(call.args[call.args.index(node) + 1 :])
    else:
        return {}
    names = [p for p in inspect.signature(getattr(cls, method)).parameters if p != "self"]
    found = {
        name: arg.value
        for name, arg in zip(names, args, strict=False)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[keyword.arg] = value.value
    return found


def calls_in(path: Path) -> set[Call]:
    """Every API call a module makes (module docstring)."""
    classes = _api_classes()
    tree = ast.parse(path.read_text(), str(path))
    parents = {
        id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
    }
    objects = _api_objects(tree, classes)
    called_funcs = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    api_methods = {m for cls in set(objects.values()) for m in _endpoint_methods(cls)}
    found: set[Call] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in api_methods:
            continue
        receiver = _receiver_name(node.value)
        cls = objects.get(receiver or "")
        if cls is RawAPI:
            cls = getattr(k8s, RawAPI.MIRRORS[node.attr])
        if cls is None or not hasattr(cls, node.attr):
            raise AssertionError(
                f"{path.name}:{node.lineno}: .{node.attr} on {receiver!r}, which this test "
                "cannot tie to an API object; bind the API object to a name first"
            )
        arguments = _literal_arguments(cls, node.attr, node, parents)
        found |= _calls_for(cls, node.attr, id(node) not in called_funcs, arguments)
    return found


def modules(extender: bool) -> Iterator[Path]:
    for path in sorted(CONTROLLER.glob("*.py")):
        if (path.name == EXTENDER_MODULE) == extender:
            yield path


def used(extender: bool) -> set[Call]:
    return {call for path in modules(extender) for call in calls_in(path)}


# ------------------------------------------------------------------ reading the grants


def _documents(*paths: Path) -> list[dict[str, Any]]:
    return [
        doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc is not None
    ]


def grants(doc: dict[str, Any]) -> set[Call]:
    out = set()
    for rule in doc.get("rules") or ():
        assert "resourceNames" not in rule or rule["verbs"] != ["create"], rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, resource, verb), f"wildcard in {rule}"
                    out.add(Call(group, resource, verb))
    return out


def role(docs: Iterable[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: found {len(found)}"
    return found[0]


def bound_to(docs: list[dict[str, Any]], kind: str, name: str, account: str) -> None:
    binding_kind = "ClusterRoleBinding" if kind == "ClusterRole" else "RoleBinding"
    for doc in docs:
        if doc["kind"] == binding_kind and doc["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": kind,
            "name": name,
        }:
            subjects = doc["subjects"]
            assert {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} in subjects
            return
    raise AssertionError(f"{kind} {name} is not bound to {account}")


@pytest.fixture(scope="module")
def scheduler_docs() -> list[dict[str, Any]]:
    return _documents(DEPLOY / "rbac.yaml")


@pytest.fixture(scope="module")
def extender_docs() -> list[dict[str, Any]]:
    return _documents(DEPLOY / "examples" / "extender" / "rbac.yaml")


# ------------------------------------------------------------------ the tests


def test_the_derivation_sees_the_known_calls() -> None:
    # A canary for the AST walk: these calls exist today, so the walk must find them.
    calls = used(extender=False)
    for expected in (
        Call("", "nodes", "list"),
        Call("", "nodes", "watch"),
        Call("", "pods", "watch"),
        Call("", "pods/binding", "create"),
        Call("", "pods/status", "patch"),
        Call("events.k8s.io", "events", "create"),
        Call("coordination.k8s.io", "leases", "get"),
        Call("coordination.k8s.io", "leases", "create"),
        Call("coordination.k8s.io", "leases", "update"),
    ):
        assert expected in calls, expected


def test_every_scheduler_call_is_granted(scheduler_docs: list[dict[str, Any]]) -> None:
    cluster = grants(role(scheduler_docs, "ClusterRole", "policyengine"))
    local = grants(role(scheduler_docs, "Role", "policyengine"))
    missing = [
        str(call)
        for call in sorted(used(extender=False))
        if call not in cluster
        and not ((call.group, call.resource) in OWN_NAMESPACE and call in local)
    ]
    assert not missing, f"the code calls, RBAC does not grant: {missing}"


def test_scheduler_grants_nothing_unused(scheduler_docs: list[dict[str, Any]]) -> None:
    calls = used(extender=False)
    cluster = grants(role(scheduler_docs, "ClusterRole", "policyengine"))
    local = grants(role(scheduler_docs, "Role", "policyengine"))
    unused = sorted(str(c) for c in cluster | local if c not in calls and c not in PLANNED)
    assert not unused, f"granted but never used (and not planned): {unused}"
    # Leases and the policies ConfigMap: its own namespace only.
    wide = sorted(str(c) for c in cluster if (c.group, c.resource) in OWN_NAMESPACE)
    assert not wide, f"granted cluster-wide, needed in {NAMESPACE} only: {wide}"
    assert role(scheduler_docs, "Role", "policyengine")["metadata"].get("namespace") in (
        None,  # kustomization.yaml's namespace applies
        NAMESPACE,
    )


def test_planned_grants_are_documented_in_the_manifests() -> None:
    text = (DEPLOY / "rbac.yaml").read_text()
    for word in ("preemption", "PodDisruptionBudgets", "PodGroups"):
        assert word in text
    load_aware = _documents(DEPLOY / "examples" / "load-aware-rbac.yaml")
    reader = grants(role(load_aware, "ClusterRole", "policyengine-metrics-reader"))
    assert reader and all(call in PLANNED for call in reader)
    bound_to(load_aware, "ClusterRole", "policyengine-metrics-reader", "policyengine")


def test_scheduler_roles_are_bound_to_its_service_account(
    scheduler_docs: list[dict[str, Any]],
) -> None:
    bound_to(scheduler_docs, "ClusterRole", "policyengine", "policyengine")
    bound_to(scheduler_docs, "Role", "policyengine", "policyengine")
    deployment = _documents(DEPLOY / "deployment.yaml")[0]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "policyengine"


def test_extender_grants_exactly_what_it_calls(extender_docs: list[dict[str, Any]]) -> None:
    calls = used(extender=True)
    assert calls == {
        Call("", "nodes", "list"),
        Call("", "nodes", "watch"),
        Call("", "pods", "list"),
        Call("", "pods", "watch"),
        Call("", "pods/binding", "create"),  # the bind verb
    }
    granted = grants(role(extender_docs, "ClusterRole", "policyengine-extender"))
    assert granted == calls
    bound_to(extender_docs, "ClusterRole", "policyengine-extender", "policyengine-extender")


def test_the_derivation_reads_verbs_from_the_client() -> None:
    core, leases = k8s.CoreV1Api, k8s.CoordinationV1Api
    assert _calls_for(core, "create_namespaced_pod_binding", False) == {
        Call("", "pods/binding", "create")
    }
    assert _calls_for(core, "patch_namespaced_pod_status", False) == {
        Call("", "pods/status", "patch")
    }
    assert _calls_for(core, "list_pod_for_all_namespaces", True) == {
        Call("", "pods", "list"),
        Call("", "pods", "watch"),
    }
    assert _calls_for(core, "delete_namespaced_pod", False) == {Call("", "pods", "delete")}
    assert _calls_for(leases, "replace_namespaced_lease", False) == {
        Call("coordination.k8s.io", "leases", "update")
    }
    assert _calls_for(k8s.VersionApi, "get_code", False) == set()


def test_raw_api_calls_count_as_the_calls_they_mirror(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from policyengine.controller.rawapi import RawAPI\n"
        "api = RawAPI(None)\n"
        "lister = api.list_node\n"
        "def f():\n"
        "    api.create_namespaced_pod_binding('p', 'ns', {})\n"
        "    api.create_namespaced_event('ns', {})\n"
    )
    assert calls_in(module) == {
        Call("", "nodes", "list"),
        Call("", "nodes", "watch"),
        Call("", "pods/binding", "create"),
        Call("events.k8s.io", "events", "create"),
    }


def test_an_untraceable_api_method_fails_loudly(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from kubernetes import client as k8s\n"
        "core = k8s.CoreV1Api(None)\n"
        "def f(api):\n"
        "    return api.list_node()\n"
    )
    with pytest.raises(AssertionError, match="cannot tie"):
        calls_in(module)


def test_custom_resources_are_read_from_the_literal_arguments(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import functools\n"
        "from kubernetes import client as k8s\n"
        "custom = k8s.CustomObjectsApi(None)\n"
        "lister = functools.partial(custom.list_cluster_custom_object, 'g.io', 'v1', 'things')\n"
        "def f():\n"
        "    custom.patch_namespaced_custom_object_status('g.io', 'v1', 'ns', 'things', 'n', {})\n"
    )
    assert calls_in(module) == {
        Call("g.io", "things", "list"),
        Call("g.io", "things", "watch"),
        Call("g.io", "things/status", "patch"),
    }
    module.write_text(
        "from kubernetes import client as k8s\n"
        "custom = k8s.CustomObjectsApi(None)\n"
        "def f(group):\n"
        "    return custom.get_namespaced_custom_object(group, 'v1', 'ns', 'things', 'n')\n"
    )
    with pytest.raises(AssertionError, match="as string literals"):
        calls_in(module)
