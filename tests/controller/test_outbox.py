"""The outbox: writes answered where it is pumped, on non-blocking kept-alive connections
dialed as the client dials them, no more of them than asked, the client's rate limit as due
times, and failures handed over as urllib3 raises them."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from loopback import LoopbackAPIServer
from policyengine.controller.connection import TokenBucket, classify, install
from policyengine.controller.keepalive import WireResponse
from policyengine.controller.outbox import Answer, Outbox
from policyengine.controller.rawapi import RawAPI
from tests.controller.builders import pod_obj, scheduled_event
from tests.controller.conftest import OneShot, tls_client


class _Writer:
    """A RawAPI whose writes go through an outbox this thread pumps."""

    def __init__(self, client: k8s.ApiClient, **options: Any) -> None:
        self.outbox = Outbox(client, **options)
        self.outbox.own()
        self.api = RawAPI(client, outbox=self.outbox)
        self.answers: list[tuple[int, Answer]] = []
        self.threads: set[int] = set()

    def post(self, i: int, timeout: float = 10.0) -> None:
        def then(answer: Answer) -> None:
            self.threads.add(threading.get_ident())
            self.answers.append((i, answer))

        self.api.create_namespaced_event(
            "default", scheduled_event(i), _request_timeout=timeout, _then=then
        )

    def wait(self, count: int, timeout: float = 10.0) -> list[Answer]:
        assert self.outbox.drain(timeout, until=lambda: len(self.answers) >= count)
        return [answer for _, answer in sorted(self.answers, key=lambda a: a[0])]


def test_answers_reach_their_callbacks_where_the_outbox_is_pumped(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    writer = _Writer(kube_api_client)
    for i in range(3):
        writer.post(i)
    assert writer.answers == []  # nothing happens until someone pumps
    answers = writer.wait(3)
    assert [a.status for a in answers if isinstance(a, WireResponse)] == [201, 201, 201]
    assert writer.threads == {threading.get_ident()}
    assert not writer.outbox.busy()
    assert sorted(e["metadata"]["name"] for e in apiserver.list("events", "default")) == [
        "p.0",
        "p.1",
        "p.2",
    ]


def test_statuses_become_api_exceptions(apiserver: LoopbackAPIServer, kube_api_client: Any) -> None:
    apiserver.create(pod_obj("p"))
    apiserver.fail_next(1, code=429, resource="events", retry_after=2)
    writer = _Writer(kube_api_client)
    writer.post(1)
    (answer,) = writer.wait(1)
    assert isinstance(answer, ApiException)
    assert answer.status == 429
    assert answer.headers is not None and answer.headers["Retry-After"] == "2"


def test_a_connection_closed_while_idle_is_replaced(one_shot: str) -> None:
    writer = _Writer(k8s.ApiClient(k8s.Configuration(host=one_shot)))
    writer.post(1)
    writer.wait(1)
    threading.Event().wait(0.2)  # let the server's close arrive
    writer.post(2)
    answers = writer.wait(2)
    assert [getattr(a, "status", a) for a in answers] == [201, 201]


class _Counting(OneShot):
    """Keeps connections open and counts them; answers after ``delay`` seconds, or not at all
    (closing the connection) when ``cut``."""

    connections = 0
    delay = 0.0
    cut = False
    lock = threading.Lock()

    def setup(self) -> None:
        super().setup()
        with _Counting.lock:
            type(self).connections += 1

    def do_POST(self) -> None:
        threading.Event().wait(self.delay)
        if self.cut:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.close_connection = True
            return
        super().do_POST()
        self.close_connection = False


@pytest.fixture
def counting() -> Iterator[tuple[str, type[_Counting]]]:
    handler = type("Handler", (_Counting,), {"connections": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("limit", "writes"), [(1, 5), (3, 20), (16, 4)])
def test_connections_are_added_only_while_writes_wait_and_never_beyond_the_limit(
    counting: tuple[str, type[_Counting]], limit: int, writes: int
) -> None:
    url, handler = counting
    handler.delay = 0.02  # so that writes submitted together wait for each other
    writer = _Writer(k8s.ApiClient(k8s.Configuration(host=url)), connections=limit)
    for i in range(writes):
        writer.post(i)
    answers = writer.wait(writes)
    assert [getattr(a, "status", a) for a in answers] == [201] * writes
    assert 1 <= handler.connections <= min(limit, writes)


@pytest.mark.parametrize(
    ("case", "reason", "message"),
    [
        ("refused", urllib3.exceptions.NewConnectionError, "unreachable: connection refused"),
        ("slow", urllib3.exceptions.ReadTimeoutError, "did not answer in time"),
        ("cut", urllib3.exceptions.ProtocolError, "closed the connection"),
    ],
    ids=["refused", "slow", "cut"],
)
def test_failures_reach_the_callback_as_urllib3_raises_them(
    counting: tuple[str, type[_Counting]],
    refused_port: int,
    case: str,
    reason: type,
    message: str,
) -> None:
    url, handler = counting
    if case == "refused":
        url = f"http://127.0.0.1:{refused_port}"
    handler.delay = 1.0 if case == "slow" else 0.0
    handler.cut = case == "cut"
    writer = _Writer(k8s.ApiClient(k8s.Configuration(host=url)))
    writer.post(1, timeout=0.3)
    (answer,) = writer.wait(1)
    assert isinstance(answer, urllib3.exceptions.MaxRetryError)
    assert isinstance(answer.reason, reason)
    assert message in classify(answer).message
    if case != "refused":
        handler.delay, handler.cut = 0.0, False
        writer.post(2)
        assert getattr(writer.wait(2)[1], "status", None) == 201  # on a fresh connection


def test_the_rate_limit_holds_a_write_until_its_token_is_due(
    counting: tuple[str, type[_Counting]],
) -> None:
    url, _ = counting
    now = [100.0]
    client = k8s.ApiClient(k8s.Configuration(host=url))
    install(client, TokenBucket(1.0, 1, clock=lambda: now[0]))
    writer = _Writer(client, clock=lambda: now[0])
    writer.post(0)
    writer.post(1)
    writer.wait(1)
    for _ in range(20):
        writer.outbox.pump(0.01)
    assert [i for i, _ in writer.answers] == [0]  # the second token is due a second later
    now[0] += 1.0
    writer.wait(2)
    assert [i for i, _ in writer.answers] == [0, 1]


def test_writes_after_close_are_answered_at_once(kube_api_client: Any) -> None:
    writer = _Writer(kube_api_client)
    writer.outbox.close()
    writer.post(1)
    ((_, answer),) = writer.answers
    assert isinstance(answer, ConnectionError)
    assert not writer.outbox.busy()


@pytest.mark.parametrize("trusted", [True, False])
def test_tls_is_the_clients(tls_server: tuple[str, Path], trusted: bool) -> None:
    writer = _Writer(tls_client(tls_server, trusted))
    writer.post(0)
    writer.post(1)
    answers = writer.wait(2)
    if trusted:
        assert [getattr(a, "status", a) for a in answers] == [201, 201]
        return
    for answer in answers:
        assert isinstance(answer, urllib3.exceptions.MaxRetryError)
        assert isinstance(answer.reason, urllib3.exceptions.SSLError)
        assert "TLS error" in classify(answer).message


def test_an_outbox_of_its_own_pumps_on_its_thread(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    outbox = Outbox(kube_api_client)
    outbox.start()
    api = RawAPI(kube_api_client, outbox=outbox)
    answered = threading.Event()
    seen: list[Answer] = []

    def then(answer: Answer) -> None:
        seen.append(answer)
        answered.set()

    api.create_namespaced_event("default", scheduled_event(7), _then=then)
    assert answered.wait(10)
    outbox.close()
    assert [getattr(a, "status", a) for a in seen] == [201]


@pytest.mark.parametrize(("fault", "status"), [(None, 201), (500, 500)], ids=["ok", "500"])
def test_without_an_outbox_a_write_is_answered_before_the_call_returns(
    apiserver: LoopbackAPIServer, kube_api_client: Any, fault: int | None, status: int
) -> None:
    # A RawAPI without an outbox (a client behind a proxy keeps urllib3's path) still
    # answers a write given a callback, at once.
    if fault is not None:
        apiserver.fail_next(1, code=fault, resource="events")
    seen: list[Answer] = []
    RawAPI(kube_api_client).create_namespaced_event(
        "default", scheduled_event(3), _then=seen.append
    )
    (answer,) = seen
    assert isinstance(answer, ApiException if fault else WireResponse)
    assert answer.status == status
