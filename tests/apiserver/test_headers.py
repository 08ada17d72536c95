"""``headers`` reads a request's header block exactly as ``http.client.parse_headers`` does."""

from __future__ import annotations

import http.client
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback import headers

CLIENT_BLOCK = (
    b"Host: 127.0.0.1:4711\r\n"
    b"Accept-Encoding: identity\r\n"
    b"Content-Length: 93\r\n"
    b"Accept: application/json\r\n"
    b"Content-Type: application/json\r\n"
    b"User-Agent: OpenAPI-Generator/28.1.0/python\r\n"
    b"authorization: Bearer loopback-token\r\n"
    b"\r\n"
)


def _reference(block: bytes) -> list[tuple[str, str]]:
    parsed = http.client.parse_headers(io.BytesIO(block))
    return [(k, str(v)) for k, v in parsed.items()]


def _ours(block: bytes) -> list[tuple[str, str]]:
    lines = headers.read_block(io.BytesIO(block))
    return [(k, str(v)) for k, v in headers.parse(lines).items()]


@pytest.mark.parametrize(
    ("block", "plain"),
    [
        (CLIENT_BLOCK, True),
        (b"\r\n", True),
        (b"A: 1\n\n", True),  # bare LF line ends
        (b"A:1\r\nB:   \t two  \r\n\r\n", True),  # leading blanks go, trailing ones stay
        (b"A: 1\r\nA: 2\r\n\r\n", True),  # repeated names keep both, in order
        (b"X-Odd: caf\xe9\r\n\r\n", True),  # latin-1 value
        (b"A: 1\r\n  folded\r\n\r\n", False),  # continuation line
        (b"A: x\ry\r\n\r\n", False),  # a stray CR ends a line for the email parser
        (b"From nobody\r\nA: 1\r\n\r\n", False),  # unix-from
        (b": no name\r\nA: 1\r\n\r\n", False),
        (b"Bad Name: 1\r\n\r\n", False),
        (b"A: 1\r\n", False),  # EOF before the empty line
        (b"A: 1", False),  # and a last line without its end
        (b"caf\xe9: 1\r\n\r\n", False),
        (b"A:   x\r\n" * 60 + b"B x\r\n\r\n", False),  # a long block failing at its end
    ],
    ids=[
        "client",
        "empty",
        "bare-lf",
        "blanks",
        "repeated-name",
        "latin-1-value",
        "continuation-line",
        "stray-cr",
        "unix-from",
        "no-name",
        "space-in-name",
        "eof-before-blank-line",
        "no-last-line-end",
        "latin-1-name",
        "long-block-bad-end",
    ],
)
def test_block_parses_as_http_client_does(block: bytes, plain: bool) -> None:
    lines = headers.read_block(io.BytesIO(block))
    assert (headers.parse_plain(lines) is not None) == plain
    assert _ours(block) == _reference(block)


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1),
            st.text(st.characters(max_codepoint=0xFF), max_size=12),
            st.sampled_from([b"\r\n", b"\n"]),
        ),
        max_size=6,
    )
)
def test_any_block_parses_as_http_client_does(
    lines: list[tuple[str, str, bytes]],
) -> None:
    block = b"".join(
        name.replace(":", "-").encode() + b":" + value.encode("latin-1") + end
        for name, value, end in lines
    )
    block += b"\r\n"
    assert _ours(block) == _reference(block)


def test_lookups_ignore_case_and_take_the_first() -> None:
    parsed = headers.parse(headers.read_block(io.BytesIO(b"Expect: a\r\nEXPECT: b\r\n\r\n")))
    assert (parsed.get("expect"), parsed["EXPECT"], parsed.get("Host", "-")) == ("a", "a", "-")
    assert ("eXpect" in parsed, "Host" in parsed, len(parsed)) == (True, False, 2)
    assert parsed.keys() == list(parsed) == ["Expect", "EXPECT"]


@pytest.mark.parametrize(
    ("block", "error", "message"),
    [
        (b"A: " + b"x" * 65536 + b"\r\n\r\n", http.client.LineTooLong, "header line"),
        (b"A: 1\r\n" * 101 + b"\r\n", http.client.HTTPException, "got more than 100 headers"),
    ],
    ids=["LineTooLong", "HTTPException"],
)
def test_limits_are_http_clients(block: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as ours:
        headers.read_block(io.BytesIO(block))
    with pytest.raises(error) as theirs:
        http.client.parse_headers(io.BytesIO(block))
    assert str(ours.value) == str(theirs.value)
    assert message in str(ours.value)
