"""``http1`` writes the bytes ``http.client`` writes and reads a response as it reads it.

Each request is built twice: by ``http.client.HTTPConnection.request`` on a urllib3
connection whose socket records what is sent (what ``keepalive`` used to call), and by
``http1.request_bytes``; the bytes, or the exception, must be equal. Each response is read
twice from the same bytes, delivered in the same pieces: by ``http.client.HTTPResponse``
(``begin()`` then ``read()``) and by ``http1.read_response``; status, reason, version,
whether the connection must close, every header and the body, or the exception, must be
equal. Hypothesis generates both, malformed ones included. ``http1.parse_response`` (the
outbox's reading of what a non-blocking connection received so far) answers what
``read_response`` answers once everything is in, and never takes back an answer when more
bytes arrive.
"""

from __future__ import annotations

import http.client
import io
import itertools
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st
from urllib3.util import SKIP_HEADER

from policyengine.controller.http1 import (
    _quick_head,
    _Reader,
    host_header,
    parse_response,
    read_response,
    request_bytes,
)


class _Sent:
    """A connected socket that records what is sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.sent.append(bytes(data))


class _Pieces(io.RawIOBase):
    """A socket answering ``pieces`` one per read, then EOF; also ``makefile`` for
    ``http.client.HTTPResponse``."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.pieces:
            return 0
        piece = self.pieces.pop(0)
        size = min(len(piece), len(buffer))
        buffer[:size] = piece[:size]
        if size < len(piece):
            self.pieces.insert(0, piece[size:])
        return size

    def recv(self, size: int) -> bytes:
        buffer = bytearray(size)
        return bytes(buffer[: self.readinto(buffer)])

    def makefile(self, mode: str) -> io.BufferedReader:
        assert mode == "rb"
        return io.BufferedReader(self)


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", type(exc), exc.args)


def _conn(host: str, port: int | None, https: bool) -> Any:
    cls = urllib3.connection.HTTPSConnection if https else urllib3.connection.HTTPConnection
    return cls(host, port)


def _via_http_client(conn: Any, method: str, target: str, headers: Any, body: Any) -> bytes:
    sock = _Sent()
    conn.sock = sock
    http.client.HTTPConnection.request(conn, method, target, body=body, headers=headers)
    return b"".join(sock.sent)


def _check_request(
    host: str, port: int | None, https: bool, method: str, target: str, headers: Any, body: Any
) -> None:
    conn = _conn(host, port, https)
    expected = _outcome(lambda: _via_http_client(conn, method, target, headers, body))
    got = _outcome(lambda: request_bytes(method, target, host_header(conn), headers, body))
    assert got == expected


HOSTS = [
    ("127.0.0.1", 6443, False),
    ("127.0.0.1", 80, False),
    ("127.0.0.1", None, False),
    ("api.example", 443, True),
    ("api.example", 6443, True),
    ("::1", 8080, False),
    ("fe80::1%eth0", 8080, False),
    ("bücher.example", 8080, False),
]

TYPICAL = {
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": "OpenAPI-Generator/37.0.2/python",
    "authorization": "Bearer abc.def",
}


