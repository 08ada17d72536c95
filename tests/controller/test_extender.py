"""``controller.extender``: kube-scheduler's extender protocol, replayed from real captures.

The captures (``tests/data/k8s-wire/09-extender-nodecachecapable-{false,true}.json``) are what a
real kube-scheduler v1.28.7 posted to a recording extender and what it accepted back. The
policy below decides as that extender did (node-a rejected for ``*reject-a*`` pods, every node
for ``*reject-all*``; node-a scored 10, the rest 3), so each request body is posted over real
HTTP exactly as captured and the answer compared with the captured one. The node-name form is
answered from a node cache fed by informers against the loopback API server.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policyengine.cli.common import load_program
from policyengine.controller.extender import (
    UNKNOWN_NODE,
    Extender,
    ExtenderServer,
    NodeCache,
    extender_score,
)
from policyengine.controller.informer import InformerOptions
from policyengine.lang.compiler import Program
from policyengine.model.hami import pod_grants
from tests.controller.builders import node_obj, pod_obj

WIRE = Path(__file__).resolve().parents[1] / "data" / "k8s-wire"
CAPTURE_POLICY = """
policy "capture" {
  filter recorded {
    not ("reject-all" in pod.name or ("reject-a" in pod.name and node.name == "node-a"))
  } reason "extender says no to {node.name}"

  score recorded weight 1 {
    if node.name == "node-a" then 100 else 30
  }
}
"""
FAILING_POLICY = """
policy "broken" {
  filter divides { 10 / len(node.labels["zero"] ?? "") > 1 } reason "needs labels"
  score nothing weight 1 { 50 }
}
"""
WEIGHTED_POLICY = """
policy "weighted" {
  score zone_a weight 3 { if node.labels["topology.kubernetes.io/zone"] == "zone-a" then 100 else 0 }
  score half weight 1 { 50 }
}
"""
SELECTIVE_POLICY = """
policy "gpu-only" {
  match pod.labels["app"] == "gpu"
  filter never { false } reason "no"
}
"""


def capture(form: str) -> dict[str, Any]:
    return json.loads((WIRE / f"09-extender-nodecachecapable-{form}.json").read_text())


def program(tmp_path: Path, text: str, name: str = "policy.sched") -> Program:
    path = tmp_path / name
    path.write_text(text)
    return load_program([str(path)])


class Client:
    """Posts bodies as kube-scheduler does: POST, JSON, Content-Length, one kept-alive connection."""

    def __init__(self, server: ExtenderServer) -> None:
        host, port = server.address
        self.connection = http.client.HTTPConnection(host, port, timeout=10)

    def post(self, path: str, body: bytes | str) -> tuple[int, str, bytes]:
        data = body.encode() if isinstance(body, str) else body
        headers = {
            "User-Agent": "Go-http-client/1.1",
            "Content-Type": "application/json",
            "Accept-Encoding": "gzip",
        }
        self.connection.request("POST", path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()

    def get(self, path: str) -> tuple[int, bytes]:
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        return response.status, response.read()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ExtenderServer] = []

    def start(extender: Extender) -> Client:
        server = ExtenderServer("127.0.0.1:0", extender)
        servers.append(server)
        return Client(server)

    yield start
    for server in servers:
        server.close()


def replay(client: Client, exchange: dict[str, Any]) -> tuple[int, Any]:
    request = exchange["request"]
    assert request["method"] == "POST"
    status, content_type, body = client.post(request["path"], request["body"])
    assert content_type == "application/json"
    return status, json.loads(body)


def assert_same_result(got: Any, expected: Any) -> None:
    """Equal to the captured answer, but a rejection may be unresolvable (module docstring of
    ``controller.extender``: only kube's resource-like rules leave preemption a chance)."""
    if isinstance(expected, list):
        assert got == expected
        return
    assert list(got) == list(expected)  # the same fields, in kube's order
    rejected = {**got["FailedNodes"], **got["FailedAndUnresolvableNodes"]}
    assert rejected == {**expected["FailedNodes"], **expected["FailedAndUnresolvableNodes"]}
    for field in ("Nodes", "NodeNames", "Error"):
        assert got[field] == expected[field], field


# --- the captures ---------------------------------------------------------------------------


def test_replays_the_full_node_capture(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    exchanges = capture("false")["exchanges"]
    assert {e["request"]["path"] for e in exchanges} == {
        "/scheduler/filter",
        "/scheduler/prioritize",
    }
    for exchange in exchanges:
        status, got = replay(client, exchange)
        assert status == exchange["response"]["status"] == 200
        assert_same_result(got, exchange["response"]["body_json"])


def test_a_pod_with_resource_claims_is_decided_by_the_policy(tmp_path: Path, serve: Any) -> None:
    """Behind kube-scheduler the claims are its DynamicResources plugin's to allocate: the
    policy decides as for any pod (``policyengine run`` would not place such a pod)."""
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    for exchange in capture("false")["exchanges"]:
        body = json.loads(exchange["request"]["body"])
        body["Pod"]["spec"]["resourceClaims"] = [{"name": "gpu"}]
        status, _, raw = client.post(exchange["request"]["path"], json.dumps(body))
        assert status == exchange["response"]["status"] == 200
        assert_same_result(json.loads(raw), exchange["response"]["body_json"])


def test_full_nodes_come_back_as_sent(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    exchange = capture("false")["exchanges"][2]  # pod-e2-reject-a: node-b stays
    sent = json.loads(exchange["request"]["body"])["Nodes"]["items"]
    _, got = replay(client, exchange)
    assert got["Nodes"] == {"metadata": {}, "items": [sent[1]]}
    assert got["NodeNames"] is None


def seed_capture_nodes(apiserver: Any) -> None:
    """The nodes of the full-node capture, as the cluster held them."""
    body = json.loads(capture("false")["exchanges"][0]["request"]["body"])
    for node in body["Nodes"]["items"]:
        apiserver.create({"apiVersion": "v1", "kind": "Node", **node})


@pytest.fixture
def node_cache(apiserver: Any, kube_api_client: Any) -> Iterator[NodeCache]:
    seed_capture_nodes(apiserver)
    cache = NodeCache(kube_api_client, InformerOptions(watch_timeout=(5, 5)))
    cache.start()
    assert cache.wait_for_sync(20)
    yield cache
    cache.stop()


def test_replays_the_node_name_capture_from_the_node_cache(
    tmp_path: Path, serve: Any, node_cache: NodeCache
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=node_cache))
    for exchange in capture("true")["exchanges"]:
        status, got = replay(client, exchange)
        assert status == exchange["response"]["status"] == 200
        assert_same_result(got, exchange["response"]["body_json"])


def test_node_cache_supplies_the_pods_on_each_node(
    tmp_path: Path, serve: Any, apiserver: Any, node_cache: NodeCache
) -> None:
    apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {
                "nodeName": "node-a",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}
                ],
            },
            "status": {"phase": "Running"},
        }
    )
    prog = program(
        tmp_path,
        'policy "room" { filter room { node.free["cpu"] >= 2 } reason "{node.name} is busy" }',
    )
    extender = Extender(lambda: prog, node_cache=node_cache)
    client = serve(extender)
    exchange = capture("true")["exchanges"][0]
    deadline = time.monotonic() + 20
    while node_cache.snapshot().pod_nodes.get("default/big") != "node-a":  # the watch is quick
        if time.monotonic() >= deadline:  # a bound on waiting, not a speed check
            pytest.fail("the pod never reached the node cache")
        time.sleep(0.05)
    _, got = replay(client, exchange)
    assert got["NodeNames"] == ["node-b"]
    assert got["FailedAndUnresolvableNodes"] == {"node-a": "node-a is busy"}


