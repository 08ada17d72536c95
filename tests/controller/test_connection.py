"""``controller.connection``: where the client connects, how fast, and what failures say.

Every message an operator reads is compared verbatim. Rate limiting is checked through a
token bucket with a fake clock (what it makes callers wait, in which order), never through
wall-clock speed. The retry helper is checked with a stop event that records the waits it is
asked for instead of sleeping.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from loopback import LoopbackAPIServer
from policyengine.controller import connection
from policyengine.controller.connection import (
    Backoff,
    ConnectionConfigError,
    RequestInfo,
    Stopped,
    TokenBucket,
    classify,
    connect,
    describe,
    load_configuration,
    request_info,
    retry,
)

USER = "system:serviceaccount:kube-system:policyengine"


class RecordingStop(threading.Event):
    """A stop event whose waits return at once, remembering how long they were asked to be."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.waits: list[float] = []
        self._stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0))
        if self._stop_after is not None and len(self.waits) >= self._stop_after:
            self.set()
        return self.is_set()


# --- where to connect ----------------------------------------------------------------------


def test_kubeconfig_flag(kubeconfig_path: Path, apiserver: LoopbackAPIServer) -> None:
    cfg, source = load_configuration(str(kubeconfig_path), environ={})
    assert cfg.host == apiserver.url
    assert source == f"--kubeconfig {kubeconfig_path}"


def test_kubeconfig_environment_variable(
    kubeconfig_path: Path, apiserver: LoopbackAPIServer, tmp_path: Path
) -> None:
    missing = tmp_path / "missing"
    listed = f"{missing}:{kubeconfig_path}"  # a list, as kubectl merges it
    cfg, source = load_configuration(None, environ={"KUBECONFIG": listed})
    assert cfg.host == apiserver.url
    assert source == f"KUBECONFIG={listed}"


def test_the_flag_wins_over_the_environment(
    kubeconfig_path: Path, apiserver: LoopbackAPIServer, tmp_path: Path
) -> None:
    other = LoopbackAPIServer().kubeconfig(tmp_path / "other")  # never started: port 0
    cfg, _ = load_configuration(str(kubeconfig_path), environ={"KUBECONFIG": str(other)})
    assert cfg.host == apiserver.url


def test_in_cluster_config(tmp_path: Path) -> None:
    token, cert = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    cert.write_text("not checked until a TLS handshake")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg, source = load_configuration(None, environ=env, token_file=str(token), cert_file=str(cert))
    assert (cfg.host, source) == ("https://10.96.0.1:443", "in-cluster service account")
    assert cfg.auth_settings()["BearerToken"]["value"] == "bearer sa-token"
    assert cfg.ssl_ca_cert == str(cert)