@pytest.mark.parametrize(("host", "port", "https"), HOSTS)
@pytest.mark.parametrize(
    ("method", "target", "headers", "body"),
    [
        ("POST", "/api/v1/namespaces/d/pods/p/binding", TYPICAL, b'{"kind":"Binding"}'),
        ("PATCH", "/api/v1/namespaces/d/pods/p", TYPICAL, b'{"metadata":{}}'),
        ("DELETE", "/api/v1/namespaces/d/pods/p", {"Accept": "application/json"}, None),
        ("POST", "/x", {"Accept": "application/json"}, None),
        ("POST", "/x", {"Accept": "application/json"}, b""),
        ("GET", "", {}, None),
        ("POST", "/x", {"Host": "other:1", "Accept-Encoding": "gzip"}, b"{}"),
        ("POST", "/x", {"content-length": "5"}, b"12345"),
        ("POST", "/x", {"Transfer-Encoding": "chunked"}, b"12345"),
        ("POST", "/x", {"User-Agent": SKIP_HEADER}, b"{}"),
        ("POST", "/x", {"Accept": SKIP_HEADER}, b"{}"),
        ("POST", "/x", {"X-Number": 7}, b"{}"),
        ("POST", "/x", {"X-Latin": "caf\xe9"}, b"{}"),
        ("POST", "/x", {"X-Wide": "\u2603"}, b"{}"),
        ("POST", "/x", {"X-Folded": "a\r\n b"}, b"{}"),
        ("POST", "/x", {"X-Split": "a\r\nb"}, b"{}"),
        ("POST", "/x", {"Bad Name": "a"}, b"{}"),
        ("POST", "/x", {":bad": "a"}, b"{}"),
        ("POST", "/a b", TYPICAL, b"{}"),
        ("POST", "/a\x7fb", TYPICAL, b"{}"),
        ("POS T", "/x", TYPICAL, b"{}"),
        ("GE\x00T", "/x", TYPICAL, b"{}"),
        ("post", "/x", TYPICAL, None),
        ("POST", "/caf\xe9", TYPICAL, b"{}"),
    ],
    ids=[
        "binding",
        "patch",
        "delete-no-body",
        "post-no-body",
        "post-empty-body",
        "get-empty-target",
        "own-host-and-encoding",
        "lowercase-content-length",
        "chunked",
        "skip-user-agent",
        "skip-accept",
        "number-value",
        "latin-1-value",
        "wide-value",
        "folded-value",
        "split-value",
        "space-in-name",
        "colon-name",
        "space-in-target",
        "del-in-target",
        "space-in-method",
        "nul-in-method",
        "lowercase-method",
        "latin-1-target",
    ],
)
def test_requests_are_written_as_http_client_writes_them(
    host: str, port: int | None, https: bool, method: str, target: str, headers: Any, body: Any
) -> None:
    _check_request(host, port, https, method, target, headers, body)


_token = st.text(st.sampled_from("aZ-_.!~:;, \t\x00\x7fé\u2603"), max_size=6)
_value = st.one_of(
    st.text(st.sampled_from("ab /=;,\r\n\t \x00é\u2603"), max_size=8),
    st.integers(0, 10**6),
    st.just(SKIP_HEADER),
)
_names = st.one_of(
    st.sampled_from(
        [
            "Host",
            "Accept-Encoding",
            "Content-Length",
            "Transfer-Encoding",
            "User-Agent",
            "Accept",
            "Content-Type",
            "Authorization",
            "X-Custom",
            "cookie",
        ]
    ),
    _token,
)


@settings(max_examples=300, deadline=None)
@given(
    where=st.sampled_from(HOSTS),
    method=st.one_of(st.sampled_from(["GET", "POST", "PATCH", "PUT", "DELETE"]), _token),
    target=st.text(st.sampled_from("/azAZ09%?=&- \x00\x7fé"), max_size=12),
    headers=st.dictionaries(_names, _value, max_size=5),
    body=st.one_of(st.none(), st.binary(max_size=40)),
)
def test_any_request_is_written_as_http_client_writes_it(
    where: tuple[str, int | None, bool],
    method: str,
    target: str,
    headers: dict[str, Any],
    body: bytes | None,
) -> None:
    _check_request(*where, method, target, headers, body)


def _via_http_response(pieces: list[bytes], method: str) -> Any:
    response = http.client.HTTPResponse(_Pieces(pieces), method=method)  # type: ignore[arg-type]
    response.begin()
    data = response.read()
    return (
        response.status,
        response.reason,
        response.version,
        response.will_close,
        response.headers.items(),
        data,
    )


def _via_http1(pieces: list[bytes], method: str) -> Any:
    answer = read_response(_Pieces(pieces), method)
    return (
        answer.status,
        answer.reason,
        answer.version,
        answer.will_close,
        answer.headers.items(),
        answer.data,
    )


def _check_response(raw: bytes, cuts: list[int], method: str = "POST") -> None:
    points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
    pieces = [raw[a:b] for a, b in itertools.pairwise(points) if b > a]
    expected = _outcome(lambda: _via_http_response(pieces, method))
    got = _outcome(lambda: _via_http1(pieces, method))
    assert got == expected


