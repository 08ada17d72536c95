"""The handler's shortcuts (request parsing, the response head, the Date) change no byte."""

from __future__ import annotations

import email.utils
import io
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from loopback.http import Handler, http_date


def _handler(cls: type[BaseHTTPRequestHandler], request: bytes) -> Any:
    """A handler over in-memory streams, its request line read as ``handle`` reads it."""
    handler = cls.__new__(cls)
    handler.rfile = io.BytesIO(request)
    handler.wfile = io.BytesIO()
    handler.raw_requestline = handler.rfile.readline(65537)
    handler.request_version = "HTTP/1.1"
    handler.close_connection = True
    return handler


class _Standard(Handler):
    """The handler with the standard library's request parsing and response head."""

    def parse_request(self) -> bool:
        return BaseHTTPRequestHandler.parse_request(self)

    def _head(self, code: int, content_type: str, extra: dict[str, str]) -> None:
        self.send_response_only(code)
        self.send_header("Audit-Id", "<uid>")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", content_type)
        for name, value in extra.items():
            if name != "Retry-After":
                self.send_header(name, value)
        self.send_header("X-Kubernetes-Pf-Flowschema-Uid", "86bc4fab-0502-4af2-ac53-71a939a3d75e")
        self.send_header(
            "X-Kubernetes-Pf-Prioritylevel-Uid", "d2a7dde7-a2e4-4ab7-b69c-2cfde4cfe2c2"
        )
        if "Retry-After" in extra:
            self.send_header("Retry-After", extra["Retry-After"])
        self.send_header("Date", self.date_time_string())
        if self.close_connection:
            self.send_header("Connection", "close")


def _masked(data: bytes) -> bytes:
    data = re.sub(rb"Audit-Id: [0-9a-f-]+", b"Audit-Id: <uid>", data)
    return re.sub(rb"Date: [^\r]+", b"Date: <date>", data)


REQUESTS = [
    b"GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
    b"POST /api/v1/namespaces/default/pods/p/binding HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
    b"GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n",
    b"GET //evil/path HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"GET / HTTP/2.0\r\n\r\n",
    b"GET / HTTP/x\r\n\r\n",
    b"GET /\r\n",
    b"GET / HTTP/1.1 extra\r\n\r\n",
    b"GET /\xa0x HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"A: 1\r\n" * 101 + b"\r\n",
    b"GET / HTTP/1.1\r\nA: " + b"x" * 65537 + b"\r\n\r\n",
]


@pytest.mark.parametrize(
    "request_bytes",
    REQUESTS,
    ids=[
        "watch",
        "binding",
        "connection-close",
        "keep-alive",
        "expect-continue",
        "folded-header",
        "double-slash-path",
        "http-1.0-keep-alive",
        "http-2.0",
        "bad-version",
        "no-version",
        "extra-words",
        "non-ascii-path",
        "too-many-headers",
        "header-too-long",
    ],
)
def test_requests_parse_as_the_standard_handler_parses_them(request_bytes: bytes) -> None:
    ours, theirs = _handler(Handler, request_bytes), _handler(_Standard, request_bytes)
    assert ours.parse_request() == theirs.parse_request()
    seen = ("command", "path", "request_version", "requestline", "close_connection")
    assert [getattr(ours, a, None) for a in seen] == [getattr(theirs, a, None) for a in seen]
    got = getattr(ours, "headers", None)
    want = getattr(theirs, "headers", None)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert list(got.items()) == list(want.items())
        assert got.get("connection") == want.get("connection")
    assert _masked(ours.wfile.getvalue()) == _masked(theirs.wfile.getvalue())
    assert ours.rfile.read() == theirs.rfile.read()  # the body is left where it was


@pytest.mark.parametrize(
    ("code", "content_type", "extra", "version", "closing"),
    [
        (200, "application/json", {}, "HTTP/1.1", False),
        (201, "application/json", {}, "HTTP/1.1", True),
        (429, "application/json", {"Retry-After": "1"}, "HTTP/1.1", False),
        (409, "application/json", {"Warning": "299 - x", "Retry-After": "3"}, "HTTP/1.1", False),
        (200, "text/plain; charset=utf-8", {"Connection": "close"}, "HTTP/1.1", False),
        (599, "application/json", {}, "HTTP/1.1", False),  # no reason phrase known
        (200, "application/json", {"Connection": "close"}, "HTTP/0.9", False),
    ],
    ids=[
        "200-application/json-empty",
        "201-application/json-empty",
        "429-application/json-Retry-After=1",
        "409-application/json-Warning=299 - x Retry-After=3",
        "200-text/plain; charset=utf-8-Connection=close",
        "599-application/json-empty",
        "200-application/json-Connection=close",
    ],
)
def test_response_head_is_the_standard_one(
    code: int, content_type: str, extra: dict[str, str], version: str, closing: bool
) -> None:
    ours, theirs = _handler(Handler, b""), _handler(_Standard, b"")
    for handler in (ours, theirs):
        handler.request_version = version
        handler.close_connection = closing
        handler._head(code, content_type, extra)
        handler.end_headers()
    assert _masked(ours.wfile.getvalue()) == _masked(theirs.wfile.getvalue())
    assert ours.close_connection == theirs.close_connection


@pytest.mark.parametrize("now", [0.0, 1.5, 1_700_000_000.999, 1_700_000_001.0, 4_102_444_799.5])
def test_http_date_is_the_standard_one(now: float) -> None:
    assert http_date(now) == email.utils.formatdate(now, usegmt=True)
    assert http_date(now) == http_date(now)  # the cached text