@pytest.mark.parametrize(
    ("kubeconfig", "environ", "message"),
    [
        (
            None,
            {},
            "no Kubernetes API server configured: --kubeconfig was not given, KUBECONFIG is "
            "not set, and this is not a pod (KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT are not set); pass --kubeconfig PATH",
        ),
        (
            None,
            {"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
            "no Kubernetes API server configured: --kubeconfig was not given, KUBECONFIG is "
            "not set, and this is not a pod (KUBERNETES_SERVICE_PORT is not set); "
            "pass --kubeconfig PATH",
        ),
        ("/nonexistent/kubeconfig", {}, "--kubeconfig /nonexistent/kubeconfig: no such file"),
        (
            None,
            {"KUBECONFIG": "/nonexistent/a:/nonexistent/b"},
            "KUBECONFIG=/nonexistent/a:/nonexistent/b: none of these files exists",
        ),
    ],
    ids=[
        "None-empty",
        "None-KUBERNETES_SERVICE_HOST=10.96.0.1",
        "/nonexistent/kubeconfig-empty",
        "None-KUBECONFIG=/nonexistent/a:/nonexistent/b",
    ],
)
def test_what_was_tried_when_nothing_works(
    kubeconfig: str | None, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConnectionConfigError) as error:
        load_configuration(kubeconfig, environ=environ)
    assert str(error.value) == message


def test_in_cluster_without_a_token(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    token, cert = tmp_path / "token", tmp_path / "ca.crt"
    with pytest.raises(ConnectionConfigError) as error:
        load_configuration(None, environ=env, token_file=str(token), cert_file=str(cert))
    assert str(error.value) == (
        "in-cluster config (no --kubeconfig, no KUBECONFIG): Service token file does not "
        f"exist. (service account files {token}, {cert}); mount the service account token "
        "or pass --kubeconfig PATH"
    )


def test_a_broken_kubeconfig_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\ncontexts: []\n")
    with pytest.raises(ConnectionConfigError) as error:
        load_configuration(str(broken), environ={})
    assert str(error.value).startswith(f"--kubeconfig {broken}: not a usable kubeconfig: ")


def test_connect_and_wait_for_api(kubeconfig_path: Path, apiserver: LoopbackAPIServer) -> None:
    conn = connect(str(kubeconfig_path), environ={})
    try:
        assert conn.host == apiserver.url
        assert connection.wait_for_api(conn) == "v1.28.7"
    finally:
        conn.close()


# --- how fast ------------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    fake = FakeTime()
    bucket = TokenBucket(10, 3, clock=fake.clock, sleep=fake.sleep)
    waits = [round(bucket.acquire(), 9) for _ in range(6)]
    assert waits == [0, 0, 0, 0.1, 0.1, 0.1]
    assert (bucket.requests, bucket.throttled) == (6, 3)


def test_token_bucket_refills_up_to_the_burst() -> None:
    fake = FakeTime()
    bucket = TokenBucket(10, 3, clock=fake.clock, sleep=fake.sleep)
    for _ in range(3):
        bucket.acquire()
    fake.now += 100  # a long idle time refills the bucket, but only to the burst
    assert [round(bucket.acquire(), 9) for _ in range(4)] == [0, 0, 0, 0.1]


def test_token_bucket_reservations_queue_up() -> None:
    # Callers that reserve at the same instant are served one after the other.
    bucket = TokenBucket(4, 1, clock=lambda: 0.0, sleep=lambda _: None)
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.25, 0.5, 0.75]


def test_the_limiter_sits_in_front_of_every_request(apiserver: LoopbackAPIServer) -> None:
    fake = FakeTime()
    api = apiserver.api_client()
    bucket = TokenBucket(10, 3, clock=fake.clock, sleep=fake.sleep)
    connection.install(api, bucket)
    sent_when_waiting: list[int] = []

    def sleep(seconds: float) -> None:
        sent_when_waiting.append(apiserver.count(resource="nodes"))
        fake.sleep(seconds)

    bucket._sleep = sleep
    core = k8s.CoreV1Api(api)
    for _ in range(5):
        core.list_node()
    core.list_node(watch=True, timeout_seconds=1, _preload_content=False).release_conn()
    # Three went at once; the 4th, 5th and the watch each waited, before being sent.
    assert sent_when_waiting == [3, 4, 5]
    assert apiserver.count(resource="nodes") == 6 == bucket.requests
    api.close()


def test_connect_installs_the_flags_limits(kubeconfig_path: Path) -> None:
    conn = connect(str(kubeconfig_path), qps=5, burst=7, environ={})
    assert conn.limiter is not None
    assert (conn.limiter.qps, conn.limiter.burst) == (5.0, 7)
    k8s.CoreV1Api(conn.client).list_node()
    assert conn.limiter.requests == 1
    conn.close()
    unlimited = connect(str(kubeconfig_path), qps=0, environ={})
    assert unlimited.limiter is None
    unlimited.close()


# --- what went wrong -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "expected"),
    [
        ("GET", "https://h:6443/api/v1/nodes", RequestInfo("list", "nodes")),
        ("GET", "https://h:6443/api/v1/nodes/n1", RequestInfo("get", "nodes", name="n1")),
        (
            "GET",
            "https://h:6443/api/v1/pods?watch=True&resourceVersion=5",
            RequestInfo("watch", "pods"),
        ),
        (
            "POST",
            "https://h:6443/api/v1/namespaces/default/pods/p/binding",
            RequestInfo("create", "pods", "binding", "default", "p"),
        ),
        (
            "PUT",
            "https://h:6443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/pe",
            RequestInfo("update", "leases", "", "kube-system", "pe", "coordination.k8s.io"),
        ),
        (
            "DELETE",
            "https://h:6443/api/v1/namespaces/ns",
            RequestInfo("delete", "namespaces", name="ns"),
        ),
        ("GET", "https://h:6443/version", RequestInfo("get", "/version")),
    ],
    ids=[
        "list-nodes",
        "get-node",
        "watch-pods",
        "create-binding",
        "update-lease",
        "delete-namespace",
        "version",
    ],
)
def test_request_info(method: str, url: str, expected: RequestInfo) -> None:
    info = request_info(method, url)
    assert info == RequestInfo(
        expected.verb,
        expected.resource,
        expected.subresource,
        expected.namespace,
        expected.name,
        expected.group,
        "https://h:6443",
    )