def test_node_names_the_cache_does_not_know_fail_resolvably(
    tmp_path: Path, serve: Any, node_cache: NodeCache
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=node_cache))
    body = json.loads(capture("true")["exchanges"][0]["request"]["body"])
    body["NodeNames"] = ["node-b", "node-new"]
    status, _, raw = client.post("/scheduler/filter", json.dumps(body))
    got = json.loads(raw)
    assert status == 200
    assert got["NodeNames"] == ["node-b"]
    assert got["FailedNodes"] == {"node-new": UNKNOWN_NODE}


def test_node_names_without_a_node_cache_is_an_error_not_an_empty_list(
    tmp_path: Path, serve: Any
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    exchange = capture("true")["exchanges"][0]
    status, got = replay(client, exchange)
    assert status == 200
    assert "--node-cache" in got["Error"]
    status, _, body = client.post("/scheduler/prioritize", exchange["request"]["body"])
    assert status == 500
    assert b"--node-cache" in body


# --- errors ---------------------------------------------------------------------------------


def test_rule_runtime_errors_are_reported_in_error(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, FAILING_POLICY)
    client = serve(Extender(lambda: prog))
    exchange = capture("false")["exchanges"][0]
    status, got = replay(client, exchange)
    assert status == 200
    assert got["Error"].startswith("policy broken (version ")
    assert "divides" in got["Error"]
    # Still an honest answer beside the error: every node failed, none silently dropped.
    assert set(got["FailedAndUnresolvableNodes"]) == {"node-a", "node-b"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b"{}", "Pod is missing"),
        (b'{"Pod": "x", "Nodes": null, "NodeNames": ["a"]}', "Pod is missing"),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "Nodes": null, "NodeNames": null}',
            "neither",
        ),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNames": [1]}',
            "list of node names",
        ),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "Nodes": []}',
            "NodeList",
        ),
        (
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "Nodes": {"items": [{}]}}',
            "items[0]",
        ),
        (b"\xff\xfe", "not JSON"),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "no-pod",
        "pod-not-an-object",
        "no-nodes",
        "node-names-not-strings",
        "nodes-not-a-list",
        "bad-node-item",
        "not-utf-8",
    ],
)
def test_bad_requests_get_400_with_a_message(
    tmp_path: Path, serve: Any, body: bytes, message: str
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    for verb in ("filter", "prioritize"):
        status, content_type, text = client.post(f"/scheduler/{verb}", body)
        assert status == 400, text
        assert content_type.startswith("text/plain")
        assert message in text.decode()


def test_unknown_paths_and_health(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    status, _, _ = client.post("/scheduler/unbind", "{}")
    assert status == 404
    assert client.get("/healthz") == (200, b"ok\n")
    assert client.get("/readyz") == (200, b"ok\n")
    replay(client, capture("false")["exchanges"][0])
    status, metrics = client.get("/metrics")
    assert status == 200
    assert b'policyengine_extender_requests_total{result="ok",verb="filter"} 1.0' in metrics


def test_not_ready_until_the_node_cache_synced(tmp_path: Path, serve: Any) -> None:
    class Unsynced:
        def has_synced(self) -> bool:
            return False

    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=Unsynced()))  # type: ignore[arg-type]
    status, body = client.get("/readyz")
    assert status == 503
    assert b"node cache" in body


