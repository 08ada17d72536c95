"""One HTTP/1.1 exchange on a connected socket, with the bytes and the reading of ``http.client``.

The loop's writes (a binding, a ``Scheduled`` Event, for GPU pods a patch) are two or three
small requests per pod on a kept-alive connection (``keepalive``). Sent through
``http.client`` each costs about 0.35 ms of CPU on this machine's loopback, most of it not
the network: ``putheader`` validating and encoding header by header, and the response's
headers parsed by the ``email`` package into a ``Message`` nobody reads on success. At
hundreds of pods a second that is a large share of the scheduler's CPU.

This module writes the request as ``http.client.HTTPConnection.request`` writes it (request
line, ``Host``, ``Accept-Encoding: identity``, ``Content-Length``, then the caller's headers
in order, each name and value checked as ``http.client`` checks them; one ``sendall`` instead
of two) and reads the response as ``HTTPResponse.begin`` and ``read()`` do: ``100 Continue``
skipped, the status line, up to 100 header lines, then a body by ``Transfer-Encoding:
chunked``, ``Content-Length``, or until the server closes (which, as there, means the
connection cannot be reused). Malformed input raises the exceptions ``http.client`` raises,
with the same arguments (``RemoteDisconnected``, ``BadStatusLine``, ``LineTooLong``,
``IncompleteRead``, ``UnknownProtocol``, ``HTTPException``); a timeout raises
``TimeoutError`` from the socket. The few headers the exchange itself needs are read without
the ``email`` package when every header line is a plain ``name: value`` line (anything else,
such as a folded line, goes through ``http.client.parse_headers`` as before); the full
``HTTPMessage`` is built only when asked for (``Response.headers``: error answers, whose
``ApiException`` carries them).

``tests/controller/test_http1.py`` holds both halves equal to ``http.client``'s, byte for
byte and exception for exception, over generated requests and responses.
"""

from __future__ import annotations

import http.client
import io
import re
from collections.abc import Mapping
from typing import Any

from urllib3.util import SKIP_HEADER, SKIPPABLE_HEADERS

# http.client's limits (_MAXLINE, _MAXHEADERS)
MAX_LINE = 65536
MAX_HEADERS = 100
_BODY_METHODS = frozenset({"PATCH", "POST", "PUT"})
_RECV = 65536

# The checks on what is sent: urllib3's on the method (stricter than http.client's), then
# http.client's on the path, header names and values; the same expressions.
_ILLEGAL_METHOD = re.compile(r"[^-!#$%&'*+.^_`|~0-9a-zA-Z]")
_ILLEGAL_PATH = re.compile("[\x00-\x20\x7f]")
_LEGAL_NAME = re.compile(rb"[^:\s][^:\r\n]*").fullmatch
_ILLEGAL_VALUE = re.compile(rb"\n(?![ \t])|\r(?![ \t\n])").search
# A header line the email parser reads as a plain "name: value": a name of the characters
# its header pattern allows, then a value without line breaks inside.
_PLAIN_LINE = re.compile(r"([\x21-\x39\x3b-\x7e]+):[ \t]*([^\r\n]*)\r?\n").fullmatch

# (name, value) -> the encoded header line, for the few distinct headers a client sends.
_line_cache: dict[tuple[str, Any], bytes] = {}


def host_header(conn: Any) -> bytes:
    """The ``Host`` value ``http.client`` sends for ``conn`` (an ``HTTPConnection``)."""
    if getattr(conn, "_tunnel_host", None):
        host, port = conn._tunnel_host, conn._tunnel_port
    else:
        host, port = conn.host, conn.port
    try:
        host_enc = host.encode("ascii")
    except UnicodeEncodeError:
        host_enc = host.encode("idna")
    if ":" in host:
        host_enc = _strip_zone(b"[" + host_enc + b"]")
    if port == conn.default_port:
        return _header_line("Host", host_enc)
    return _header_line("Host", f"{host_enc.decode('ascii')}:{port}")


def _strip_zone(name: bytes) -> bytes:
    """``http.client._strip_ipv6_iface``: an IPv6 literal's ``%zone`` is not sent."""
    name, percent, _ = name.partition(b"%")
    return name + b"]" if percent else name


