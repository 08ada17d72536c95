"""JSON from the API server decoded by orjson, answering exactly what ``json.loads`` answers.

Every watch event and every list page the informers receive is JSON text; at hundreds of
bound pods a second the pod watch alone decodes a pod object (1.5-4 KB) per binding and per
condition patch. ``orjson.loads`` does that in about 40% of ``json.loads``'s time. The two
read almost every document alike (same types, same float rounding, same key order, the last
of duplicate keys wins), but not all of them:

* ``orjson`` refuses what ``json`` takes beyond JSON's grammar or UTF-8 (``NaN``,
  ``Infinity``, numbers that overflow to an infinite float, lone surrogate escapes or bytes, a
  byte-order mark, UTF-16/32 text): ``loads`` then answers ``json.loads`` (its value, or the
  exception it raises);
* ``orjson`` reads an integer beyond 64 bits as a float where ``json`` keeps it exact, without
  saying so: text holding 19 digits in a row (anywhere, strings included: a cheap test that
  over-approximates) goes to ``json.loads`` directly. Every integer of 18 digits or fewer is
  inside int64, which ``orjson`` reads exactly.

So ``loads(data)`` equals ``json.loads(data)`` for every input, value and type alike, or
raises what it raises; ``tests/controller/test_wirejson.py`` holds that over generated
documents and a table of the edge cases. Without ``orjson`` installed it is ``json.loads``.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None  # type: ignore[assignment]

# A Kubernetes object (or any JSON object) as decoded from the wire: the controller's one alias.
JSON = dict[str, Any]

# 19 digits in a row: the only way to write an integer outside int64 (a longer run inside a
# string or a float's digits merely takes the slower path). Found by mapping every digit to
# "0" and every other byte to " " and looking for nineteen "0"s: two C passes, where the
# regular expression ``[0-9]{19}`` took longer than ``json.loads`` itself.
_DIGIT_MASK = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_RUN = b"0" * 19


def _long_digits(data: bytes) -> bool:
    return _RUN in data.translate(_DIGIT_MASK)


def loads(data: bytes) -> Any:
    """``json.loads(data)``, decoded by orjson where that gives the same answer."""
    if orjson is None or _long_digits(data):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