# --- scores ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "max_total", "score"),
    [
        (0, 400, 0),
        (400, 400, 10),
        (200, 400, 5),
        (20, 400, 1),  # 0.5 rounds half up
        (19, 400, 0),
        (350, 400, 9),  # 8.75
        (500, 400, 10),  # clamped
        (-5, 400, 0),
        (50, 0, 0),  # a policy without score rules
        (float("nan"), 100, 0),
    ],
    ids=[
        "0-of-400",
        "400-of-400",
        "200-of-400",
        "20-of-400",
        "19-of-400",
        "350-of-400",
        "500-of-400",
        "-5-of-400",
        "50-of-0",
        "nan-of-100",
    ],
)
def test_score_mapping(total: float, max_total: float, score: int) -> None:
    assert extender_score(total, max_total) == score


def test_prioritize_maps_the_weighted_total(tmp_path: Path, serve: Any) -> None:
    # node-a: 3×100 + 50 = 350 of 400 → 9; node-b: 50 of 400 → 1.
    prog = program(tmp_path, WEIGHTED_POLICY)
    client = serve(Extender(lambda: prog))
    exchange = capture("false")["exchanges"][1]
    status, got = replay(client, exchange)
    assert status == 200
    assert got == [{"Host": "node-a", "Score": 9}, {"Host": "node-b", "Score": 1}]


def test_pods_no_policy_governs_pass_and_score_zero(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, SELECTIVE_POLICY)
    client = serve(Extender(lambda: prog))
    filter_exchange, prioritize_exchange = capture("false")["exchanges"][:2]
    _, got = replay(client, filter_exchange)
    assert [n["metadata"]["name"] for n in got["Nodes"]["items"]] == ["node-a", "node-b"]
    assert got["FailedNodes"] == got["FailedAndUnresolvableNodes"] == {}
    assert got["Error"] == ""
    _, scores = replay(client, prioritize_exchange)
    assert scores == [{"Host": "node-a", "Score": 0}, {"Host": "node-b", "Score": 0}]