def _failure_of(call: Any) -> connection.Failure:
    try:
        call()
    except Exception as error:
        return classify(error)
    raise AssertionError("the call succeeded")


@pytest.fixture
def installed(kubeconfig_path: Path) -> Any:
    conn = connect(str(kubeconfig_path), environ={})
    yield conn
    conn.close()


def test_forbidden_names_the_verb_and_resource(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    apiserver.forbid(verb="list", resource="pods")
    failure = _failure_of(lambda: k8s.CoreV1Api(installed.client).list_pod_for_all_namespaces())
    assert failure.message == (
        f'forbidden: User "{USER}" cannot list resource "pods" in API group "" at the cluster '
        "scope — grant it in the ClusterRole (see deploy/)"
    )
    assert (failure.kind, failure.status, failure.retryable) == ("forbidden", 403, True)


def test_forbidden_binding(apiserver: LoopbackAPIServer, installed: connection.Connection) -> None:
    apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    apiserver.forbid(verb="create", resource="pods", subresource="binding")
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    core = k8s.CoreV1Api(installed.client)
    failure = _failure_of(
        lambda: core.create_namespaced_pod_binding("p", "default", body, _preload_content=False)
    )
    assert failure.message == (
        f'forbidden: User "{USER}" cannot create resource "pods/binding" in API group "" in the '
        'namespace "default" — grant it in the ClusterRole (see deploy/)'
    )
    assert failure.info is not None and failure.info.call == "create pods/binding"


def test_unauthorized(apiserver: LoopbackAPIServer, installed: connection.Connection) -> None:
    apiserver.require_token("the-right-one")
    failure = _failure_of(lambda: k8s.CoreV1Api(installed.client).list_node())
    assert failure.message == (
        f"unauthorized: API server {apiserver.url} rejected the credentials (list nodes) — "
        "check the token or client certificate of the kubeconfig, or the pod's service "
        "account token"
    )
    assert (failure.kind, failure.retryable) == ("unauthorized", True)


def test_connection_refused(tmp_path: Path, refused_port: int) -> None:
    port = refused_port
    server = LoopbackAPIServer(port=port)  # not started: only its kubeconfig is used
    conn = connect(str(server.kubeconfig(tmp_path / "kubeconfig")), environ={})
    failure = _failure_of(lambda: k8s.CoreV1Api(conn.client).list_node())
    assert failure.message == (
        f"API server http://127.0.0.1:{port} unreachable: connection refused (list nodes)"
    )
    assert (failure.kind, failure.retryable) == ("unreachable", True)
    conn.close()


def test_server_errors_throttling_and_the_rest(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    core = k8s.CoreV1Api(installed.client)
    apiserver.fail_next(1, code=500, verb="list", resource="nodes")
    failure = _failure_of(core.list_node)
    assert failure.message == (
        f"API server {apiserver.url} failed (list nodes): 500 InternalError: "
        "Internal error occurred: injected failure"
    )
    assert (failure.kind, failure.retryable) == ("server", True)

    apiserver.throttle_next(1, retry_after=3, verb="list", resource="nodes")
    failure = _failure_of(core.list_node)
    assert failure.message == (
        f"API server {apiserver.url} is throttling requests (429 TooManyRequests) (list nodes)"
    )
    assert (failure.kind, failure.retry_after, failure.retryable) == ("throttled", 3.0, True)

    failure = _failure_of(lambda: core.read_namespaced_pod("missing", "default"))
    assert failure.message == 'get pods failed: 404 NotFound: pods "missing" not found'
    assert (failure.kind, failure.retryable) == ("not-found", False)


def test_describe_without_a_known_request() -> None:
    error = ApiException(status=503, reason="Service Unavailable")
    info = RequestInfo("list", "nodes")
    assert describe(error, info=info, server="https://k8s:6443") == (
        "API server https://k8s:6443 failed (list nodes): 503 Service Unavailable: "
        "Service Unavailable"
    )


# --- trying again --------------------------------------------------------------------------


def test_backoff_is_exponential_capped_and_jittered() -> None:
    plain = Backoff(initial=1, factor=2, cap=10, jitter=0).delays()
    assert [next(plain) for _ in range(6)] == [1, 2, 4, 8, 10, 10]
    jittered = Backoff(initial=1, factor=2, cap=10, jitter=0.5).delays(random.Random(7))
    delays = [next(jittered) for _ in range(8)]
    ceilings = [1, 2, 4, 8, 10, 10, 10, 10]
    assert all(c * 0.5 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    assert len({round(d, 6) for d in delays[4:]}) > 1  # at the cap the delays still differ


def test_retry_logs_each_failure_and_backs_off(tmp_path: Path, refused_port: int) -> None:
    port = refused_port
    conn = connect(str(LoopbackAPIServer(port=port).kubeconfig(tmp_path / "kc")), environ={})
    core = k8s.CoreV1Api(conn.client)
    stop = RecordingStop(stop_after=3)
    with structlog.testing.capture_logs() as logs, pytest.raises(Stopped):
        retry(core.list_node, stop=stop, backoff=Backoff(initial=2, jitter=0))
    assert stop.waits == [2, 4, 8]
    assert [entry["event"] for entry in logs] == [
        f"API server http://127.0.0.1:{port} unreachable: connection refused (list nodes)"
        f" — retrying in {n}s"
        for n in (2, 4, 8)
    ]
    assert {(e["kind"], e["verb"], e["resource"], e["log_level"]) for e in logs} == {
        ("unreachable", "list", "nodes", "warning")
    }
    conn.close()


def test_retry_succeeds_after_server_errors(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    apiserver.fail_next(2, code=503, verb="list", resource="nodes")
    stop = RecordingStop()
    core = k8s.CoreV1Api(installed.client)
    with structlog.testing.capture_logs() as logs:
        nodes = retry(core.list_node, stop=stop, backoff=Backoff(initial=1, jitter=0))
    assert nodes.items == []
    assert stop.waits == [1, 2]
    assert [e["status"] for e in logs] == [503, 503]
    assert apiserver.count(verb="list", resource="nodes") == 3


def test_retry_honours_retry_after(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    apiserver.throttle_next(1, retry_after=3, verb="list", resource="nodes")
    stop = RecordingStop()
    core = k8s.CoreV1Api(installed.client)
    with structlog.testing.capture_logs() as logs:
        retry(core.list_node, stop=stop, backoff=Backoff(initial=0.5, jitter=0))
    assert stop.waits == [3.0]
    assert logs[0]["event"].endswith(" — retrying in 3s")


def test_retry_raises_what_time_cannot_fix_at_once(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    core = k8s.CoreV1Api(installed.client)
    stop = RecordingStop()
    with structlog.testing.capture_logs() as logs, pytest.raises(ApiException) as error:
        retry(lambda: core.read_namespaced_pod("missing", "default"), stop=stop)
    assert error.value.status == 404
    assert stop.waits == [] and logs == []


def test_retry_gives_up_after_the_attempts(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    apiserver.fail_always(code=500, verb="list", resource="nodes")
    core = k8s.CoreV1Api(installed.client)
    stop = RecordingStop()
    with structlog.testing.capture_logs(), pytest.raises(ApiException) as error:
        retry(core.list_node, stop=stop, attempts=3, backoff=Backoff(initial=1, jitter=0))
    assert error.value.status == 500
    assert stop.waits == [1, 2]
    assert apiserver.count(verb="list", resource="nodes") == 3


def test_retry_treats_rbac_as_fixable(
    apiserver: LoopbackAPIServer, installed: connection.Connection
) -> None:
    # An operator fixes the ClusterRole while the scheduler waits; it then carries on.
    apiserver.forbid(verb="list", resource="nodes")
    core = k8s.CoreV1Api(installed.client)

    class FixingStop(RecordingStop):
        def wait(self, timeout: float | None = None) -> bool:
            apiserver.clear_faults()
            return super().wait(timeout)

    with structlog.testing.capture_logs() as logs:
        retry(core.list_node, stop=FixingStop(), backoff=Backoff(initial=1, jitter=0))
    assert [e["kind"] for e in logs] == ["forbidden"]
    assert logs[0]["event"].endswith(
        "— grant it in the ClusterRole (see deploy/) — retrying in 1.0s"
    )
