"""``wirejson.loads`` answers exactly what ``json.loads`` answers, or raises what it raises.

"Exactly" is value, type and key order alike (``-0.0`` is not ``0.0``, ``1`` is not ``1.0``,
``True`` is not ``1``): results are compared through a tagged form. A table holds the inputs
where orjson alone would answer otherwise (integers beyond 64 bits, non-finite numbers, lone
surrogates, a byte-order mark, bytes that are not UTF-8); generated documents (any JSON value,
written compactly, indented, with big integers and with floats as text of many digits) hold
the rest. A pod as the loopback API server sends it in a watch event must take orjson's path.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.controller import wirejson
from tests.controller.builders import pod_obj


def _tagged(value: Any) -> Any:
    """``value`` with every leaf's type beside it and a float's bits (NaN, -0.0) spelled."""
    if isinstance(value, dict):
        return ("dict", [(k, _tagged(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_tagged(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


def _answer(load: Any, data: bytes) -> Any:
    try:
        return ("value", _tagged(load(data)))
    except Exception as exc:  # the very exception json.loads raises
        return ("raised", type(exc).__name__, str(exc))


def _same(data: bytes) -> None:
    assert _answer(wirejson.loads, data) == _answer(json.loads, data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1, "b": [true, false, null], "c": "x"}',
        b'{"a": 1, "b": 2, "a": 3}',  # the last duplicate wins, at the first one's place
        b"123456789012345678901234567890",  # beyond 64 bits: orjson would give a float
        b"18446744073709551616",
        b"-9223372036854775809",
        b'{"n": 99999999999999999999}',
        b"18446744073709551615",
        b"-9223372036854775808",
        b"NaN",
        b"[Infinity, -Infinity]",
        b"1E400",  # overflows to inf in json, refused by orjson
        b"-1e400",
        b"1.7976931348623157e309",
        b"1.0e-400",
        b"-0",
        b"-0.0",
        b"0.30000000000000004",
        b"2.2250738585072011e-308",
        b'"\\ud800"',  # a lone surrogate escape
        b'"\\udc00x"',
        b'"\\ud83d\\ude00"',
        b'"\xed\xa0\x80"',  # an encoded surrogate: json's surrogatepass takes it
        b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark
        '{"a": "é"}'.encode("utf-16"),
        '["x"]'.encode("utf-32"),
        b'"\xff"',  # not UTF-8: json raises UnicodeDecodeError
        b'"\xc0\x80"',
        b'"\x01"',  # a raw control character
        b'"\\u0000"',
        b"\t[]\r\n",
        b"\x0c[]",
        b"",
        b"{}\x00",
        b"[1,]",
        b"{'a': 1}",
        b"[" * 1100 + b"]" * 1100,  # deeper than orjson reads
    ],
    ids=lambda data: repr(data)[2:-1][:40],
)
def test_loads_answers_as_json(data: bytes) -> None:
    _same(data)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_json_values, st.sampled_from([None, 2]), st.booleans())
def test_generated_documents(value: Any, indent: int | None, ascii_only: bool) -> None:
    _same(json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
)
def test_numbers_as_text(text: str) -> None:
    """Numbers spelled with many digits and exponents: the same float (rounding) or int."""
    _same(text.encode("ascii"))
    _same(f'{{"v": [{text}]}}'.encode("ascii"))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"1", b"0", b"9", b"123456789", b"a", b"/", b":", b" ", b"\xff"]),
        max_size=60,
    )
)
def test_the_digit_run_test_is_the_regular_expressions(parts: list[bytes]) -> None:
    """Nineteen digits in a row, found as ``[0-9]{19}`` finds them (digits next to ``/`` and
    ``:``, the bytes just outside ``0-9``, included)."""
    data = b"".join(parts)
    assert wirejson._long_digits(data) == bool(re.search(rb"[0-9]{19}", data))
    assert wirejson._long_digits(data + b"1" * 19)
    assert not wirejson._long_digits(
        data.replace(b"1", b"a").replace(b"0", b"a").replace(b"9", b"a")
    )


def test_a_watch_event_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod's MODIFIED event decodes through orjson (json.loads is never asked)."""
    obj = pod_obj("p", uid="u-1", created="2026-12-03T09:00:00Z", labels={"app": "a"})
    line = json.dumps({"type": "MODIFIED", "object": obj}, separators=(",", ":")).encode()
    expected = json.loads(line)

    def refuse(_data: bytes) -> Any:
        raise AssertionError("json.loads was used")

    monkeypatch.setattr(wirejson.json, "loads", refuse)
    assert _tagged(wirejson.loads(line)) == _tagged(expected)
    assert _tagged(orjson.loads(line)) == _tagged(expected)