def test_resource_rejections_leave_preemption_a_chance(tmp_path: Path, serve: Any) -> None:
    kube = Path(__file__).resolve().parents[2] / "policies" / "kube-default.sched"
    prog = load_program([str(kube)])
    client = serve(Extender(lambda: prog))
    body = json.loads(capture("false")["exchanges"][0]["request"]["body"])
    body["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "6"
    _, _, raw = client.post("/scheduler/filter", json.dumps(body))
    got = json.loads(raw)
    assert [n["metadata"]["name"] for n in got["Nodes"]["items"]] == ["node-b"]
    assert got["FailedNodes"] == {"node-a": "Insufficient cpu"}
    assert got["FailedAndUnresolvableNodes"] == {}


# --- the preempt verb -----------------------------------------------------------------------

GUARD_POLICY = """
policy "guard" {
  filter room { node.free["cpu"] >= 3 } reason "{node.name} has no room"
  preempt { victim.labels["protected"] ?? "" != "true" }
}
"""
PREEMPTOR = pod_obj("urgent", cpu="3", priority=100, uid="u-urgent")
# node-a (4 CPUs): low-a; node-b (8 CPUs): guarded (protected by the policy) and low-b.
RUNNING = (
    pod_obj("low-a", cpu="3", priority=1, node="node-a", uid="u-low-a"),
    pod_obj(
        "guarded", cpu="7", priority=1, node="node-b", uid="u-guarded", labels={"protected": "true"}
    ),
    pod_obj("low-b", cpu="1", priority=1, node="node-b", uid="u-low-b"),
)


@pytest.fixture
def running_pods(apiserver: Any, node_cache: NodeCache) -> NodeCache:
    for obj in RUNNING:
        apiserver.create(obj)
    deadline = time.monotonic() + 20
    while len(node_cache.snapshot().pod_nodes) < len(RUNNING):  # the watch is quick
        if time.monotonic() >= deadline:  # a bound on waiting, not a speed check
            pytest.fail("the pods never reached the node cache")
        time.sleep(0.05)
    return node_cache


def meta(*uids: str, violations: int = 0) -> dict[str, Any]:
    return {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": violations}


@pytest.mark.parametrize(
    ("proposed", "kept"),
    [
        ({"node-a": meta("u-low-a")}, {"node-a": meta("u-low-a")}),
        ({"node-b": meta("u-guarded", violations=1)}, {}),  # the policy protects it
        ({"node-b": meta("u-low-b")}, {}),  # 1 CPU freed: the pod still fits nowhere there
        ({"node-a": meta("u-low-b")}, {}),  # not on that node
        ({"node-new": meta("u-low-a")}, {}),  # a node the cache does not know
        (
            {"node-a": meta("u-low-a", violations=2), "node-b": meta("u-guarded", "u-low-b")},
            {"node-a": meta("u-low-a", violations=2)},  # victims and violations as sent
        ),
    ],
    ids=[
        "kept",
        "guarded-by-policy",
        "still-no-fit",
        "not-on-that-node",
        "unknown-node",
        "victims-and-violations-as-sent",
    ],
)
def test_preempt_keeps_the_nodes_whose_victims_the_policy_agrees_with(
    tmp_path: Path,
    serve: Any,
    running_pods: NodeCache,
    proposed: dict[str, Any],
    kept: dict[str, Any],
) -> None:
    prog = program(tmp_path, GUARD_POLICY)
    client = serve(Extender(lambda: prog, node_cache=running_pods))
    body = {"Pod": PREEMPTOR, "NodeNameToVictims": None, "NodeNameToMetaVictims": proposed}
    status, content_type, raw = client.post("/scheduler/preempt", json.dumps(body))
    assert (status, content_type) == (200, "application/json")
    assert json.loads(raw) == {"NodeNameToMetaVictims": kept}


def test_preempt_takes_whole_victims_and_answers_by_uid(
    tmp_path: Path, serve: Any, running_pods: NodeCache
) -> None:
    """``nodeCacheCapable: false``: kube-scheduler sends the victims whole; the answer is
    always by UID (kube-scheduler looks them up on the node)."""
    prog = program(tmp_path, GUARD_POLICY)
    client = serve(Extender(lambda: prog, node_cache=running_pods))
    whole = {
        "node-a": {"Pods": [RUNNING[0]], "NumPDBViolations": 0},
        "node-b": {"Pods": [RUNNING[1], RUNNING[2]], "NumPDBViolations": 0},
    }
    body = {"Pod": PREEMPTOR, "NodeNameToVictims": whole, "NodeNameToMetaVictims": None}
    status, _, raw = client.post("/scheduler/preempt", json.dumps(body))
    assert status == 200
    assert json.loads(raw) == {"NodeNameToMetaVictims": {"node-a": meta("u-low-a")}}


def test_preempt_for_a_pod_no_policy_governs_keeps_every_node(
    tmp_path: Path, serve: Any, running_pods: NodeCache
) -> None:
    prog = program(tmp_path, SELECTIVE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=running_pods))
    proposed = {"node-a": meta("u-low-a"), "node-b": meta("u-guarded")}
    body = {"Pod": PREEMPTOR, "NodeNameToMetaVictims": proposed}
    _, _, raw = client.post("/scheduler/preempt", json.dumps(body))
    assert json.loads(raw) == {"NodeNameToMetaVictims": proposed}


def test_preempt_without_a_node_cache_is_an_error(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, GUARD_POLICY)
    client = serve(Extender(lambda: prog))
    body = {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"node-a": meta("u-low-a")}}
    status, _, raw = client.post("/scheduler/preempt", json.dumps(body))
    assert status == 500
    assert raw.decode() == (
        "the preempt verb needs the node cache (kube-scheduler sends victims, not nodes): "
        "start this extender with --node-cache, or remove preemptVerb\n"
    )