def _header_line(name: str, value: Any) -> bytes:
    """``name: value`` encoded and checked as ``http.client``'s ``putheader`` does it."""
    key = (name, value)
    line = _line_cache.get(key)
    if line is not None:
        return line
    raw_name = name.encode("ascii")
    if not _LEGAL_NAME(raw_name):
        raise ValueError(f"Invalid header name {raw_name!r}")
    if hasattr(value, "encode"):
        raw = value.encode("latin-1")
    elif isinstance(value, int):
        raw = str(value).encode("ascii")
    else:
        raw = value
    if _ILLEGAL_VALUE(raw):
        raise ValueError(f"Invalid header value {raw!r}")
    line = raw_name + b": " + raw
    if len(_line_cache) > 512:
        _line_cache.clear()
    _line_cache[key] = line
    return line


def request_bytes(
    method: str, target: str, host: bytes, headers: Mapping[str, Any], body: bytes | None
) -> bytes:
    """What ``http.client.HTTPConnection.request(method, target, body, headers)`` writes on
    a urllib3 connection whose ``Host`` line is ``host`` (``host_header``)."""
    match = _ILLEGAL_METHOD.search(method)
    if match:
        raise ValueError(
            f"Method cannot contain non-token characters {method!r} "
            f"(found at least {match.group()!r})"
        )
    target = target or "/"
    match = _ILLEGAL_PATH.search(target)
    if match:
        raise http.client.InvalidURL(
            f"URL can't contain control characters. {target!r} (found at least {match.group()!r})"
        )
    names = {k.lower() for k in headers}
    lines = [f"{method} {target} HTTP/1.1".encode("ascii")]
    if "host" not in names:
        lines.append(host)
    if "accept-encoding" not in names:
        lines.append(b"Accept-Encoding: identity")
    if "content-length" not in names and "transfer-encoding" not in names:
        if body is not None:
            lines.append(b"Content-Length: %d" % len(body))
        elif method.upper() in _BODY_METHODS:
            lines.append(b"Content-Length: 0")
    for name, value in headers.items():
        if isinstance(value, str) and value == SKIP_HEADER:
            if name.lower() not in SKIPPABLE_HEADERS:
                skippable = "', '".join(str.title(h) for h in sorted(SKIPPABLE_HEADERS))
                raise ValueError(f"urllib3.util.SKIP_HEADER only supports '{skippable}'")
            continue
        lines.append(_header_line(name, value))
    lines.append(b"")
    lines.append(b"")
    head = b"\r\n".join(lines)
    return head + body if body else head


class Response:
    """A response read in full."""

    __slots__ = ("_headers", "_raw_headers", "data", "reason", "status", "version", "will_close")

    def __init__(
        self,
        status: int,
        reason: str,
        version: int,
        raw_headers: bytes,
        headers: http.client.HTTPMessage | None,
        data: bytes,
        will_close: bool,
    ) -> None:
        self.status = status
        self.reason = reason
        self.version = version
        self._raw_headers = raw_headers
        self._headers = headers
        self.data = data
        self.will_close = will_close

    @property
    def headers(self) -> http.client.HTTPMessage:
        """The headers as ``http.client`` parses them (built on first use)."""
        if self._headers is None:
            self._headers = http.client.parse_headers(io.BytesIO(self._raw_headers))
        return self._headers


class _Reader:
    """Buffered reads from a socket (what ``sock.makefile("rb")`` gives ``HTTPResponse``)."""

    __slots__ = ("buf", "pos", "sock")

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buf = b""
        self.pos = 0

    def _fill(self) -> bool:
        chunk = self.sock.recv(_RECV)
        if not chunk:
            return False
        self.buf = self.buf[self.pos :] + chunk if self.pos < len(self.buf) else chunk
        self.pos = 0
        return True

    def readline(self, limit: int) -> bytes:
        """Up to and including the next newline, at most ``limit`` bytes, less at EOF."""
        while True:
            cut = self.buf.find(b"\n", self.pos, self.pos + limit)
            if cut >= 0:
                line = self.buf[self.pos : cut + 1]
                self.pos = cut + 1
                return line
            if len(self.buf) - self.pos >= limit:
                line = self.buf[self.pos : self.pos + limit]
                self.pos += limit
                return line
            if not self._fill():
                line = self.buf[self.pos :]
                self.pos = len(self.buf)
                return line

    def read(self, amount: int) -> bytes:
        """``amount`` bytes, or fewer at EOF."""
        while len(self.buf) - self.pos < amount:
            if not self._fill():
                break
        data = self.buf[self.pos : self.pos + amount]
        self.pos += len(data)
        return data

    def read_all(self) -> bytes:
        while self._fill():
            pass
        data = self.buf[self.pos :]
        self.pos = len(self.buf)
        return data

    def exact(self, amount: int) -> bytes:
        """``HTTPResponse._safe_read``."""
        data = self.read(amount)
        if len(data) < amount:
            raise http.client.IncompleteRead(data, amount - len(data))
        return data