OK = b'{"kind":"Status","status":"Success","code":201}'


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(OK), OK),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world"
        b"\r\n0\r\nTrailer: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nto the end",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nto the end",
        b"HTTP/1.1 200 OK\r\n\r\nno length: to the end",
        b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nokextra",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nProxy-Connection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\nX: 1\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\n: empty name\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 5\r\n\r\nok",
        b"HTTP/1.1 200 OK\nContent-Length:2\n\nok",
        b"HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nX-Trailing: v \t\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 2000 Big\r\n\r\n",
        b"HTTP/1.1 abc\r\n\r\n",
        b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        b"garbage",
        b"",
        b"HTTP/1.1 200 " + b"x" * 70000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
    ],
    ids=[
        "created",
        "chunked-with-extension-and-trailer",
        "chunked-cut-short",
        "chunk-size-not-hex",
        "chunked-no-last-blank-line",
        "body-cut-short",
        "negative-length",
        "length-not-a-number",
        "no-length",
        "close-with-extra-bytes",
        "http-1.0",
        "http-1.0-keep-alive",
        "http-1.0-keep-alive-timeout",
        "http-1.0-proxy-keep-alive",
        "no-content-with-length",
        "continue-then-conflict",
        "too-many-requests",
        "no-reason-phrase",
        "folded-header",
        "header-without-colon",
        "header-without-name",
        "two-lengths",
        "bare-lf",
        "latin-1-value",
        "trailing-blanks",
        "no-blank-line",
        "head-cut-short",
        "four-digit-status",
        "status-not-a-number",
        "http-2",
        "no-status",
        "icy",
        "garbage",
        "empty",
        "status-line-too-long",
        "header-too-long",
        "too-many-headers",
    ],
)
@pytest.mark.parametrize(
    "cuts",
    [[], [1, 2, 3, 17, 18, 40, 41, 60], list(range(0, 300, 7))],
    ids=["empty", "1,2,3,17,18,40,41,60", "list(range(0,300,7))"],
)
def test_responses_are_read_as_http_client_reads_them(raw: bytes, cuts: list[int]) -> None:
    _check_response(raw, cuts)


def test_a_head_response_has_no_body() -> None:
    _check_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", [], method="HEAD")