@pytest.mark.parametrize(
    ("verb", "body", "message"),
    [
        ("bind", b"[]", "the body must be a JSON object (ExtenderBindingArgs)"),
        (
            "bind",
            b'{"PodName": "p", "PodNamespace": "default"}',
            "ExtenderBindingArgs.Node must be",
        ),
        (
            "bind",
            b'{"PodName": 1, "PodNamespace": "d", "Node": "n"}',
            "ExtenderBindingArgs.PodName must",
        ),
        ("preempt", b"{}", "ExtenderPreemptionArgs.Pod is missing or not an object"),
        (
            "preempt",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}}',
            "has neither NodeNameToVictims nor",
        ),
        (
            "preempt",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNameToMetaVictims": []}',
            "must be an object",
        ),
        (
            "preempt",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNameToMetaVictims": {"n": {"Pods": [1]}}}',
            'ExtenderPreemptionArgs.NodeNameToMetaVictims[n].Pods must be [{"UID": "..."}, ...]',
        ),
        (
            "preempt",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNameToMetaVictims": '
            b'{"n": {"Pods": [], "NumPDBViolations": "1"}}}',
            "NumPDBViolations must be an integer",
        ),
        (
            "preempt",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNameToVictims": {"n": {"Pods": [7]}}}',
            "ExtenderPreemptionArgs.NodeNameToVictims[n].Pods[0] is not a pod",
        ),
    ],
    ids=[
        "bind-not-an-object",
        "bind-no-node",
        "bind-pod-name-not-a-string",
        "preempt-no-pod",
        "preempt-no-victims",
        "preempt-meta-victims-not-an-object",
        "preempt-meta-victim-pods-bad",
        "preempt-violations-not-an-integer",
        "preempt-victim-not-a-pod",
    ],
)
def test_bad_preempt_and_bind_requests_get_400_with_a_message(
    tmp_path: Path, serve: Any, verb: str, body: bytes, message: str
) -> None:
    prog = program(tmp_path, GUARD_POLICY)
    client = serve(Extender(lambda: prog))
    status, content_type, text = client.post(f"/scheduler/{verb}", body)
    assert status == 400, text
    assert content_type.startswith("text/plain")
    assert message in text.decode()


# --- the bind verb --------------------------------------------------------------------------

SHARE = {"policyengine.io/gpu-share": "cores=40"}


