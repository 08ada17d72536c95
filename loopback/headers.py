"""Request headers without the ``email`` package, for the requests every client sends.

``BaseHTTPRequestHandler`` hands each request's header block to ``email.parser``, which is
built for mail (folding, defects, unix-from lines) and was a tenth of the loopback server's
CPU in the end-to-end benchmark.  Clients send one ``Name: value`` per line, so this module
reads the block with ``http.client``'s limits and splits such lines itself, exactly as the
email parser's compat32 policy would (the name as written, the value with leading blanks and
the line ending removed); a block with anything else in it (a folded line, a stray carriage
return, a name the email parser would not take as one) goes to the email parser as before.
``test_headers.py`` holds the two equal.
"""

from __future__ import annotations

import email.parser
import http.client
import re
from collections.abc import Iterator
from typing import Protocol

# http.client's limits: the longest header line and the most header lines it accepts
MAX_LINE = 65536
MAX_HEADERS = 100

# A line the email parser reads as one header and nothing else: a name of printable ASCII
# without ":" (its header pattern), the value after the blanks it strips, no other CR or LF.
_PLAIN = re.compile(r"([\x21-\x39\x3b-\x7e]+):[ \t]*([^\r\n]*)\r?\n")
# Lines of that kind only: a line break can only end such a line, so the lines this matches
# are the block's lines, and ``_PLAIN.findall`` reads them one by one.  Possessive, so that
# a block that fails is not retried line by line.
_PLAIN_BLOCK = re.compile(r"(?:[\x21-\x39\x3b-\x7e]++:[^\r\n]*+\r?\n)*+")


class Headers:
    """What handlers read of ``http.client.HTTPMessage``: the first value of a name, any
    case (``get``, ``[]``, ``in``), and every (name, value) in order (``items``)."""

    __slots__ = ("_items", "_lower")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items
        self._lower = [name.lower() for name, _ in items]

    def get(self, name: str, default: str | None = None) -> str | None:
        lower = name.lower()
        for i, candidate in enumerate(self._lower):
            if candidate == lower:
                return self._items[i][1]
        return default

    def __getitem__(self, name: str) -> str | None:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._lower

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._items])

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[str]:
        return [name for name, _ in self._items]

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)


class Lines(Protocol):
    """What headers are read from: a request handler's ``rfile``."""

    def readline(self, size: int | None = -1, /) -> bytes: ...


def read_block(rfile: Lines) -> list[bytes]:
    """The header lines up to and including the empty one (or EOF), as ``http.client``
    reads them, raising its ``LineTooLong`` / ``HTTPException`` past its limits."""
    lines: list[bytes] = []
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines


def parse_plain(lines: list[bytes]) -> Headers | None:
    """The headers of a block of plain lines, or None when a line needs the email parser."""
    if lines[-1] not in (b"\r\n", b"\n"):
        return None  # EOF before the empty line: leave the odd cases to the email parser
    text = b"".join(lines[:-1]).decode("iso-8859-1")
    if _PLAIN_BLOCK.fullmatch(text) is None:
        return None
    return Headers(_PLAIN.findall(text))


def parse_email(lines: list[bytes]) -> http.client.HTTPMessage:
    """The block as ``http.client.parse_headers`` parses it."""
    text = b"".join(lines).decode("iso-8859-1")
    parser = email.parser.Parser(_class=http.client.HTTPMessage)
    message: http.client.HTTPMessage = parser.parsestr(text)
    return message


def parse(lines: list[bytes]) -> Headers | http.client.HTTPMessage:
    plain = parse_plain(lines)
    return plain if plain is not None else parse_email(lines)
