"""A watch's events read in batches, so a busy watch does not wake its thread per event.

A watch stream is one HTTP chunk per event. Read through urllib3's ``stream()`` (a small read
per chunk), the pod informer's thread woke once for every event: at a thousand bound pods a
second, about six context switches per event as it took Python's interpreter lock from the
scheduling loop and gave it back, and a sixth of the scheduler's CPU per bound pod (the
``e2e`` benchmark). Here the chunked body is read with ``read1`` (everything the connection
has, in one system call) and decoded in place, and after a read that held events the thread
pauses ``pause`` seconds before reading again, so that events arriving close together are
read, decoded and handed over together: each event is delivered at most ``pause`` later than
it arrived, only while events keep arriving. A read that filled its buffer is followed by the
next at once, so a burst is read as fast as the connection delivers it.

Only the plain case is read here: an HTTP/1.1 ``Transfer-Encoding: chunked`` body without a
``Content-Encoding``, untouched so far (what the API server sends for a watch). Anything else
is read through ``response.stream()`` as before. A malformed chunk size raises ``ValueError``
(the informer re-watches); the stream ends at the last chunk or when the server closes.
``tests/controller/test_watchlines.py`` holds the lines equal to ``stream()``'s for any
chunking and any split of the bytes between reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

DEFAULT_PAUSE = 0.005  # seconds; a watch event is handed over at most this late
_READ = 65536


def lines(
    response: Any, pause: float = DEFAULT_PAUSE, sleep: Callable[[float], None] = time.sleep
) -> Iterator[bytes]:
    """The non-blank newline-delimited lines (watch events) of ``response``'s body."""
    reader = _plain_chunked(response)
    if reader is None:
        yield from _streamed(response)
        return
    raw = b""  # bytes read and not yet decoded
    text = b""  # decoded bytes after the last newline
    ended = False
    while not ended:
        block = reader(_READ)
        if not block:
            break
        raw += block
        data, raw, ended = _chunks(raw)
        if not data:
            continue
        *complete, text = (text + data).split(b"\n")
        delivered = False
        for line in complete:
            if line.strip():
                delivered = True
                yield line
        # A full read may have left more behind: read on. Otherwise let events gather.
        if delivered and pause > 0 and not ended and len(block) < _READ:
            sleep(pause)
    if text.strip():
        yield text


def _chunks(raw: bytes) -> tuple[bytes, bytes, bool]:
    """The payload of the whole chunks at the start of ``raw``, what is left of ``raw``, and
    whether the last chunk (size 0) was reached."""
    parts: list[bytes] = []
    pos = 0
    while True:
        cut = raw.find(b"\r\n", pos)
        if cut < 0:
            break
        size = int(raw[pos:cut].split(b";", 1)[0], 16)  # ValueError on a malformed size
        if size < 0:
            raise ValueError(f"negative chunk size {size}")
        if size == 0:
            return b"".join(parts), b"", True
        end = cut + 2 + size
        if len(raw) < end + 2:
            break
        parts.append(raw[cut + 2 : end])
        pos = end + 2
    return b"".join(parts), raw[pos:], False


def _plain_chunked(response: Any) -> Callable[[int], bytes] | None:
    """``read1`` of the buffered socket file under ``response`` (a urllib3 response over an
    ``http.client`` one) when its body is plain chunked and unread; else None."""
    inner = getattr(response, "_fp", None)
    file = getattr(inner, "fp", None)
    if file is None or not hasattr(file, "read1"):
        return None
    if not getattr(inner, "chunked", False) or getattr(inner, "chunk_left", 0) is not None:
        return None
    getheader = getattr(inner, "getheader", None)
    if getheader is None or getheader("content-encoding"):
        return None
    read1: Callable[[int], bytes] = file.read1
    return read1


def _streamed(response: Any) -> Iterator[bytes]:
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=True):
        buffer += chunk
        while True:
            cut = buffer.find(b"\n")
            if cut < 0:
                break
            line, buffer = buffer[:cut], buffer[cut + 1 :]
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer
