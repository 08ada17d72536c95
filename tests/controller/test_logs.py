"""``logs.configure``'s loggers drop a call below the level before building it, and write
exactly what the plain ``structlog.stdlib.BoundLogger`` with the same processors writes.

Each row logs one call at a configured level through ``logs.configure`` and again with the
wrapper class swapped for structlog's own, and the lines (timestamps aside) must be equal;
a disabled stdlib logger and ``structlog.testing.capture_logs`` (other processors first)
are rows too.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from policyengine.controller import logs

NAME = "policyengine.test.logs"


@pytest.fixture(autouse=True)
def restore_this_logger(restore_logging: None) -> Iterator[None]:
    yield
    logging.getLogger(NAME).disabled = False


def _lines(level: str, method: str, *, plain: bool, disabled: bool = False) -> list[Any]:
    out = io.StringIO()
    logs.configure(level, "json", stream=out)
    if plain:
        structlog.configure(wrapper_class=structlog.stdlib.BoundLogger)
    logging.getLogger(NAME).disabled = disabled
    answer = getattr(logs.get_logger(NAME), method)("an event", pod="default/p", n=1)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    for line in lines:
        line.pop("timestamp")
    return [answer, lines]


@pytest.mark.parametrize(
    ("level", "method", "written"),
    [
        ("warning", "info", False),
        ("warning", "debug", False),
        ("warning", "warning", True),
        ("info", "info", True),
        ("info", "debug", False),
        ("debug", "debug", True),
        ("debug", "info", True),
        ("error", "warning", False),
    ],
)
def test_calls_are_written_or_dropped_as_the_plain_logger_does(
    level: str, method: str, written: bool
) -> None:
    got = _lines(level, method, plain=False)
    assert got == _lines(level, method, plain=True)
    assert got[0] is None
    assert bool(got[1]) is written
    if written:
        assert got[1] == [
            {"level": method, "logger": NAME, "event": "an event", "pod": "default/p", "n": 1}
        ]


@pytest.mark.parametrize("method", ["debug", "info", "warning"])
def test_a_disabled_logger_writes_nothing(method: str) -> None:
    assert _lines("debug", method, plain=False, disabled=True) == [None, []]
    assert _lines("debug", method, plain=True, disabled=True) == [None, []]


@pytest.mark.parametrize("method", ["debug", "info"])
def test_captured_logs_see_calls_below_the_level(method: str) -> None:
    logs.configure("warning", "json", stream=io.StringIO())
    with structlog.testing.capture_logs() as captured:
        getattr(logs.get_logger(NAME), method)("an event", pod="default/p")
    assert captured == [{"event": "an event", "pod": "default/p", "log_level": method}]


def test_a_python_warning_is_a_json_log_line() -> None:
    """urllib3's InsecureRequestWarning (a kubeconfig with insecure-skip-tls-verify) and any
    other warning land in the JSON stream, not as a raw line beside it."""
    import warnings

    import urllib3

    out = io.StringIO()
    logs.configure("info", "json", stream=out)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("Unverified HTTPS request", urllib3.exceptions.InsecureRequestWarning, 1)
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert (line["level"], line["logger"]) == ("warning", "py.warnings")
    assert "InsecureRequestWarning: Unverified HTTPS request" in line["event"]