_header_line = st.one_of(
    st.sampled_from(
        [
            b"Content-Length: 2",
            b"Content-Length: 0",
            b"Content-Length: 99",
            b"Content-Length: z",
            b"Transfer-Encoding: chunked",
            b"Transfer-Encoding: gzip",
            b"Connection: close",
            b"Connection: keep-alive",
            b"Keep-Alive: 1",
            b" folded",
            b"\tfolded",
            b"nocolon",
            b"Content-Type: application/json",
            b"X: \xe9",
            b": x",
            b"X:y",
        ]
    ),
    st.binary(max_size=10).filter(lambda b: b"\n" not in b),
)
_body = st.one_of(
    st.sampled_from(
        [
            b"ok",
            b"",
            b"2\r\nok\r\n0\r\n\r\n",
            b"2\r\nok\r\n",
            b"z\r\n",
            b"2;x\r\nok\r\n0\r\nT: 1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        ]
    ),
    st.binary(max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(
    status=st.sampled_from(
        [
            b"HTTP/1.1 201 Created",
            b"HTTP/1.0 200 OK",
            b"HTTP/1.1 100 Continue",
            b"HTTP/1.1 204",
            b"HTTP/1.1 304 Not Modified",
            b"HTTP/1.1 101 Switching",
            b"HTTP/1.2 200 OK",
            b"HTTP/3 200 OK",
            b"HTTP/1.1 99 Low",
            b"HTTP/1.1 x",
            b"HTP/1.1 200 OK",
            b"",
        ]
    ),
    headers=st.lists(_header_line, max_size=5),
    ending=st.sampled_from([b"\r\n", b"\n"]),
    body=_body,
    cuts=st.lists(st.integers(0, 200), max_size=6),
    method=st.sampled_from(["POST", "PATCH", "DELETE", "HEAD"]),
)
def test_any_response_is_read_as_http_client_reads_it(
    status: bytes,
    headers: list[bytes],
    ending: bytes,
    body: bytes,
    cuts: list[int],
    method: str,
) -> None:
    raw = ending.join([status, *headers, b"", b""]) + body
    _check_response(raw, cuts, method)


def _parsed(data: bytes, method: str, eof: bool) -> Any:
    found = parse_response(data, method, eof)
    if found is None:
        return None
    answer, rest = found
    fields = (answer.status, answer.reason, answer.version, answer.will_close)
    return (*fields, answer.headers.items(), answer.data, rest)


@settings(max_examples=400, deadline=None)
@given(
    status=st.sampled_from(
        [b"HTTP/1.1 201 Created", b"HTTP/1.0 200 OK", b"HTTP/1.1 100 Continue", b"HTTP/1.1 x", b""]
    ),
    headers=st.lists(_header_line, max_size=5),
    ending=st.sampled_from([b"\r\n", b"\n"]),
    body=_body,
    after=st.sampled_from([b"", b"HTTP/1.1 200 OK\r\n", b"junk"]),
    split=st.integers(0, 300),
    method=st.sampled_from(["POST", "PATCH", "HEAD"]),
)
def test_a_response_read_from_what_has_arrived_is_the_whole_ones(
    status: bytes,
    headers: list[bytes],
    ending: bytes,
    body: bytes,
    after: bytes,
    split: int,
    method: str,
) -> None:
    raw = ending.join([status, *headers, b"", b""]) + body + after
    whole = _outcome(lambda: _parsed(raw, method, eof=True))
    # Everything in and the peer closed: as read_response reads the same bytes then EOF.
    read = _outcome(lambda: _via_http1([raw], method))
    if whole[0] == "ok":
        assert read == ("ok", (*whole[1][:4], whole[1][4], whole[1][5]))
    else:
        assert read == whole
    # Part of it in: no answer yet, or the one the whole gives (what followed it included).
    part = _outcome(lambda: _parsed(raw[:split], method, eof=False))
    if part == ("ok", None):
        return
    if part[0] == "ok":
        answer = part[1]
        part = ("ok", (*answer[:6], answer[6] + raw[split:]))
    assert part == whole


_API_ANSWER = (
    b"HTTP/1.1 201 Created\r\nAudit-Id: 0555943c\r\nCache-Control: no-cache, private\r\n"
    b"Content-Type: application/json\r\nDate: Thu, 03 Dec 2026 14:44:27 GMT\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)


@pytest.mark.parametrize(
    ("pieces", "quick"),
    [
        ([_API_ANSWER], True),  # the usual answer, whole in the first read
        ([b"HTTP/1.1 204 No Content\r\n\r\n"], True),
        ([_API_ANSWER[:30], _API_ANSWER[30:]], False),  # headers cut by the first read
        ([b"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"], True),  # LF after the status only
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n"], False),  # a bare LF in the headers
        ([b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n"], False),  # a bare CR
        ([b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\n\r\n"], False),
        ([b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n"], False),
        ([b"HTTP/1.1 200 OK\r\nX\x7f: 1\r\n\r\n"], False),
        ([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"], False),
        ([b"HTTP/1.1 abc\r\n\r\n"], False),
        ([b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 99 + b"\r\n"], True),
        ([b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 100 + b"\r\n"], False),  # over the limit
    ],
    ids=[
        "whole-answer",
        "no-content",
        "headers-cut",
        "lf-after-status",
        "bare-lf-in-headers",
        "bare-cr",
        "folded-header",
        "empty-name",
        "del-in-name",
        "continue-first",
        "bad-status",
        "99-headers",
        "100-headers",
    ],
)
def test_usual_heads_are_read_at_once(pieces: list[bytes], quick: bool) -> None:
    # The quick reading engages where it should (and the answer is http.client's: above).
    assert (_quick_head(_Reader(_Pieces(pieces))) is not None) is quick
    _check_response(b"".join(pieces), list(itertools.accumulate(len(p) for p in pieces)))
