"""Timestamps as the Go types marshal them: ``normalize_times`` re-encodes Time and MicroTime
fields (each distinct text parsed once) into a new value; ``fmt_time`` writes whole seconds."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopback import kinds
from loopback.errors import APIError


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ({"creationTimestamp": "2024-01-02T03:04:05Z"}, {"creationTimestamp": "2024-01-02T03:04:05Z"}),
        ({"creationTimestamp": "2024-01-02T03:04:05.678Z"}, {"creationTimestamp": "2024-01-02T03:04:05Z"}),
        ({"creationTimestamp": "2024-01-02T04:04:05+01:00"}, {"creationTimestamp": "2024-01-02T03:04:05Z"}),
        ({"eventTime": "2024-01-02T03:04:05Z"}, {"eventTime": "2024-01-02T03:04:05.000000Z"}),
        ({"eventTime": "2024-01-02T03:04:05.5Z"}, {"eventTime": "2024-01-02T03:04:05.500000Z"}),
        (  # nested, in lists, and the same text under a Time and a MicroTime key
            {"status": {"conditions": [{"lastTransitionTime": "2024-01-02 03:04:05"}]},
             "series": {"lastObservedTime": "2024-01-02 03:04:05"}},
            {"status": {"conditions": [{"lastTransitionTime": "2024-01-02T03:04:05Z"}]},
             "series": {"lastObservedTime": "2024-01-02T03:04:05.000000Z"}},
        ),
        (  # not times: left as they are
            {"time": "", "name": "2024-01-02 03:04:05", "startTime": None, "lastProbeTime": 7},
            {"time": "", "name": "2024-01-02 03:04:05", "startTime": None, "lastProbeTime": 7},
        ),
        ({"finishedAt": ["2024-01-02T03:04:05+00:00", 1]}, {"finishedAt": ["2024-01-02T03:04:05Z", 1]}),
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"),  # no key: not a time
    ],
    ids=[
        "time", "time-fraction-dropped", "time-offset", "microtime", "microtime-fraction",
        "nested", "not-times", "in-a-list", "no-key",
    ],
)  # fmt: skip
def test_normalize_times(value: Any, want: Any) -> None:
    before = copy.deepcopy(value)
    for _ in range(2):  # the second time from what the first one learned
        got = kinds.normalize_times(value)
        assert got == want
        assert value == before
    if isinstance(value, dict):
        assert got is not value
        for key, child in value.items():
            if isinstance(child, dict | list):
                assert got[key] is not child


@pytest.mark.parametrize("text", ["yesterday", "2024-13-01T00:00:00Z"])
def test_normalize_times_rejects_what_go_cannot_parse(text: str) -> None:
    for _ in range(2):  # a bad text is never taken as known
        with pytest.raises(APIError) as caught:
            kinds.normalize_times({"metadata": {"creationTimestamp": text}})
        assert caught.value.body["message"] == (
            f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse'
        )


def _reference_fmt(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    )
    | st.datetimes(
        min_value=datetime(1970, 1, 2),
        max_value=datetime(2200, 1, 1),
        timezones=st.just(timezone(timedelta(hours=-5))),
    )
)
def test_fmt_time_writes_whole_utc_seconds(when: datetime) -> None:
    assert kinds.fmt_time(when) == _reference_fmt(when)
    later = when + timedelta(microseconds=1)  # the same second, or the next one
    assert kinds.fmt_time(later) == _reference_fmt(later)
    assert kinds.fmt_time(when) == _reference_fmt(when)
