"""The kept-alive write path: one connection per thread, replaced when the server closed it,
the client's rate limit and credentials applied, failures raised as urllib3 raises them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from loopback import LoopbackAPIServer
from policyengine.controller.connection import classify, connect, last_request
from policyengine.controller.keepalive import usable
from policyengine.controller.rawapi import AUTH_REUSE, RawAPI
from tests.controller.builders import pod_obj, scheduled_event
from tests.controller.conftest import tls_client


def _post(api: RawAPI, i: int, timeout: float = 10) -> Any:
    response = api.create_namespaced_event(
        "default", scheduled_event(i), _preload_content=False, _request_timeout=timeout
    )
    _ = response.data
    response.release_conn()
    return response


def test_writes_of_a_thread_share_one_connection(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    api = RawAPI(kube_api_client)
    sockets = []
    for i in range(3):
        assert _post(api, i).status == 201
        sockets.append(api._sender._local.conn.sock)  # type: ignore[union-attr]
    assert sockets[0] is not None and sockets[0] is sockets[1] is sockets[2]
    other: list[Any] = []
    thread = threading.Thread(
        target=lambda: other.append((_post(api, 9), api._sender._local.conn.sock))  # type: ignore[union-attr]
    )
    thread.start()
    thread.join()
    assert other[0][0].status == 201 and other[0][1] is not sockets[0]
    assert [e["metadata"]["name"] for e in apiserver.events()] == ["p.0", "p.1", "p.2", "p.9"]


@pytest.mark.parametrize(
    "timeouts",
    [[10, 10, 10], [10, 30, 30, 10], [30, (5, 30), 0.5, 0.5], [10, None, None, 10]],
    ids=["10,10,10", "10,30,30,10", "30,(5,30),0.5,0.5", "10,None,None,10"],
)
def test_each_write_reads_with_its_own_timeout(
    apiserver: LoopbackAPIServer, kube_api_client: Any, timeouts: list[Any]
) -> None:
    # The socket's timeout is set only when it changes; it is always the write's own.
    api = RawAPI(kube_api_client)
    for i, timeout in enumerate(timeouts):
        assert _post(api, i, timeout=timeout).status == 201
        seconds = max(timeout) if isinstance(timeout, tuple) else timeout
        assert api._sender._local.conn.sock.gettimeout() == seconds  # type: ignore[union-attr]


def test_a_connection_closed_while_idle_is_replaced(one_shot: str) -> None:
    api = RawAPI(k8s.ApiClient(k8s.Configuration(host=one_shot)))
    first = _post(api, 1)
    threading.Event().wait(0.2)  # let the server's close arrive
    second = _post(api, 2)
    assert (first.status, second.status) == (201, 201)


@pytest.mark.parametrize(
    ("case", "reason", "message"),
    [
        ("refused", urllib3.exceptions.NewConnectionError, "unreachable: connection refused"),
        ("slow", urllib3.exceptions.ReadTimeoutError, "did not answer in time"),
    ],
    ids=["refused", "slow"],
)
def test_failures_are_raised_as_urllib3_raises_them(
    apiserver: LoopbackAPIServer, refused_port: int, case: str, reason: type, message: str
) -> None:
    if case == "refused":
        api = RawAPI(k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{refused_port}")))
    else:
        api = RawAPI(apiserver.api_client())
        apiserver.delay(1.0, times=1, resource="events")
    with pytest.raises(urllib3.exceptions.MaxRetryError) as info:
        _post(api, 1, timeout=0.3)
    assert isinstance(info.value.reason, reason)
    assert isinstance(info.value, urllib3.exceptions.HTTPError)
    assert message in classify(info.value).message
    if case == "slow":
        assert _post(api, 2).status == 201  # the next write gets a fresh connection


def test_statuses_become_api_exceptions(apiserver: LoopbackAPIServer, kube_api_client: Any) -> None:
    apiserver.create(pod_obj("p"))
    apiserver.fail_next(1, code=429, resource="events", retry_after=2)
    with pytest.raises(ApiException) as info:
        _post(RawAPI(kube_api_client), 1)
    assert (info.value.status, info.value.headers.get("Retry-After")) == (429, "2")


def test_writes_pass_the_clients_rate_limit_and_note_the_request(
    apiserver: LoopbackAPIServer, tmp_path: Path
) -> None:
    connection = connect(str(apiserver.kubeconfig(tmp_path / "kubeconfig")), qps=100, burst=5)
    assert connection.limiter is not None
    before = connection.limiter.requests
    _post(RawAPI(connection.client), 1)
    assert connection.limiter.requests == before + 1
    info = last_request()
    assert info is not None and info.call == "create events"


def test_credentials_are_asked_again_after_a_second(apiserver: LoopbackAPIServer) -> None:
    cfg = apiserver.client_configuration()
    asked: list[int] = []

    def refresh(c: Any) -> None:  # a token source handing out a new token on every ask
        asked.append(1)
        c.api_key["authorization"] = f"token-{len(asked)}"

    cfg.refresh_api_key_hook = refresh
    now = [0.0]
    api = RawAPI(k8s.ApiClient(cfg), clock=lambda: now[0])
    for at in (0.0, AUTH_REUSE / 2, AUTH_REUSE, AUTH_REUSE * 1.5):
        now[0] = at
        _post(api, int(at * 100))
    sent = [r.headers["authorization"] for r in apiserver.requests(resource="events")]
    assert sent == ["Bearer token-1", "Bearer token-1", "Bearer token-2", "Bearer token-2"]


@pytest.mark.parametrize(
    ("host", "proxy", "fast"),
    [
        ("http://127.0.0.1:1", None, True),
        ("https://api.example:6443", None, True),
        ("https://api.example:6443", "http://proxy:3128", False),
    ],
)
def test_proxied_clients_keep_urllib3(host: str, proxy: str | None, fast: bool) -> None:
    cfg = k8s.Configuration(host=host)
    cfg.proxy = proxy
    client = k8s.ApiClient(cfg)
    assert usable(client) is fast
    assert (RawAPI(client)._sender is not None) is fast


@pytest.mark.parametrize("trusted", [True, False])
def test_tls_is_the_clients(tls_server: tuple[str, Path], trusted: bool) -> None:
    api = RawAPI(tls_client(tls_server, trusted))
    if trusted:
        assert [_post(api, i).status for i in range(2)] == [201, 201]
        return
    with pytest.raises(urllib3.exceptions.MaxRetryError) as info:
        _post(api, 1)
    assert isinstance(info.value.reason, urllib3.exceptions.SSLError)
    assert "TLS error" in classify(info.value).message
