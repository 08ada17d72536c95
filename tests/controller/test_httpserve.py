"""The shared HTTP server of ``/metrics``/``/healthz`` and the extender: addresses and URLs."""

from __future__ import annotations

import socket
import urllib.request
from http.server import BaseHTTPRequestHandler

import pytest

from policyengine.controller.httpserve import BackgroundHTTPServer, StateServer, parse_address


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0:10251", ("0.0.0.0", 10251)),
        (":8080", ("0.0.0.0", 8080)),
        ("[::1]:9000", ("::1", 9000)),
        ("[::]:9000", ("::", 9000)),
        ("localhost:0", ("localhost", 0)),
    ],
    ids=["ipv4", "all interfaces", "ipv6", "ipv6 all interfaces", "name"],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["10251", "host:", "host:port", "host:70000"])
def test_parse_address_rejects(text: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_address(text)
    assert str(error.value) == f"{text!r} is not HOST:PORT"


class _Echo(BaseHTTPRequestHandler):
    server: StateServer[str]

    def do_GET(self) -> None:
        payload = self.server.state.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize(
    ("address", "url_host"),
    [
        (":0", "127.0.0.1"),
        ("127.0.0.1:0", "127.0.0.1"),
        pytest.param(
            "[::1]:0",
            "[::1]",
            marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback here"),
            id="ipv6 loopback",
        ),
        pytest.param(
            "[::]:0",
            "[::1]",
            marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback here"),
            id="ipv6 all interfaces",
        ),
    ],
)
def test_the_url_reaches_the_server_it_names(address: str, url_host: str) -> None:
    server = BackgroundHTTPServer(address, _Echo, "test-http", "hello")
    try:
        port = server.address[1]
        assert port > 0
        assert server.url == f"http://{url_host}:{port}"
        with urllib.request.urlopen(server.url, timeout=5) as answer:
            assert answer.read() == b"hello"
    finally:
        server.close()
