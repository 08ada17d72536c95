"""HTTP/1.1 framing: the bytes on the wire, as the captured kube-apiserver sends them.

The official ``kubernetes`` client talks to this over real sockets, so the framing matters:
``Content-Length`` for bodies under 2048 bytes and ``Transfer-Encoding: chunked`` above (Go's
``net/http`` buffering), the same response headers (Audit-Id, Cache-Control, the two APF
headers), and watches as chunked NDJSON with one chunk per live event, a terminating 0-length
chunk at ``timeoutSeconds``, or a cut connection when a test drops the watch.

The standard handler is kept, with two shortcuts that change no byte: an ``HTTP/1.1`` request
line's headers are split by :mod:`loopback.headers` instead of the email parser, and a
response's head is joined in one piece with the ``Date`` formatted once a second.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import errors, headers
from .api import API, Request, Response, WatchResponse, dumps, random_uuid

FLOWSCHEMA_UID = "86bc4fab-0502-4af2-ac53-71a939a3d75e"
PRIORITYLEVEL_UID = "d2a7dde7-a2e4-4ab7-b69c-2cfde4cfe2c2"
CHUNK_THRESHOLD = 2048
_FIXED_TAIL = (
    f"X-Kubernetes-Pf-Flowschema-Uid: {FLOWSCHEMA_UID}\r\n"
    f"X-Kubernetes-Pf-Prioritylevel-Uid: {PRIORITYLEVEL_UID}\r\n"
)

# (whole second, its Date header text): every response in one second shares the text
_date_cache: tuple[int, str] = (-1, "")


def http_date(now: float) -> str:
    """``BaseHTTPRequestHandler.date_time_string(now)``, formatted once per second."""
    global _date_cache
    second = int(now)
    cached = _date_cache
    if cached[0] != second:
        cached = (second, email.utils.formatdate(second, usegmt=True))
        _date_cache = cached
    return cached[1]


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128  # informers and binders connect in bursts

    def __init__(self, address: tuple[str, int], api: API) -> None:
        super().__init__(address, Handler)
        self.api = api
        self.crashes: list[str] = []
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up on idle keep-alive connections is normal, not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conn_lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def close_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._connections)
            self._connections.clear()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # a watch's headers and its events go out in separate writes; without TCP_NODELAY every
    # one of them waits for the client's delayed ACK (~40 ms)
    disable_nagle_algorithm = True
    server: LoopbackHTTPServer
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, written by flush_headers()

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def parse_request(self) -> bool:
        """The standard parse for anything but a plain ``HTTP/1.1`` request line, whose
        headers skip the email parser (see :mod:`loopback.headers`)."""
        raw: bytes = self.raw_requestline  # type: ignore[attr-defined]  # set by handle_one_request
        requestline = str(raw, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if len(words) != 3 or words[2] != "HTTP/1.1" or words[1].startswith("//"):
            return super().parse_request()
        self.requestline = requestline
        self.command, self.path = words[0], words[1]
        self.request_version = "HTTP/1.1"
        self.close_connection = False
        try:
            block = headers.read_block(self.rfile)
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err)
            )
            return False
        self.headers = headers.parse(block)  # type: ignore[assignment]
        conntype = self.headers.get("Connection", "")
        if conntype.lower() == "close":
            self.close_connection = True
        elif conntype.lower() == "keep-alive":
            self.close_connection = False
        expect = self.headers.get("Expect", "")
        if expect.lower() == "100-continue":
            return self.handle_expect_100()
        return True

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    # ------------------------------------------------------------------ request

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        body = self._read_body()
        req = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        try:
            result = self.server.api.handle(req)
        except Exception:  # a bug in the fake must surface as a 500, and be recorded
            text = traceback.format_exc()
            self.server.crashes.append(text)
            print(text, file=sys.stderr)
            err = errors.internal_error("loopback apiserver crashed; see server.crashes")
            result = Response(err.code, err.body, err.headers)
        if isinstance(result, WatchResponse):
            self._stream(result)
        else:
            self._send(result)

    # ------------------------------------------------------------------ response

    def _head(self, code: int, content_type: str, extra: dict[str, str]) -> None:
        if self.request_version == "HTTP/0.9":  # no head at all: the standard calls say so
            self.send_response_only(code)
            for name, value in extra.items():
                self.send_header(name, value)
            return
        # What send_response_only and one send_header per line would buffer, in one piece.
        # ``extra`` goes through send_header, which also heeds a Connection header.
        reason = self.responses[code][0] if code in self.responses else ""
        if not hasattr(self, "_headers_buffer"):
            self._headers_buffer = []
        self._headers_buffer.append(
            (
                f"{self.protocol_version} {int(code)} {reason}\r\n"
                f"Audit-Id: {random_uuid()}\r\n"
                "Cache-Control: no-cache, private\r\n"
                f"Content-Type: {content_type}\r\n"
            ).encode("latin-1", "strict")
        )
        for name, value in extra.items():
            if name == "Retry-After":
                continue
            self.send_header(name, value)
        tail = _FIXED_TAIL
        if "Retry-After" in extra:
            tail += f"Retry-After: {extra['Retry-After']}\r\n"
        tail += f"Date: {http_date(time.time())}\r\n"
        if self.close_connection:
            tail += "Connection: close\r\n"
        self._headers_buffer.append(tail.encode("latin-1", "strict"))

    def _send(self, resp: Response) -> None:
        payload = resp.body if isinstance(resp.body, bytes) else dumps(resp.body)
        self._head(resp.status, resp.content_type, resp.headers)
        try:
            if len(payload) < CHUNK_THRESHOLD:
                self.send_header("Content-Length", str(len(payload)))
                body = payload
            else:
                self.send_header("Transfer-Encoding", "chunked")
                body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload)
            # Headers and body in one write, as Go's buffered ResponseWriter sends a finished
            # response: one system call and one segment instead of two.
            self._headers_buffer.append(b"\r\n")
            if self.command != "HEAD":
                self._headers_buffer.append(body)
            self.flush_headers()
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _stream(self, resp: WatchResponse) -> None:
        self._head(200, "application/json", resp.headers)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        lines = resp.lines
        try:
            self.wfile.flush()
            for line in lines:
                if line is None:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        except Exception:  # a bug while streaming: record it and cut the stream
            text = traceback.format_exc()
            self.server.crashes.append(text)
            print(text, file=sys.stderr)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()