def _status_line(reader: _Reader) -> tuple[str, int, str]:
    """``HTTPResponse._read_status``."""
    line = str(reader.readline(MAX_LINE + 1), "iso-8859-1")
    if len(line) > MAX_LINE:
        raise http.client.LineTooLong("status line")
    return _parse_status(line)


def _parse_status(line: str) -> tuple[str, int, str]:
    """The status line's checks of ``HTTPResponse._read_status`` (``line`` within the limit)."""
    if not line:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    try:
        version, status, reason = line.split(None, 2)
    except ValueError:
        try:
            version, status = line.split(None, 1)
            reason = ""
        except ValueError:
            version = ""
    if not version.startswith("HTTP/"):
        raise http.client.BadStatusLine(line)
    try:
        code = int(status)
    except ValueError:
        raise http.client.BadStatusLine(line) from None
    if code < 100 or code > 999:
        raise http.client.BadStatusLine(line)
    return version, code, reason


def _header_lines(reader: _Reader) -> list[bytes]:
    """``http.client._read_headers``: the lines, the terminating one included."""
    lines = []
    while True:
        line = reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines


def _plain_headers(lines: list[bytes]) -> dict[str, str] | None:
    """``{lower-case name: value of its first line}`` as ``HTTPMessage.get`` would answer,
    or None when a line is not a plain one (then the email parser must decide)."""
    found: dict[str, str] = {}
    for line in lines[:-1]:
        match = _PLAIN_LINE(line.decode("iso-8859-1"))
        if match is None:
            return None
        found.setdefault(match.group(1).lower(), match.group(2))
    return found


def _quick_head(
    reader: _Reader,
) -> tuple[str, int, str, bytes, dict[str, str]] | None:
    """The status line and headers read at once, when the first read holds all of them and
    they are the usual kind: ``CRLF`` line ends only, every header a plain line (as
    ``_plain_headers`` takes them), fewer than ``MAX_HEADERS``, all inside ``MAX_LINE`` bytes,
    a final status (not ``100 Continue``). Then the line-by-line reading would split the
    same lines and answer the same (version, status, reason, raw header bytes, headers);
    the reader is left after the blank line. Anything else answers None with the reader
    untouched but for that first read, and the line-by-line reading decides (raising what
    ``http.client`` raises), so no input waits for more bytes than it did."""
    if reader.pos == len(reader.buf) and not reader._fill():
        return None
    buf, start = reader.buf, reader.pos
    end = buf.find(b"\r\n\r\n", start, start + MAX_LINE)
    if end < 0:
        return None
    cut = buf.find(b"\n", start) + 1  # the status line's end: end + 1 at the latest
    try:
        version_text, status, reason = _parse_status(str(buf[start:cut], "iso-8859-1"))
    except http.client.HTTPException:
        return None
    if status == http.client.CONTINUE:
        return None
    raw = buf[cut : end + 4]
    text = raw.decode("iso-8859-1")
    pairs = text.count("\r\n")
    if pairs > MAX_HEADERS or text.count("\r") != pairs or text.count("\n") != pairs:
        return None  # a bare CR or LF: lines the slow reading splits its own way
    found: dict[str, str] = {}
    # Each line as _PLAIN_LINE takes it: a name of visible ASCII but ":" (partition leaves
    # none in it), the value after the blanks that follow the colon.
    for line in text[:-4].split("\r\n") if pairs > 1 else ():
        name, colon, value = line.partition(":")
        if not (colon and name and name.isascii() and name.isprintable()) or " " in name:
            return None
        found.setdefault(name.lower(), value.lstrip(" \t"))
    reader.pos = end + 4
    return version_text, status, reason, raw, found