@pytest.fixture
def gpu_cache(apiserver: Any, kube_api_client: Any) -> Iterator[NodeCache]:
    """One node of two GPUs and five pods asking 40% of one each (two fit on a device)."""
    node = node_obj("g1")
    node["metadata"]["labels"].update(
        {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "40960"}
    )
    apiserver.create(node)
    for i in range(5):
        obj = pod_obj(f"s{i}", uid=f"u-s{i}")
        obj["metadata"]["annotations"] = dict(SHARE)
        apiserver.create(obj)
    cache = NodeCache(kube_api_client, InformerOptions(watch_timeout=(5, 5)))
    cache.start()
    assert cache.wait_for_sync(20)
    yield cache
    cache.stop()


def binding(name: str, node: str = "g1", uid: str | None = None) -> str:
    uid = f"u-{name}" if uid is None else uid
    return json.dumps({"PodName": name, "PodNamespace": "default", "PodUID": uid, "Node": node})


def test_bind_posts_the_binding_with_each_pods_gpu_devices(
    tmp_path: Path, serve: Any, apiserver: Any, gpu_cache: NodeCache
) -> None:
    """Four binds at once, as kube-scheduler's binding goroutines send them: each pod gets a
    device with room, two shares a device, none twice (the assumption holds the devices)."""
    prog = program(tmp_path, CAPTURE_POLICY)
    extender = Extender(lambda: prog, node_cache=gpu_cache)
    clients = [serve(extender) for _ in range(4)]
    answers: dict[str, Any] = {}

    def bind(client: Client, name: str) -> None:
        status, _, raw = client.post("/scheduler/bind", binding(name))
        answers[name] = (status, json.loads(raw))

    threads = [threading.Thread(target=bind, args=(c, f"s{i}")) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert answers == {f"s{i}": (200, {"Error": ""}) for i in range(4)}
    assert apiserver.bound_nodes() == {f"default/s{i}": "g1" for i in range(4)}
    devices: Counter[str] = Counter()
    for i in range(4):
        (sent,) = apiserver.requests(name=f"s{i}", subresource="binding")
        grants = pod_grants(sent.body["metadata"]["annotations"])
        assert grants is not None and len(grants) == 1
        devices[grants[0].uuid] += 1
    assert devices == {"g1-gpu0": 2, "g1-gpu1": 2}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (binding("s0", uid="u-old"), "pod default/s0 is now uid u-s0, not u-old"),
        (binding("ghost"), "pod default/ghost is not waiting in the extender's node cache"),
        (binding("s0", node="g9"), "node g9 is not in the extender's node cache"),
    ],
    ids=["binding(s0,uid=u-old)", "binding(ghost)", "binding(s0,node=g9)"],
)
def test_bind_refusals_are_reported_in_error(
    tmp_path: Path, serve: Any, apiserver: Any, gpu_cache: NodeCache, body: str, error: str
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=gpu_cache))
    status, _, raw = client.post("/scheduler/bind", body)
    assert (status, json.loads(raw)) == (200, {"Error": error})
    assert apiserver.bound_nodes() == {}


def test_a_refused_binding_holds_no_device(
    tmp_path: Path, serve: Any, apiserver: Any, gpu_cache: NodeCache
) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog, node_cache=gpu_cache))
    apiserver.fail_next(1, code=500, subresource="binding", name="s0")
    status, _, raw = client.post("/scheduler/bind", binding("s0"))
    assert status == 200
    assert json.loads(raw)["Error"].startswith("binding default/s0 to g1: 500")
    assert not gpu_cache.cache.is_assumed("default/s0")
    _, _, raw = client.post("/scheduler/bind", binding("s0"))  # kube-scheduler's retry
    assert json.loads(raw) == {"Error": ""}
    assert apiserver.bound_nodes() == {"default/s0": "g1"}


def test_bind_without_a_node_cache_is_an_error(tmp_path: Path, serve: Any) -> None:
    prog = program(tmp_path, CAPTURE_POLICY)
    client = serve(Extender(lambda: prog))
    status, _, raw = client.post("/scheduler/bind", binding("s0"))
    assert (status, json.loads(raw)) == (
        200,
        {
            "Error": "the bind verb needs the node cache (the pod's GPU devices are chosen "
            "from it): start this extender with --node-cache, or remove bindVerb"
        },
    )
