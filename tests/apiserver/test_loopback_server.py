"""The loopback API server as the official ``kubernetes`` client sees it.

Every test talks HTTP through ``CoreV1Api``, ``CoordinationV1Api``, ``EventsV1Api``,
``PolicyV1Api``, ``CustomObjectsApi`` and ``kubernetes.watch.Watch``; nothing is patched.
Tables list the cases; timings are short and never asserted on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from loopback import wire
from loopback.server import LoopbackAPIServer

JSON = dict[str, Any]
NS = "default"
PG = ("scheduling.x-k8s.io", "v1alpha1")


# ------------------------------------------------------------------------------ builders


def node(name: str, cpu: str = "4", labels: JSON | None = None) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
        },
    }


def pod(
    name: str,
    *,
    ns: str = NS,
    labels: JSON | None = None,
    node_name: str | None = None,
    scheduler: str | None = None,
    cpu: str = "100m",
) -> JSON:
    spec: JSON = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example/app:v1",
                "resources": {"requests": {"cpu": cpu}},
            }
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    if scheduler:
        spec["schedulerName"] = scheduler
    meta: JSON = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def binding(name: str, target: str, uid: str | None = None) -> JSON:
    meta: JSON = {"name": name, "namespace": NS}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"kind": "Node", "name": target},
    }


def podgroup(name: str, min_member: int = 2) -> JSON:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"minMember": min_member},
    }


def micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def body_of(exc: ApiException) -> JSON:
    data: JSON = json.loads(exc.body)
    return data


@pytest.fixture
def api(kube_api_client: Any) -> Any:
    return kube_api_client


@pytest.fixture
def core(api: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def raw(resp: Any) -> JSON:
    data: JSON = json.loads(resp.data)
    return data


def collect(stream: Iterator[JSON]) -> list[tuple[str, str]]:
    return [(e["type"], e["raw_object"].get("metadata", {}).get("name", "")) for e in stream]


def take(n: int, func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[JSON]:
    """The first ``n`` events of a watch, then stop (no waiting for the timeout)."""
    w = watch.Watch()
    out: list[JSON] = []
    for event in w.stream(func, *args, timeout_seconds=10, **kwargs):
        out.append(event)
        if len(out) >= n:
            w.stop()
    return out


# ------------------------------------------------------------------------------ lifecycle and wiring


def test_context_manager_kubeconfig_and_configuration(tmp_path: Path) -> None:
    with LoopbackAPIServer() as server:
        assert server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
        cfg = client.Configuration()
        config.load_kube_config(
            config_file=str(server.kubeconfig(tmp_path / "kc")), client_configuration=cfg
        )
        assert cfg.host == server.url
        with client.ApiClient(cfg) as api:
            names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
        with client.ApiClient(server.client_configuration()) as api:
            assert client.VersionApi(api).get_code().git_version == "v1.28.7"
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        urllib3.PoolManager(retries=0).request("GET", f"{server.url}/healthz")


def test_discovery_like_kube_scheduler(api: Any) -> None:
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"events.k8s.io", "coordination.k8s.io", "policy", "scheduling.x-k8s.io"} <= groups
    resources = client.EventsV1Api(api).get_api_resources()
    assert [r.name for r in resources.resources] == ["events"]
    core_resources = {r.name for r in client.CoreV1Api(api).get_api_resources().resources}
    assert {
        "pods",
        "pods/binding",
        "pods/status",
        "nodes",
        "nodes/status",
        "events",
        "configmaps",
    } <= core_resources


def test_a_crd_not_installed_is_404_everywhere_until_installed(
    apiserver: LoopbackAPIServer, api: Any, custom: client.CustomObjectsApi
) -> None:
    apiserver.create(podgroup("g"))
    apiserver.uninstall_group("scheduling.x-k8s.io")
    calls: list[Callable[[], Any]] = [
        lambda: custom.list_cluster_custom_object(*PG, "podgroups"),
        lambda: custom.list_cluster_custom_object(*PG, "podgroups", watch=True, timeout_seconds=1),
        lambda: custom.get_namespaced_custom_object(*PG, NS, "podgroups", "g"),
        lambda: custom.patch_namespaced_custom_object_status(
            *PG, NS, "podgroups", "g", {"status": {"phase": "Pending"}}
        ),
    ]
    for call in calls:
        with pytest.raises(ApiException) as missing:
            call()
        assert missing.value.status == 404
        assert body_of(missing.value)["message"] == (
            "the server could not find the requested resource"
        )
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert "scheduling.x-k8s.io" not in groups and "policy" in groups
    apiserver.install_group("scheduling.x-k8s.io")
    listed = custom.list_cluster_custom_object(*PG, "podgroups")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["g"]


def test_a_custom_resource_list_is_unstructured(
    apiserver: LoopbackAPIServer, custom: client.CustomObjectsApi
) -> None:
    for name in ("a", "b"):
        apiserver.create(podgroup(name))
    whole = raw(custom.list_cluster_custom_object(*PG, "podgroups", _preload_content=False))
    assert list(whole) == ["apiVersion", "items", "kind", "metadata"]
    assert list(whole["metadata"]) == ["continue", "resourceVersion"]
    assert whole["metadata"]["continue"] == "" and whole["kind"] == "PodGroupList"
    assert [(i["apiVersion"], i["kind"]) for i in whole["items"]] == [
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup")
    ] * 2
    page = raw(custom.list_cluster_custom_object(*PG, "podgroups", limit=1, _preload_content=False))
    assert [i["metadata"]["name"] for i in page["items"]] == ["a"]
    assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1
    rest = raw(
        custom.list_cluster_custom_object(
            *PG,
            "podgroups",
            limit=1,
            _continue=page["metadata"]["continue"],
            _preload_content=False,
        )
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["b"]
    assert rest["metadata"]["continue"] == ""


# ------------------------------------------------------------------------------ CRUD, table-driven


def _crud_cases() -> list[tuple[str, Callable[[Any], tuple[Callable[..., Any], ...]], JSON]]:
    def configmaps(api: Any) -> tuple[Callable[..., Any], ...]:
        c = client.CoreV1Api(api)
        return (
            lambda b: c.create_namespaced_config_map(NS, b),
            lambda n: c.read_namespaced_config_map(n, NS),
            lambda: c.list_namespaced_config_map(NS),
            lambda n, p: c.patch_namespaced_config_map(n, NS, p),
            lambda n: c.delete_namespaced_config_map(n, NS),
        )

    def nodes(api: Any) -> tuple[Callable[..., Any], ...]:
        c = client.CoreV1Api(api)
        return (c.create_node, c.read_node, c.list_node, c.patch_node, c.delete_node)

    def leases(api: Any) -> tuple[Callable[..., Any], ...]:
        c = client.CoordinationV1Api(api)
        return (
            lambda b: c.create_namespaced_lease("kube-system", b),
            lambda n: c.read_namespaced_lease(n, "kube-system"),
            lambda: c.list_namespaced_lease("kube-system"),
            lambda n, p: c.patch_namespaced_lease(n, "kube-system", p),
            lambda n: c.delete_namespaced_lease(n, "kube-system"),
        )

    def pdbs(api: Any) -> tuple[Callable[..., Any], ...]:
        c = client.PolicyV1Api(api)
        return (
            lambda b: c.create_namespaced_pod_disruption_budget(NS, b),
            lambda n: c.read_namespaced_pod_disruption_budget(n, NS),
            lambda: c.list_pod_disruption_budget_for_all_namespaces(),
            lambda n, p: c.patch_namespaced_pod_disruption_budget(n, NS, p),
            lambda n: c.delete_namespaced_pod_disruption_budget(n, NS),
        )

    def podgroups(api: Any) -> tuple[Callable[..., Any], ...]:
        c = client.CustomObjectsApi(api)
        return (
            lambda b: c.create_namespaced_custom_object(*PG, NS, "podgroups", b),
            lambda n: c.get_namespaced_custom_object(*PG, NS, "podgroups", n),
            lambda: c.list_namespaced_custom_object(*PG, NS, "podgroups"),
            lambda n, p: c.patch_namespaced_custom_object(*PG, NS, "podgroups", n, p),
            lambda n: c.delete_namespaced_custom_object(*PG, NS, "podgroups", n),
        )

    return [
        (
            "configmap",
            configmaps,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x"},
                "data": {"a": "1"},
            },
        ),
        ("node", nodes, node("x")),
        (
            "lease",
            leases,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "x"},
                "spec": {"holderIdentity": "a"},
            },
        ),
        (
            "pdb",
            pdbs,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "x"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
            },
        ),
        ("podgroup", podgroups, podgroup("x")),
    ]


def _name(obj: Any) -> str:
    return obj["metadata"]["name"] if isinstance(obj, dict) else obj.metadata.name


def _labels(obj: Any) -> JSON:
    return (obj["metadata"].get("labels") if isinstance(obj, dict) else obj.metadata.labels) or {}


@pytest.mark.parametrize(("kind", "ops", "body"), _crud_cases(), ids=[c[0] for c in _crud_cases()])
def test_crud(
    kind: str,
    ops: Callable[[Any], tuple[Callable[..., Any], ...]],
    body: JSON,
    api: Any,
    apiserver: LoopbackAPIServer,
) -> None:
    create, read, list_, patch, delete = ops(api)
    created = create(body)
    assert _name(created) == "x"
    assert _name(read("x")) == "x"
    listed = list_()
    items = listed["items"] if isinstance(listed, dict) else listed.items
    assert [_name(i) for i in items] == ["x"]
    patched = patch("x", {"metadata": {"labels": {"touched": "yes"}}})
    assert _labels(patched)["touched"] == "yes"
    with pytest.raises(ApiException) as again:
        create(body)
    assert again.value.status == 409 and body_of(again.value)["reason"] == "AlreadyExists"
    delete("x")
    with pytest.raises(ApiException) as gone:
        read("x")
    assert gone.value.status == 404
    assert not apiserver.crashes


def test_generation_and_status_subresource_of_podgroups(custom: client.CustomObjectsApi) -> None:
    created = custom.create_namespaced_custom_object(
        *PG, NS, "podgroups", {**podgroup("pg"), "status": {"phase": "Running"}}
    )
    assert created["metadata"]["generation"] == 1 and "status" not in created
    status = custom.patch_namespaced_custom_object_status(
        *PG, NS, "podgroups", "pg", {"status": {"phase": "Pending"}, "spec": {"minMember": 9}}
    )
    assert status["status"] == {"phase": "Pending"} and status["spec"]["minMember"] == 2
    assert status["metadata"]["generation"] == 1
    spec = custom.patch_namespaced_custom_object(
        *PG, NS, "podgroups", "pg", {"spec": {"minMember": 3}, "status": {"phase": "X"}}
    )
    assert spec["metadata"]["generation"] == 2 and spec["status"] == {"phase": "Pending"}
    with pytest.raises(ApiException) as smp:
        custom.patch_namespaced_custom_object(
            *PG,
            NS,
            "podgroups",
            "pg",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert smp.value.status == 415
    with pytest.raises(ApiException) as unconditional:
        custom.replace_namespaced_custom_object(*PG, NS, "podgroups", "pg", podgroup("pg"))
    assert unconditional.value.status == 422


def test_pod_create_is_defaulted_as_captured(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod(NS, pod("p"), _preload_content=False)
    got = raw(created)
    want = wire.load("00-create-pod.json")["response"]["body_json"] if wire.capture_dir() else None
    spec = got["spec"]
    assert spec["schedulerName"] == "default-scheduler" and spec["priority"] == 0
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert got["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    assert got["metadata"]["managedFields"][0]["manager"] == "OpenAPI-Generator"
    if want is not None:
        assert list(spec) == list(want["spec"])
        assert list(got["metadata"]) == [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ]


@pytest.mark.parametrize(
    ("mutation", "status"),
    [
        ({"metadata": {"labels": {"a": "b"}}}, 200),
        ({"spec": {"containers": [{"name": "main", "image": "registry.example/app:v2"}]}}, 200),
        ({"spec": {"nodeName": "n1"}}, 422),
        ({"spec": {"schedulerName": "other"}}, 422),
    ],
    ids=["labels", "image", "node-name", "scheduler-name"],
)
def test_pod_spec_is_immutable_except_the_allowed_fields(
    core: client.CoreV1Api, mutation: JSON, status: int
) -> None:
    core.create_namespaced_pod(NS, pod("p"))
    if status == 200:
        core.patch_namespaced_pod("p", NS, mutation)
    else:
        with pytest.raises(ApiException) as exc:
            core.patch_namespaced_pod("p", NS, mutation)
        assert exc.value.status == status and body_of(exc.value)["reason"] == "Invalid"


# ------------------------------------------------------------------------------ selectors and paging


@pytest.fixture
def cluster(apiserver: LoopbackAPIServer) -> LoopbackAPIServer:
    apiserver.create(node("n1", labels={"zone": "a"}))
    apiserver.create(node("n2", labels={"zone": "b", "gpu": "a100"}))
    apiserver.create(pod("bound", node_name="n1", labels={"app": "web", "tier": "fe"}))
    apiserver.create(pod("pending", labels={"app": "web"}))
    apiserver.create(pod("other-sched", scheduler="policyengine", labels={"app": "db"}))
    apiserver.create({**pod("done", ns="team-a"), "status": {"phase": "Succeeded"}})
    apiserver.create({**pod("failed", ns="team-a"), "status": {"phase": "Failed"}})
    return apiserver


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (
            "spec.nodeName=",
            ["default/other-sched", "default/pending", "team-a/done", "team-a/failed"],
        ),
        ("spec.nodeName!=", ["default/bound"]),
        ("spec.nodeName=n1", ["default/bound"]),
        ("spec.schedulerName=policyengine", ["default/other-sched"]),
        (
            "status.phase!=Succeeded,status.phase!=Failed",
            ["default/bound", "default/other-sched", "default/pending"],
        ),
        ("metadata.name=pending", ["default/pending"]),
        ("metadata.namespace=team-a,status.phase=Failed", ["team-a/failed"]),
    ],
    ids=[
        "spec.nodeName=",
        "spec.nodeName!=",
        "spec.nodeName=n1",
        "spec.schedulerName=policyengine",
        "status.phase!=Succeeded,status.phase!=Failed",
        "metadata.name=pending",
        "metadata.namespace=team-a,status.phase=Failed",
    ],
)
def test_pod_field_selectors(
    cluster: LoopbackAPIServer, core: client.CoreV1Api, selector: str, expected: list[str]
) -> None:
    pods = core.list_pod_for_all_namespaces(field_selector=selector).items
    assert [f"{p.metadata.namespace}/{p.metadata.name}" for p in pods] == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["bound", "pending"]),
        ("app!=web", ["done", "failed", "other-sched"]),
        ("app in (web,db)", ["bound", "other-sched", "pending"]),
        ("app notin (web)", ["done", "failed", "other-sched"]),
        ("tier", ["bound"]),
        ("!tier,app", ["other-sched", "pending"]),
    ],
    ids=["app=web", "app!=web", "app in (web,db)", "app notin (web)", "tier", "!tier,app"],
)
def test_pod_label_selectors(
    cluster: LoopbackAPIServer, core: client.CoreV1Api, selector: str, expected: list[str]
) -> None:
    pods = core.list_pod_for_all_namespaces(label_selector=selector).items
    assert sorted(p.metadata.name for p in pods) == expected


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        (
            lambda c: c.list_pod_for_all_namespaces(field_selector="spec.foo=x"),
            400,
            "field label not supported: spec.foo",
        ),
        (
            lambda c: c.list_node(field_selector="spec.nodeName=x"),
            400,
            "field label not supported: spec.nodeName",
        ),
        (lambda c: c.list_pod_for_all_namespaces(resource_version_match="Exact"), 422, None),
        (
            lambda c: c.list_pod_for_all_namespaces(
                resource_version="0", resource_version_match="Exact"
            ),
            422,
            None,
        ),
    ],
    ids=["unknown-pod-field", "unknown-node-field", "exact-without-version", "exact-at-version-0"],
)
def test_bad_list_options(
    cluster: LoopbackAPIServer,
    core: client.CoreV1Api,
    call: Callable[[Any], Any],
    status: int,
    message: str | None,
) -> None:
    with pytest.raises(ApiException) as exc:
        call(core)
    assert exc.value.status == status
    if message:
        assert body_of(exc.value)["message"] == message


def test_node_selectors(cluster: LoopbackAPIServer, core: client.CoreV1Api) -> None:
    assert [n.metadata.name for n in core.list_node(label_selector="gpu=a100").items] == ["n2"]
    assert [n.metadata.name for n in core.list_node(field_selector="metadata.name=n1").items] == [
        "n1"
    ]


def test_paging_with_limit_and_continue(cluster: LoopbackAPIServer, core: client.CoreV1Api) -> None:
    names, token, remaining = [], None, []
    while True:
        page = core.list_pod_for_all_namespaces(limit=2, _continue=token)
        names += [f"{p.metadata.namespace}/{p.metadata.name}" for p in page.items]
        remaining.append(page.metadata.remaining_item_count)
        token = page.metadata._continue
        if not token:
            break
    assert names == [
        "default/bound",
        "default/other-sched",
        "default/pending",
        "team-a/done",
        "team-a/failed",
    ]
    assert remaining == [3, 1, None]
    # the watch cache ignores limit at resourceVersion=0, as the scheduler's informers rely on
    full = core.list_pod_for_all_namespaces(limit=2, resource_version="0")
    assert len(full.items) == 5 and full.metadata._continue is None


def test_paging_is_consistent_at_the_first_page_rv(
    cluster: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    first = core.list_namespaced_pod(NS, limit=1)
    cluster.create(pod("aaa-late"))
    cluster.delete("pod", NS, "pending")
    rest = core.list_namespaced_pod(NS, limit=10, _continue=first.metadata._continue)
    assert [p.metadata.name for p in first.items + rest.items] == [
        "bound",
        "other-sched",
        "pending",
    ]
    assert rest.metadata.resource_version == first.metadata.resource_version


def test_list_resource_version_semantics(
    cluster: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    before = core.list_namespaced_pod(NS)
    cluster.create(pod("later"))
    cluster.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}}
    )
    quorum = core.list_namespaced_pod(NS)
    cached = core.list_namespaced_pod(NS, resource_version="0")
    assert int(quorum.metadata.resource_version) == cluster.resource_version
    assert int(cached.metadata.resource_version) == cluster.resource_version - 1  # pods' cache RV
    exact = core.list_namespaced_pod(
        NS, resource_version=before.metadata.resource_version, resource_version_match="Exact"
    )
    assert [p.metadata.name for p in exact.items] == [p.metadata.name for p in before.items]
    assert exact.metadata.resource_version == before.metadata.resource_version
    newer = core.list_namespaced_pod(
        NS, resource_version=before.metadata.resource_version, resource_version_match="NotOlderThan"
    )
    assert "later" in [p.metadata.name for p in newer.items]


# ------------------------------------------------------------------------------ watches


def test_watch_from_list_rv_sees_changes_in_order(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    start = core.list_namespaced_pod(NS).metadata.resource_version
    apiserver.create(node("n1"))
    core.create_namespaced_pod(NS, pod("p"))
    core.patch_namespaced_pod("p", NS, {"metadata": {"labels": {"x": "y"}}})
    core.create_namespaced_pod_binding("p", NS, binding("p", "n1"), _preload_content=False)
    core.delete_namespaced_pod("p", NS)
    core.delete_namespaced_pod("p", NS, grace_period_seconds=0)
    events = take(6, core.list_namespaced_pod, NS, resource_version=start)
    assert [e["type"] for e in events] == [
        "ADDED",
        "MODIFIED",
        "MODIFIED",
        "MODIFIED",
        "MODIFIED",
        "DELETED",
    ]
    rvs = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)
    bound = events[2]["object"]
    assert bound.spec.node_name == "n1" and bound.status.conditions[0].type == "PodScheduled"
    assert events[3]["object"].metadata.deletion_grace_period_seconds == 30
    assert events[4]["object"].metadata.deletion_grace_period_seconds == 0


def test_watch_without_rv_starts_with_synthetic_added(
    cluster: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    events = collect(iter(take(3, core.list_namespaced_pod, NS)))
    assert events == [("ADDED", "bound"), ("ADDED", "other-sched"), ("ADDED", "pending")]


def test_watch_streams_live_events(apiserver: LoopbackAPIServer, core: client.CoreV1Api) -> None:
    def act() -> None:
        apiserver.wait_for_watch("configmaps")
        apiserver.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "live", "namespace": NS}}
        )

    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    actor = threading.Thread(target=act)
    actor.start()
    w = watch.Watch()
    seen = []
    for event in w.stream(
        core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=10
    ):
        seen.append((event["type"], event["object"].metadata.name))
        w.stop()
    actor.join()
    assert seen == [("ADDED", "live")]


def test_watch_bookmarks_and_timeout(apiserver_factory: Callable[..., LoopbackAPIServer]) -> None:
    server = apiserver_factory(bookmark_interval=0.2, bookmark_lead=0.1)
    with server.api_client() as api:
        core = client.CoreV1Api(api)
        rv = core.list_namespaced_pod(NS).metadata.resource_version
        server.create(pod("p"))
        w = watch.Watch()
        events = list(
            w.stream(
                core.list_namespaced_pod,
                NS,
                resource_version=rv,
                timeout_seconds=1,
                allow_watch_bookmarks=True,
            )
        )
    types = [e["type"] for e in events]
    assert types[0] == "ADDED" and types.count("BOOKMARK") >= 2 and set(types[1:]) == {"BOOKMARK"}
    bookmark = events[-1]["raw_object"]
    assert bookmark == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(server.resource_version), "creationTimestamp": None},
        "spec": {"containers": None},
        "status": {},
    }
    assert w.resource_version == str(server.resource_version)


def test_no_bookmarks_unless_asked(apiserver_factory: Callable[..., LoopbackAPIServer]) -> None:
    server = apiserver_factory(bookmark_interval=0.1, bookmark_lead=0.1)
    rv = server.resource_version
    server.create(pod("p"))
    with server.api_client() as api:
        events = collect(
            watch.Watch().stream(
                client.CoreV1Api(api).list_namespaced_pod,
                NS,
                resource_version=str(rv),
                timeout_seconds=1,
            )
        )
    assert events == [("ADDED", "p")]


def test_watch_with_selector_sees_objects_leave_as_deleted(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    selector = "status.phase!=Succeeded,status.phase!=Failed"
    rv = core.list_pod_for_all_namespaces(field_selector=selector).metadata.resource_version
    apiserver.create(pod("job"))
    apiserver.set_status("pod", NS, "job", {"phase": "Running"})
    apiserver.set_status("pod", NS, "job", {"phase": "Succeeded"})
    events = take(3, core.list_pod_for_all_namespaces, field_selector=selector, resource_version=rv)
    assert [(e["type"], e["object"].status.phase) for e in events] == [
        ("ADDED", "Pending"),
        ("MODIFIED", "Running"),
        ("DELETED", "Running"),
    ]


def test_watch_from_compacted_rv_gets_410(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    old = core.list_namespaced_pod(NS).metadata.resource_version
    apiserver.create(pod("p"))
    oldest = apiserver.expire_history()
    with pytest.raises(ApiException) as exc:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, NS, resource_version=old, timeout_seconds=1
            )
        )
    assert exc.value.status == 410
    assert exc.value.reason == f"Expired: too old resource version: {old} ({oldest})"
    # a relist gives a fresh RV to watch from
    fresh = core.list_namespaced_pod(NS).metadata.resource_version
    apiserver.create(pod("after"))
    assert collect(iter(take(1, core.list_namespaced_pod, NS, resource_version=fresh))) == [
        ("ADDED", "after")
    ]


def test_watch_podgroups_and_pdbs(apiserver: LoopbackAPIServer, api: Any) -> None:
    custom, policy = client.CustomObjectsApi(api), client.PolicyV1Api(api)
    rv = str(apiserver.resource_version)
    custom.create_namespaced_custom_object(*PG, NS, "podgroups", podgroup("g"))
    custom.patch_namespaced_custom_object_status(
        *PG, NS, "podgroups", "g", {"status": {"phase": "Scheduling"}}
    )
    apiserver.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": NS},
            "spec": {"maxUnavailable": 1},
        }
    )
    groups = take(
        2, custom.list_namespaced_custom_object, *PG, NS, "podgroups", resource_version=rv
    )
    assert [(e["type"], e["object"].get("status")) for e in groups] == [
        ("ADDED", None),
        ("MODIFIED", {"phase": "Scheduling"}),
    ]
    budgets = collect(
        iter(take(1, policy.list_pod_disruption_budget_for_all_namespaces, resource_version=rv))
    )
    assert budgets == [("ADDED", "b")]


# ------------------------------------------------------------------------------ binding


def test_binding_sets_node_and_condition(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    created = core.create_namespaced_pod(NS, pod("p"))
    resp = core.create_namespaced_pod_binding(
        "p", NS, binding("p", "n1", created.metadata.uid), _preload_content=False
    )
    assert resp.status == 201
    assert raw(resp) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    got = core.read_namespaced_pod("p", NS)
    assert got.spec.node_name == "n1"
    assert [(c.type, c.status, c.last_probe_time) for c in got.status.conditions] == [
        ("PodScheduled", "True", None)
    ]
    assert [(b.namespace, b.name, b.node, b.uid) for b in apiserver.bindings()] == [
        (NS, "p", "n1", created.metadata.uid)
    ]


@pytest.mark.parametrize(
    ("url_name", "body", "status", "message"),
    [
        (
            "p",
            binding("p", "n2"),
            409,
            'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"',
        ),
        ("ghost", binding("ghost", "n1"), 404, 'pods "ghost" not found'),
        ("q", binding("other", "n1"), 400, "name in URL does not match name in Binding object"),
        ("q", binding("q", "n1", uid="00000000-0000-0000-0000-000000000000"), 409, None),
        ("q", {**binding("q", "n1"), "target": {"kind": "Node"}}, 422, None),
    ],
    ids=["p-409", "ghost-404", "q-400", "q-409", "q-422"],
)
def test_binding_failures(
    apiserver: LoopbackAPIServer,
    core: client.CoreV1Api,
    url_name: str,
    body: JSON,
    status: int,
    message: str | None,
) -> None:
    apiserver.create(pod("p", node_name="n1"))
    q = apiserver.create(pod("q"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding(url_name, NS, body, _preload_content=False)
    assert exc.value.status == status
    got = body_of(exc.value)
    if message:
        assert got["message"] == message
    if status == 409 and message is None:
        assert got["message"].endswith(
            f"UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: {q['metadata']['uid']}"
        )
    assert apiserver.bindings() == []


def test_each_pod_is_bound_exactly_once_under_concurrency(
    apiserver: LoopbackAPIServer, api: Any
) -> None:
    for i in range(10):
        apiserver.create(pod(f"p{i}"))
    results: list[int] = []
    unexpected: list[str] = []

    def bind(name: str, target: str) -> None:
        try:
            resp = client.CoreV1Api(api).create_namespaced_pod_binding(
                name, NS, binding(name, target), _preload_content=False
            )
            results.append(resp.status)
        except ApiException as exc:
            results.append(exc.status)
        except Exception as exc:  # surfaced by the assertion below
            results.append(-1)
            unexpected.append(repr(exc))

    threads = [
        threading.Thread(target=bind, args=(f"p{i}", f"n{j}")) for i in range(10) for j in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not unexpected
    assert sorted(results) == [201] * 10 + [409] * 10
    assert sorted(b.name for b in apiserver.bindings()) == sorted(f"p{i}" for i in range(10))
    assert len(apiserver.binding_requests()) == 20
    assert (
        len(apiserver.requests(verb="create", resource="pods", subresource="binding", status=201))
        == 10
    )


# ------------------------------------------------------------------------------ status patches


UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "lastProbeTime": None,
    "lastTransitionTime": "2026-12-02T12:50:00Z",
    "message": "0/2 nodes are available: 2 Insufficient cpu.",
}
EXTRA = {
    "type": "example.com/Extra",
    "status": "True",
    "lastProbeTime": None,
    "lastTransitionTime": "2026-12-02T12:51:00Z",
}


@pytest.mark.parametrize(
    ("content_type", "second", "expected_types"),
    [
        (
            None,
            {"status": {"conditions": [EXTRA]}},
            ["example.com/Extra", "PodScheduled"],
        ),  # the client picks SMP
        (
            "application/strategic-merge-patch+json",
            {"status": {"conditions": [EXTRA]}},
            ["example.com/Extra", "PodScheduled"],
        ),
        (
            "application/merge-patch+json",
            {"status": {"conditions": [EXTRA]}},
            ["example.com/Extra"],
        ),
        (
            "application/json-patch+json",
            [{"op": "add", "path": "/status/conditions/-", "value": EXTRA}],
            ["PodScheduled", "example.com/Extra"],
        ),
    ],
    ids=[
        "None",
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
    ],
)
def test_status_patch_flavours(
    apiserver: LoopbackAPIServer,
    core: client.CoreV1Api,
    content_type: str | None,
    second: Any,
    expected_types: list[str],
) -> None:
    apiserver.create(pod("p"))
    kw = {"_content_type": content_type} if content_type else {}
    first = core.patch_namespaced_pod_status(
        "p",
        NS,
        {"status": {"conditions": [UNSCHEDULABLE]}},
        _preload_content=False,
        **kw if content_type != "application/json-patch+json" else {},
    )
    assert raw(first)["status"]["conditions"][0]["reason"] == "Unschedulable"
    got = raw(core.patch_namespaced_pod_status("p", NS, second, _preload_content=False, **kw))
    assert [c["type"] for c in got["status"]["conditions"]] == expected_types
    patch_requests = apiserver.requests(verb="patch", subresource="status")
    assert patch_requests[0].headers["content-type"] == (
        content_type
        if content_type and content_type != "application/json-patch+json"
        else "application/strategic-merge-patch+json"
    )


@pytest.mark.parametrize(
    ("content_type", "query", "status", "reason"),
    [
        ("application/json", {}, 415, "UnsupportedMediaType"),
        ("application/apply-patch+yaml", {}, 422, "Invalid"),
        (
            "application/apply-patch+yaml",
            {"field_manager": "policyengine", "force": True},
            200,
            None,
        ),
    ],
    ids=[
        "application/json-empty",
        "application/apply-patch+yaml-empty",
        "application/apply-patch+yaml-field_manager=policyengine force=True",
    ],
)
def test_status_patch_content_type_errors(
    apiserver: LoopbackAPIServer,
    core: client.CoreV1Api,
    content_type: str,
    query: JSON,
    status: int,
    reason: str | None,
) -> None:
    apiserver.create(pod("p"))
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS},
        "status": {"conditions": [UNSCHEDULABLE]},
    }
    if status == 200:
        got = raw(
            core.patch_namespaced_pod_status(
                "p", NS, body, _content_type=content_type, _preload_content=False, **query
            )
        )
        assert got["status"]["conditions"][0]["reason"] == "Unschedulable"
        assert got["metadata"]["managedFields"][0]["operation"] == "Apply"
        return
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_pod_status("p", NS, body, _content_type=content_type, **query)
    assert exc.value.status == status and body_of(exc.value)["reason"] == reason


def test_status_patch_ignores_spec_and_main_patch_ignores_status(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    apiserver.create(pod("p"))
    got = core.patch_namespaced_pod_status(
        "p", NS, {"spec": {"nodeName": "n1"}, "status": {"nominatedNodeName": "n2"}}
    )
    assert got.spec.node_name is None and got.status.nominated_node_name == "n2"
    got = core.patch_namespaced_pod("p", NS, {"status": {"phase": "Running"}})
    assert got.status.phase == "Pending"


def test_noop_patch_does_not_bump_resource_version(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    apiserver.create(pod("p", labels={"a": "b"}))
    rv = apiserver.resource_version
    got = core.patch_namespaced_pod("p", NS, {"metadata": {"labels": {"a": "b"}}})
    assert got.metadata.resource_version == str(rv) == str(apiserver.resource_version)


# ------------------------------------------------------------------------------ deletes


@pytest.mark.parametrize(
    ("bound", "kwargs", "stays", "grace"),
    [
        (False, {}, False, 0),
        (True, {}, True, 30),
        (True, {"grace_period_seconds": 0}, False, 0),
        (True, {"body": client.V1DeleteOptions(grace_period_seconds=0)}, False, 0),
        (True, {"grace_period_seconds": 5}, True, 5),
    ],
    ids=[
        "False-empty",
        "True-empty",
        "True-grace_period_seconds=0",
        "True-body=V1DeleteOptions(grace_period_seconds=0)",
        "True-grace_period_seconds=5",
    ],
)
def test_pod_delete(
    apiserver: LoopbackAPIServer,
    core: client.CoreV1Api,
    bound: bool,
    kwargs: JSON,
    stays: bool,
    grace: int,
) -> None:
    apiserver.create(pod("p", node_name="n1" if bound else None))
    got = raw(core.delete_namespaced_pod("p", NS, _preload_content=False, **kwargs))
    assert got["kind"] == "Pod" and got["metadata"]["deletionGracePeriodSeconds"] == grace
    assert "deletionTimestamp" in got["metadata"]
    assert (apiserver.get("pod", NS, "p") is not None) == stays


def test_graceful_deletion_is_finished_by_the_kubelet_helpers(
    apiserver_factory: Callable[..., LoopbackAPIServer],
) -> None:
    manual = apiserver_factory()
    manual.create(pod("p", node_name="n1"))
    manual.delete("pod", NS, "p", grace_period_seconds=None)
    assert manual.get("pod", NS, "p") is not None
    assert manual.finish_pod_deletions() == 1 and manual.get("pod", NS, "p") is None
    auto = apiserver_factory(terminate_bound_pods_after=0.05)
    auto.create(pod("p", node_name="n1"))
    auto.delete("pod", NS, "p", grace_period_seconds=None)
    auto.wait_for(lambda: auto.get("pod", NS, "p") is None)


def test_delete_preconditions_and_status_answers(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    apiserver.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}}
    )
    with pytest.raises(ApiException) as exc:
        core.delete_namespaced_config_map(
            "cm", NS, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="nope"))
        )
    assert exc.value.status == 409
    done = raw(core.delete_namespaced_config_map("cm", NS, _preload_content=False))
    assert (
        done["status"] == "Success"
        and done["details"]["name"] == "cm"
        and done["details"]["kind"] == "configmaps"
    )


# ------------------------------------------------------------------------------ events


def test_events_both_apis_share_storage(apiserver: LoopbackAPIServer, api: Any) -> None:
    events_v1, core = client.EventsV1Api(api), client.CoreV1Api(api)
    p = apiserver.create(pod("p"))
    regarding = {
        "kind": "Pod",
        "namespace": NS,
        "name": "p",
        "uid": p["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": p["metadata"]["resourceVersion"],
    }
    events_v1.create_namespaced_event(
        NS,
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "p.1", "namespace": NS},
            "eventTime": micro_now(),
            "reportingController": "policyengine",
            "reportingInstance": "policyengine-host",
            "action": "Scheduling",
            "reason": "FailedScheduling",
            "regarding": regarding,
            "note": "0/2 nodes are available",
            "type": "Warning",
        },
    )
    core.create_namespaced_event(
        NS,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "p.2", "namespace": NS},
            "involvedObject": regarding,
            "reason": "Scheduled",
            "message": "Successfully assigned default/p to n1",
            "source": {"component": "policyengine"},
            "type": "Normal",
            "count": 1,
        },
    )
    as_core = core.list_namespaced_event(
        NS, field_selector="involvedObject.name=p,reason=FailedScheduling"
    ).items
    assert [(e.metadata.name, e.message, e.reporting_component) for e in as_core] == [
        ("p.1", "0/2 nodes are available", "policyengine")
    ]
    # a core event has no eventTime, which the Python model of events.k8s.io/v1 cannot hold
    # (the real apiserver sends the same null), so read this list raw
    as_v1 = raw(
        events_v1.list_namespaced_event(
            NS, field_selector="regarding.name=p", _preload_content=False
        )
    )["items"]
    assert [
        (e["metadata"]["name"], e["note"], e.get("deprecatedCount"), e["eventTime"] is None)
        for e in as_v1
    ] == [
        ("p.1", "0/2 nodes are available", None, False),
        ("p.2", "Successfully assigned default/p to n1", 1, True),
    ]
    series = events_v1.patch_namespaced_event(
        "p.1", NS, {"series": {"count": 2, "lastObservedTime": micro_now()}}
    )
    assert series.series.count == 2
    assert [e["reason"] for e in apiserver.events(regarding="p")] == [
        "FailedScheduling",
        "Scheduled",
    ]
    assert [e["reason"] for e in apiserver.events(reason="Scheduled", core=True)] == ["Scheduled"]


def test_events_v1_without_event_time_is_422(apiserver: LoopbackAPIServer) -> None:
    # the Python model refuses such an Event client-side, so send it raw
    reply = wire.RawClient(apiserver.host, apiserver.port).send(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        {"Content-Type": "application/json"},
        json.dumps(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "bad"},
                "reason": "X",
            }
        ),
    )
    assert reply.status == 422
    assert reply.json()["message"] == 'Event "bad" is invalid: eventTime: Required value'


# ------------------------------------------------------------------------------ leases


def test_lease_optimistic_concurrency(api: Any) -> None:
    leases = client.CoordinationV1Api(api)
    now = datetime.now(UTC)
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name="policyengine"),
        spec=client.V1LeaseSpec(
            holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now
        ),
    )
    created = raw(leases.create_namespaced_lease("kube-system", body, _preload_content=False))
    assert created["spec"]["renewTime"].endswith("Z") and len(created["spec"]["renewTime"]) == len(
        "2026-12-02T12:50:00.000000Z"
    )
    lease = leases.read_namespaced_lease("policyengine", "kube-system")
    stale_rv = lease.metadata.resource_version
    lease.spec.holder_identity = "b"
    renewed = leases.replace_namespaced_lease("policyengine", "kube-system", lease)
    assert int(renewed.metadata.resource_version) > int(stale_rv)
    with pytest.raises(ApiException) as stale:
        leases.replace_namespaced_lease("policyengine", "kube-system", lease)
    assert stale.value.status == 409
    assert body_of(stale.value)["details"] == {
        "name": "policyengine",
        "group": "coordination.k8s.io",
        "kind": "leases",
    }
    renewed.metadata.resource_version = None
    with pytest.raises(ApiException) as unconditional:
        leases.replace_namespaced_lease("policyengine", "kube-system", renewed)
    assert unconditional.value.status == 422
    assert (
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        in body_of(unconditional.value)["message"]
    )


# ------------------------------------------------------------------------------ faults


def test_fail_next_answers_500_then_recovers(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    apiserver.fail_next(2, verb="list", resource="nodes")
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            core.list_node()
        assert exc.value.status == 500 and body_of(exc.value)["reason"] == "InternalError"
    assert core.list_node().items == []
    core.list_namespaced_pod(NS)  # other requests were never affected
    assert apiserver.count(verb="list", resource="nodes") == 3


def test_throttle_answers_429_with_retry_after(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    apiserver.create(pod("p"))
    apiserver.throttle_next(1, retry_after=3, verb="create", subresource="binding")
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("p", NS, binding("p", "n1"), _preload_content=False)
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "3"
    assert body_of(exc.value)["details"] == {"retryAfterSeconds": 3}
    assert (
        core.create_namespaced_pod_binding(
            "p", NS, binding("p", "n1"), _preload_content=False
        ).status
        == 201
    )


@pytest.mark.parametrize(
    ("arm", "call", "message"),
    [
        (
            {"verb": "create", "resource": "pods", "subresource": "binding"},
            lambda c: c.create_namespaced_pod_binding(
                "p", NS, binding("p", "n1"), _preload_content=False
            ),
            'pods "p" is forbidden: User "system:serviceaccount:kube-system:policyengine" cannot create resource "pods/binding" in API group "" in the namespace "default"',
        ),
        (
            {"verb": "list", "resource": "nodes"},
            lambda c: c.list_node(),
            'nodes is forbidden: User "system:serviceaccount:kube-system:policyengine" cannot list resource "nodes" in API group "" at the cluster scope',
        ),
        (
            {"resource": "leases"},
            lambda c: client.CoordinationV1Api(c.api_client).read_namespaced_lease(
                "x", "kube-system"
            ),
            'leases.coordination.k8s.io "x" is forbidden: User "system:serviceaccount:kube-system:policyengine" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
        ),
    ],
    ids=[
        "verb=create resource=pods subresource=binding",
        "verb=list resource=nodes",
        "resource=leases",
    ],
)
def test_forbid_uses_the_rbac_message(
    apiserver: LoopbackAPIServer,
    core: client.CoreV1Api,
    arm: JSON,
    call: Callable[[Any], Any],
    message: str,
) -> None:
    apiserver.create(pod("p"))
    apiserver.forbid(**arm)
    with pytest.raises(ApiException) as exc:
        call(core)
    assert exc.value.status == 403 and body_of(exc.value)["message"] == message
    apiserver.clear_faults()
    try:
        call(core)
    except ApiException as after:
        assert after.status == 404  # the lease does not exist; what matters is: no longer 403


def test_delayed_binds_still_bind(apiserver: LoopbackAPIServer, core: client.CoreV1Api) -> None:
    apiserver.create(pod("p"))
    apiserver.delay_binds(0.05)
    assert (
        core.create_namespaced_pod_binding(
            "p", NS, binding("p", "n1"), _preload_content=False
        ).status
        == 201
    )
    assert apiserver.bound_nodes() == {"default/p": "n1"}


def test_dropped_watch_breaks_the_client_stream(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    def drop() -> None:
        apiserver.wait_for_watch("pods")
        apiserver.drop_watches("pods")

    actor = threading.Thread(target=drop)
    actor.start()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(
            watch.Watch().stream(
                core.list_namespaced_pod,
                NS,
                resource_version=str(apiserver.resource_version),
                timeout_seconds=10,
            )
        )
    actor.join()
    apiserver.wait_for(lambda: apiserver.open_watches("pods") == 0)


def test_graceful_drop_ends_the_stream_cleanly(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    def drop() -> None:
        apiserver.wait_for_watch("nodes")
        assert apiserver.drop_watches(graceful=True) == 1

    actor = threading.Thread(target=drop)
    actor.start()
    assert (
        list(
            watch.Watch().stream(
                core.list_node, resource_version=str(apiserver.resource_version), timeout_seconds=10
            )
        )
        == []
    )
    actor.join()


def test_token_required_gives_401(apiserver: LoopbackAPIServer, tmp_path: Path) -> None:
    apiserver.require_token("s3cret")
    with apiserver.api_client() as api:
        assert client.CoreV1Api(api).list_node().items == []
    cfg = client.Configuration(host=apiserver.url)
    with client.ApiClient(cfg) as anonymous, pytest.raises(ApiException) as exc:
        client.CoreV1Api(anonymous).list_node()
    assert exc.value.status == 401
    assert body_of(exc.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_request_log_records_method_path_query_body(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod(NS, pod("p"))
    core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=", limit=500, resource_version="0"
    )
    create, listing = apiserver.requests()
    assert (create.method, create.path, create.verb, create.resource, create.status) == (
        "POST",
        "/api/v1/namespaces/default/pods",
        "create",
        "pods",
        201,
    )
    assert create.body["metadata"]["name"] == "p"
    assert listing.query == {
        "fieldSelector": ["spec.nodeName="],
        "limit": ["500"],
        "resourceVersion": ["0"],
    }
    apiserver.clear_requests()
    assert apiserver.requests() == []


# ------------------------------------------------------------------------------ direct helpers


def test_seeding_and_inspection_helpers(apiserver: LoopbackAPIServer) -> None:
    stored = apiserver.create(
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="from-model", namespace="fresh-ns"), data={"k": "v"}
        )
    )
    assert (
        stored["metadata"]["namespace"] == "fresh-ns"
        and apiserver.get("namespace", None, "fresh-ns") is not None
    )
    running = apiserver.create({**pod("r", node_name="n1"), "status": {"phase": "Running"}})
    assert running["status"]["phase"] == "Running"
    apiserver.update({**running, "metadata": {**running["metadata"], "labels": {"x": "1"}}})
    assert apiserver.get("Pod", NS, "r")["metadata"]["labels"] == {"x": "1"}
    assert [p["metadata"]["name"] for p in apiserver.list("pods", label_selector="x=1")] == ["r"]
    apiserver.create(pod("pending"))
    apiserver.bind(NS, "pending", "n2")
    assert apiserver.bound_nodes() == {"default/pending": "n2"}
    assert apiserver.delete("pod", NS, "r")["metadata"]["name"] == "r"
    assert apiserver.get("pod", NS, "r") is None and apiserver.delete("pod", NS, "r") is None
    assert apiserver.requests() == []  # helpers are not traffic


@pytest.mark.skipif(wire.capture_dir() is None, reason="k8s-wire captures not available")
def test_load_kubectl_snapshot(apiserver: LoopbackAPIServer, core: client.CoreV1Api) -> None:
    root = wire.capture_dir()
    assert root is not None
    loaded = apiserver.load_yaml((root / "kubectl-get-nodes-pods.yaml").read_text())
    assert len(loaded) == 7
    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=").items
    assert [(p.metadata.namespace, p.metadata.name) for p in pods] == [("team-a", "huge-0")]
    assert (
        core.read_namespaced_pod("huge-0", "team-a").status.conditions[0].reason == "Unschedulable"
    )


# ------------------------------------------------------------------------------ a real client loop


def test_official_informer_survives_dropped_watches_and_410(
    apiserver: LoopbackAPIServer, core: client.CoreV1Api
) -> None:
    from kubernetes.informer import ERROR, SharedInformer

    apiserver.create(pod("a"))
    informer = SharedInformer(core.list_namespaced_pod, namespace=NS)
    errors_seen: list[Any] = []
    informer.add_event_handler(ERROR, errors_seen.append)

    def names() -> set[str]:
        return {p.metadata.name for p in informer.cache.list()}

    informer.start()
    try:
        apiserver.wait_for(lambda: names() == {"a"} and apiserver.open_watches("pods") == 1)
        apiserver.drop_watches("pods")  # connection cut: the informer re-watches from its RV
        apiserver.wait_for(
            lambda: (
                apiserver.count(verb="watch", resource="pods") == 2
                and apiserver.open_watches("pods") == 1
            )
        )
        apiserver.create(pod("b"))
        apiserver.wait_for(lambda: names() == {"a", "b"})
        apiserver.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump", "namespace": NS}}
        )
        apiserver.expire_history()
        apiserver.drop_watches("pods")  # the re-watch is now too old: 410, then a relist
        apiserver.wait_for(
            lambda: (
                apiserver.count(verb="list", resource="pods") == 2
                and apiserver.open_watches("pods") == 1
            )
        )
        apiserver.create(pod("c"))
        apiserver.wait_for(lambda: names() == {"a", "b", "c"})
    finally:
        informer.stop()
    assert any(isinstance(e, ApiException) and e.status == 410 for e in errors_seen)
    assert not apiserver.crashes