def _chunked(reader: _Reader) -> bytes:
    """``HTTPResponse._read_chunked`` for the whole body."""
    parts: list[bytes] = []
    try:
        while True:
            line = reader.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE:
                raise http.client.LineTooLong("chunk size")
            cut = line.find(b";")
            if cut >= 0:
                line = line[:cut]
            try:
                size = int(line, 16)
            except ValueError:
                raise http.client.IncompleteRead(b"") from None
            if size == 0:
                while True:  # the trailer, discarded
                    line = reader.readline(MAX_LINE + 1)
                    if len(line) > MAX_LINE:
                        raise http.client.LineTooLong("trailer line")
                    if line in (b"\r\n", b"\n", b""):
                        return b"".join(parts)
            parts.append(reader.exact(size))
            reader.exact(2)
    except http.client.IncompleteRead as exc:
        raise http.client.IncompleteRead(b"".join(parts)) from exc


def read_response(sock: Any, method: str) -> Response:
    """Read one whole response to ``method`` from ``sock``, as ``http.client`` would."""
    return _read(_Reader(sock), method)


class _Short(Exception):
    """The bytes received so far end inside the response."""


class _Received:
    """The bytes a non-blocking connection received, as a socket ``_Reader`` reads them:
    all of them on the first ``recv``, then end of stream if the peer closed, else
    ``_Short``."""

    __slots__ = ("data", "eof")

    def __init__(self, data: bytes, eof: bool) -> None:
        self.data = data
        self.eof = eof

    def recv(self, _size: int) -> bytes:
        data, self.data = self.data, b""
        if data or self.eof:
            return data
        raise _Short


def parse_response(data: bytes, method: str, eof: bool) -> tuple[Response, bytes] | None:
    """The response to ``method`` at the start of ``data`` (what a connection received so
    far; ``eof`` when the peer has closed it) and the bytes after it; None while it is
    incomplete. Reads exactly as ``read_response`` does, raising what it raises — at
    ``eof`` that includes a response cut short."""
    reader = _Reader(_Received(data, eof))
    try:
        response = _read(reader, method)
    except _Short:
        return None
    return response, reader.buf[reader.pos :]


def _read(reader: _Reader, method: str) -> Response:
    quick = _quick_head(reader)
    plain: dict[str, str] | None
    if quick is not None:
        version_text, status, reason, raw, plain = quick
    else:
        while True:
            version_text, status, reason = _status_line(reader)
            if status != http.client.CONTINUE:
                break
            _header_lines(reader)
        lines = _header_lines(reader)
        raw = b"".join(lines)
        plain = _plain_headers(lines)
    if version_text in ("HTTP/1.0", "HTTP/0.9"):
        version = 10
    elif version_text.startswith("HTTP/1."):
        version = 11
    else:
        raise http.client.UnknownProtocol(version_text)
    message: http.client.HTTPMessage | None = None
    get: Any
    if plain is None:
        message = http.client.parse_headers(io.BytesIO(raw))
        get = message.get
    else:
        get = plain.get
    encoding = get("transfer-encoding")
    chunked = bool(encoding) and encoding.lower() == "chunked"
    will_close = _will_close(version, get)
    length: int | None = None
    text = get("content-length")
    if text and not chunked:
        try:
            length = int(text)
        except ValueError:
            length = None
        else:
            if length < 0:
                length = None
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        length = 0
    if not will_close and not chunked and length is None:
        will_close = True
    if method == "HEAD":
        data = b""
    elif chunked:
        data = _chunked(reader)
    elif length is None:
        data = reader.read_all()
    else:
        data = reader.exact(length)
    return Response(status, reason.strip(), version, raw, message, data, will_close)


def _will_close(version: int, get: Any) -> bool:
    """``HTTPResponse._check_close``."""
    conn = get("connection")
    if version == 11:
        return bool(conn and "close" in conn.lower())
    if get("keep-alive"):
        return False
    if conn and "keep-alive" in conn.lower():
        return False
    pconn = get("proxy-connection")
    return not (pconn and "keep-alive" in pconn.lower())
