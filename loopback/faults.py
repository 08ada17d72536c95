"""Fault injection and the request log.

A scheduler's loop is only trustworthy if it survives what real clusters do to it: 5xx and
429 answers, RBAC denials, slow binds, watches that drop or come back 410.  Tests arm these
here by *request shape* (verb, resource, subresource, namespace, name) and then assert on the
recorded traffic, e.g. that each pod was bound exactly once.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import errors
from .errors import APIError


@dataclass(frozen=True)
class Match:
    """Which requests a fault applies to; ``None`` matches anything."""

    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None

    def matches(self, info: RequestInfo) -> bool:
        if self.verb is not None and self.verb != info.verb:
            return False
        if self.resource is not None and self.resource not in (info.resource, info.resource_ident):
            return False
        if self.subresource is not None and self.subresource != info.subresource:
            return False
        if self.namespace is not None and self.namespace != info.namespace:
            return False
        return self.name is None or self.name == info.name


@dataclass
class RequestInfo:
    """One request as the apiserver's RequestInfo resolver would describe it."""

    verb: str = ""
    resource: str = ""
    resource_ident: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    group: str = ""


_UNPARSED = object()


def parse_recorded_body(raw: bytes) -> Any:
    """A request body as tests read it: JSON, else YAML, else text; None when empty."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError:
            return raw.decode("utf-8", "replace")


@dataclass
class Recorded:
    """A request the server received, and what it answered.  ``body`` is the parsed request
    body, parsed when first read: most recorded requests are never looked at."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw_body: bytes
    verb: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    status: int = 0
    time: float = field(default_factory=time.time)
    _body: Any = field(default=_UNPARSED, init=False, repr=False, compare=False)

    @property
    def body(self) -> Any:
        if self._body is _UNPARSED:
            self._body = parse_recorded_body(self.raw_body)
        return self._body

    @property
    def url(self) -> str:
        return self.path


@dataclass
class _Failure:
    match: Match
    remaining: int | None
    code: int
    retry_after: int | None
    message: str | None


@dataclass
class _Delay:
    match: Match
    seconds: float
    remaining: int | None


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[_Failure] = []
        self._forbidden: list[tuple[Match, str | None]] = []
        self._delays: list[_Delay] = []

    # -------------------------------------------------------------- arming

    def fail(
        self,
        match: Match,
        *,
        times: int | None,
        code: int,
        retry_after: int | None,
        message: str | None,
    ) -> None:
        with self._lock:
            self._failures.append(_Failure(match, times, code, retry_after, message))

    def forbid(self, match: Match, user: str | None) -> None:
        with self._lock:
            self._forbidden.append((match, user))

    def delay(self, match: Match, seconds: float, times: int | None) -> None:
        with self._lock:
            self._delays.append(_Delay(match, seconds, times))

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._forbidden.clear()
            self._delays.clear()

    # -------------------------------------------------------------- checking

    def check(self, info: RequestInfo, user: str) -> APIError | None:
        with self._lock:
            for match, as_user in self._forbidden:
                if match.matches(info):
                    return errors.forbidden(
                        as_user or user,
                        info.verb,
                        info.resource,
                        info.subresource,
                        info.group,
                        info.namespace,
                        info.name,
                    )
            for failure in self._failures:
                if failure.remaining == 0 or not failure.match.matches(info):
                    continue
                if failure.remaining is not None:
                    failure.remaining -= 1
                return errors.generic(failure.code, failure.message, failure.retry_after)
        return None

    def delay_for(self, info: RequestInfo) -> float:
        with self._lock:
            total = 0.0
            for delay in self._delays:
                if delay.remaining == 0 or not delay.match.matches(info):
                    continue
                if delay.remaining is not None:
                    delay.remaining -= 1
                total += delay.seconds
            return total

    def pending_failures(self) -> int:
        with self._lock:
            return sum(f.remaining or 0 for f in self._failures)


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Recorded] = []

    def add(self, record: Recorded) -> None:
        with self._lock:
            self._records.append(record)

    def all(self) -> list[Recorded]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
