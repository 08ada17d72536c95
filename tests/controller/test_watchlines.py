"""A watch's lines read in batches: the same lines as urllib3's ``stream()`` gives, for any
chunking of the events and any split of the bytes between reads; a pause only after a read
that delivered events; anything but a plain, unread chunked body read through ``stream()``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.controller.watchlines import lines


class _Inner:
    """What ``lines`` reads of an ``http.client.HTTPResponse``: its file, headers and state."""

    def __init__(
        self, reads: list[bytes], *, chunked: bool = True, chunk_left: int | None = None
    ) -> None:
        self.fp = self
        self._reads = iter(reads)
        self.chunked = chunked
        self.chunk_left = chunk_left
        self.encoding: str | None = None

    def read1(self, _size: int) -> bytes:
        return next(self._reads, b"")

    def getheader(self, name: str) -> str | None:
        return self.encoding if name == "content-encoding" else None


class _Response:
    """A urllib3 response: ``_fp`` for the batched reading, ``stream()`` for the other."""

    def __init__(self, inner: _Inner | None, payloads: list[bytes]) -> None:
        self._fp = inner
        self._payloads = payloads
        self.streamed = False

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        self.streamed = True
        yield from self._payloads


def _chunked(payloads: list[bytes], extension: bytes = b"") -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in payloads if p)
    return body + b"0\r\n\r\n"


def _split(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
    return [raw[a:b] for a, b in itertools.pairwise(points) if b > a]


_event = st.binary(min_size=0, max_size=40).filter(lambda b: b"\n" not in b)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event, max_size=8),
    chunk_cuts=st.lists(st.integers(0, 400), max_size=6),
    read_cuts=st.lists(st.integers(0, 600), max_size=10),
    extension=st.sampled_from([b"", b";name=value"]),
    trailing_newline=st.booleans(),
)
def test_the_lines_are_streams_for_any_chunking_and_any_reads(
    events: list[bytes],
    chunk_cuts: list[int],
    read_cuts: list[int],
    extension: bytes,
    trailing_newline: bool,
) -> None:
    body = b"\n".join(events) + (b"\n" if trailing_newline else b"")
    payloads = _split(body, chunk_cuts)
    reads = _split(_chunked(payloads, extension), read_cuts)
    expected = list(lines(_Response(None, payloads)))  # urllib3's stream(), chunk by chunk
    response = _Response(_Inner(reads), payloads)
    assert list(lines(response, pause=0)) == expected
    assert not response.streamed
    assert expected == [e for e in events if e.strip()]


@pytest.mark.parametrize(
    ("reads", "pauses"),
    [
        ([b"5\r\nab\ncd\r\n", b"3\r\n\nef\r\n", b"0\r\n\r\n"], 2),  # "ab"; then "cd"
        ([b"5\r\nab\ncd\r\n3\r\n\nef\r\n0\r\n\r\n"], 0),  # one read to the end: no pause
        ([b"2\r\nab\r\n", b"2\r\ncd\r\n", b"1\r\n\n\r\n0\r\n\r\n"], 0),  # no line until the end
        ([b"3\r\nab\n\r\n", b"3\r\ncd\n\r\n", b"0\r\n\r\n"], 2),
        ([b"3\r\nab\n", b"\r\n", b"0\r\n\r\n"], 1),  # a chunk across reads
        ([b"3\r\n \n\n\r\n", b"0\r\n\r\n"], 0),  # blank lines are not events
        # A read that filled its buffer (65,536 bytes) may have left more: no pause after it.
        ([b"fff8\r\n" + b"a" * 65527 + b"\n\r\n", b"0\r\n\r\n"], 0),
        ([b"fff7\r\n" + b"a" * 65526 + b"\n\r\n", b"0\r\n\r\n"], 1),
    ],
    ids=[
        "two-batches",
        "one-read",
        "no-line-before-the-end",
        "a-line-a-read",
        "split-chunk",
        "blank",
        "full-read",
        "one-byte-short",
    ],
)
def test_a_pause_follows_each_read_that_delivered_events(reads: list[bytes], pauses: int) -> None:
    slept: list[float] = []
    list(lines(_Response(_Inner(reads), []), pause=0.25, sleep=slept.append))
    assert slept == [0.25] * pauses


@pytest.mark.parametrize(
    "case",
    ["no-socket-file", "not-chunked", "partly-read", "gzip"],
)
def test_anything_but_a_plain_unread_chunked_body_is_streamed(case: str) -> None:
    inner = None if case == "no-socket-file" else _Inner([b"0\r\n\r\n"])
    if inner is not None:
        inner.chunked = case != "not-chunked"
        inner.chunk_left = 3 if case == "partly-read" else None
        inner.encoding = "gzip" if case == "gzip" else None
    response = _Response(inner, [b"a\nb", b"c\n"])
    assert list(lines(response)) == [b"a", b"bc"]
    assert response.streamed


@pytest.mark.parametrize("size", [b"zz", b"-3", b""], ids=["not-hex", "negative", "empty"])
def test_a_malformed_chunk_size_is_an_error(size: bytes) -> None:
    response = _Response(_Inner([size + b"\r\nabc\r\n0\r\n\r\n"]), [])
    with pytest.raises(ValueError):
        list(lines(response))
